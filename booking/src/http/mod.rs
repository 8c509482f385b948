//! The booking HTTP service (`bookingd`'s router). One axum application that
//! serves on real tokio sockets in production and on turmoil's simulated
//! sockets in simulation: the caller hands [`serve`] its listener.

pub mod api;
pub mod auth;
pub mod authed;
pub mod cache;
pub mod etag;
pub mod extract;
pub mod framework_errors;
pub mod handlers;
pub mod problem;
pub mod queue;
pub mod rate_limit;
pub mod state;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post, put};
pub use state::{AppState, DEFAULT_MAX_HELD_SEATS_PER_USER, ServiceConfig, WebhookSink};

/// The OpenAPI description served at `/openapi.json`.
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

/// Every route: (method, path). The OpenAPI file documents each (a test checks).
pub const ROUTES: &[(&str, &str)] = &[
    ("post", "/v1/events"),
    ("get", "/v1/events/{event_id}/seats"),
    ("post", "/v1/events/{event_id}/holds"),
    ("delete", "/v1/events/{event_id}/holds/{hold_token}"),
    ("post", "/v1/events/{event_id}/holds/{hold_token}/checkout"),
    ("put", "/v1/events/{event_id}/waiting-room"),
    ("post", "/v1/events/{event_id}/queue"),
    ("get", "/v1/events/{event_id}/queue"),
    ("get", "/v1/events/{event_id}/queue/lottery"),
    ("get", "/v1/orders/{order_id}"),
    ("post", "/v1/webhooks/provider"),
    ("get", "/v1/admin/unresolved"),
    ("get", "/healthz"),
    ("get", "/livez"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
];

/// The service's router over `state`.
pub(crate) fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    let state = std::sync::Arc::new(state);
    let routes = Router::new()
        .route("/v1/events", post(handlers::create_event))
        .route("/v1/events/{event_id}/seats", get(handlers::seat_map))
        .route("/v1/events/{event_id}/holds", post(handlers::hold))
        .route("/v1/events/{event_id}/holds/{hold_token}", delete(handlers::release))
        .route("/v1/events/{event_id}/holds/{hold_token}/checkout", post(handlers::checkout))
        .route("/v1/events/{event_id}/waiting-room", put(queue::open_room))
        .route("/v1/events/{event_id}/queue", post(queue::join).get(queue::status))
        .route("/v1/events/{event_id}/queue/lottery", get(queue::lottery))
        .route("/v1/orders/{order_id}", get(handlers::order))
        .route("/v1/webhooks/provider", post(handlers::webhook))
        .route("/v1/admin/unresolved", get(handlers::unresolved))
        .route("/healthz", get(handlers::readyz))
        .route("/livez", get(handlers::livez))
        .route("/readyz", get(handlers::readyz))
        .route("/metrics", get(handlers::metrics))
        .route("/openapi.json", get(handlers::openapi))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), handlers::count_responses))
        .fallback(handlers::fallback)
        .layer(DefaultBodyLimit::max(limit))
        // One shared state: a request clones an `Arc`, not every handle in it.
        .with_state(state);
    // Around the whole router, so that a 405 is rewritten with its `Allow`.
    framework_errors::with_problem_responses(routes, limit)
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains
/// in-flight requests. Production passes a `tokio::net::TcpListener`; the
/// simulator passes a turmoil listener implementing [`axum::serve::Listener`].
pub async fn serve<L>(
    listener: L,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    axum::serve(listener, PerConnection(router)).with_graceful_shutdown(shutdown).await
}

/// The make-service [`serve`] hands axum: every accepted connection gets a
/// clone of the one router, an `Arc` increment. (axum's own make-service for
/// `Router` rebuilds the router for each connection — every route and its
/// state cloned — which measured ~4% of a simulated seed's CPU, most of it
/// while clients reconnected after crashes.)
#[derive(Clone)]
struct PerConnection(Router);

