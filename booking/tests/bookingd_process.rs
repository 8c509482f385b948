//! `bookingd` and `fake-provider` as real processes against the real
//! PostgreSQL and Redis: the full flow through every endpoint, payments that
//! succeed, decline and succeed late by webhook, signed and forged webhooks,
//! the operators' metrics, a crash between commit and response then a retry
//! with the same key, a poisoned Redis cache, Redis stopped (and back)
//! mid-test, Redis down at start, abandoned holds, the database gone (503), graceful shutdown, and
//! the command line (`--help`, `migrate`, `issue-token`, bad flags).
//!
//! Together with `http_router.rs` (the router over MemStore) these cover every
//! problem `type` the service emits:
//!
//! | type | where |
//! |---|---|
//! | bad-request | router (path, body shape); here (refund webhook without refund_key) |
//! | unauthorized, forbidden, not-found | router and here (admin endpoints, other user's order, unknown route) |
//! | rate-limited, payload-too-large, unsupported-media-type | router |
//! | idempotency-key-required, idempotency-key-reused | router; here (required) |
//! | invalid-input, unknown-seat, hold-expired, stale-token, not-holder, hold-not-found | router; here (hold-not-found) |
//! | unknown-event, event-exists, seat-unavailable | router and here |
//! | bad-webhook, bad-webhook-signature, unknown-compensation | here |
//! | backend (503) | here (the database dropped under a running bookingd) |
//!
//! Other store error kinds never reach HTTP: unknown-order and
//! unknown-payment-op become `not-found`, payment-conflict is a 204 (the first
//! outcome stands), and deadline-not-passed, order-not-open,
//! unknown-outbox-event and compensation-not-due are the workflow's own.
//!
//! Parallel-safe: each test has its own database, its own event ids (the
//! shared Redis is keyed by event), free ports (retried if taken meanwhile) and
//! bounded waits. Processes are killed on drop; a passing test drops its database.

use crate::common;
use crate::process_support;

use booking::clock::{Clock, SystemClock};
use booking::http::auth::{Authenticator, Claims};
use booking::ids::{IdSource, RandomIds};
use booking::payment::webhook::{SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookEvent, WebhookKind, sign};
use bytes::Bytes;
use common::TestDb;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use process_support::{Proc, db_url, free_port};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use test_services::link::Link;
use tokio::process::Command;
use uuid::Uuid;

const TOKEN_SECRET: &str = "it-token-secret-0123456789";
const WEBHOOK_SECRET: &str = "it-webhook-secret-0123456789";
/// Bound on every wait: a process to listen or exit, a state to be reached.
const WAIT: Duration = Duration::from_secs(20);
/// Bound on one HTTP call.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause between two polls of an eventual state.
const POLL: Duration = Duration::from_millis(50);
/// Attempts to start a process on a port that was free a moment ago.
const PORT_ATTEMPTS: usize = 5;

// ---------------------------------------------------------------- processes

fn bookingd_cmd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bookingd"));
    cmd.env("HOLDFAST_TOKEN_SECRET", TOKEN_SECRET)
        .env("HOLDFAST_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .env("RUST_LOG", "warn")
        .env_remove("DATABASE_URL")
        .env_remove("REDIS_URL")
        .env_remove("PROVIDER_URL");
    cmd
}

/// What a stack runs with.
#[derive(Default, Clone)]
struct Opts {
    redis_url: Option<String>,
    bookingd_args: Vec<String>,
    /// bookingd reaches PostgreSQL through a link the test can cut.
    db_link: bool,
}

/// A database, a fake provider and a bookingd serving on it.
struct Stack {
    db: TestDb,
    db_url: String,
    opts: Opts,
    provider: Proc,
    provider_api: Api,
    bookingd: Proc,
    api: Api,
    /// The link bookingd's database connections go through (`Opts::db_link`).
    db_link: Option<Link>,
}

/// `url` with its `host:port` replaced by `addr`'s.
fn via(url: &str, addr: SocketAddr) -> String {
    let opts: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
    let server = format!("{}:{}", opts.get_host(), opts.get_port());
    assert!(url.contains(&server), "{url} names its server as {server}");
    url.replacen(&server, &addr.to_string(), 1)
}

async fn spawn_bookingd(
    db_url: &str,
    listen: &str,
    provider: SocketAddr,
    opts: &Opts,
) -> Result<(Proc, SocketAddr), String> {
    let mut cmd = bookingd_cmd();
    cmd.args(["serve", "--database-url", db_url, "--provider-url", &format!("http://{provider}"), "--listen", listen]);
    if let Some(r) = &opts.redis_url {
        cmd.args(["--redis-url", r]);
    }
    cmd.args(&opts.bookingd_args);
    Proc::start("bookingd", cmd).await
}

impl Stack {
    async fn start(opts: Opts) -> Stack {
        let db = TestDb::create(2).await;
        let mut db_url = db_url(&db.name);
        let db_link = match opts.db_link {
            true => {
                let o: sqlx::postgres::PgConnectOptions = db_url.parse().unwrap();
                let server = tokio::net::lookup_host((o.get_host(), o.get_port())).await.unwrap().next().unwrap();
                let link = Link::open(server).await.unwrap();
                db_url = via(&db_url, link.addr());
                Some(link)
            }
            false => None,
        };
        let mut last_err = String::new();
        for _ in 0..PORT_ATTEMPTS {
            // The provider must know bookingd's webhook URL first: reserve a port
            // for bookingd; if someone takes it meanwhile, start both again.
            let port = free_port();
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_fake-provider"));
            cmd.args([
                "--listen",
                "127.0.0.1:0",
                "--webhook-url",
                &format!("http://127.0.0.1:{port}/v1/webhooks/provider"),
                "--webhook-secret",
                WEBHOOK_SECRET,
            ])
            .env("RUST_LOG", "warn");
            let (provider, provider_addr) = Proc::start("fake-provider", cmd).await.unwrap();
            match spawn_bookingd(&db_url, &format!("127.0.0.1:{port}"), provider_addr, &opts).await {
                Ok((bookingd, addr)) => {
                    let api = Api::new(addr);
                    let provider_api = Api::new(provider_addr);
                    return Stack { db, db_url, opts, provider, provider_api, bookingd, api, db_link };
                }
                Err(e) if e.contains("cannot listen") => last_err = e,
                Err(e) => panic!("{e}"),
            }
        }
        panic!("no free port for bookingd after {PORT_ATTEMPTS} attempts: {last_err}");
    }

    /// Starts bookingd again (after it exited) with `args` instead of the
    /// stack's extra arguments, on its old port if that is still free.
    async fn restart_bookingd(&mut self, args: &[&str]) {
        let opts = Opts { bookingd_args: args.iter().map(|s| s.to_string()).collect(), ..self.opts.clone() };
        let provider = self.provider_api.addr;
        let (p, addr) = match spawn_bookingd(&self.db_url, &self.api.addr.to_string(), provider, &opts).await {
            Ok(ok) => ok,
            Err(e) if e.contains("cannot listen") => {
                spawn_bookingd(&self.db_url, "127.0.0.1:0", provider, &opts).await.unwrap()
            }
            Err(e) => panic!("{e}"),
        };
        self.bookingd = p;
        self.api = Api::new(addr);
    }

    /// Stops the processes and drops the database.
    async fn finish(self) {
        drop(self.bookingd);
        drop(self.provider);
        self.db.drop_db().await;
    }

    /// Creates event `event_id` with `seats` at 2500 cents (admin).
    async fn create_event(&self, event_id: &str, seats: &[&str]) {
        let r = self
            .api
            .post("/v1/events")
            .bearer(&token("ops", &["*"], true))
            .json(json!({"event_id": event_id, "seat_ids": seats, "price_cents": 2500}))
            .send()
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }

    /// Sets the fake provider's fault knobs.
    async fn faults(&self, faults: Value) {
        let r = self.provider_api.post("/admin/faults").json(faults).send().await;
        assert_eq!(r.status, 200, "{}", r.text);
    }

