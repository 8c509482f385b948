//! The waiting room over HTTP, in-process on MemStore and MemRooms with a
//! manual clock: an operator opens a room, users join and poll, the
//! admission law admits them in order up to the target, admitted users hold
//! and check out with their admission token, and every bypass is refused
//! with its own problem kind before the store is touched.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use booking::admission::waiting_room::WaitingRoomParts;
use booking::clock::ManualClock;
use booking::http::ServiceConfig;
use booking::http::auth::{Authenticator, Claims};
use booking::http::cache::MemCache;
use booking::ids::SeededIds;
use booking::payment::provider::UnreachableProvider;
use booking::service::{Service, ServiceParts};
use booking::store::MemStore;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

const T0: i64 = 1_700_000_000_000;
const TOKEN_SECRET: &[u8] = b"test-secret-0123456789";

struct Env {
    service: Service,
    auth: Authenticator,
    clock: Arc<ManualClock>,
}

fn env() -> Env {
    let clock = ManualClock::new(T0);
    let store = Arc::new(MemStore::new(clock.clone(), Arc::new(SeededIds::new(7))));
    let service = Service::new(ServiceParts {
        store,
        cache: Arc::new(MemCache::new(100)),
        provider: Arc::new(UnreachableProvider),
        clock: clock.clone(),
        token_secret: TOKEN_SECRET.to_vec(),
        webhook_secret: b"webhook-secret-0123456789".to_vec(),
        config: ServiceConfig { hold_attempts_per_minute: 10_000, ..ServiceConfig::default() },
        workflow: Default::default(),
        sweeper: Default::default(),
        faults: booking::fault::FaultSeam::none(),
        waiting_room: WaitingRoomParts::in_memory(b"admission-secret-0123456789"),
    })
    .expect("a valid service");
    Env { service, auth: Authenticator::new(TOKEN_SECRET, clock.clone()), clock }
}

struct Answer {
    status: StatusCode,
    retry_after: Option<String>,
    body: Value,
}

impl Answer {
    fn kind(&self) -> &str {
        self.body["type"].as_str().and_then(|t| t.strip_prefix("urn:holdfast:problem:")).unwrap_or("")
    }
}

impl Env {
    fn token(&self, user: &str, admin: bool, tier: Option<u8>) -> String {
        self.auth.issue(&Claims { sub: user.into(), events: vec!["*".into()], exp_ms: T0 + 86_400_000, admin, tier })
    }

    async fn call(&self, method: &str, path: &str, user: &str, admission: Option<&str>, body: Option<Value>) -> Answer {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {}", self.token(user, user == "ops", None)));
        if let Some(a) = admission {
            req = req.header("admission-token", a);
        }
        if method == "POST" && path.ends_with("/checkout") {
            req = req.header("idempotency-key", format!("k-{user}"));
        }
        let req = match body {
            Some(b) => req.header("content-type", "application/json").body(Body::from(b.to_string())),
            None => req.body(Body::empty()),
        }
        .unwrap();
        let resp = self.service.router().oneshot(req).await.unwrap();
        let status = resp.status();
        let retry_after = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let body = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
        Answer { status, retry_after, body }
    }

    async fn setup(&self, policy: &str, target: u32) {
        let ev =
            json!({"event_id": "e1", "seat_ranges": [{"prefix": "s", "first": 1, "count": 20}], "price_cents": 100});
        assert_eq!(self.call("POST", "/v1/events", "ops", None, Some(ev)).await.status, StatusCode::CREATED);
        let room = json!({"policy": policy, "opens_at": "2023-11-14T22:13:30Z", "target_active_sessions": target});
        let a = self.call("PUT", "/v1/events/e1/waiting-room", "ops", None, Some(room)).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    }

    async fn tick(&self) -> usize {
        self.service.admission_tick().await.unwrap().iter().map(|r| r.admitted.len()).sum()
    }

    async fn admission_of(&self, user: &str) -> String {
        let a = self.call("GET", "/v1/events/e1/queue", user, None, None).await;
        assert_eq!(a.body["state"], "admitted", "{user}: {}", a.body);
        a.body["admission_token"].as_str().unwrap().to_string()
    }
}

