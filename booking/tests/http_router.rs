//! The router in-process over MemStore: every endpoint, every error kind the
//! handlers produce, the idempotent checkout retry, and a poisoned cache.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use booking::clock::ManualClock;
use booking::http::auth::{Authenticator, Claims};
use booking::http::cache::{MemCache, SeatMapCache};
use booking::http::rate_limit::RateLimiter;
use booking::http::{AppState, NoHooks, ServiceConfig, router};
use booking::ids::SeededIds;
use booking::metrics::Metrics;
use booking::store::MemStore;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

struct Env {
    app: axum::Router,
    auth: Authenticator,
    clock: Arc<ManualClock>,
    cache: Arc<MemCache>,
}

fn env(cfg: ServiceConfig) -> Env {
    let clock = ManualClock::new(1_700_000_000_000);
    let store = Arc::new(MemStore::new(clock.clone(), Arc::new(SeededIds::new(7))));
    let auth = Authenticator::new(b"test-secret-0123456789", clock.clone());
    let cache = Arc::new(MemCache::new(100));
    let state = AppState {
        store,
        cache: cache.clone(),
        auth: auth.clone(),
        rate_limit: Arc::new(RateLimiter::new(cfg.hold_attempts_per_minute, 1000, clock.clone())),
        metrics: Arc::new(Metrics::default()),
        config: cfg,
        hooks: Arc::new(NoHooks),
        webhooks: None,
        dispatch_wake: Arc::new(tokio::sync::Notify::new()),
    };
    Env { app: router(state), auth, clock, cache }
}

impl Env {
    fn token(&self, user: &str, admin: bool) -> String {
        self.auth.issue(&Claims {
            sub: user.into(),
            events: vec!["e1".into()],
            exp_ms: self.clock_now() + 3_600_000,
            admin,
        })
    }
    fn clock_now(&self) -> i64 {
        use booking::clock::Clock;
        self.clock.now_ms()
    }
    async fn call(
        &self,
        method: &str,
        uri: &str,
        token: Option<&str>,
        key: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, String, Value) {
        let mut b = Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        if let Some(k) = key {
            b = b.header("idempotency-key", k);
        }
        let req = match body {
            Some(v) => b.header("content-type", "application/json").body(Body::from(v.to_string())).unwrap(),
            None => b.body(Body::empty()).unwrap(),
        };
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let ctype = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, ctype, v)
    }
    async fn setup_event(&self) {
        let admin = self.token("ops", true);
        let (s, _, _) = self
            .call(
                "POST",
                "/v1/events",
                Some(&admin),
                None,
                Some(json!({"event_id":"e1","seat_ids":["1A","1B","1C"],"price_cents":5000})),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED);
    }
}

fn assert_problem(got: (StatusCode, String, Value), status: StatusCode, kind: &str) {
    assert_eq!(got.0, status, "{:?}", got.2);
    assert_eq!(got.1, "application/problem+json");
    assert_eq!(got.2["type"], format!("urn:holdfast:problem:{kind}"), "{:?}", got.2);
    assert_eq!(got.2["status"], status.as_u16());
}