impl<L: axum::serve::Listener> tower::Service<axum::serve::IncomingStream<'_, L>> for PerConnection {
    type Response = Router;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Router, std::convert::Infallible>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: axum::serve::IncomingStream<'_, L>) -> Self::Future {
        std::future::ready(Ok(self.0.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openapi_documents_every_route() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI_JSON).expect("openapi.json is JSON");
        for (method, path) in ROUTES {
            assert!(doc["paths"][path][method].is_object(), "openapi.json lacks {method} {path}");
        }
        assert_eq!(
            doc["paths"].as_object().unwrap().values().map(|p| p.as_object().unwrap().len()).sum::<usize>(),
            ROUTES.len()
        );
    }

    /// The document states the limits the code enforces, read from the same
    /// constants: change one without the other and this fails.
    #[test]
    fn openapi_states_the_limits_the_code_enforces() {
        use crate::http::api::{
            MAX_LISTED_SEATS, MAX_SEAT_RANGE_FIRST, MAX_SEAT_RANGE_LEN, MAX_SEAT_RANGE_PREFIX_LEN, MAX_SEAT_RANGES,
        };
        use crate::model::{MAX_IDEMPOTENCY_KEY_LEN, MAX_SEATS_PER_EVENT, MAX_SEATS_PER_HOLD, valid_id};
        let doc: serde_json::Value = serde_json::from_str(OPENAPI_JSON).expect("openapi.json is JSON");
        let s = &doc["components"]["schemas"];
        let id = s["Hold"]["properties"]["seat_ids"]["items"]["pattern"].as_str().unwrap();
        assert_eq!(id, "^[A-Za-z0-9_.-]{1,64}$");
        // The pattern and `valid_id` agree on the edges.
        let max_id = "a".repeat(64);
        for (text, ok) in [("", false), ("a", true), (max_id.as_str(), true), ("a b", false), ("é", false)] {
            assert_eq!(valid_id(text), ok, "{text:?}");
        }
        assert!(!valid_id(&"a".repeat(65)));
        for body in ["Hold", "Checkout"] {
            let seats = &s[body]["properties"]["seat_ids"];
            assert_eq!(seats["minItems"], 1, "{body}");
            assert_eq!(seats["maxItems"], MAX_SEATS_PER_HOLD, "{body}");
            assert_eq!(seats["uniqueItems"], true, "{body}");
            assert_eq!(s[body]["additionalProperties"], false, "{body}: unknown fields are refused");
        }
        let create = &s["CreateEvent"];
        assert_eq!(create["properties"]["seat_ids"]["maxItems"], MAX_LISTED_SEATS);
        assert_eq!(create["properties"]["seat_ranges"]["maxItems"], MAX_SEAT_RANGES);
        let range = &s["SeatRange"]["properties"];
        assert_eq!((&range["count"]["minimum"], &range["count"]["maximum"]), (&1.into(), &MAX_SEAT_RANGE_LEN.into()));
        assert_eq!((&range["first"]["minimum"], &range["first"]["maximum"]), (&0.into(), &MAX_SEAT_RANGE_FIRST.into()));
        assert_eq!(range["width"]["maximum"], 9);
        assert!(create["description"].as_str().unwrap().contains(&format!("at most {MAX_SEATS_PER_EVENT} seats")));
        assert_eq!(create["properties"]["price_cents"]["minimum"], 0);
        assert_eq!(create["properties"]["price_cents"]["maximum"], crate::store::MAX_PRICE_CENTS);
        assert!(create["description"].as_str().unwrap().contains(&ServiceConfig::default().max_body_bytes.to_string()));
        assert_eq!(create["additionalProperties"], false);
        let prefix = s["SeatRange"]["properties"]["prefix"]["pattern"].as_str().unwrap();
        assert_eq!(prefix, format!("^[A-Za-z0-9_.-]{{0,{MAX_SEAT_RANGE_PREFIX_LEN}}}$"));
        let checkout = &doc["paths"]["/v1/events/{event_id}/holds/{hold_token}/checkout"]["post"];
        let key = checkout["parameters"].as_array().unwrap().iter().find(|p| p["name"] == "Idempotency-Key").unwrap();
        assert_eq!(key["schema"]["maxLength"], MAX_IDEMPOTENCY_KEY_LEN);
        let hold = doc["paths"]["/v1/events/{event_id}/holds"]["post"]["summary"].as_str().unwrap();
        assert!(hold.contains(&format!("default {}", DEFAULT_MAX_HELD_SEATS_PER_USER)), "{hold}");
        // Every operation that takes a JSON body lists 400, 413 and 415; every error is a problem document.
        for (method, path) in ROUTES {
            let op = &doc["paths"][path][method];
            let responses = op["responses"].as_object().unwrap();
            if op.get("requestBody").is_some() && *path != "/v1/webhooks/provider" {
                for status in ["400", "413", "415"] {
                    assert!(responses.contains_key(status), "{method} {path} lacks {status}");
                }
            }
            for (status, r) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    assert!(r["content"]["application/problem+json"].is_object(), "{method} {path} {status}");
                }
            }
        }
    }

    #[test]
    fn openapi_lists_every_problem_kind_the_service_answers() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI_JSON).expect("openapi.json is JSON");
        let listed: Vec<&str> = doc["components"]["schemas"]["Problem"]["properties"]["type"]["enum"]
            .as_array()
            .expect("the problem type is a closed list")
            .iter()
            .map(|v| v.as_str().expect("a string").strip_prefix("urn:holdfast:problem:").expect("a holdfast type"))
            .collect();
        let answered: Vec<&str> = crate::problem_kind::ProblemKind::ALL
            .iter()
            .filter(|k| **k != crate::problem_kind::ProblemKind::NotAProblem)
            .map(|k| k.as_str())
            .collect();
        assert_eq!(listed, answered, "openapi.json's problem types are the service's problem kinds, in order");
    }

    #[test]
    fn openapi_documents_conditional_seat_map_reads() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI_JSON).expect("openapi.json is JSON");
        let op = &doc["paths"]["/v1/events/{event_id}/seats"]["get"];
        let params = op["parameters"].as_array().unwrap();
        assert!(params.iter().any(|p| p["name"] == "If-None-Match" && p["in"] == "header"), "{params:?}");
        for status in ["200", "304"] {
            let headers = &op["responses"][status]["headers"];
            assert!(headers["ETag"].is_object() && headers["Cache-Control"].is_object(), "{status}: {headers}");
        }
        assert!(op["responses"]["304"].get("content").is_none(), "a 304 has no body");
    }
}