#[tokio::test]
async fn users_wait_in_order_and_only_the_admitted_hold() {
    let e = env();
    e.setup("fifo", 2).await;
    // The sale opens at 2023-11-14T22:13:30Z = T0 + 10 s.
    for (i, u) in ["ann", "bob", "cat"].iter().enumerate() {
        let a = e.call("POST", "/v1/events/e1/queue", u, None, None).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert_eq!((a.body["state"].as_str(), a.body["position"].as_u64()), (Some("waiting"), Some(i as u64 + 1)));
        assert!(a.retry_after.is_some(), "a waiting client is told when to ask again");
        assert_eq!(a.body["opens_at"], "2023-11-14T22:13:30.000Z", "times for people are RFC 3339");
    }
    // Before opening nobody is admitted, and a hold without admission is refused before the store.
    assert_eq!(e.tick().await, 0);
    let hold = json!({"seat_ids": ["s1"]});
    let a = e.call("POST", "/v1/events/e1/holds", "ann", None, Some(hold.clone())).await;
    assert_eq!((a.status, a.kind()), (StatusCode::FORBIDDEN, "admission-required"));
    e.clock.advance_ms(10_000);
    // The law admits about target/90 s per second: tick until the target (2) is reached.
    let mut admitted = 0;
    for _ in 0..200 {
        e.clock.advance_ms(1_000);
        admitted += e.tick().await;
    }
    assert_eq!(admitted, 2, "never past the target");
    let ann = e.admission_of("ann").await;
    let bob = e.admission_of("bob").await;
    let cat = e.call("GET", "/v1/events/e1/queue", "cat", None, None).await;
    assert_eq!((cat.body["state"].as_str(), cat.body["position"].as_u64()), (Some("waiting"), Some(1)));
    assert!(cat.body["expected_wait_s"].as_u64().is_some() && cat.body["expected_admission_at"].is_string());

    // Bypasses, each refused with its own kind.
    let a = e.call("POST", "/v1/events/e1/holds", "cat", Some(&ann), Some(hold.clone())).await;
    assert_eq!((a.status, a.kind()), (StatusCode::FORBIDDEN, "admission-other-user"), "a borrowed token");
    // The payload changed (another position), the MAC kept.
    let flip = if ann.as_bytes()[5] == b'A' { "B" } else { "A" };
    let forged = format!("{}{flip}{}", &ann[..5], &ann[6..]);
    let a = e.call("POST", "/v1/events/e1/holds", "ann", Some(&forged), Some(hold.clone())).await;
    assert_eq!((a.status, a.kind()), (StatusCode::FORBIDDEN, "admission-forged"));
    let a = e.call("POST", "/v1/events/e1/holds", "ann", Some("junk"), Some(hold.clone())).await;
    assert_eq!((a.status, a.kind()), (StatusCode::FORBIDDEN, "admission-malformed"));

    // Ann holds and checks out with her token; the purchase ends her session.
    let a = e.call("POST", "/v1/events/e1/holds", "ann", Some(&ann), Some(hold.clone())).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let token = a.body["hold_token"].as_str().unwrap().to_string();
    let path = format!("/v1/events/e1/holds/{token}/checkout");
    let a = e.call("POST", &path, "ann", Some(&ann), Some(hold.clone())).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let a = e.call("POST", &path, "ann", Some(&ann), Some(hold.clone())).await;
    assert_eq!(a.status, StatusCode::OK, "a retried checkout is answered from its key: {}", a.body);
    let a = e.call("POST", "/v1/events/e1/holds", "ann", Some(&ann), Some(json!({"seat_ids": ["s2"]}))).await;
    assert_eq!((a.status, a.kind()), (StatusCode::FORBIDDEN, "admission-session-ended"), "used after its session");
    let a = e.call("GET", "/v1/events/e1/queue", "ann", None, None).await;
    assert_eq!(a.body["state"], "session_ended");

    // The ended session makes room for cat, at the law's pace (2 sessions / 90 s).
    let mut ticks = 0;
    while e.tick().await == 0 {
        ticks += 1;
        assert!(ticks < 100, "cat is admitted within 100 s of a free place");
        e.clock.advance_ms(1_000);
    }
    let cat = e.admission_of("cat").await;
    // Bob's admission expires after its ttl (600 s): refused as expired.
    e.clock.advance_ms(601_000);
    let a = e.call("POST", "/v1/events/e1/holds", "bob", Some(&bob), Some(json!({"seat_ids": ["s3"]}))).await;
    assert_eq!((a.status, a.kind()), (StatusCode::FORBIDDEN, "admission-expired"));
    let _ = cat;
}

