//! The router in-process over MemStore: every endpoint, every error kind the
//! handlers produce, the idempotent checkout retry, a poisoned cache, and
//! conditional seat-map reads (ETag / If-None-Match).

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use booking::clock::ManualClock;
use booking::http::ServiceConfig;
use booking::http::auth::{Authenticator, Claims};
use booking::http::cache::{CachedSeatMap, MemCache, SeatMapCache};
use booking::ids::SeededIds;
use booking::model::{
    Booking, Compensation, CompensationId, EventId, Order, OrderId, OutboxEvent, OutboxId, PaymentOp, PaymentOpId,
    Seat, SeatId, SeatState, Snapshot,
};
use booking::payment::provider::UnreachableProvider;
use booking::service::{Service, ServiceParts};
use booking::store::outage::OutageStore;
use booking::store::*;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tower::ServiceExt;

pub(crate) struct Env {
    pub(crate) app: axum::Router,
    pub(crate) auth: Authenticator,
    clock: Arc<ManualClock>,
    cache: Arc<MemCache>,
    store: Arc<CountingStore>,
    /// The store's outage switch: on, every store call fails (`503`).
    pub(crate) store_down: Arc<AtomicBool>,
}

pub(crate) fn env(cfg: ServiceConfig) -> Env {
    let clock = ManualClock::new(1_700_000_000_000);
    let store_down = Arc::new(AtomicBool::new(false));
    let mem = Arc::new(MemStore::new(clock.clone(), Arc::new(SeededIds::new(7))));
    let store = Arc::new(CountingStore::new(OutageStore::new(mem, store_down.clone())));
    const TOKEN_SECRET: &[u8] = b"test-secret-0123456789";
    let auth = Authenticator::new(TOKEN_SECRET, clock.clone());
    let cache = Arc::new(MemCache::new(100));
    // Built as bookingd builds it: the service wraps the store in the one
    // place that invalidates the cache. No background work runs here, so no
    // payment is ever dispatched.
    let service = Service::new(ServiceParts {
        store: store.clone(),
        cache: cache.clone(),
        provider: Arc::new(UnreachableProvider),
        clock: clock.clone(),
        token_secret: TOKEN_SECRET.to_vec(),
        webhook_secret: b"webhook-secret-0123456789".to_vec(),
        config: cfg,
        workflow: Default::default(),
        sweeper: Default::default(),
        faults: booking::fault::FaultSeam::none(),
        waiting_room: booking::admission::waiting_room::WaitingRoomParts::in_memory(b"admission-secret-0123456789"),
    })
    .expect("a valid service");
    Env { app: service.router(), auth, clock, cache, store, store_down }
}

/// MemStore behind an outage switch, counting the seat-map reads (full,
/// version-only and filtered) made through it.
struct CountingStore {
    inner: OutageStore,
    seat_maps: AtomicU64,
    versions: AtomicU64,
    filtered: AtomicU64,
    /// Reads of every booking of an event, and of one order with its bookings.
    event_bookings: AtomicU64,
    order_details: AtomicU64,
}

impl CountingStore {
    fn new(inner: OutageStore) -> Self {
        Self {
            inner,
            seat_maps: AtomicU64::new(0),
            versions: AtomicU64::new(0),
            filtered: AtomicU64::new(0),
            event_bookings: AtomicU64::new(0),
            order_details: AtomicU64::new(0),
        }
    }

    /// (full seat-map reads, version reads) so far.
    fn reads(&self) -> (u64, u64) {
        (self.seat_maps.load(Ordering::SeqCst), self.versions.load(Ordering::SeqCst))
    }
}