    /// The fake provider's books.
    async fn ledger(&self) -> Value {
        let r = self.provider_api.get("/admin/ledger").send().await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    /// Holds `seats` of `event` for the owner of `tok`; returns the hold token.
    async fn hold(&self, event: &str, tok: &str, seats: &[&str]) -> String {
        let r = self
            .api
            .post(&format!("/v1/events/{event}/holds"))
            .bearer(tok)
            .json(json!({"seat_ids": seats}))
            .send()
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        r.body["hold_token"].as_str().unwrap().to_string()
    }

    /// Checks `seats` of hold `hold` out with `key`.
    async fn checkout(&self, event: &str, tok: &str, hold: &str, key: &str, seats: &[&str]) -> Resp {
        self.api
            .post(&format!("/v1/events/{event}/holds/{hold}/checkout"))
            .bearer(tok)
            .header("idempotency-key", key)
            .json(json!({"seat_ids": seats}))
            .send()
            .await
    }

    /// Polls the order until its status is `want` (bounded).
    async fn wait_order(&self, tok: &str, order_id: &str, want: &str) -> Value {
        let mut last = Value::Null;
        let deadline = tokio::time::Instant::now() + WAIT;
        while tokio::time::Instant::now() < deadline {
            let r = self.api.get(&format!("/v1/orders/{order_id}")).bearer(tok).send().await;
            assert_eq!(r.status, 200, "{}", r.text);
            if r.body["status"] == want {
                return r.body;
            }
            last = r.body;
            tokio::time::sleep(POLL).await;
        }
        panic!("order never reached {want} within {WAIT:?}: {last}\n{}", self.bookingd.output());
    }

    /// The payment operation id of an order, from the database.
    async fn payment_op_of(&self, order_id: &str) -> Uuid {
        sqlx::query_scalar("SELECT payment_op_id FROM orders WHERE order_id = $1")
            .bind(Uuid::parse_str(order_id).unwrap())
            .fetch_one(&self.db.pool)
            .await
            .unwrap()
    }

    async fn count(&self, sql: &'static str) -> i64 {
        sqlx::query_scalar(sql).fetch_one(&self.db.pool).await.unwrap()
    }
}

// ---------------------------------------------------------------- HTTP

#[derive(Clone)]
struct Api {
    client: Client<HttpConnector, Full<Bytes>>,
    addr: SocketAddr,
}

/// An answer: status, headers, the body as JSON (or a JSON string) and as text.
#[derive(Debug)]
struct Resp {
    status: u16,
    headers: http::HeaderMap,
    body: Value,
    text: String,
}

impl Resp {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(|v| v.to_str().unwrap()).unwrap_or("")
    }
}

struct Req<'a> {
    api: &'a Api,
    method: &'static str,
    path: String,
    headers: Vec<(String, String)>,
    body: Bytes,
}

impl Api {
    fn new(addr: SocketAddr) -> Self {
        Self { client: Client::builder(TokioExecutor::new()).build(HttpConnector::new()), addr }
    }
    fn req(&self, method: &'static str, path: &str) -> Req<'_> {
        Req { api: self, method, path: path.to_string(), headers: Vec::new(), body: Bytes::new() }
    }
    fn get(&self, path: &str) -> Req<'_> {
        self.req("GET", path)
    }
    fn post(&self, path: &str) -> Req<'_> {
        self.req("POST", path)
    }
    fn delete(&self, path: &str) -> Req<'_> {
        self.req("DELETE", path)
    }
}

impl Req<'_> {
    fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
    fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }
    fn json(self, v: Value) -> Self {
        self.raw(v.to_string().into_bytes())
    }
    fn raw(mut self, body: Vec<u8>) -> Self {
        self.body = Bytes::from(body);
        self.header("content-type", "application/json")
    }
    /// Sends, bounded by [`CALL_TIMEOUT`]; `Err` on a transport error or timeout.
    async fn try_send(self) -> Result<Resp, String> {
        let mut b = http::Request::builder().method(self.method).uri(format!("http://{}{}", self.api.addr, self.path));
        for (k, v) in &self.headers {
            b = b.header(k, v);
        }
        let req = b.body(Full::new(self.body)).unwrap();
        let call = async {
            let resp = self.api.client.request(req).await.map_err(|e| format!("{e:?}"))?;
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let bytes = resp.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let body = serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(text.clone()));
            Ok(Resp { status, headers, body, text })
        };
        tokio::time::timeout(CALL_TIMEOUT, call).await.map_err(|_| "timed out".to_string())?
    }
    async fn send(self) -> Resp {
        let what = format!("{} {}", self.method, self.path);
        self.try_send().await.unwrap_or_else(|e| panic!("{what}: {e}"))
    }
}

/// Asserts `r` is a problem document of `status` and `kind`.
#[track_caller]
fn assert_problem(r: &Resp, status: u16, kind: &str) {
    assert_eq!(r.status, status, "{}", r.text);
    assert_eq!(r.header("content-type"), "application/problem+json", "{}", r.text);
    assert_eq!(r.body["type"], format!("urn:holdfast:problem:{kind}"), "{}", r.text);
    assert_eq!(r.body["status"], status, "{}", r.text);
}

fn token(user: &str, events: &[&str], admin: bool) -> String {
    let clock = Arc::new(SystemClock);
    let claims = Claims {
        sub: user.into(),
        events: events.iter().map(|e| e.to_string()).collect(),
        exp_ms: clock.now_ms() + 600_000,
        admin,
        tier: None,
    };
    Authenticator::new(TOKEN_SECRET.as_bytes(), clock).issue(&claims)
}

/// An event id no other test (or run) uses: the shared Redis is keyed by event.
fn unique_event(prefix: &str) -> String {
    format!("{prefix}-{}", RandomIds.next_uuid().simple())
}

/// Parses Prometheus text into `name{labels}` -> value.
fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap_or_else(|| panic!("bad metrics line {l:?}"));
            (k.to_string(), v.parse().unwrap_or_else(|_| panic!("bad metrics value {l:?}")))
        })
        .collect()
}

async fn metrics(api: &Api) -> BTreeMap<String, f64> {
    let r = api.get("/metrics").send().await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.header("content-type").starts_with("text/plain"), "{:?}", r.headers);
    parse_metrics(&r.text)
}

/// POSTs `body` to the webhook endpoint signed with `secret` now.
async fn webhook(api: &Api, secret: &str, body: Vec<u8>) -> Resp {
    let ts = SystemClock.now_ms();
    let sig = sign(secret.as_bytes(), ts, &body);
    api.post("/v1/webhooks/provider")
        .header(TIMESTAMP_HEADER, &ts.to_string())
        .header(SIGNATURE_HEADER, &sig)
        .raw(body)
        .send()
        .await
}

fn webhook_event(kind: WebhookKind, payment_key: Uuid, refund_key: Option<Uuid>) -> Vec<u8> {
    let ev = WebhookEvent {
        provider_event_id: format!("evt_test_{}", RandomIds.next_uuid().simple()),
        sequence: 1_000_000,
        kind,
        payment_key,
        provider_payment_id: "pay_test".into(),
        refund_key,
        failure_reason: None,
        created_at_ms: SystemClock.now_ms(),
    };
    serde_json::to_vec(&ev).unwrap()
}

/// Runs `bookingd issue-token` and returns the token it prints.
async fn issue_token_cli(user: &str, events: &str, admin: bool) -> String {
    let mut cmd = bookingd_cmd();
    cmd.args(["issue-token", "--user", user, "--events", events, "--ttl-s", "600"]);
    if admin {
        cmd.arg("--admin");
    }
    let out = tokio::time::timeout(WAIT, cmd.output()).await.expect("issue-token is quick").unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let tok = stdout.trim();
    assert!(tok.starts_with("v1.") && !tok.contains(char::is_whitespace), "one token on stdout: {stdout:?}");
    tok.to_string()
}

// ---------------------------------------------------------------- tests