/// Postmortem: a checkout retried just after its admission expired was
/// refused `admission-expired`, though its first attempt had made the order:
/// the gate read the token's expiry before seeing the retry, so a buyer whose
/// answer was lost could never learn of their order (found by the full
/// on-sale's idempotent-retry check). A purchase's retry now passes past the
/// expiry; any other use of the expired token is still refused.
#[tokio::test]
async fn a_purchase_s_retry_is_answered_past_the_admission_s_expiry() {
    let e = env();
    e.setup("fifo", 1).await;
    assert_eq!(e.call("POST", "/v1/events/e1/queue", "ann", None, None).await.status, StatusCode::OK);
    e.clock.advance_ms(10_000);
    for _ in 0..200 {
        e.clock.advance_ms(1_000);
        if e.tick().await > 0 {
            break;
        }
    }
    let ann = e.admission_of("ann").await;
    let hold = json!({"seat_ids": ["s1"]});
    let a = e.call("POST", "/v1/events/e1/holds", "ann", Some(&ann), Some(hold.clone())).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let path = format!("/v1/events/e1/holds/{}/checkout", a.body["hold_token"].as_str().unwrap());
    let made = e.call("POST", &path, "ann", Some(&ann), Some(hold.clone())).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    // Past the session's lifetime (600 s).
    e.clock.advance_ms(601_000);
    let a = e.call("POST", &path, "ann", Some(&ann), Some(hold.clone())).await;
    assert_eq!(a.status, StatusCode::OK, "the purchase's retry is answered from its key: {}", a.body);
    assert_eq!(a.body["order_id"], made.body["order_id"]);
    let other = "/v1/events/e1/holds/00000000-0000-4000-8000-000000000001/checkout";
    let a = e.call("POST", other, "ann", Some(&ann), Some(hold.clone())).await;
    assert_eq!((a.status, a.kind()), (StatusCode::FORBIDDEN, "admission-expired"), "another checkout");
    let a = e.call("POST", "/v1/events/e1/holds", "ann", Some(&ann), Some(json!({"seat_ids": ["s2"]}))).await;
    assert_eq!((a.status, a.kind()), (StatusCode::FORBIDDEN, "admission-expired"), "a hold");
}

#[tokio::test]
async fn another_event_s_token_and_events_without_a_room() {
    let e = env();
    e.setup("fifo", 5).await;
    let ev2 = json!({"event_id": "e2", "seat_ranges": [{"prefix": "s", "first": 1, "count": 5}], "price_cents": 100});
    assert_eq!(e.call("POST", "/v1/events", "ops", None, Some(ev2)).await.status, StatusCode::CREATED);
    let room = json!({"policy": "fifo", "opens_at": "2023-11-14T22:13:20Z", "target_active_sessions": 5});
    assert_eq!(e.call("PUT", "/v1/events/e2/waiting-room", "ops", None, Some(room)).await.status, StatusCode::OK);
    e.call("POST", "/v1/events/e1/queue", "ann", None, None).await;
    e.clock.advance_ms(20_000);
    for _ in 0..30 {
        e.clock.advance_ms(1_000);
        e.tick().await;
    }
    let ann = e.admission_of("ann").await;
    let a = e.call("POST", "/v1/events/e2/holds", "ann", Some(&ann), Some(json!({"seat_ids": ["s1"]}))).await;
    assert_eq!((a.status, a.kind()), (StatusCode::FORBIDDEN, "admission-other-event"));
    // An event without a room needs no token.
    let ev3 = json!({"event_id": "e3", "seat_ranges": [{"prefix": "s", "first": 1, "count": 5}], "price_cents": 100});
    assert_eq!(e.call("POST", "/v1/events", "ops", None, Some(ev3)).await.status, StatusCode::CREATED);
    let a = e.call("POST", "/v1/events/e3/holds", "ann", None, Some(json!({"seat_ids": ["s1"]}))).await;
    assert_eq!(a.status, StatusCode::CREATED);
    // A token longer than the document's maxLength is a 400 on any event (the fuzzer's finding).
    let long = "a".repeat(booking::admission::token::MAX_ADMISSION_TOKEN_LEN + 1);
    let a = e.call("POST", "/v1/events/e3/holds", "ann", Some(&long), Some(json!({"seat_ids": ["s2"]}))).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    let a = e.call("POST", "/v1/events/e3/queue", "ann", None, None).await;
    assert_eq!((a.status, a.kind()), (StatusCode::NOT_FOUND, "no-waiting-room"));
    // Reopening with another configuration conflicts; a bad one is a 400; unknown events 404.
    let other = json!({"policy": "lottery", "opens_at": "2023-11-14T22:13:20Z", "target_active_sessions": 5});
    let a = e.call("PUT", "/v1/events/e2/waiting-room", "ops", None, Some(other)).await;
    assert_eq!((a.status, a.kind()), (StatusCode::CONFLICT, "waiting-room-conflict"));
    let bad = json!({"policy": "fifo", "opens_at": "tomorrow", "target_active_sessions": 5});
    assert_eq!(
        e.call("PUT", "/v1/events/e2/waiting-room", "ops", None, Some(bad)).await.status,
        StatusCode::BAD_REQUEST
    );
    let none = json!({"policy": "fifo", "opens_at": "2023-11-14T22:13:20Z", "target_active_sessions": 5});
    let a = e.call("PUT", "/v1/events/nope/waiting-room", "ops", None, Some(none.clone())).await;
    assert_eq!((a.status, a.kind()), (StatusCode::NOT_FOUND, "unknown-event"));
    let a = e.call("PUT", "/v1/events/e3/waiting-room", "ann", None, Some(none)).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN, "operators only");
}