#[async_trait]
impl Store for CountingStore {
    async fn seat_map(&self, event_id: &EventId) -> Result<Vec<Seat>, StoreError> {
        self.seat_maps.fetch_add(1, Ordering::SeqCst);
        self.inner.seat_map(event_id).await
    }
    async fn seat_map_version(&self, event_id: &EventId) -> Result<SeatMapVersion, StoreError> {
        self.versions.fetch_add(1, Ordering::SeqCst);
        self.inner.seat_map_version(event_id).await
    }
    async fn seats_in_state(
        &self,
        event_id: &EventId,
        state: SeatState,
    ) -> Result<(SeatMapVersion, Vec<Seat>), StoreError> {
        self.filtered.fetch_add(1, Ordering::SeqCst);
        self.inner.seats_in_state(event_id, state).await
    }
    async fn now_ms(&self) -> Result<i64, StoreError> {
        self.inner.now_ms().await
    }
    async fn create_event(&self, req: &CreateEvent) -> Result<(), StoreError> {
        self.inner.create_event(req).await
    }
    async fn acquire_hold(&self, req: &AcquireHold) -> Result<HoldGrant, StoreError> {
        self.inner.acquire_hold(req).await
    }
    async fn release_hold(&self, req: &ReleaseHold) -> Result<Vec<SeatId>, StoreError> {
        self.inner.release_hold(req).await
    }
    async fn sweep_expired_holds(&self, limit_seats: u32) -> Result<Vec<ExpiredHold>, StoreError> {
        self.inner.sweep_expired_holds(limit_seats).await
    }
    async fn begin_payment(&self, req: &BeginPayment) -> Result<BeginPaymentOutcome, StoreError> {
        self.inner.begin_payment(req).await
    }
    async fn record_payment_success(&self, req: &PaymentSuccess) -> Result<Recorded<SaleOutcome>, StoreError> {
        self.inner.record_payment_success(req).await
    }
    async fn record_payment_failure(&self, op: PaymentOpId, reason: &str) -> Result<Recorded<Order>, StoreError> {
        self.inner.record_payment_failure(op, reason).await
    }
    async fn record_payment_unknown(&self, op: PaymentOpId, error: &str) -> Result<Order, StoreError> {
        self.inner.record_payment_unknown(op, error).await
    }
    async fn release_unresolved_payment(&self, op: PaymentOpId, reason: &str) -> Result<Order, StoreError> {
        self.inner.release_unresolved_payment(op, reason).await
    }
    async fn claim_outbox(&self, limit: u32, lease_ms: i64) -> Result<Vec<OutboxEvent>, StoreError> {
        self.inner.claim_outbox(limit, lease_ms).await
    }
    async fn complete_outbox(&self, event_id: &EventId, outbox_id: OutboxId) -> Result<(), StoreError> {
        self.inner.complete_outbox(event_id, outbox_id).await
    }
    async fn retry_outbox(&self, ev: &EventId, id: OutboxId, error: &str, after_ms: i64) -> Result<(), StoreError> {
        self.inner.retry_outbox(ev, id, error, after_ms).await
    }
    async fn start_compensation_attempt(
        &self,
        id: CompensationId,
        lease_ms: i64,
    ) -> Result<CompensationAttempt, StoreError> {
        self.inner.start_compensation_attempt(id, lease_ms).await
    }
    async fn finish_compensation_attempt(&self, req: &CompensationResult) -> Result<Compensation, StoreError> {
        self.inner.finish_compensation_attempt(req).await
    }
    async fn compensation(&self, id: CompensationId) -> Result<Compensation, StoreError> {
        self.inner.compensation(id).await
    }
    async fn order(&self, order_id: OrderId) -> Result<Order, StoreError> {
        self.inner.order(order_id).await
    }
    async fn payment_op(&self, id: PaymentOpId) -> Result<PaymentOp, StoreError> {
        self.inner.payment_op(id).await
    }
    async fn compensations_for_order(&self, order_id: OrderId) -> Result<Vec<Compensation>, StoreError> {
        self.inner.compensations_for_order(order_id).await
    }
    async fn order_details(&self, order_id: OrderId) -> Result<OrderDetails, StoreError> {
        self.order_details.fetch_add(1, Ordering::SeqCst);
        self.inner.order_details(order_id).await
    }
    async fn bookings(&self, event_id: &EventId) -> Result<Vec<Booking>, StoreError> {
        self.event_bookings.fetch_add(1, Ordering::SeqCst);
        self.inner.bookings(event_id).await
    }
    async fn claim_reconcile(
        &self,
        limit: u32,
        backoff: ReconcileBackoff,
    ) -> Result<Vec<(Order, PaymentOp)>, StoreError> {
        self.inner.claim_reconcile(limit, backoff).await
    }
    async fn needs_resolution(&self) -> Result<Resolution, StoreError> {
        self.inner.needs_resolution().await
    }
    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        self.inner.snapshot().await
    }
}

