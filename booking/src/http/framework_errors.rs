//! Every error response is a problem document, including the ones the
//! framework writes itself before a handler runs (a `405` with an empty body,
//! a `413` in `text/plain` from a body limit, a `415`, a `404` for a path that
//! matched no parameter pattern). A response layer rewrites any error
//! response that is not already `application/problem+json`, keeping its
//! status and its headers (`Allow` on a 405, listed in the detail too), and
//! states the body limit in every `413`.
//!
//! The layer wraps the whole router ([`with_problem_responses`]), not each
//! route (`Router::layer`): axum writes a 405's `Allow` (the methods routed on
//! the path) after a route's own layers have run, so only from outside the
//! router are the allowed methods known. The router is their one source.

use super::problem::{PROBLEM_JSON, Problem};
use crate::problem_kind::ProblemKind;
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use axum::response::IntoResponse;

/// `router` with every error response it answers made a problem document
/// ([`ensure_problem`]); `max_body_bytes` is stated in a 413. An answer to
/// `HEAD` keeps no body, as axum leaves it.
pub fn with_problem_responses(router: Router, max_body_bytes: usize) -> Router {
    let problems = axum::middleware::map_response(move |method: Method, resp: Response<Body>| async move {
        let mut out = ensure_problem(resp, max_body_bytes);
        if method == Method::HEAD {
            *out.body_mut() = Body::empty();
        }
        out
    });
    Router::new().fallback_service(tower::Layer::layer(&problems, router))
}

/// The methods an `Allow` header lists, `GET, HEAD` (axum writes `GET,HEAD`);
/// `None` without one, or with an empty one.
fn allowed_methods(headers: &HeaderMap) -> Option<String> {
    let allow = headers.get(header::ALLOW)?.to_str().ok()?;
    let methods: Vec<&str> = allow.split(',').map(str::trim).filter(|m| !m.is_empty()).collect();
    (!methods.is_empty()).then(|| methods.join(", "))
}

/// The problem kind for a status the framework answers with.
fn kind_of(status: StatusCode) -> ProblemKind {
    match status {
        StatusCode::NOT_FOUND => ProblemKind::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => ProblemKind::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => ProblemKind::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ProblemKind::UnsupportedMediaType,
        StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST => ProblemKind::BadRequest,
        s if s.is_server_error() => ProblemKind::Internal,
        _ => ProblemKind::BadRequest,
    }
}

/// Rewrites `resp` into a problem document when it is an error response that
/// is not one already; `max_body_bytes` is stated in a 413.
pub fn ensure_problem(resp: Response<Body>, max_body_bytes: usize) -> Response<Body> {
    let status = resp.status();
    let is_problem = resp.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes() == PROBLEM_JSON.as_bytes());
    // A 413 is always rewritten: only this layer knows the limit to state.
    if !(status.is_client_error() || status.is_server_error())
        || (is_problem && status != StatusCode::PAYLOAD_TOO_LARGE)
    {
        return resp;
    }
    let detail = match status {
        StatusCode::PAYLOAD_TOO_LARGE => format!("the request body is larger than {max_body_bytes} bytes"),
        StatusCode::METHOD_NOT_ALLOWED => match allowed_methods(resp.headers()) {
            Some(methods) => format!("method not allowed on this path; allowed: {methods}"),
            None => "method not allowed on this path".to_string(),
        },
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "send the body as application/json".to_string(),
        s => s.canonical_reason().unwrap_or("error").to_lowercase(),
    };
    let (parts, _) = resp.into_parts();
    let mut out = Problem::new(status, kind_of(status), detail).into_response();
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(v) = parts.headers.get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    debug_assert_eq!(out.headers().get(header::CONTENT_TYPE), Some(&HeaderValue::from_static(PROBLEM_JSON)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn problem(resp: Response<Body>) -> (axum::http::response::Parts, serde_json::Value) {
        let (parts, body) = ensure_problem(resp, 1024).into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        (parts, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn a_405_lists_the_allowed_methods_and_keeps_its_allow_header() {
        let resp = Response::builder().status(405).header(header::ALLOW, "GET,HEAD").body(Body::empty()).unwrap();
        let (parts, v) = problem(resp).await;
        assert_eq!(parts.headers[header::ALLOW], "GET,HEAD");
        assert_eq!(parts.headers[header::CONTENT_TYPE], PROBLEM_JSON);
        assert_eq!(v["type"], "urn:holdfast:problem:method-not-allowed");
        assert_eq!(v["detail"], "method not allowed on this path; allowed: GET, HEAD");

        // Without a list to state, the detail states none (never `allowed: ` and nothing).
        let bare = Response::builder().status(405).body(Body::empty()).unwrap();
        assert_eq!(problem(bare).await.1["detail"], "method not allowed on this path");
    }

    #[tokio::test]
    async fn the_layer_sees_the_allow_header_the_router_writes() {
        use tower::ServiceExt as _;
        let routes = Router::new().route("/r", axum::routing::post(|| async {}).put(|| async {}));
        let app = with_problem_responses(routes, 1024);
        let req = |method: &str| axum::http::Request::builder().method(method).uri("/r").body(Body::empty()).unwrap();
        let resp = app.clone().oneshot(req("DELETE")).await.unwrap();
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(resp.headers()[header::ALLOW], "POST,PUT");
        let (_, v) = problem(resp).await;
        assert_eq!(v["detail"], "method not allowed on this path; allowed: POST, PUT");
        // A HEAD answer keeps no body, a problem or not.
        let head = app.oneshot(req("HEAD")).await.unwrap();
        assert_eq!(head.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert!(head.into_body().collect().await.unwrap().to_bytes().is_empty());
    }
}
