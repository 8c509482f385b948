//! Every error response is a problem document, including the ones the
//! framework writes itself before a handler runs (a `405` with an empty body,
//! a `413` in `text/plain` from a body limit, a `415`, a `404` for a path that
//! matched no parameter pattern). A response layer rewrites any error
//! response that is not already `application/problem+json`, keeping its
//! status and its headers (`Allow` on a 405), and states the body limit in
//! every `413`.

use super::problem::{PROBLEM_JSON, Problem};
use crate::problem_kind::ProblemKind;
use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use axum::response::IntoResponse;

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
        StatusCode::METHOD_NOT_ALLOWED => {
            let allow = resp.headers().get(header::ALLOW).and_then(|v| v.to_str().ok()).unwrap_or("");
            format!("method not allowed on this path; allowed: {allow}")
        }
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