/// A seat-map answer: status, headers, body bytes.
struct Seats {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Seats {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(|v| v.to_str().unwrap()).unwrap_or("")
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

impl Env {
    pub(crate) fn token(&self, user: &str, admin: bool) -> String {
        self.auth.issue(&Claims {
            sub: user.into(),
            events: vec!["e1".into()],
            exp_ms: self.clock_now() + 3_600_000,
            admin,
            tier: None,
        })
    }
    fn clock_now(&self) -> i64 {
        use booking::clock::Clock;
        self.clock.now_ms()
    }
    pub(crate) async fn call(
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
    /// `GET /v1/events/{event}/seats` with an optional token and `If-None-Match` lines.
    async fn seats(&self, event: &str, token: Option<&str>, if_none_match: &[&[u8]]) -> Seats {
        self.seats_at(&format!("/v1/events/{event}/seats"), token, if_none_match).await
    }
    /// A seat-map request to `uri` (path and query).
    async fn seats_at(&self, uri: &str, token: Option<&str>, if_none_match: &[&[u8]]) -> Seats {
        let mut b = Request::get(uri);
        if let Some(t) = token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        for v in if_none_match {
            b = b.header("if-none-match", axum::http::HeaderValue::from_bytes(v).unwrap());
        }
        let resp = self.app.clone().oneshot(b.body(Body::empty()).unwrap()).await.unwrap();
        let (status, headers) = (resp.status(), resp.headers().clone());
        Seats { status, headers, body: resp.into_body().collect().await.unwrap().to_bytes() }
    }
    pub(crate) async fn setup_event(&self) {
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

pub(crate) fn assert_problem(got: (StatusCode, String, Value), status: StatusCode, kind: &str) {
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
    // A status poll read every booking of the event. Confirmed, the
    // order is served by one read of that order, its bookings with it.
    let order_id: OrderId = o1["order_id"].as_str().unwrap().parse().unwrap();
    let op = e.store.order(order_id).await.unwrap().payment_op_id;
    let paid = PaymentSuccess { payment_op_id: op, provider_payment_id: "pay_1".into() };
    e.store.record_payment_success(&paid).await.unwrap();
    let before = e.store.order_details.load(Ordering::SeqCst);
    let (s, _, order) = e.call("GET", &format!("/v1/orders/{order_id}"), Some(&alice), None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(order["status"], "confirmed");
    assert_eq!(order["booking_ids"].as_array().unwrap().len(), 2, "{order}");
    assert_eq!(e.store.order_details.load(Ordering::SeqCst), before + 1, "one read of the order");
    assert_eq!(e.store.event_bookings.load(Ordering::SeqCst), 0, "never the event's bookings");
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
        StatusCode::BAD_REQUEST,
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
        StatusCode::UNAUTHORIZED,
        "bad-webhook-signature",
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
    let lie =
        br#"{"event_id":"e1","seats":[{"seat_id":"1A","state":"available","version":0,"hold_expires_at_ms":null}]}"#;
    e.cache.put(&"e1".into(), &CachedSeatMap { etag: "\"lie\"".into(), body: lie.to_vec() }).await;
    let (s, _, map) = e.call("GET", "/v1/events/e1/seats", Some(&bob), None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(map["seats"][0]["state"], "available", "reads may be stale");
    // Revalidation asks the store, never the cache: the lie's tag is not current, the store's is.
    let r = e.seats("e1", Some(&bob), &[b"\"lie\""]).await;
    assert_eq!((r.status, r.header("etag")), (StatusCode::OK, "\"lie\""));
    let current = e.store.seat_map_version(&"e1".into()).await.unwrap().etag();
    assert_eq!(e.seats("e1", Some(&bob), &[current.as_bytes()]).await.status, StatusCode::NOT_MODIFIED);
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
        "holdfast_seats_expired_unused_total",
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

#[tokio::test]
async fn a_seat_map_filtered_by_state_shows_only_those_seats_with_its_own_tag() {
    let e = env(ServiceConfig::default());
    e.setup_event().await;
    let alice = e.token("alice", false);
    let (s, _, _) = e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1B"]}))).await;
    assert_eq!(s, StatusCode::CREATED);

    let ids = |r: &Seats| -> Vec<String> {
        r.json()["seats"].as_array().unwrap().iter().map(|s| s["seat_id"].as_str().unwrap().to_string()).collect()
    };
    let before = e.store.reads();
    let available = e.seats_at("/v1/events/e1/seats?state=available", Some(&alice), &[]).await;
    assert_eq!(available.status, StatusCode::OK);
    assert_eq!(e.store.reads(), before, "a filtered view copies no whole map and reads no separate version");
    assert_eq!(e.store.filtered.load(Ordering::SeqCst), 1, "one filtered read");
    assert_eq!(ids(&available), ["1A", "1C"]);
    assert_eq!(available.json()["event_id"], "e1");
    assert_eq!((available.header("etag"), available.header("x-holdfast-source")), ("\"sm-3-1-available\"", "store"));
    let held = e.seats_at("/v1/events/e1/seats?state=held", Some(&alice), &[]).await;
    assert_eq!(ids(&held), ["1B"]);
    assert_eq!(held.header("etag"), "\"sm-3-1-held\"");
    assert!(ids(&e.seats_at("/v1/events/e1/seats?state=sold", Some(&alice), &[]).await).is_empty());

    // The view's own tag revalidates it; the whole map's tag does not (another representation).
    let r = e.seats_at("/v1/events/e1/seats?state=available", Some(&alice), &[b"\"sm-3-1-available\""]).await;
    assert_eq!((r.status, r.header("etag")), (StatusCode::NOT_MODIFIED, "\"sm-3-1-available\""));
    let r = e.seats_at("/v1/events/e1/seats?state=available", Some(&alice), &[b"\"sm-3-1\""]).await;
    assert_eq!(r.status, StatusCode::OK);
    // A filtered view never fills the cache: the next whole map still comes from the store.
    assert_eq!(e.seats("e1", Some(&alice), &[]).await.header("x-holdfast-source"), "store");

    // A bad state or an unknown parameter is a 400 problem; an unknown event stays a 404.
    for uri in ["/v1/events/e1/seats?state=gone", "/v1/events/e1/seats?color=red", "/v1/events/e1/seats?state="] {
        assert_problem(e.call("GET", uri, Some(&alice), None, None).await, StatusCode::BAD_REQUEST, "bad-request");
    }
    let empty = env(ServiceConfig::default());
    let r = empty.call("GET", "/v1/events/e1/seats?state=available", Some(&alice), None, None).await;
    assert_problem(r, StatusCode::NOT_FOUND, "unknown-event");
}

#[tokio::test]
async fn a_seat_map_read_is_conditional_on_its_etag() {
    let e = env(ServiceConfig::default());
    e.setup_event().await;
    let alice = e.token("alice", false);

    // 200: the store's map with its tag (3 seats, versions 0), then the same from the cache.
    let first = e.seats("e1", Some(&alice), &[]).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!((first.header("etag"), first.header("cache-control")), ("\"sm-3-0\"", "no-cache"));
    assert_eq!((first.header("content-type"), first.header("x-holdfast-source")), ("application/json", "store"));
    assert_eq!(first.json()["seats"].as_array().unwrap().len(), 3);
    let cached = e.seats("e1", Some(&alice), &[]).await;
    assert_eq!((cached.status, cached.header("x-holdfast-source")), (StatusCode::OK, "cache"));
    assert_eq!((cached.header("etag"), &cached.body), (first.header("etag"), &first.body));
    assert_eq!(e.store.reads(), (1, 0), "no If-None-Match: no version read");

    // The same tag back: 304, no body, no seat read.
    let tag = first.header("etag").to_string();
    let r = e.seats("e1", Some(&alice), &[tag.as_bytes()]).await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    assert!(r.body.is_empty(), "{:?}", r.body);
    assert_eq!((r.header("etag"), r.header("cache-control"), r.header("content-type")), (tag.as_str(), "no-cache", ""));
    assert_eq!(e.store.reads(), (1, 1), "a 304 reads the version only");

    // A hold on a seat: the old tag no longer matches; the new map has a new tag.
    let (s, _, _) = e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1B"]}))).await;
    assert_eq!(s, StatusCode::CREATED);
    let r = e.seats("e1", Some(&alice), &[tag.as_bytes()]).await;
    assert_eq!((r.status, r.header("x-holdfast-source")), (StatusCode::OK, "store"));
    assert_eq!(r.header("etag"), "\"sm-3-1\"");
    assert_eq!(r.json()["seats"][1]["state"], "held");
    let tag = r.header("etag").to_string();

    // Lists, weak tags, several field lines and `*` match; a stale tag or anything malformed is a 200.
    let weak = format!("W/{tag}");
    for matching in [
        vec![format!("\"sm-3-0\", {tag}, \"other\"").into_bytes()],
        vec![weak.clone().into_bytes()],
        vec![b"\"sm-3-0\"".to_vec(), weak.into_bytes()],
        vec![b"*".to_vec()],
    ] {
        let lines: Vec<&[u8]> = matching.iter().map(|l| l.as_slice()).collect();
        let r = e.seats("e1", Some(&alice), &lines).await;
        assert_eq!((r.status, r.header("etag")), (StatusCode::NOT_MODIFIED, tag.as_str()), "{matching:?}");
    }
    for other in [&b"garbage"[..], b"\"sm-3-0\"", b"*, \"sm-3-1\"", b"sm-3-1", b"\"\xff", b"", b" , "] {
        let r = e.seats("e1", Some(&alice), &[other]).await;
        assert_eq!((r.status, r.header("etag")), (StatusCode::OK, tag.as_str()), "{}", String::from_utf8_lossy(other));
        assert_eq!(r.json()["seats"].as_array().unwrap().len(), 3);
    }
}

#[tokio::test]
async fn if_none_match_changes_no_error_and_comes_after_authentication() {
    let e = env(ServiceConfig::default());
    let alice = e.token("alice", false);
    let plain = e.call("GET", "/v1/events/e1/seats", Some(&alice), None, None).await;
    assert_problem(plain.clone(), StatusCode::NOT_FOUND, "unknown-event");
    for inm in [&b"*"[..], b"\"sm-3-0\"", b"garbage"] {
        let r = e.seats("e1", Some(&alice), &[inm]).await;
        let got = (r.status, r.header("content-type").to_string(), r.json());
        assert_eq!(got, plain, "unknown event with If-None-Match {}", String::from_utf8_lossy(inm));
    }
    e.setup_event().await;
    let tag = e.seats("e1", Some(&alice), &[]).await.header("etag").to_string();
    let before = e.store.reads();
    let anonymous = e.call("GET", "/v1/events/e1/seats", None, None, None).await;
    assert_problem(anonymous.clone(), StatusCode::UNAUTHORIZED, "unauthorized");
    let r = e.seats("e1", None, &[tag.as_bytes()]).await;
    assert_eq!((r.status, r.header("content-type").to_string(), r.json()), anonymous);
    assert_eq!(r.header("etag"), "", "no tag leaks to an unauthenticated caller");
    // A token for another event: 403, the event's tag is not revealed.
    let other = e.auth.issue(&Claims {
        sub: "bob".into(),
        events: vec!["e2".into()],
        exp_ms: e.clock_now() + 60_000,
        admin: false,
        tier: None,
    });
    let r = e.seats("e1", Some(&other), &[b"*"]).await;
    assert_eq!((r.status, r.header("etag")), (StatusCode::FORBIDDEN, ""));
    assert_eq!(e.store.reads(), before, "refused requests read nothing");
}

#[tokio::test]
async fn a_cached_seat_map_carries_the_store_s_etag() {
    let e = env(ServiceConfig::default());
    e.setup_event().await;
    let alice = e.token("alice", false);
    e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1A","1C"]}))).await;
    let r = e.seats("e1", Some(&alice), &[]).await;
    assert_eq!(r.header("x-holdfast-source"), "store");
    let entry = e.cache.get(&"e1".into()).await.expect("the read cached the map");
    let version = e.store.seat_map_version(&"e1".into()).await.unwrap();
    let seats = e.store.seat_map(&"e1".into()).await.unwrap();
    assert_eq!(version, SeatMapVersion::of_seats(&seats));
    assert_eq!(version, SeatMapVersion { seats: 3, version_sum: 2 });
    assert_eq!((entry.etag.as_str(), entry.body.as_slice()), (version.etag().as_str(), r.body.as_ref()));
    let hit = e.seats("e1", Some(&alice), &[]).await;
    assert_eq!((hit.header("x-holdfast-source"), hit.header("etag")), ("cache", version.etag().as_str()));
    // The 304 for a cached map: the tag the cache served is the store's current one.
    assert_eq!(e.seats("e1", Some(&alice), &[entry.etag.as_bytes()]).await.status, StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn a_user_past_the_seat_cap_gets_409_hold_limit() {
    let e = env(ServiceConfig { max_held_seats_per_user: Some(2), ..ServiceConfig::default() });
    e.setup_event().await;
    let alice = e.token("alice", false);
    let (s, _, _) =
        e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1A", "1B"]}))).await;
    assert_eq!(s, StatusCode::CREATED);
    let got = e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(json!({"seat_ids":["1C"]}))).await;
    assert!(got.2["detail"].as_str().unwrap_or_default().contains("at most 2"), "{:?}", got.2);
    assert_problem(got, StatusCode::CONFLICT, "hold-limit");
    // Another user may take the seat alice could not.
    let bob = e.token("bob", false);
    let (s, _, _) = e.call("POST", "/v1/events/e1/holds", Some(&bob), None, Some(json!({"seat_ids":["1C"]}))).await;
    assert_eq!(s, StatusCode::CREATED);
}

/// Authentication comes before validation: a caller without a valid token
/// gets 401 whatever is wrong with its path or body (and so learns nothing
/// about what the service would refuse); with one, the same request gets
/// the validation error. The Bearer scheme is case-insensitive (RFC 9110).
#[tokio::test]
async fn a_caller_without_a_valid_token_gets_401_before_any_validation() {
    let e = env(ServiceConfig::default());
    e.setup_event().await;
    let bad_path = "/v1/events/not%20an%20id/holds";
    let bad_body = json!({"seat_ids": "not a list"});
    for (uri, body) in [(bad_path, json!({"seat_ids": ["1A"]})), ("/v1/events/e1/holds", bad_body.clone())] {
        assert_problem(
            e.call("POST", uri, None, None, Some(body.clone())).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        );
        assert_problem(
            e.call("POST", uri, Some("forged.token"), None, Some(body)).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        );
    }
    assert_problem(
        e.call("POST", "/v1/events", None, None, Some(json!({"event_id": 5}))).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_problem(
        e.call("GET", "/v1/orders/not-a-uuid", None, None, None).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    // With a valid token the same requests get their validation errors.
    let alice = e.token("alice", false);
    let (s, _, _) = e.call("POST", bad_path, Some(&alice), None, Some(json!({"seat_ids": ["1A"]}))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _, _) = e.call("POST", "/v1/events/e1/holds", Some(&alice), None, Some(bad_body)).await;
    assert!(s.is_client_error() && s != StatusCode::UNAUTHORIZED, "{s}");
    // Scheme in lower case.
    let req = Request::builder()
        .method("POST")
        .uri("/v1/events/e1/holds")
        .header("authorization", format!("bearer {alice}"))
        .header("content-type", "application/json")
        .body(Body::from(json!({"seat_ids": ["1A"]}).to_string()))
        .unwrap();
    assert_eq!(e.app.clone().oneshot(req).await.unwrap().status(), StatusCode::CREATED);
}

/// Errors the framework answers before a handler runs are problem documents
/// too, and a body that is not the operation's JSON is one status: 400.
#[tokio::test]
async fn framework_errors_are_problem_documents_and_a_malformed_body_is_a_400() {
    let e = env(ServiceConfig { max_body_bytes: 1024, ..ServiceConfig::default() });
    e.setup_event().await;
    let alice = e.token("alice", false);
    let send = |method: &str, uri: &str, ctype: Option<&str>, body: String| {
        let mut b = Request::builder().method(method).uri(uri).header("authorization", format!("Bearer {alice}"));
        if let Some(c) = ctype {
            b = b.header("content-type", c);
        }
        let req = b.body(Body::from(body)).unwrap();
        let app = e.app.clone();
        async move {
            let resp = app.oneshot(req).await.unwrap();
            let (parts, body) = resp.into_parts();
            let bytes = body.collect().await.unwrap().to_bytes();
            (parts, serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null))
        }
    };
    // (method, path, content type, body, status, problem kind)
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, String, u16, &'a str);
    let cases: [Case; 6] = [
        ("DELETE", "/v1/events", None, String::new(), 405, "method-not-allowed"),
        ("POST", "/v1/events/e1/holds", Some("application/json"), "x".repeat(5_000), 413, "payload-too-large"),
        ("POST", "/v1/webhooks/provider", Some("application/json"), "x".repeat(5_000), 413, "payload-too-large"),
        ("POST", "/v1/events/e1/holds", None, r#"{"seat_ids":["1A"]}"#.into(), 415, "unsupported-media-type"),
        ("POST", "/v1/events/e1/holds", Some("application/json"), r#"{"seat_ids":"1A"}"#.into(), 400, "bad-request"),
        (
            "POST",
            "/v1/events/e1/holds",
            Some("application/json"),
            r#"{"seat_ids":["1A"],"x":1}"#.into(),
            400,
            "bad-request",
        ),
    ];
    for (method, uri, ctype, body, status, kind) in cases {
        let (parts, v) = send(method, uri, ctype, body).await;
        assert_eq!(parts.status.as_u16(), status, "{method} {uri}: {v}");
        assert_eq!(parts.headers.get("content-type").unwrap(), "application/problem+json", "{method} {uri}");
        assert_eq!(v["type"], format!("urn:holdfast:problem:{kind}"), "{method} {uri}: {v}");
        if status == 413 {
            assert!(v["detail"].as_str().unwrap().contains("1024 bytes"), "the 413 states the limit: {v}");
        }
        if status == 405 {
            assert!(parts.headers.get("allow").is_some(), "405 keeps Allow");
        }
    }
}

/// A method a path does not route is a 405 problem that names the methods it
/// does route, in its detail and in `Allow` (RFC 9110 requires the header on
/// a 405), for every route of `ROUTES` (so the router and that table agree).
#[tokio::test]
async fn a_wrong_method_is_a_405_naming_the_allowed_methods() {
    let e = env(ServiceConfig::default());
    let send = |method: &str, uri: &str| {
        let req = Request::builder().method(method).uri(uri).body(Body::empty()).unwrap();
        let app = e.app.clone();
        async move {
            let (parts, body) = app.oneshot(req).await.unwrap().into_parts();
            let bytes = body.collect().await.unwrap().to_bytes();
            (parts, serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null))
        }
    };
    let (parts, v) = send("GET", "/v1/events/e1/holds").await;
    assert_eq!(parts.status, StatusCode::METHOD_NOT_ALLOWED, "{v}");
    assert_eq!(parts.headers["content-type"], "application/problem+json");
    assert_eq!(parts.headers["allow"], "POST");
    assert_eq!(v["type"], "urn:holdfast:problem:method-not-allowed");
    assert_eq!(v["status"], 405);
    assert_eq!(v["detail"], "method not allowed on this path; allowed: POST");

    // GET and POST on one path; axum answers HEAD wherever it answers GET.
    let (parts, v) = send("DELETE", "/v1/events/e1/queue").await;
    assert_eq!(parts.status, StatusCode::METHOD_NOT_ALLOWED, "{v}");
    assert_eq!(parts.headers["allow"], "POST,GET,HEAD");
    assert_eq!(v["detail"], "method not allowed on this path; allowed: POST, GET, HEAD");

    let mut paths: Vec<&str> = booking::http::ROUTES.iter().map(|(_, path)| *path).collect();
    paths.sort();
    paths.dedup();
    for path in paths {
        let mut want: Vec<String> = booking::http::ROUTES
            .iter()
            .filter(|(_, p)| *p == path)
            .flat_map(
                |(m, _)| if *m == "get" { vec!["GET".to_string(), "HEAD".to_string()] } else { vec![m.to_uppercase()] },
            )
            .collect();
        want.sort();
        // Every `{param}` filled in with `x`.
        let uri: String =
            path.split('/').map(|seg| if seg.starts_with('{') { "x" } else { seg }).collect::<Vec<_>>().join("/");
        let (parts, v) = send("PATCH", &uri).await;
        assert_eq!(parts.status, StatusCode::METHOD_NOT_ALLOWED, "PATCH {uri}: {v}");
        let allow = parts.headers.get("allow").unwrap_or_else(|| panic!("PATCH {uri}: no Allow")).to_str().unwrap();
        let mut got: Vec<String> = allow.split(',').map(|m| m.trim().to_string()).collect();
        got.sort();
        assert_eq!(got, want, "PATCH {uri}: Allow {allow:?}");
        let detail = v["detail"].as_str().unwrap();
        for method in &want {
            assert!(detail.contains(method.as_str()), "PATCH {uri}: {detail}");
        }
    }
}