#[tokio::test]
async fn hold_checkout_and_idempotent_retry() {
    let e = env(ServiceConfig::default());
    e.setup_event().await;
    let alice = e.token("alice", false);
    let (s, _, hold) =
        e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1B","1A"]}))).await;
    assert_eq!(s, StatusCode::CREATED);
    let token = hold["hold_token"].as_str().unwrap().to_string();
    let uri = format!("/v1/events/e1/holds/{token}/checkout");
    let (s, _, o1) = e.call("POST", &uri, Some(&alice), Some("k1"), Some(json!({"seat_ids":["1A","1B"]}))).await;
    assert_eq!(s, StatusCode::CREATED);
    assert_eq!(o1["status"], "pending");
    assert_eq!(o1["amount_cents"], 10000);
    let (s, _, o2) = e.call("POST", &uri, Some(&alice), Some("k1"), Some(json!({"seat_ids":["1A","1B"]}))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(o2["order_id"], o1["order_id"]);
    assert_eq!(o2["replayed"], true);
    assert_problem(
        e.call("POST", &uri, Some(&alice), Some("k2"), Some(json!({"seat_ids":["1A","1B"]}))).await,
        StatusCode::NOT_FOUND,
        "hold-not-found",
    );
    assert_problem(
        e.call("POST", &uri, Some(&alice), Some("k1"), Some(json!({"seat_ids":["1A"]}))).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    );
    let (s, _, order) =
        e.call("GET", &format!("/v1/orders/{}", o1["order_id"].as_str().unwrap()), Some(&alice), None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(order["status"], "pending");
    let bob = e.token("bob", false);
    assert_problem(
        e.call("GET", &format!("/v1/orders/{}", o1["order_id"].as_str().unwrap()), Some(&bob), None, None).await,
        StatusCode::NOT_FOUND,
        "not-found",
    );
}

#[tokio::test]
async fn every_domain_error_is_a_problem_with_a_stable_type() {
    let e = env(ServiceConfig { hold_ttl_ms: 1_000, ..ServiceConfig::default() });
    e.setup_event().await;
    let alice = e.token("alice", false);
    let bob = e.token("bob", false);
    let (_, _, hold) =
        e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1A"]}))).await;
    let ta = hold["hold_token"].as_str().unwrap().to_string();
    assert_problem(
        e.call("POST", "/v1/events/e1/holds", Some(&bob), None, Some(json!({"seat_ids":["1A"]}))).await,
        StatusCode::CONFLICT,
        "seat-unavailable",
    );
    assert_problem(
        e.call("POST", "/v1/events/e1/holds", Some(&bob), None, Some(json!({"seat_ids":["9Z"]}))).await,
        StatusCode::NOT_FOUND,
        "unknown-seat",
    );
    assert_problem(
        e.call("POST", "/v1/events/e1/holds", Some(&bob), None, Some(json!({"seat_ids":[]}))).await,
        StatusCode::BAD_REQUEST,
        "invalid-input",
    );
    assert_problem(
        e.call("POST", "/v1/events/e1/holds", Some(&bob), None, Some(json!({"seats":["1A"]}))).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "bad-request",
    );
    assert_problem(
        e.call("POST", "/v1/events/e1/holds", Some(&bob), None, None).await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
    );
    assert_problem(
        e.call("POST", "/v1/events/e2/holds", Some(&bob), None, Some(json!({"seat_ids":["1A"]}))).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_problem(
        e.call("POST", "/v1/events/e1/holds", None, None, Some(json!({"seat_ids":["1A"]}))).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_problem(
        e.call(
            "POST",
            &format!("/v1/events/e1/holds/{ta}/checkout"),
            Some(&bob),
            Some("kb"),
            Some(json!({"seat_ids":["1A"]})),
        )
        .await,
        StatusCode::FORBIDDEN,
        "not-holder",
    );
    assert_problem(
        e.call(
            "POST",
            &format!("/v1/events/e1/holds/{ta}/checkout"),
            Some(&alice),
            None,
            Some(json!({"seat_ids":["1A"]})),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "idempotency-key-required",
    );
    assert_problem(
        e.call(
            "POST",
            "/v1/events/e1/holds/not-a-uuid/checkout",
            Some(&alice),
            Some("k"),
            Some(json!({"seat_ids":["1A"]})),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "bad-request",
    );
    assert_problem(
        e.call("DELETE", &format!("/v1/events/e1/holds/{ta}"), Some(&bob), None, None).await,
        StatusCode::FORBIDDEN,
        "not-holder",
    );
    // Alice's hold expires; Bob takes the seat; Alice's token is stale.
    e.clock.advance_ms(1_000);
    assert_problem(
        e.call(
            "POST",
            &format!("/v1/events/e1/holds/{ta}/checkout"),
            Some(&alice),
            Some("ka"),
            Some(json!({"seat_ids":["1A"]})),
        )
        .await,
        StatusCode::GONE,
        "hold-expired",
    );
    let (s, _, _) = e.call("POST", "/v1/events/e1/holds", Some(&bob), None, Some(json!({"seat_ids":["1A"]}))).await;
    assert_eq!(s, StatusCode::CREATED);
    assert_problem(
        e.call(
            "POST",
            &format!("/v1/events/e1/holds/{ta}/checkout"),
            Some(&alice),
            Some("ka"),
            Some(json!({"seat_ids":["1A"]})),
        )
        .await,
        StatusCode::CONFLICT,
        "stale-token",
    );
    assert_problem(
        e.call("DELETE", &format!("/v1/events/e1/holds/{ta}"), Some(&alice), None, None).await,
        StatusCode::NOT_FOUND,
        "hold-not-found",
    );
    let admin = e.token("ops", true);
    assert_problem(
        e.call(
            "POST",
            "/v1/events",
            Some(&admin),
            None,
            Some(json!({"event_id":"e1","seat_ids":["x"],"price_cents":1})),
        )
        .await,
        StatusCode::CONFLICT,
        "event-exists",
    );
    assert_problem(
        e.call(
            "POST",
            "/v1/events",
            Some(&alice),
            None,
            Some(json!({"event_id":"e9","seat_ids":["x"],"price_cents":1})),
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_problem(e.call("GET", "/v1/nowhere", None, None, None).await, StatusCode::NOT_FOUND, "not-found");
    assert_problem(
        e.call("POST", "/v1/webhooks/provider", None, None, Some(json!({}))).await,
        StatusCode::NOT_FOUND,
        "not-found",
    );
}

#[tokio::test]
async fn an_unknown_event_is_a_404() {
    let e = env(ServiceConfig::default());
    let alice = e.token("alice", false);
    // The token allows e1, which does not exist yet.
    assert_problem(
        e.call("GET", "/v1/events/e1/seats", Some(&alice), None, None).await,
        StatusCode::NOT_FOUND,
        "unknown-event",
    );
    assert_problem(
        e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1A"]}))).await,
        StatusCode::NOT_FOUND,
        "unknown-event",
    );
    e.setup_event().await;
    let (s, _, map) = e.call("GET", "/v1/events/e1/seats", Some(&alice), None, None).await;
    assert_eq!((s, map["seats"].as_array().unwrap().len()), (StatusCode::OK, 3));
}

#[tokio::test]
async fn oversized_bodies_and_rate_limits_are_4xx() {
    let e = env(ServiceConfig { hold_attempts_per_minute: 2, max_body_bytes: 1024, ..ServiceConfig::default() });
    e.setup_event().await;
    let alice = e.token("alice", false);
    let big: Vec<String> = (0..200).map(|i| format!("seat-{i:04}")).collect();
    assert_problem(
        e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids": big}))).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
    );
    let nine: Vec<String> = (0..9).map(|i| format!("s{i}")).collect();
    assert_problem(
        e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids": nine}))).await,
        StatusCode::BAD_REQUEST,
        "invalid-input",
    );
    // The oversized body never reached the handler; the 9-seat attempt counted.
    let (s, _, _) = e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1A"]}))).await;
    assert_eq!(s, StatusCode::CREATED);
    let got = e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1B"]}))).await;
    assert_eq!(
        got.2["retry_after_s"], 40,
        "the clock is 20 s into its minute; third attempt in the minute is limited: {:?}",
        got.2
    );
    assert_problem(got, StatusCode::TOO_MANY_REQUESTS, "rate-limited");
}

#[tokio::test]
async fn a_poisoned_cache_cannot_sell_a_seat_twice() {
    let e = env(ServiceConfig::default());
    e.setup_event().await;
    let alice = e.token("alice", false);
    let bob = e.token("bob", false);
    let (_, _, hold) =
        e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1A"]}))).await;
    assert_eq!(hold["seats"][0]["seat_id"], "1A");
    // The cache lies: every seat available.
    e.cache.put("e1", br#"{"event_id":"e1","seats":[{"seat_id":"1A","state":"available","version":0,"hold_expires_at_ms":null}]}"#).await;
    let (s, _, map) = e.call("GET", "/v1/events/e1/seats", Some(&bob), None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(map["seats"][0]["state"], "available", "reads may be stale");
    assert_problem(
        e.call("POST", "/v1/events/e1/holds", Some(&bob), None, Some(json!({"seat_ids":["1A"]}))).await,
        StatusCode::CONFLICT,
        "seat-unavailable",
    );
    // A write invalidates the entry; the next read comes from the store.
    e.call("POST", "/v1/events/e1/holds", Some(&bob), None, Some(json!({"seat_ids":["1B"]}))).await;
    let (_, _, map) = e.call("GET", "/v1/events/e1/seats", Some(&bob), None, None).await;
    assert_eq!(map["seats"][0]["state"], "held");
}

#[tokio::test]
async fn metrics_and_health() {
    let e = env(ServiceConfig::default());
    e.setup_event().await;
    let alice = e.token("alice", false);
    e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1A"]}))).await;
    e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1A"]}))).await;
    let resp = e.app.clone().oneshot(Request::get("/metrics").body(Body::empty()).unwrap()).await.unwrap();
    let text = String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(text.contains("holdfast_holds_acquired_total 1"), "{text}");
    assert!(text.contains("holdfast_holds_refused_contention_total 1"), "{text}");
    for name in [
        "holdfast_holds_expired_unused_total",
        "holdfast_hold_expiry_lag_ms_max",
        "holdfast_checkouts_total{outcome=\"created\"}",
        "holdfast_payments_total{outcome=\"unknown\"}",
        "holdfast_unresolved",
    ] {
        assert!(text.contains(name), "missing {name}");
    }
    let resp = e.app.clone().oneshot(Request::get("/healthz").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}