/// Every endpoint over the real processes; a payment that succeeds, one
/// declined, one that succeeds late by webhook; signed and forged webhooks;
/// the metrics; then SIGTERM stops bookingd cleanly.
#[tokio::test]
async fn full_flow_every_endpoint_and_graceful_shutdown() {
    // A long cache TTL: the second seat-map read must find the first one's
    // entry however slow the machine (no later read here asserts freshness).
    let mut st = Stack::start(Opts {
        redis_url: Some(test_services::redis_url()),
        bookingd_args: vec!["--cache-ttl-ms".into(), "60000".into()],
        ..Opts::default()
    })
    .await;
    let api = st.api.clone();
    let ev = unique_event("flow");
    let other_ev = unique_event("nowhere");

    // Health and the API description.
    let r = api.get("/healthz").send().await;
    assert_eq!((r.status, r.text.as_str()), (200, "ok"));
    let r = api.get("/openapi.json").send().await;
    assert_eq!((r.status, r.header("content-type")), (200, "application/json"));
    assert_eq!(r.body["openapi"], "3.1.0");
    for (method, path) in booking::http::ROUTES {
        assert!(r.body["paths"][path][method].is_object(), "/openapi.json lacks {method} {path}");
    }
    assert_problem(&api.get("/v1/nowhere").send().await, 404, "not-found");

    // Creating an event takes an admin credential.
    let body = json!({"event_id": ev, "seat_ids": ["1A", "1B", "1C"], "price_cents": 2500});
    assert_problem(&api.post("/v1/events").json(body.clone()).send().await, 401, "unauthorized");
    let alice_all = token("alice", &["*"], false);
    assert_problem(&api.post("/v1/events").bearer(&alice_all).json(body.clone()).send().await, 403, "forbidden");
    let admin = issue_token_cli("ops", "*", true).await;
    let r = api.post("/v1/events").bearer(&admin).json(body.clone()).send().await;
    assert_eq!((r.status, &r.body["event_id"]), (201, &json!(ev)), "{}", r.text);
    assert_problem(&api.post("/v1/events").bearer(&admin).json(body).send().await, 409, "event-exists");

    // Seat map: the store, then Redis; an unknown event is a 404; scope is enforced.
    let alice = issue_token_cli("alice", &ev, false).await;
    let bob = token("bob", &[&ev], false);
    let seats = format!("/v1/events/{ev}/seats");
    let r = api.get(&seats).bearer(&alice).send().await;
    assert_eq!((r.status, r.header("x-holdfast-source")), (200, "store"), "{}", r.text);
    assert_eq!(r.body["seats"].as_array().unwrap().len(), 3);
    assert!(r.body["seats"].as_array().unwrap().iter().all(|s| s["state"] == "available"));
    assert_eq!((r.header("etag"), r.header("cache-control")), ("\"sm-3-0\"", "no-cache"));
    let r = api.get(&seats).bearer(&alice).send().await;
    assert_eq!((r.status, r.header("x-holdfast-source")), (200, "cache"), "the second read is served by Redis");
    assert_eq!(r.header("etag"), "\"sm-3-0\"", "Redis keeps the tag with the body");
    // Revalidation: PgStore's version matches, 304 with no body over the wire.
    let r = api.get(&seats).bearer(&alice).header("if-none-match", "\"x\", W/\"sm-3-0\"").send().await;
    assert_eq!((r.status, r.text.as_str(), r.header("etag")), (304, "", "\"sm-3-0\""));
    assert_problem(
        &api.get(&format!("/v1/events/{other_ev}/seats")).bearer(&alice_all).header("if-none-match", "*").send().await,
        404,
        "unknown-event",
    );
    assert_problem(
        &api.get(&format!("/v1/events/{other_ev}/seats")).bearer(&alice_all).send().await,
        404,
        "unknown-event",
    );
    assert_problem(&api.get(&format!("/v1/events/{other_ev}/seats")).bearer(&alice).send().await, 403, "forbidden");
    assert_problem(&api.get(&seats).send().await, 401, "unauthorized");

    // Hold and check out 1A; the dispatcher charges the provider; confirmed.
    let hold_a = st.hold(&ev, &alice, &["1A"]).await;
    let r = api.get(&seats).bearer(&alice).header("if-none-match", "\"sm-3-0\"").send().await;
    assert_eq!((r.status, r.header("etag")), (200, "\"sm-3-1\""), "the hold changed the map: {}", r.text);
    assert_eq!(r.body["seats"][0]["state"], "held");
    let r = api.post(&format!("/v1/events/{ev}/holds")).bearer(&bob).json(json!({"seat_ids": ["1A"]})).send().await;
    assert_problem(&r, 409, "seat-unavailable");
    let r = api
        .post(&format!("/v1/events/{ev}/holds/{hold_a}/checkout"))
        .bearer(&alice)
        .json(json!({"seat_ids": ["1A"]}))
        .send()
        .await;
    assert_problem(&r, 400, "idempotency-key-required");
    let order = st.checkout(&ev, &alice, &hold_a, "k-1", &["1A"]).await;
    assert_eq!(order.status, 201, "{}", order.text);
    assert_eq!((&order.body["amount_cents"], &order.body["replayed"]), (&json!(2500), &json!(false)));
    let order_id = order.body["order_id"].as_str().unwrap().to_string();
    let done = st.wait_order(&alice, &order_id, "confirmed").await;
    assert_eq!(done["booking_ids"].as_array().unwrap().len(), 1, "{done}");
    // The retry returns the same order, now with its booking; no second order.
    let again = st.checkout(&ev, &alice, &hold_a, "k-1", &["1A"]).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!((&again.body["order_id"], &again.body["status"]), (&json!(order_id), &json!("confirmed")));
    assert_eq!((&again.body["replayed"], &again.body["booking_ids"]), (&json!(true), &done["booking_ids"]));
    // Orders are private: another user gets a 404, an operator sees it.
    let order_path = format!("/v1/orders/{order_id}");
    assert_problem(&api.get(&order_path).bearer(&bob).send().await, 404, "not-found");
    assert_problem(&api.get(&order_path).send().await, 401, "unauthorized");
    let r = api.get(&order_path).bearer(&admin).send().await;
    assert_eq!((r.status, &r.body["status"]), (200, &json!("confirmed")));
    assert_problem(&api.get(&format!("/v1/orders/{}", Uuid::nil())).bearer(&admin).send().await, 404, "not-found");

    // Release a hold; the token is then gone.
    let hold_b = st.hold(&ev, &alice, &["1B"]).await;
    let rel = format!("/v1/events/{ev}/holds/{hold_b}");
    assert_problem(&api.delete(&rel).bearer(&bob).send().await, 403, "not-holder");
    let r = api.delete(&rel).bearer(&alice).send().await;
    assert_eq!((r.status, &r.body["released"]), (200, &json!(["1B"])), "{}", r.text);
    assert_problem(&api.delete(&rel).bearer(&alice).send().await, 404, "hold-not-found");

    // A declined payment: failed, its seat free again.
    st.faults(json!({"decline_rate": 1.0})).await;
    let hold_c = st.hold(&ev, &alice, &["1C"]).await;
    let r = st.checkout(&ev, &alice, &hold_c, "k-2", &["1C"]).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let failed = st.wait_order(&alice, r.body["order_id"].as_str().unwrap(), "failed").await;
    assert!(failed["resolution_reason"].as_str().unwrap().contains("card_declined"), "{failed}");
    assert!(failed["booking_ids"].as_array().unwrap().is_empty());

    // A payment the provider answers `processing` and charges 300 ms later:
    // the order reconciles with its seat reserved, the signed webhook confirms it.
    st.faults(json!({"late_success_rate": 1.0, "late_success_delay_ms": 300})).await;
    let hold_b2 = st.hold(&ev, &alice, &["1B"]).await;
    let r = st.checkout(&ev, &alice, &hold_b2, "k-3", &["1B"]).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let late_id = r.body["order_id"].as_str().unwrap().to_string();
    let late = st.wait_order(&alice, &late_id, "confirmed").await;
    assert_eq!(late["booking_ids"].as_array().unwrap().len(), 1);
    st.faults(json!({})).await;
    // Every webhook the provider sent (success, decline, late success) was accepted.
    let deadline = tokio::time::Instant::now() + WAIT;
    let stats = loop {
        let stats = st.ledger().await["stats"].clone();
        if stats["webhooks_delivered"].as_u64().unwrap() >= 3 || tokio::time::Instant::now() >= deadline {
            break stats;
        }
        tokio::time::sleep(POLL).await;
    };
    assert_eq!(
        (stats["webhooks_delivered"].as_u64(), stats["webhooks_failed"].as_u64()),
        (Some(3), Some(0)),
        "{stats}"
    );
    assert_eq!(stats["late_successes"], 1, "{stats}");

    // Webhooks: forged or malformed ones are refused; a replayed success and a
    // contradicting failure for a decided payment change nothing.
    let decided = |m: &BTreeMap<String, f64>| {
        (m["holdfast_payments_total{outcome=\"succeeded\"}"], m["holdfast_payments_total{outcome=\"failed\"}"])
    };
    let decided_before = decided(&metrics(&api).await);
    let key = st.payment_op_of(&order_id).await;
    let ok = webhook_event(WebhookKind::PaymentSucceeded, key, None);
    assert_eq!(webhook(&api, WEBHOOK_SECRET, ok.clone()).await.status, 204);
    assert_eq!(webhook(&api, WEBHOOK_SECRET, webhook_event(WebhookKind::PaymentFailed, key, None)).await.status, 204);
    let r = api.post("/v1/webhooks/provider").raw(ok.clone()).send().await;
    assert_problem(&r, 401, "bad-webhook-signature");
    assert_problem(&webhook(&api, "not-the-webhook-secret", ok).await, 401, "bad-webhook-signature");
    assert_problem(
        &webhook(&api, WEBHOOK_SECRET, br#"{"kind":"payment_succeeded"}"#.to_vec()).await,
        400,
        "bad-webhook",
    );
    let unknown = webhook_event(WebhookKind::PaymentSucceeded, Uuid::from_u128(7), None);
    assert_problem(&webhook(&api, WEBHOOK_SECRET, unknown).await, 404, "not-found");
    let no_refund_key = webhook_event(WebhookKind::RefundSucceeded, key, None);
    assert_problem(&webhook(&api, WEBHOOK_SECRET, no_refund_key).await, 400, "bad-request");
    let stray_refund = webhook_event(WebhookKind::RefundSucceeded, key, Some(Uuid::from_u128(9)));
    assert_problem(&webhook(&api, WEBHOOK_SECRET, stray_refund).await, 404, "unknown-compensation");
    let big = vec![b' '; booking::payment::webhook::MAX_WEBHOOK_BYTES + 1];
    assert_problem(&webhook(&api, WEBHOOK_SECRET, big).await, 413, "payload-too-large");
    let r = api.get(&order_path).bearer(&alice).send().await;
    assert_eq!((&r.body["status"], r.body["booking_ids"].as_array().unwrap().len()), (&json!("confirmed"), 1));
    assert_eq!(st.count("SELECT count(*) FROM bookings").await, 2, "1A and 1B, once each");
    assert_eq!(decided(&metrics(&api).await), decided_before, "webhooks for decided payments count nothing");

    // Operators: nothing unresolved.
    assert_problem(&api.get("/v1/admin/unresolved").send().await, 401, "unauthorized");
    assert_problem(&api.get("/v1/admin/unresolved").bearer(&alice).send().await, 403, "forbidden");
    let r = api.get("/v1/admin/unresolved").bearer(&admin).send().await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!((&r.body["orders"], &r.body["compensations"]), (&json!([]), &json!([])), "{}", r.text);
    assert_eq!(metrics(&api).await["holdfast_unresolved"], 0.0);

    // The provider fails every request: the outcome is unknown, the order
    // reconciles with its seat reserved, operators (and the unresolved gauge,
    // counted at each scrape) see it. The provider recovers: confirmed.
    st.faults(json!({"error_rate": 1.0})).await;
    let hold_c2 = st.hold(&ev, &alice, &["1C"]).await;
    let r = st.checkout(&ev, &alice, &hold_c2, "k-4", &["1C"]).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let unknown_id = r.body["order_id"].as_str().unwrap().to_string();
    st.wait_order(&alice, &unknown_id, "reconciling").await;
    assert_eq!(st.count("SELECT count(*) FROM seats WHERE state = 'payment_pending'").await, 1, "seat kept");
    assert_eq!(metrics(&api).await["holdfast_unresolved"], 1.0);
    let r = api.get("/v1/admin/unresolved").bearer(&admin).send().await;
    assert_eq!(r.body["orders"][0]["order_id"], json!(unknown_id), "{}", r.text);
    st.faults(json!({})).await;
    st.wait_order(&alice, &unknown_id, "confirmed").await;
    assert_eq!(metrics(&api).await["holdfast_unresolved"], 0.0);
    assert_eq!(st.count("SELECT count(*) FROM bookings").await, 3);

    // The operators' metrics.
    let m = metrics(&api).await;
    let get = |k: &str| *m.get(k).unwrap_or_else(|| panic!("metric {k} missing: {m:?}"));
    assert_eq!(get("holdfast_holds_acquired_total"), 5.0, "1A, 1B, 1C, 1B again, 1C again");
    assert_eq!(get("holdfast_holds_refused_contention_total"), 1.0);
    assert_eq!(get("holdfast_seats_expired_unused_total"), 0.0);
    assert_eq!(get("holdfast_hold_expiry_lag_ms_sum"), 0.0);
    assert_eq!(get("holdfast_hold_expiry_lag_ms_max"), 0.0);
    assert_eq!(get("holdfast_checkouts_total{outcome=\"created\"}"), 4.0);
    assert_eq!(get("holdfast_checkouts_total{outcome=\"replayed\"}"), 1.0);
    assert_eq!(get("holdfast_checkouts_total{outcome=\"refused\"}"), 0.0);
    // Each payment counts where it was decided. A webhook that arrives after
    // the decision counts nothing; one racing the dispatcher or the reconciler
    // to the same decision may count a second time (never zero times), and a
    // `processing` answer counts unknown once per dispatch attempt.
    assert!((3.0..=6.0).contains(&get("holdfast_payments_total{outcome=\"succeeded\"}")), "{m:?}");
    assert!((1.0..=2.0).contains(&get("holdfast_payments_total{outcome=\"failed\"}")), "{m:?}");
    assert!(get("holdfast_payments_total{outcome=\"unknown\"}") >= 2.0, "processing, then 503: {m:?}");
    assert_eq!(get("holdfast_payments_total{outcome=\"late_success\"}"), 0.0);
    assert_eq!(get("holdfast_payments_total{outcome=\"released\"}"), 0.0);
    assert_eq!(get("holdfast_unresolved"), 0.0);
    assert_eq!(get("holdfast_rate_limited_total"), 0.0);

    // SIGTERM: bookingd drains and exits 0.
    st.bookingd.terminate();
    let status = st.bookingd.wait_exit().await;
    assert!(status.success(), "graceful exit, got {status}:\n{}", st.bookingd.output());
    st.finish().await;
}

/// bookingd dies after the checkout commits and before it answers; restarted,
/// the client's retry with the same key gets the committed order, which is
/// then charged once and confirmed.
#[tokio::test]
async fn killed_between_commit_and_response_then_retried() {
    let crash = vec!["--crash-after-commit".to_string(), "checkout".to_string()];
    let mut st = Stack::start(Opts { bookingd_args: crash, ..Opts::default() }).await;
    let ev = unique_event("crash");
    st.create_event(&ev, &["1A"]).await;
    let alice = token("alice", &[&ev], false);
    let hold = st.hold(&ev, &alice, &["1A"]).await;
    let lost = st
        .api
        .post(&format!("/v1/events/{ev}/holds/{hold}/checkout"))
        .bearer(&alice)
        .header("idempotency-key", "crash-key")
        .json(json!({"seat_ids": ["1A"]}))
        .try_send()
        .await;
    assert!(lost.is_err(), "the answer must be lost: {lost:?}");
    let status = st.bookingd.wait_exit().await;
    assert_eq!(status.code(), Some(86), "bookingd crashed after the commit:\n{}", st.bookingd.output());
    assert_eq!(st.count("SELECT count(*) FROM orders").await, 1, "the checkout committed before the crash");

    // Restart without the fault; the client retries with the same key.
    st.restart_bookingd(&[]).await;
    let r = st.checkout(&ev, &alice, &hold, "crash-key", &["1A"]).await;
    assert_eq!(r.status, 200, "the committed order is found: {}", r.text);
    assert_eq!(r.body["replayed"], true);
    let order_id = r.body["order_id"].as_str().unwrap().to_string();
    let done = st.wait_order(&alice, &order_id, "confirmed").await;
    assert_eq!(done["booking_ids"].as_array().unwrap().len(), 1);
    let r = st.checkout(&ev, &alice, &hold, "crash-key", &["1A"]).await;
    assert_eq!((r.status, &r.body["order_id"], &r.body["status"]), (200, &json!(order_id), &json!("confirmed")));
    // Another key on the same (consumed) hold makes no second order.
    assert_problem(&st.checkout(&ev, &alice, &hold, "other-key", &["1A"]).await, 404, "hold-not-found");
    assert_eq!(st.count("SELECT count(*) FROM orders").await, 1, "exactly one order");
    assert_eq!(st.count("SELECT count(*) FROM bookings").await, 1, "exactly one booking");
    let ledger = st.ledger().await;
    assert_eq!(ledger["payments"].as_array().unwrap().len(), 1, "charged once: {ledger}");
    st.finish().await;
}

/// A redis-server of this test's own on `port`, keeping nothing.
async fn start_redis(port: u16) -> Result<Proc, String> {
    process_support::redis_server(port, None).await
}

/// Reads the seat map until it comes from `source` (bounded); returns it.
async fn seat_map_from(api: &Api, ev: &str, tok: &str, source: &str) -> Resp {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let r = api.get(&format!("/v1/events/{ev}/seats")).bearer(tok).send().await;
        assert_eq!(r.status, 200, "reads never fail on the cache: {}", r.text);
        if r.header("x-holdfast-source") == source || tokio::time::Instant::now() >= deadline {
            assert_eq!(r.header("x-holdfast-source"), source, "{}", r.text);
            return r;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The cache says a held seat is available: reads show the lie, the hold is
/// still refused. Redis stopped: reads (and writes) are served from the store,
/// quickly. Redis back: reads come from the cache again.
#[tokio::test]
async fn poisoned_cache_then_redis_stopped_and_back() {
    let (redis, redis_port) = {
        let mut last = String::new();
        let mut started = None;
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            match start_redis(port).await {
                Ok(p) => {
                    started = Some((p, port));
                    break;
                }
                Err(e) => last = e,
            }
        }
        started.unwrap_or_else(|| panic!("no redis-server: {last}"))
    };
    let redis_url = format!("redis://127.0.0.1:{redis_port}");
    let st = Stack::start(Opts {
        redis_url: Some(redis_url.clone()),
        bookingd_args: vec!["--cache-ttl-ms".into(), "600000".into(), "--cache-namespace".into(), "poison-test".into()],
        ..Opts::default()
    })
    .await;
    let ev = unique_event("cache");
    st.create_event(&ev, &["1A", "1B"]).await;
    let (alice, bob) = (token("alice", &[&ev], false), token("bob", &[&ev], false));
    st.hold(&ev, &alice, &["1A"]).await;

    // Poison the cache: it claims the held seat is available. An entry in the
    // old form (a bare body, no entity tag) is a miss, not an error.
    let client = redis::Client::open(redis_url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let poisoned = json!({"event_id": ev, "seats": [
        {"seat_id": "1A", "state": "available", "version": 0, "hold_expires_at_ms": null},
        {"seat_id": "1B", "state": "available", "version": 0, "hold_expires_at_ms": null}]});
    let key = format!("poison-test:seatmap:{ev}");
    let _: () = redis::cmd("SET").arg(&key).arg(poisoned.to_string()).query_async(&mut conn).await.unwrap();
    let r = st.api.get(&format!("/v1/events/{ev}/seats")).bearer(&bob).send().await;
    assert_eq!((r.status, r.header("x-holdfast-source")), (200, "store"), "{}", r.text);
    assert_eq!((r.body["seats"][0]["state"].as_str(), r.header("etag")), (Some("held"), "\"sm-2-1\""));
    let tagged = format!("\"poison\"\n{poisoned}");
    let _: () = redis::cmd("SET").arg(&key).arg(tagged).query_async(&mut conn).await.unwrap();
    let r = seat_map_from(&st.api, &ev, &bob, "cache").await;
    assert_eq!(r.body["seats"][0]["state"], "available", "reads may be stale");
    assert_eq!(r.header("etag"), "\"poison\"");
    let r = st.api.post(&format!("/v1/events/{ev}/holds")).bearer(&bob).json(json!({"seat_ids": ["1A"]})).send().await;
    assert_problem(&r, 409, "seat-unavailable");
    assert_eq!(st.count("SELECT count(*) FROM seats WHERE holder_id = 'bob'").await, 0, "the store decided");

    // Stop Redis: reads are served from the store, and promptly.
    drop(conn);
    drop(redis);
    for _ in 0..3 {
        let t0 = tokio::time::Instant::now();
        let r = seat_map_from(&st.api, &ev, &bob, "store").await;
        assert!(t0.elapsed() < Duration::from_secs(3), "a read with Redis down took {:?}", t0.elapsed());
        assert_eq!(r.body["seats"][0]["state"], "held", "{}", r.text);
    }
    // Writes do not need Redis either.
    let hold = st.hold(&ev, &bob, &["1B"]).await;
    let r = st.checkout(&ev, &bob, &hold, "bob-1", &["1B"]).await;
    assert_eq!(r.status, 201, "{}", r.text);

    // Redis back on its port: the cache serves again.
    let _redis = start_redis(redis_port).await.expect("redis-server restarts on its port");
    seat_map_from(&st.api, &ev, &bob, "store").await;
    let r = seat_map_from(&st.api, &ev, &bob, "cache").await;
    assert_eq!(r.body["seats"][0]["state"], "held", "{}", r.text);
    st.finish().await;
}

/// Two deployments on two databases sharing one Redis: each serves its own
/// seat maps, from the store and then from its own cache entries (their keys
/// are namespaced by the database by default). Before, both used
/// `holdfast:seatmap:<event>` and the second served the first one's seats.
#[tokio::test]
async fn two_deployments_sharing_one_redis_never_serve_each_others_seat_maps() {
    let opts = Opts {
        redis_url: Some(test_services::redis_url()),
        bookingd_args: vec!["--cache-ttl-ms".into(), "600000".into()],
        ..Opts::default()
    };
    let a = Stack::start(opts.clone()).await;
    let b = Stack::start(opts).await;
    let ev = unique_event("shared");
    a.create_event(&ev, &["1A", "1B"]).await;
    b.create_event(&ev, &["9Z"]).await;
    let tok = token("alice", &[&ev], false);
    let seats = |r: &Resp| -> Vec<String> {
        r.body["seats"].as_array().unwrap().iter().map(|s| s["seat_id"].as_str().unwrap().to_string()).collect()
    };
    // A's seat map is in the cache now.
    let r = seat_map_from(&a.api, &ev, &tok, "cache").await;
    assert_eq!(seats(&r), ["1A", "1B"]);
    // B reads its own seats: first from its store, then from its own cache entry.
    let r = b.api.get(&format!("/v1/events/{ev}/seats")).bearer(&tok).send().await;
    assert_eq!((r.status, r.header("x-holdfast-source")), (200, "store"), "{}", r.text);
    assert_eq!(seats(&r), ["9Z"]);
    let r = seat_map_from(&b.api, &ev, &tok, "cache").await;
    assert_eq!(seats(&r), ["9Z"], "B's cache entry is its own");
    let r = seat_map_from(&a.api, &ev, &tok, "cache").await;
    assert_eq!(seats(&r), ["1A", "1B"], "and A's is still A's");
    a.finish().await;
    b.finish().await;
}

/// An event of the model's full size (100,000 seats: 1,000 listed, 99 rows
/// of 1,000) is created in one small body, its seat map read, a seat held;
/// a 100th row is refused with a 400 that says the bound the schema states.
#[tokio::test]
async fn a_full_size_event_is_created_by_seat_ranges_and_its_seat_map_read() {
    let st = Stack::start(Opts::default()).await;
    let ev = unique_event("big");
    let admin = token("ops", &["*"], true);
    let listed: Vec<String> = (0..1000).map(|i| format!("L{i:04}")).collect();
    let mut rows: Vec<Value> =
        (0..100).map(|r| json!({"prefix": format!("R{r:02}-"), "first": 1, "count": 1000, "width": 4})).collect();
    let too_many = json!({"event_id": format!("{ev}x"), "seat_ids": listed, "seat_ranges": rows, "price_cents": 100});
    let r = st.api.post("/v1/events").bearer(&admin).json(too_many).send().await;
    assert_problem(&r, 400, "bad-request");
    assert!(r.text.contains("at most 99 seat_ranges"), "the 400 says the bound: {}", r.text);
    rows.pop();
    let full = json!({"event_id": ev, "seat_ids": listed, "seat_ranges": rows, "price_cents": 100});
    let r = st.api.post("/v1/events").bearer(&admin).json(full).send().await;
    assert_eq!(r.status, 201, "{}", r.text);
    let alice = token("alice", &[&ev], false);
    let r = st.api.get(&format!("/v1/events/{ev}/seats")).bearer(&alice).send().await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seats = r.body["seats"].as_array().unwrap();
    assert_eq!(seats.len(), 100_000);
    assert_eq!((seats[0]["seat_id"].as_str(), seats[99_999]["seat_id"].as_str()), (Some("L0000"), Some("R98-1000")));
    st.hold(&ev, &alice, &["R42-0500"]).await;
    st.finish().await;
}

/// bookingd started while Redis is down serves reads from the store, and uses
/// the cache once Redis comes up (it retries the connection every second).
#[tokio::test]
async fn redis_down_at_start_then_up() {
    let redis_port = free_port();
    let st = Stack::start(Opts {
        redis_url: Some(format!("redis://127.0.0.1:{redis_port}")),
        bookingd_args: vec!["--cache-ttl-ms".into(), "600000".into()],
        ..Opts::default()
    })
    .await;
    let ev = unique_event("late-redis");
    st.create_event(&ev, &["1A"]).await;
    let alice = token("alice", &[&ev], false);
    for _ in 0..2 {
        seat_map_from(&st.api, &ev, &alice, "store").await;
    }
    st.hold(&ev, &alice, &["1A"]).await;
    let _redis = start_redis(redis_port).await.expect("redis-server on the reserved port");
    seat_map_from(&st.api, &ev, &alice, "cache").await;
    st.finish().await;
}

/// Holds that lapse unused are reclaimed by the sweeper and counted with their
/// lag; the seat is free again. Then the database disappears under the running
/// service: requests get a 503 `backend` problem (no internals leaked), the
/// health check says so, and the process stays up.
#[tokio::test]
async fn abandoned_holds_are_counted_and_a_lost_database_is_a_503() {
    let mut st =
        Stack::start(Opts { bookingd_args: vec!["--hold-ttl-ms".into(), "300".into()], ..Opts::default() }).await;
    let ev = unique_event("lapse");
    st.create_event(&ev, &["1A"]).await;
    let (alice, bob) = (token("alice", &[&ev], false), token("bob", &[&ev], false));
    let stale = st.hold(&ev, &alice, &["1A"]).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let m = loop {
        let m = metrics(&st.api).await;
        if m["holdfast_seats_expired_unused_total"] >= 1.0 || tokio::time::Instant::now() >= deadline {
            break m;
        }
        tokio::time::sleep(POLL).await;
    };
    assert_eq!(m["holdfast_seats_expired_unused_total"], 1.0, "{m:?}");
    assert!(m["holdfast_hold_expiry_lag_ms_sum"] >= m["holdfast_hold_expiry_lag_ms_max"], "{m:?}");
    let r = st.api.get(&format!("/v1/events/{ev}/seats")).bearer(&bob).send().await;
    assert_eq!(r.body["seats"][0]["state"], "available", "the sweeper returned it: {}", r.text);
    // The lapsed token cannot check out; the seat goes to Bob.
    let r = st.checkout(&ev, &alice, &stale, "late", &["1A"]).await;
    assert!(r.status == 404 || r.status == 409 || r.status == 410, "{}", r.text);
    st.hold(&ev, &bob, &["1A"]).await;

    // The database is gone.
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&common::admin_url()).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {} WITH (FORCE)", st.db.name)))
        .execute(&mut admin)
        .await
        .unwrap();
    let r = st.api.get(&format!("/v1/events/{ev}/seats")).bearer(&bob).send().await;
    assert_problem(&r, 503, "backend");
    assert!(!r.text.contains("sqlx") && !r.text.contains(&st.db.name), "no internals leak: {}", r.text);
    let r =
        st.api.post(&format!("/v1/events/{ev}/holds")).bearer(&alice).json(json!({"seat_ids": ["1A"]})).send().await;
    assert_problem(&r, 503, "backend");
    // Readiness follows the database's probe, which notices within its bound.
    until_ready_is(&st.api, 503).await;
    let r = st.api.get("/healthz").send().await;
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(st.api.get("/metrics").send().await.status, 200, "metrics do not need the store");
    st.bookingd.assert_running();
    // Its warnings (the background workers' next ticks fail) went to a pipe,
    // not a terminal: plain text, no colour codes.
    let deadline = tokio::time::Instant::now() + WAIT;
    while !st.bookingd.output().contains("WARN") && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
    }
    let log = st.bookingd.output();
    assert!(log.contains("WARN"), "the lost database was logged: {log}");
    assert!(!log.contains('\u{1b}'), "no ANSI escapes in redirected logs: {log:?}");
    // sqlx renders a server error as "<message> at line <n>", n a line of
    // PostgreSQL's C source: the log says the message and its SQLSTATE instead.
    assert!(!log.contains(" at line "), "no PostgreSQL source lines in the log: {log}");
    st.finish().await;
}

/// The longest a request that needs the database may take to answer `503`
/// once bookingd knows the database is down (docs/RUNNING_BOOKINGD.md,
/// "When the database is down"): it does no I/O then.
const OUTAGE_ANSWER_BOUND: Duration = Duration::from_millis(500);

/// Sends `req` and returns the answer with how long it took.
async fn timed(req: Req<'_>) -> (Resp, Duration) {
    let started = tokio::time::Instant::now();
    let r = req.send().await;
    (r, started.elapsed())
}

/// Polls `/readyz` until it answers `want` (bounded by [`WAIT`]); how long it took.
async fn until_ready_is(api: &Api, want: u16) -> Duration {
    let started = tokio::time::Instant::now();
    loop {
        if api.get("/readyz").send().await.status == want {
            return started.elapsed();
        }
        assert!(started.elapsed() < WAIT, "/readyz never answered {want}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// With its database unreachable, bookingd waited for the pool's timeout
/// (5 s) before every `503`, health checks included, and no metric showed
/// the outage. Now the probe notices within its bound, and from then on
/// readiness, holds, seat maps and order reads answer `503` with
/// `Retry-After` at once, liveness stays `200`, `/metrics` shows the open
/// circuit and the refusals by route and status; when the database is back
/// everything recovers without a restart.
#[tokio::test]
async fn a_database_outage_is_answered_fast_and_recovered_from_without_a_restart() {
    use booking::store::circuit::OUTAGE_DETECTION_BOUND_MS;
    let mut st = Stack::start(Opts { db_link: true, ..Opts::default() }).await;
    let ev = unique_event("outage");
    st.create_event(&ev, &["1A", "1B"]).await;
    let alice = token("alice", &[&ev], false);
    assert_eq!(st.api.get("/readyz").send().await.status, 200);
    st.db_link.as_ref().unwrap().cut();
    let noticed = until_ready_is(&st.api, 503).await;
    // The bound plus scheduling slack on a busy machine.
    assert!(noticed < Duration::from_millis(OUTAGE_DETECTION_BOUND_MS) + OUTAGE_ANSWER_BOUND, "{noticed:?}");
    assert_fast_outage_answers(&st.api, &ev, &alice).await;
    st.db_link.as_ref().unwrap().restore().await.unwrap();
    until_ready_is(&st.api, 200).await;
    let r =
        st.api.post(&format!("/v1/events/{ev}/holds")).bearer(&alice).json(json!({"seat_ids": ["1A"]})).send().await;
    assert_eq!(r.status, 201, "recovered without a restart: {}", r.text);
    let m = metrics(&st.api).await;
    assert_eq!((m["holdfast_db_circuit_open"], m["holdfast_db_circuit_opened_total"]), (0.0, 1.0), "{m:?}");
    st.bookingd.assert_running();
    let log = st.bookingd.output();
    assert!(log.contains("database unreachable") && log.contains("circuit closed"), "{log}");
    assert!(!log.contains(" at line "), "no PostgreSQL source lines in the log: {log}");
    st.finish().await;
}

/// While bookingd knows its database is down: a hold, a seat map, an order
/// read and readiness answer `503` with `Retry-After: 1` within
/// [`OUTAGE_ANSWER_BOUND`] (no idempotency advice outside a checkout),
/// liveness `200`, and `/metrics` shows the open circuit, the refusals by
/// kind and the `503`s by route, and every series the guide lists.
async fn assert_fast_outage_answers(api: &Api, ev: &str, tok: &str) {
    let hold = || api.post(&format!("/v1/events/{ev}/holds")).bearer(tok).json(json!({"seat_ids": ["1A"]}));
    let answers = [
        ("hold", timed(hold()).await, "backend"),
        ("seat map", timed(api.get(&format!("/v1/events/{ev}/seats")).bearer(tok)).await, "backend"),
        ("order", timed(api.get(&format!("/v1/orders/{}", Uuid::nil())).bearer(tok)).await, "backend"),
        ("healthz", timed(api.get("/healthz")).await, "unavailable"),
        ("readyz", timed(api.get("/readyz")).await, "unavailable"),
    ];
    for (what, (r, took), kind) in &answers {
        eprintln!("{what}: 503 in {took:?}");
        assert_problem(r, 503, kind);
        assert!(*took < OUTAGE_ANSWER_BOUND, "{what} took {took:?}");
        assert_eq!(r.header("retry-after"), "1", "{what}: {:?}", r.headers);
        assert!(!r.text.to_lowercase().contains("idempotency"), "{what}: no key to retry with: {}", r.text);
    }
    assert_eq!(api.get("/livez").send().await.status, 200, "the process itself is fine");
    let m = metrics(api).await;
    assert_eq!(m["holdfast_db_circuit_open"], 1.0, "{m:?}");
    assert!(m["holdfast_db_errors_total{kind=\"circuit_open\"}"] >= 3.0, "{m:?}");
    let refused = "holdfast_http_responses_total{method=\"post\",route=\"/v1/events/{event_id}/holds\",status=\"503\"}";
    assert_eq!(m[refused], 1.0, "{m:?}");
    // Every series the guide's metrics table names is on the page.
    let guide = include_str!("../../docs/RUNNING_BOOKINGD.md");
    let table = guide.split("### Metrics").nth(1).unwrap().split("```").next().unwrap();
    let named = |w: &&str| w.len() > "holdfast_".len() && w.starts_with("holdfast_") && !w.contains(['*', '{']);
    for name in table.split('`').filter(named) {
        assert!(m.keys().any(|k| k == name || k.starts_with(&format!("{name}{{"))), "{name} is not on /metrics");
    }
}

/// PostgreSQL itself stopped (`pg_ctl stop -m immediate`, a server of the
/// test's own) under a running bookingd, then started again: the same fast
/// answers while it is down, and recovery without a restart.
#[tokio::test]
async fn a_stopped_postgres_is_answered_fast_and_its_return_recovered_from() {
    use test_services::own_postgres::OwnPostgres;
    let pg = OwnPostgres::start().expect("a PostgreSQL server of the test's own");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fake-provider"));
    cmd.args(["--listen", "127.0.0.1:0"]).env("RUST_LOG", "warn");
    let (_provider, provider_addr) = Proc::start("fake-provider", cmd).await.unwrap();
    let (mut bookingd, addr) =
        spawn_bookingd(&pg.admin_url(), "127.0.0.1:0", provider_addr, &Opts::default()).await.unwrap();
    let api = Api::new(addr);
    let ev = unique_event("stopped");
    let r = api
        .post("/v1/events")
        .bearer(&token("ops", &["*"], true))
        .json(json!({"event_id": ev, "seat_ids": ["1A"], "price_cents": 2500}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let alice = token("alice", &[&ev], false);
    pg.stop_immediate().unwrap();
    let noticed = until_ready_is(&api, 503).await;
    let bound = Duration::from_millis(booking::store::circuit::OUTAGE_DETECTION_BOUND_MS) + OUTAGE_ANSWER_BOUND;
    assert!(noticed < bound, "{noticed:?}");
    assert_fast_outage_answers(&api, &ev, &alice).await;
    // A bookingd started while the database is down waits for it, then serves.
    // (Found by chaos mode's database partition: a bookingd killed during it
    // was restarted and refused to start at once, "Connection refused".)
    let url = pg.admin_url();
    let second = tokio::spawn(async move {
        spawn_bookingd(&url, "127.0.0.1:0", provider_addr, &Opts::default())
            .await
            .expect("starts once the database is back")
    });
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    pg.resume().unwrap();
    let (_second, second_addr) = second.await.unwrap();
    until_ready_is(&Api::new(second_addr), 200).await;
    until_ready_is(&api, 200).await;
    let r = api.post(&format!("/v1/events/{ev}/holds")).bearer(&alice).json(json!({"seat_ids": ["1A"]})).send().await;
    assert_eq!(r.status, 201, "recovered without a restart: {}", r.text);
    bookingd.assert_running();
}

/// A failover under load: PostgreSQL's primary stops `-m immediate` while
/// buyers hold and check out through two bookingds, its synchronous standby
/// is promoted, and the proxy the bookingds connect through (a `Link`, as
/// HAProxy or a cloud endpoint would be) is pointed at it. Every order a
/// client was told of is on the new primary in the status it was told (or
/// one it leads to), no seat is booked twice, and both bookingds carry on
/// against the new primary without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_to_a_synchronous_standby_loses_no_acknowledged_order() {
    let kept = failover_under_load(false).await;
    assert!(kept.is_ok(), "{kept:?}");
}

/// The check above bites: a failover to a standby that stopped replicating
/// before the load (an asynchronous one that fell behind) loses orders
/// clients were told of, and the check says which.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_to_a_standby_that_fell_behind_is_caught() {
    let kept = failover_under_load(true).await;
    assert!(kept.as_ref().is_err_and(|e| e.contains("is lost")), "{kept:?}");
}

/// The failover story above; `stale`: the standby is asynchronous and stops
/// replicating before the load. What the new primary kept of what clients were told.
async fn failover_under_load(stale: bool) -> Result<(), String> {
    use test_services::own_postgres::OwnPostgres;
    let primary = OwnPostgres::start().expect("a primary");
    let standby = OwnPostgres::standby_of(&primary, !stale).expect("a standby");
    let addr_of = |pg: &OwnPostgres| SocketAddr::from(([127, 0, 0, 1], pg.port()));
    let link = Link::open(addr_of(&primary)).await.unwrap();
    let url = via(&primary.admin_url(), link.addr());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fake-provider"));
    cmd.args(["--listen", "127.0.0.1:0"]).env("RUST_LOG", "warn");
    let (_provider, provider_addr) = Proc::start("fake-provider", cmd).await.unwrap();
    let mut bookingds = Vec::new();
    for _ in 0..2 {
        bookingds.push(spawn_bookingd(&url, "127.0.0.1:0", provider_addr, &Opts::default()).await.unwrap());
    }
    let apis: Vec<Api> = bookingds.iter().map(|(_, addr)| Api::new(*addr)).collect();
    let ev = unique_event("failover");
    let seats: Vec<String> = (0..400).map(|i| format!("s{i:03}")).collect();
    let body = json!({"event_id": ev, "seat_ids": seats, "price_cents": 2500});
    assert_eq!(apis[0].post("/v1/events").bearer(&token("ops", &["*"], true)).json(body).send().await.status, 201);
    if stale {
        until_replayed(&standby.admin_url(), &ev).await;
        standby.stop_immediate().unwrap();
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let told = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let mut buyers = tokio::task::JoinSet::new();
    for (b, mine) in seats[..360].chunks(60).enumerate() {
        let (apis, ev, stop, told) = (apis.clone(), ev.clone(), stop.clone(), told.clone());
        let mine = mine.to_vec();
        buyers.spawn(async move { buy_until_stopped(b, &apis, &ev, &mine, &stop, &told).await });
    }
    // Under load, not sold out: the failover comes once a few orders were told (bounded).
    let started = tokio::time::Instant::now();
    while told.lock().unwrap().len() < 20 && started.elapsed() < WAIT {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = told.lock().unwrap().len();
    primary.stop_immediate().unwrap();
    if stale {
        standby.resume().unwrap();
    }
    standby.promote().unwrap();
    link.redirect(addr_of(&standby));
    for api in &apis {
        until_ready_is(api, 200).await;
    }
    // Until orders are told again (bounded), and a while on.
    let started = tokio::time::Instant::now();
    while told.lock().unwrap().len() <= before + 5 && started.elapsed() < WAIT {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    while buyers.join_next().await.is_some() {}
    let told = told.lock().unwrap().clone();
    assert!(before >= 5 && told.len() > before, "orders before the failover ({before}) and after ({})", told.len());
    for (i, api) in apis.iter().enumerate() {
        let seat = &seats[390 + i];
        let tok = token(&format!("after{i}"), &[&ev], false);
        let r = api.post(&format!("/v1/events/{ev}/holds")).bearer(&tok).json(json!({"seat_ids": [seat]})).send().await;
        assert_eq!(r.status, 201, "bookingd {i} carries on against the new primary: {}", r.text);
    }
    for (p, _) in &mut bookingds {
        p.assert_running();
    }
    kept_on(&standby.admin_url(), &told).await
}

/// Waits (bounded by [`WAIT`]) until the standby at `url` has replayed event `ev`'s creation.
async fn until_replayed(url: &str, ev: &str) {
    let started = tokio::time::Instant::now();
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(url).await.unwrap();
    loop {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM seats WHERE event_id = $1")
            .bind(ev)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        if n > 0 {
            return;
        }
        assert!(started.elapsed() < WAIT, "the standby never replayed {ev}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A hold on `seat`, retried while the service cannot answer (a `5xx` or
/// no answer: the database is failing over), at most 100 times 100 ms
/// apart or until `stop`; its token, or `None` when refused or given up.
/// (Skipping the seat instead would let a buyer run out of seats during
/// the outage, its holds refused at once.)
async fn hold_retrying(
    api: &Api,
    ev: &str,
    tok: &str,
    seat: &str,
    stop: &std::sync::atomic::AtomicBool,
) -> Option<String> {
    for _ in 0..100 {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        let hold = api.post(&format!("/v1/events/{ev}/holds")).bearer(tok).json(json!({"seat_ids": [seat]}));
        match hold.try_send().await {
            Ok(r) if r.status == 201 => return r.body["hold_token"].as_str().map(str::to_string),
            Ok(r) if r.status < 500 => return None,
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    None
}

/// A buyer's loop until `stop`: hold one of `mine` at a time (alternating
/// bookingds), check it out (one idempotency key, retried through outages),
/// and note every order a `2xx` answer named, with the status it said.
async fn buy_until_stopped(
    b: usize,
    apis: &[Api],
    ev: &str,
    mine: &[String],
    stop: &std::sync::atomic::AtomicBool,
    told: &std::sync::Mutex<Vec<(String, String)>>,
) {
    let tok = token(&format!("buyer{b}"), &[ev], false);
    for (n, seat) in mine.iter().enumerate() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let Some(hold_token) = hold_retrying(&apis[n % apis.len()], ev, &tok, seat, stop).await else { continue };
        let key = format!("{ev}-{seat}");
        for attempt in 0..20 {
            let path = format!("/v1/events/{ev}/holds/{hold_token}/checkout");
            let req = apis[(n + attempt) % apis.len()].post(&path).bearer(&tok).header("idempotency-key", &key);
            match req.json(json!({"seat_ids": [seat]})).try_send().await {
                Ok(r) if (200..300).contains(&r.status) => {
                    let fact = (r.body["order_id"].as_str().unwrap().to_string(), r.body["status"].to_string());
                    told.lock().unwrap().push(fact);
                    break;
                }
                Ok(r) if r.status < 500 => break,
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
}

/// Whether every order of `told` is in the database at `url` in the status
/// it was told or one that status leads to (pending ones: any), and no seat
/// has two bookings; what is not, if anything.
async fn kept_on(url: &str, told: &[(String, String)]) -> Result<(), String> {
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(url).await.unwrap();
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT order_id::text, status FROM orders").fetch_all(&mut conn).await.unwrap();
    let finals: BTreeMap<String, String> = rows.into_iter().collect();
    let mut wrong = Vec::new();
    for (order, said) in told {
        let said = said.trim_matches('"');
        match finals.get(order) {
            None => wrong.push(format!("order {order}, told {said}, is lost")),
            Some(now) if said != now && said != "pending" && said != "reconciling" => {
                wrong.push(format!("order {order} was told {said}, is {now}"))
            }
            Some(_) => {}
        }
    }
    let doubled: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM bookings GROUP BY event_id, seat_id HAVING count(*) > 1) d",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    if doubled > 0 {
        wrong.push(format!("{doubled} seats booked twice"));
    }
    if wrong.is_empty() { Ok(()) } else { Err(wrong.join("; ")) }
}

/// `bookingd migrate` on an empty database creates the schema.
#[tokio::test]
async fn migrate_subcommand_applies_the_migrations() {
    let name = format!("holdfast_test_{}", RandomIds.next_uuid().simple());
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&common::admin_url()).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
    let run = || async {
        let out =
            tokio::time::timeout(WAIT, bookingd_cmd().args(["migrate", "--database-url", &db_url(&name)]).output())
                .await
                .expect("migrate is bounded")
                .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(run().await.trim(), "migrations applied");
    assert_eq!(run().await.trim(), "migrations applied", "idempotent");
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&db_url(&name)).await.unwrap();
    let tables: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN \
         ('events', 'seats', 'orders', 'payment_ops', 'bookings', 'compensations', 'outbox', 'idempotency_keys')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(tables, 8);
    drop(conn);
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)"))).execute(&mut admin).await.unwrap();
}

/// Instances started together raced their migrations: each ran the
/// migrator at once, the losers hit PostgreSQL's duplicate-key errors
/// (logged, then retried). `PgStore::migrate` now waits on a row lock, so
/// migrators started together on a fresh database all succeed at the first
/// attempt (no retry wrapper here), and the schema is applied once.
#[tokio::test]
async fn migrators_started_together_wait_for_each_other() {
    const MIGRATORS: usize = 6;
    let name = format!("holdfast_test_{}", RandomIds.next_uuid().simple());
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&common::admin_url()).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
    let mut runs = tokio::task::JoinSet::new();
    for _ in 0..MIGRATORS {
        let url = db_url(&name);
        runs.spawn(async move {
            let pool = sqlx::postgres::PgPoolOptions::new().max_connections(2).connect(&url).await.unwrap();
            let r = booking::store::PgStore::migrate(&pool).await;
            pool.close().await;
            r
        });
    }
    while let Some(r) = runs.join_next().await {
        r.unwrap().expect("every migrator succeeds at its first attempt");
    }
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&db_url(&name)).await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations").fetch_one(&mut conn).await.unwrap();
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations")).unwrap().count();
    assert_eq!(applied as usize, files, "each migration recorded once");
    drop(conn);
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)"))).execute(&mut admin).await.unwrap();
}

/// The options of one `--help` text: flag -> its description.
fn help_flags(help: &str) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<(String, usize)> = None;
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim_start();
        let flag_line = t.starts_with("--") || (t.starts_with('-') && t.get(2..4) == Some(", "));
        if flag_line && indent > 0 {
            let flag = t.split([' ', '=']).find(|w| w.starts_with("--")).unwrap().to_string();
            // Whatever follows the flag and its `<VALUE>` on the line is description.
            let rest = t.split_once("  ").map(|(_, d)| d.trim().to_string()).unwrap_or_default();
            out.insert(flag.clone(), rest);
            current = Some((flag, indent));
        } else if let Some((flag, flag_indent)) = &current {
            if !t.is_empty() && indent > *flag_indent {
                let d = out.get_mut(flag).unwrap();
                d.push(' ');
                d.push_str(t);
            } else {
                current = None;
            }
        }
    }
    out
}

fn run_bookingd(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bookingd"));
    cmd.args(args)
        .env_remove("HOLDFAST_TOKEN_SECRET")
        .env_remove("HOLDFAST_WEBHOOK_SECRET")
        .env_remove("HOLDFAST_ADMISSION_SECRET")
        .env_remove("DATABASE_URL")
        .env_remove("REDIS_URL")
        .env_remove("PROVIDER_URL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn help_of(args: &[&str]) -> String {
    let out = run_bookingd(args, &[]);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `bookingd --help` names every subcommand, the secrets and the main flags;
/// each subcommand's `--help` lists exactly its flags, each explained; the
/// test-only crash flag stays hidden.
#[test]
fn bookingd_help_explains_every_flag() {
    let top = help_of(&["--help"]);
    for needle in [
        "serve",
        "migrate",
        "issue-token",
        "HOLDFAST_TOKEN_SECRET",
        "HOLDFAST_WEBHOOK_SECRET",
        "HOLDFAST_ADMISSION_SECRET",
        "RUST_LOG",
        "--database-url",
        "--redis-url",
        "--provider-url",
        "--listen",
        "--user",
        "--events",
        "--admin",
        "--ttl-s",
    ] {
        assert!(top.contains(needle), "`bookingd --help` lacks {needle}:\n{top}");
    }
    let serve = [
        "--database-url",
        "--redis-url",
        "--provider-url",
        "--listen",
        "--hold-ttl-ms",
        "--payment-ttl-ms",
        "--hold-attempts-per-minute",
        "--queue-polls-per-minute",
        "--max-seats-held-per-user",
        "--cache-namespace",
        "--cache-ttl-ms",
        "--provider-timeout-ms",
        "--outbox-lease-ms",
        "--dispatch-concurrency",
        "--max-db-connections",
        "--admission-prior-session-ms",
        "--admission-tick-ms",
        "--admission-poll-max-s",
    ];
    let cases: [(&[&str], &[&str], &[&str]); 3] = [
        (
            &["serve", "--help"],
            &serve,
            &[
                "DATABASE_URL",
                "REDIS_URL",
                "PROVIDER_URL",
                "HOLDFAST_TOKEN_SECRET",
                "HOLDFAST_WEBHOOK_SECRET",
                "HOLDFAST_ADMISSION_SECRET",
            ],
        ),
        (&["migrate", "--help"], &["--database-url"], &["DATABASE_URL"]),
        (
            &["issue-token", "--help"],
            &["--user", "--events", "--ttl-s", "--admin", "--tier"],
            &["HOLDFAST_TOKEN_SECRET"],
        ),
    ];
    for (args, flags, env) in cases {
        let help = help_of(args);
        let found = help_flags(&help);
        let mut want: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        want.push("--help".into());
        want.sort();
        assert_eq!(found.keys().cloned().collect::<Vec<_>>(), want, "`bookingd {args:?}` flags:\n{help}");
        for (flag, description) in &found {
            assert!(description.split_whitespace().count() >= 2, "{flag} is not explained in {args:?}:\n{help}");
        }
        for var in env {
            assert!(help.contains(var), "{args:?} does not mention {var}:\n{help}");
        }
        assert!(!help.contains("crash-after-commit"), "the test-only flag is hidden");
    }
}

/// Bad flags and missing secrets are clear errors (exit 2), never a panic.
#[test]
fn bookingd_refuses_bad_configuration_clearly() {
    const SHORT_ADMISSION_SECRET: &str = "HOLDFAST_ADMISSION_SECRET must be at least 16 bytes";
    let serve = ["serve", "--database-url", "postgres://127.0.0.1:1/none", "--provider-url", "http://127.0.0.1:1"];
    let secrets = [("HOLDFAST_TOKEN_SECRET", TOKEN_SECRET), ("HOLDFAST_WEBHOOK_SECRET", WEBHOOK_SECRET)];
    // (extra serve arguments, environment, what stderr must say)
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        (&["--hold-attempts-per-minute", "0"], &secrets, "--hold-attempts-per-minute"),
        (&["--hold-ttl-ms=-5"], &secrets, "--hold-ttl-ms"),
        (&["--cache-ttl-ms", "0"], &secrets, "--cache-ttl-ms"),
        (&["--max-db-connections", "0"], &secrets, "--max-db-connections"),
        (&["--cache-namespace", "has space"], &secrets, "--cache-namespace"),
        (&["--max-seats-held-per-user", "100001"], &secrets, "--max-seats-held-per-user"),
        (&["--provider-timeout-ms", "30000"], &secrets, "--provider-timeout-ms"),
        (&["--queue-polls-per-minute", "0"], &secrets, "--queue-polls-per-minute"),
        (&[], &[("HOLDFAST_WEBHOOK_SECRET", WEBHOOK_SECRET)], "HOLDFAST_TOKEN_SECRET must be set"),
        (&[], &[("HOLDFAST_TOKEN_SECRET", TOKEN_SECRET), ("HOLDFAST_WEBHOOK_SECRET", "short")], "at least 16 bytes"),
        // Set but short (or empty): refused, never silently replaced by a derived one.
        (&[], &[secrets[0], secrets[1], ("HOLDFAST_ADMISSION_SECRET", "short")], SHORT_ADMISSION_SECRET),
        (&[], &[secrets[0], secrets[1], ("HOLDFAST_ADMISSION_SECRET", "")], SHORT_ADMISSION_SECRET),
    ];
    for (extra, env, needle) in cases {
        let args: Vec<&str> = serve.iter().chain(extra.iter()).copied().collect();
        let out = run_bookingd(&args, env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // Another engine's URL was read as PostgreSQL's.
    let mysql = ["serve", "--database-url", "mysql://root@127.0.0.1:3306/x", "--provider-url", "http://127.0.0.1:1"];
    let out = run_bookingd(&mysql, &secrets);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("must be a PostgreSQL URL") && stderr.contains("not a mysql:// URL"), "{stderr}");
    // An unreachable database is named (host, port, database), without a password.
    let unreachable =
        ["serve", "--database-url", "postgres://u:hunter2@127.0.0.1:1/nowhere", "--provider-url", "http://127.0.0.1:1"];
    let out = run_bookingd(&unreachable, &secrets);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("127.0.0.1:1/nowhere") && !stderr.contains("hunter2"), "{stderr}");
    // Nothing listens there: said so, not "pool timed out".
    assert!(stderr.to_lowercase().contains("connection refused") && !stderr.contains("timed out"), "{stderr}");
    // The documented tiers are 0..=7, and the refusal says so.
    let out = run_bookingd(&["issue-token", "--user", "a", "--tier", "8"], &[("HOLDFAST_TOKEN_SECRET", TOKEN_SECRET)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("0..=7") && !stderr.contains("0..8"), "{stderr}");
    let out = run_bookingd(&["issue-token", "--user", "alice"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HOLDFAST_TOKEN_SECRET must be set"));
    let out = run_bookingd(&["issue-token", "--user", "not a user"], &[("HOLDFAST_TOKEN_SECRET", TOKEN_SECRET)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--user"));
}
