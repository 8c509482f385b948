//! Guards kept twice, in the service above the store and in the store, each
//! shown to refuse alone. A bug in one twin is latent while the other
//! fires first, so each is tested with the other out of the way:
//! - the service's guard with the store switched off: every store call
//!   would answer `503`, so the guard's own refusal proves it fired before
//!   the store (and the same request, well formed, does get the `503`);
//! - the store's guard called directly, on MemStore and PgStore, with what
//!   the service would have stopped: refused `invalid-input`, nothing written.
//!
//! The twins: an event id's shape (the path's check, the store's), a user
//! id's shape (the token's subject, the store's holder), an idempotency
//! key's characters (the header's, the store's).

use crate::common::on_both;
use crate::http_router::{assert_problem, env};
use axum::body::Body;
use axum::http::{HeaderValue, Request, StatusCode};
use booking::http::ServiceConfig;
use booking::http::auth::Claims;
use booking::model::HoldToken;
use booking::store::*;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use tower::ServiceExt;

/// A request the service must refuse by itself, and the same request well formed.
struct ServiceGuard {
    twin: &'static str,
    bad: Request<Body>,
    good: Request<Body>,
    status: StatusCode,
    kind: &'static str,
}

fn post(uri: &str, token: &str, key: Option<HeaderValue>, body: Value) -> Request<Body> {
    let mut b = Request::post(uri).header("authorization", format!("Bearer {token}"));
    if let Some(k) = key {
        b = b.header("idempotency-key", k);
    }
    b.header("content-type", "application/json").body(Body::from(body.to_string())).unwrap()
}

async fn answer(app: &axum::Router, req: Request<Body>) -> (StatusCode, String, Value) {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let ctype = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, ctype, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn each_guard_the_service_keeps_above_the_store_refuses_with_the_store_switched_off() {
    let e = env(ServiceConfig::default());
    e.setup_event().await;
    let alice = e.token("alice", false);
    let claims =
        Claims { sub: "not a user".into(), events: vec!["e1".into()], exp_ms: i64::MAX, admin: false, tier: None };
    let bad_subject = e.auth.issue(&claims);
    let seats = json!({"seat_ids": ["1A"]});
    let checkout = format!("/v1/events/e1/holds/{}/checkout", HoldToken::nil());
    let non_ascii_key = HeaderValue::from_bytes("clé".as_bytes()).unwrap();
    let guards = [
        ServiceGuard {
            twin: "event id",
            bad: post("/v1/events/not%20an%20id/holds", &alice, None, seats.clone()),
            good: post("/v1/events/e1/holds", &alice, None, seats.clone()),
            status: StatusCode::BAD_REQUEST,
            kind: "bad-request",
        },
        ServiceGuard {
            twin: "user id",
            bad: post("/v1/events/e1/holds", &bad_subject, None, seats.clone()),
            good: post("/v1/events/e1/holds", &alice, None, seats.clone()),
            status: StatusCode::UNAUTHORIZED,
            kind: "unauthorized",
        },
        ServiceGuard {
            twin: "idempotency key",
            bad: post(&checkout, &alice, Some(non_ascii_key), seats.clone()),
            good: post(&checkout, &alice, Some(HeaderValue::from_static("k1")), seats.clone()),
            status: StatusCode::BAD_REQUEST,
            kind: "bad-request",
        },
    ];
    e.store_down.store(true, Ordering::SeqCst);
    for g in guards {
        let (status, _, body) = answer(&e.app, g.good).await;
        assert_eq!(
            status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}: the well-formed request reaches the store: {body}",
            g.twin
        );
        assert_problem(answer(&e.app, g.bad).await, g.status, g.kind);
    }
}

/// The store's twin of each guard: a call the service would have refused first.
fn store_guards() -> Vec<(&'static str, Option<AcquireHold>, BeginPayment)> {
    let hold = AcquireHold {
        event_id: "e1".into(),
        seat_ids: vec!["1A".into()],
        holder_id: "alice".into(),
        ttl_ms: 60_000,
        max_held_seats: None,
    };
    let pay = BeginPayment {
        event_id: "e1".into(),
        holder_id: "alice".into(),
        hold_token: HoldToken::nil(),
        seat_ids: vec!["1A".into()],
        idempotency_key: "k1".into(),
        payment_ttl_ms: 60_000,
    };
    vec![
        (
            "event id",
            Some(AcquireHold { event_id: "not an id".into(), ..hold.clone() }),
            BeginPayment { event_id: "not an id".into(), ..pay.clone() },
        ),
        (
            "user id",
            Some(AcquireHold { holder_id: "not a user".into(), ..hold }),
            BeginPayment { holder_id: "not a user".into(), ..pay.clone() },
        ),
        ("idempotency key", None, BeginPayment { idempotency_key: "clé".into(), ..pay }),
    ]
}

#[tokio::test]
async fn each_guard_the_store_keeps_refuses_when_called_directly() {
    on_both(1_700_000_000_000, 7, |store, _clock| async move {
        let event = CreateEvent { event_id: "e1".into(), seat_ids: vec!["1A".into()], price_cents: 100 };
        store.create_event(&event).await.unwrap();
        let before = store.snapshot().await.unwrap();
        for (twin, hold, pay) in store_guards() {
            if let Some(hold) = hold {
                let got = store.acquire_hold(&hold).await;
                assert!(matches!(got, Err(StoreError::InvalidInput(_))), "{twin}: hold {got:?}");
            }
            let got = store.begin_payment(&pay).await;
            assert!(matches!(got, Err(StoreError::InvalidInput(_))), "{twin}: checkout {got:?}");
            assert_eq!(store.snapshot().await.unwrap(), before, "{twin}: nothing written");
        }
    })
    .await;
}