#[tokio::test]
async fn a_lottery_publishes_its_commitment_and_reveals_a_recomputable_order() {
    use sha2::{Digest, Sha256};
    let e = env();
    e.setup("lottery", 100).await;
    let a = e.call("GET", "/v1/events/e1/queue/lottery", "ann", None, None).await;
    let commitment = a.body["commitment"].as_str().unwrap().to_string();
    assert!(a.body["seed"].is_null() && a.body["joiners"].is_null(), "nothing revealed before the draw");
    let users: Vec<String> = (0..20).map(|i| format!("u{i:02}")).collect();
    for u in &users {
        let a = e.call("POST", "/v1/events/e1/queue", u, None, None).await;
        assert_eq!(a.body["state"], "awaiting_draw");
    }
    e.clock.advance_ms(10_000);
    let mut order = Vec::new();
    for _ in 0..300 {
        e.clock.advance_ms(1_000);
        for r in e.service.admission_tick().await.unwrap() {
            order.extend(r.admitted.into_iter().map(|(u, _)| u));
        }
    }
    assert_eq!(order.len(), 20);
    let a = e.call("GET", "/v1/events/e1/queue/lottery", "ann", None, None).await;
    let seed = hex::decode(a.body["seed"].as_str().unwrap()).unwrap();
    assert_eq!(hex::encode(Sha256::digest(&seed)), commitment, "the revealed seed is the one committed to");
    let mut recomputed = users.clone();
    recomputed.sort_by_key(|u| {
        let mut h = Sha256::new();
        h.update(&seed);
        h.update(u.as_bytes());
        h.finalize().to_vec()
    });
    assert_eq!(order, recomputed, "anyone recomputes the admission order from the reveal");
    assert_ne!(order, users, "the draw is not arrival order");
}

/// Queue polls had no limit: 500 polls of one user in 0.7 s were all
/// answered (each a room read). Now a user's polls of one event are capped
/// per minute: past the cap a `429 rate-limited` with `Retry-After` until
/// the next minute; other users and the next minute are not affected.
#[tokio::test]
async fn a_user_polling_past_the_cap_is_told_when_to_ask_again() {
    use booking::http::state::DEFAULT_QUEUE_POLLS_PER_MINUTE;
    let e = env();
    e.setup("fifo", 2).await;
    for u in ["ann", "bob"] {
        assert_eq!(e.call("POST", "/v1/events/e1/queue", u, None, None).await.status, StatusCode::OK);
    }
    for i in 0..DEFAULT_QUEUE_POLLS_PER_MINUTE {
        let a = e.call("GET", "/v1/events/e1/queue", "ann", None, None).await;
        assert_eq!(a.status, StatusCode::OK, "poll {i}: {}", a.body);
    }
    let a = e.call("GET", "/v1/events/e1/queue", "ann", None, None).await;
    assert_eq!((a.status, a.kind()), (StatusCode::TOO_MANY_REQUESTS, "rate-limited"), "{}", a.body);
    let wait_s: u64 = a.retry_after.as_deref().expect("Retry-After").parse().unwrap();
    assert!((1..=60).contains(&wait_s), "{wait_s}");
    assert!(a.body["detail"].as_str().unwrap().contains("queue polls"), "{}", a.body);
    assert_eq!(e.call("GET", "/v1/events/e1/queue", "bob", None, None).await.status, StatusCode::OK, "per user");
    e.clock.advance_ms(i64::try_from(wait_s).unwrap() * 1_000);
    assert_eq!(e.call("GET", "/v1/events/e1/queue", "ann", None, None).await.status, StatusCode::OK, "next minute");
}
