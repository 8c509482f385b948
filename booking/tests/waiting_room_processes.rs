//! The waiting room across two real `bookingd` processes sharing one
//! PostgreSQL database and one Redis (so one set of rooms, in Redis): FIFO
//! positions and the session target hold whichever instance a user talks to,
//! a lottery's order is recomputable from its reveal, every bypass of the
//! admission gate is refused by both instances, a session ends on a purchase
//! (not on a release or a declined payment), and the gate holds through a
//! Redis outage: instances started or restarted during it refuse, and the
//! room resumes by itself, in order, when Redis comes back empty.
//!
//! Each test has its own database; bookingd derives its Redis namespace (seat
//! maps and rooms) from the database, so tests never share rooms, and a test
//! deletes its keys at the end. The instances run with
//! `--admission-prior-session-ms 2000`: a room admits about target/2 users a
//! second. Processes are killed and the database dropped even when a test fails.

use crate::common;
use crate::process_support;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use booking::admission::queue::lottery_order;
use booking::admission::token::rfc3339_ms;
use booking::clock::{Clock, SystemClock};
use booking::http::auth::{Authenticator, Claims};
use booking::model::{SeatId, UserId};
use bytes::Bytes;
use common::TestDb;
use futures::future::join_all;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use process_support::{Proc, db_url, free_port};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::Command;

const TOKEN_SECRET: &str = "wr-token-secret-0123456789";
const WEBHOOK_SECRET: &str = "wr-webhook-secret-0123456789";
/// Bound on one HTTP call.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on admissions happening.
const ADMIT_WAIT: Duration = Duration::from_secs(30);
/// Pause between two polling rounds.
const POLL: Duration = Duration::from_millis(150);
/// Attempts to start the processes on ports that were free a moment ago.
const PORT_ATTEMPTS: usize = 5;

// ---------------------------------------------------------------- processes

fn bookingd(db_url: &str, listen: &str, provider: SocketAddr, redis_url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bookingd"));
    cmd.env("HOLDFAST_TOKEN_SECRET", TOKEN_SECRET)
        .env("HOLDFAST_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .env("RUST_LOG", "warn")
        .env_remove("DATABASE_URL")
        .env_remove("REDIS_URL")
        .env_remove("PROVIDER_URL")
        .env_remove("HOLDFAST_CACHE_NAMESPACE")
        .env_remove("HOLDFAST_ADMISSION_SECRET")
        .args(["serve", "--database-url", db_url, "--redis-url", redis_url])
        .args(["--provider-url", &format!("http://{provider}"), "--listen", listen])
        .args(["--admission-prior-session-ms", "2000", "--admission-tick-ms", "250"]);
    cmd
}

/// A fake provider (its webhooks to instance 0) and two bookingd instances
/// on one fresh database and the shared Redis.
async fn start_processes(db_url: &str) -> (Vec<Proc>, [Api; 2], SocketAddr) {
    let redis = test_services::redis_url();
    let mut last_err = String::new();
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fake-provider"));
        cmd.args(["--listen", "127.0.0.1:0", "--webhook-secret", WEBHOOK_SECRET])
            .args(["--webhook-url", &format!("http://127.0.0.1:{port}/v1/webhooks/provider")])
            .env("RUST_LOG", "warn");
        let (provider, provider_addr) = Proc::start("fake-provider", cmd).await.unwrap();
        let listen = format!("127.0.0.1:{port}");
        let a = match Proc::start("bookingd-a", bookingd(db_url, &listen, provider_addr, &redis)).await {
            Ok(ok) => ok,
            Err(e) if e.contains("cannot listen") => {
                last_err = e;
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        let b = Proc::start("bookingd-b", bookingd(db_url, "127.0.0.1:0", provider_addr, &redis)).await.unwrap();
        return (vec![provider, a.0, b.0], [Api::new(a.1), Api::new(b.1)], provider_addr);
    }
    panic!("no free port for bookingd after {PORT_ATTEMPTS} attempts: {last_err}");
}

/// Runs `scenario` against two instances (and the fake provider's address); afterwards (pass or fail) kills the
/// processes, drops the database and deletes the test's Redis keys, then
/// re-raises a failure with the processes' output.
async fn with_two_instances<F, Fut>(scenario: F)
where
    F: FnOnce([Api; 2], SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let db = TestDb::create(2).await;
    let db_name = db.name.clone();
    let (procs, apis, provider) = start_processes(&db_url(&db.name)).await;
    let outcome = tokio::spawn(scenario(apis, provider)).await;
    let logs: Vec<String> = procs.iter().map(|p| format!("--- {} ---\n{}", p.name, p.output())).collect();
    drop(procs);
    db.drop_db().await;
    delete_redis_keys(&db_name).await;
    if let Err(e) = outcome {
        eprintln!("{}", logs.join("\n"));
        match e.try_into_panic() {
            Ok(p) => std::panic::resume_unwind(p),
            Err(e) => panic!("scenario: {e}"),
        }
    }
}

/// Deletes the keys of the namespace bookingd derived from database `db_name`
/// (`holdfast:<cluster>:<db_name>...`: its seat maps and rooms).
async fn delete_redis_keys(db_name: &str) {
    let Ok(client) = redis::Client::open(test_services::redis_url()) else { return };
    let Ok(mut conn) = client.get_multiplexed_async_connection().await else { return };
    let keys: Vec<String> =
        redis::cmd("KEYS").arg(format!("holdfast:*:{db_name}:*")).query_async(&mut conn).await.unwrap_or_default();
    if !keys.is_empty() {
        let _: Result<(), _> = redis::cmd("DEL").arg(&keys).query_async(&mut conn).await;
    }
}

// ---------------------------------------------------------------- HTTP

#[derive(Clone)]
struct Api {
    client: Client<HttpConnector, Full<Bytes>>,
    addr: SocketAddr,
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: http::HeaderMap,
    body: Value,
    text: String,
}

impl Api {
    fn new(addr: SocketAddr) -> Self {
        Self { client: Client::builder(TokioExecutor::new()).build(HttpConnector::new()), addr }
    }

    /// `method path` as `user` (`ops` is an operator), with an admission token
    /// and a JSON body when given; checkouts carry an `Idempotency-Key`.
    async fn call(&self, method: &str, path: &str, user: &str, admission: Option<&str>, body: Option<Value>) -> Resp {
        self.call_keyed(method, path, user, admission, body, &format!("k-{user}")).await
    }

    /// As [`Api::call`], a checkout under idempotency key `key`.
    async fn call_keyed(
        &self,
        method: &str,
        path: &str,
        user: &str,
        admission: Option<&str>,
        body: Option<Value>,
        key: &str,
    ) -> Resp {
        let mut b = http::Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.addr))
            .header("authorization", format!("Bearer {}", token(user)));
        if let Some(a) = admission {
            b = b.header("admission-token", a);
        }
        if method == "POST" && path.ends_with("/checkout") {
            b = b.header("idempotency-key", key);
        }
        let body = match body {
            Some(v) => {
                b = b.header("content-type", "application/json");
                Bytes::from(v.to_string())
            }
            None => Bytes::new(),
        };
        let req = b.body(Full::new(body)).unwrap();
        let call = async {
            let resp = self.client.request(req).await.map_err(|e| format!("{e:?}"))?;
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let bytes = resp.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let body = serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(text.clone()));
            Ok::<_, String>(Resp { status, headers, body, text })
        };
        tokio::time::timeout(CALL_TIMEOUT, call)
            .await
            .map_err(|_| "timed out".to_string())
            .and_then(|r| r)
            .unwrap_or_else(|e| panic!("{method} {path} on {}: {e}", self.addr))
    }

    async fn create_event(&self, event: &str, seats: u32) {
        let seat_ids: Vec<SeatId> = (1..=seats).map(|i| SeatId::from(format!("s{i}"))).collect();
        let body = json!({"event_id": event, "seat_ids": seat_ids, "price_cents": 2500});
        let r = self.call("POST", "/v1/events", "ops", None, Some(body)).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }

    /// Opens `event`'s room; answers the response body.
    async fn open_room(&self, event: &str, policy: &str, opens_at_ms: i64, target: u32) -> Value {
        let body = json!({"policy": policy, "opens_at": rfc3339_ms(opens_at_ms), "target_active_sessions": target});
        let r = self.call("PUT", &format!("/v1/events/{event}/waiting-room"), "ops", None, Some(body)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    async fn queue(&self, method: &str, event: &str, user: &str) -> Value {
        let r = self.call(method, &format!("/v1/events/{event}/queue"), user, None, None).await;
        assert_eq!(r.status, 200, "{method} queue for {user}: {}", r.text);
        r.body
    }

    /// Holds `seat` of `event` for `user` with `admission`; answers the hold token.
    async fn hold(&self, event: &str, user: &str, admission: &str, seat: &str) -> String {
        let r = self.hold_raw(event, user, Some(admission), seat).await;
        assert_eq!(r.status, 201, "{}", r.text);
        r.body["hold_token"].as_str().unwrap().to_string()
    }

    async fn hold_raw(&self, event: &str, user: &str, admission: Option<&str>, seat: &str) -> Resp {
        let body = json!({"seat_ids": [seat]});
        self.call("POST", &format!("/v1/events/{event}/holds"), user, admission, Some(body)).await
    }

    async fn checkout(&self, event: &str, user: &str, admission: &str, hold: &str, seat: &str) {
        let path = format!("/v1/events/{event}/holds/{hold}/checkout");
        let r = self.call("POST", &path, user, Some(admission), Some(json!({"seat_ids": [seat]}))).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
}

fn token(user: &str) -> String {
    let clock = Arc::new(SystemClock);
    let claims = Claims {
        sub: user.into(),
        events: vec!["*".into()],
        exp_ms: clock.now_ms() + 600_000,
        admin: user == "ops",
        tier: None,
    };
    Authenticator::new(TOKEN_SECRET.as_bytes(), clock).issue(&claims)
}

#[track_caller]
fn assert_problem(r: &Resp, status: u16, kind: &str) {
    assert_eq!(r.status, status, "{}", r.text);
    let ct = r.headers.get("content-type").map(|v| v.to_str().unwrap()).unwrap_or("");
    assert_eq!(ct, "application/problem+json", "{}", r.text);
    assert_eq!(r.body["type"], format!("urn:holdfast:problem:{kind}"), "{}", r.text);
}

/// An admission token's payload (it is not secret, only signed).
fn admission_claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a1.<payload>.<mac>");
    serde_json::from_slice(&B64.decode(payload).expect("base64url payload")).expect("JSON payload")
}

/// The order in which `users` were admitted, from their tokens: by admission time, then place in the batch.
fn admission_order(tokens: &BTreeMap<String, String>) -> Vec<String> {
    let mut keyed: Vec<(i64, u64, String)> = tokens
        .iter()
        .map(|(u, t)| {
            let c = admission_claims(t);
            (c["issued_at_ms"].as_i64().unwrap(), c["position"].as_u64().unwrap(), u.clone())
        })
        .collect();
    keyed.sort();
    keyed.into_iter().map(|(_, _, u)| u).collect()
}

/// Every user's queue status, asked concurrently, user `i` of round `round`
/// on instance `(i + round) % 2`.
async fn poll_all(apis: &[Api; 2], event: &str, users: &[String], round: usize) -> Vec<Value> {
    join_all(users.iter().enumerate().map(|(i, u)| apis[(i + round) % 2].queue("GET", event, u))).await
}

fn now_ms() -> i64 {
    SystemClock.now_ms()
}

// ---------------------------------------------------------------- tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_order_and_session_target_hold_across_two_instances() {
    with_two_instances(|apis, _| async move {
        const TARGET: usize = 5;
        let ev = "wr-fifo";
        apis[0].create_event(ev, 50).await;
        // Opens shortly after the joins (a room that is already open could
        // admit someone while the others are still joining, shifting their
        // positions); a FIFO room gives places before opening.
        let opens_at = now_ms() + 1_500;
        apis[1].open_room(ev, "fifo", opens_at, TARGET as u32).await;
        let users: Vec<String> = (0..40).map(|i| format!("fifo-{i:02}")).collect();
        let joins = join_all(users.iter().enumerate().map(|(i, u)| apis[i % 2].queue("POST", ev, u))).await;
        assert!(now_ms() < opens_at, "the joins took too long for this test's assumptions");
        let mut by_position: BTreeMap<u64, String> = BTreeMap::new();
        for (u, j) in users.iter().zip(&joins) {
            assert_eq!(j["state"], "waiting", "{u}: {j}");
            let p = j["position"].as_u64().unwrap_or_else(|| panic!("{u}: no position: {j}"));
            assert!(by_position.insert(p, u.clone()).is_none(), "position {p} given twice");
        }
        assert_eq!(by_position.keys().copied().collect::<Vec<_>>(), (1..=40).collect::<Vec<u64>>());
        let in_line: Vec<String> = by_position.into_values().collect();

        // Polls every user (alternating instances) until `want` first users
        // were admitted; at every round no more than TARGET sessions are open
        // (no session ends meanwhile, so a round's count is at most the true
        // count at its end), and the admitted are a prefix of the line.
        // Answers the tokens of the users admitted and not ended.
        let mut round = 0;
        let mut admit_until = async |want: usize| -> BTreeMap<String, String> {
            let deadline = tokio::time::Instant::now() + ADMIT_WAIT;
            loop {
                round += 1;
                // From the back of the line to its front, one at a time: were the
                // admitted a prefix of the line, someone seen admitted is
                // followed by reads of people ahead, admitted by then too.
                let mut statuses = Vec::with_capacity(in_line.len());
                for (i, u) in in_line.iter().enumerate().rev() {
                    statuses.push(apis[(i + round) % 2].queue("GET", ev, u).await);
                }
                statuses.reverse();
                let mut open = BTreeMap::new();
                let mut ever = 0;
                for (k, (u, s)) in in_line.iter().zip(&statuses).enumerate() {
                    assert!(s["active_sessions"].as_u64().unwrap() <= TARGET as u64, "gauge past target: {s}");
                    match s["state"].as_str().unwrap() {
                        "admitted" => {
                            open.insert(u.clone(), s["admission_token"].as_str().unwrap().to_string());
                        }
                        "session_ended" => {}
                        "waiting" => continue,
                        other => panic!("{u}: unexpected state {other}: {s}"),
                    }
                    assert_eq!(k, ever, "{u} (place {}) admitted before someone ahead of them", k + 1);
                    ever += 1;
                }
                assert!(open.len() <= TARGET, "round {round}: {} sessions open: {open:?}", open.len());
                if ever >= want {
                    assert_eq!(ever, want, "round {round}: admitted past the target");
                    return open;
                }
                assert!(tokio::time::Instant::now() < deadline, "only {ever} of {want} admitted within {ADMIT_WAIT:?}");
                tokio::time::sleep(POLL).await;
            }
        };
        let first = admit_until(TARGET).await;
        assert_eq!(first.keys().cloned().collect::<BTreeSet<_>>(), in_line[..TARGET].iter().cloned().collect());
        assert_eq!(admission_order(&first), in_line[..TARGET], "admitted in line order");

        // Two purchases end two sessions, each across both instances; a
        // release before the second ends nothing: its buyer holds again.
        let (u1, u2) = (&in_line[0], &in_line[1]);
        let hold = apis[0].hold(ev, u1, &first[u1], "s1").await;
        apis[1].checkout(ev, u1, &first[u1], &hold, "s1").await;
        let hold = apis[1].hold(ev, u2, &first[u2], "s2").await;
        let r = apis[0].call("DELETE", &format!("/v1/events/{ev}/holds/{hold}"), u2, None, None).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(apis[1].queue("GET", ev, u2).await["state"], "admitted", "a release leaves the session open");
        let hold = apis[0].hold(ev, u2, &first[u2], "s2").await;
        apis[1].checkout(ev, u2, &first[u2], &hold, "s2").await;
        for (i, u) in [u1, u2].into_iter().enumerate() {
            assert_eq!(apis[i].queue("GET", ev, u).await["state"], "session_ended");
        }
        // The two free places go to the next two in line, and no further.
        let open = admit_until(TARGET + 2).await;
        let want: BTreeSet<String> = in_line[2..TARGET + 2].iter().cloned().collect();
        assert_eq!(open.keys().cloned().collect::<BTreeSet<_>>(), want);
        let mut both = first.clone();
        both.extend(open);
        assert_eq!(admission_order(&both), in_line[..TARGET + 2], "admitted in line order");
        tokio::time::sleep(Duration::from_secs(1)).await;
        let statuses = poll_all(&apis, ev, &in_line, 0).await;
        for (k, s) in statuses.iter().enumerate().skip(TARGET + 2) {
            assert_eq!((s["state"].as_str(), s["position"].as_u64()), (Some("waiting"), Some((k - TARGET - 1) as u64)));
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lottery_order_is_recomputable_from_the_reveal() {
    with_two_instances(|apis, _| async move {
        let ev = "wr-lottery";
        apis[0].create_event(ev, 30).await;
        let opens_at = now_ms() + 3_000;
        let opened = apis[0].open_room(ev, "lottery", opens_at, 20).await;
        let commitment = opened["lottery_commitment"].as_str().expect("a lottery's commitment").to_string();
        let users: Vec<String> = (0..20).map(|i| format!("lot-{i:02}")).collect();
        // One at a time, so that arrival order is the order sent.
        for (i, u) in users.iter().enumerate() {
            let j = apis[i % 2].queue("POST", ev, u).await;
            assert_eq!(j["state"], "awaiting_draw", "{u}: {j}");
        }
        assert!(now_ms() < opens_at, "the joins took too long for this test's assumptions");
        for api in &apis {
            let r = api.call("GET", &format!("/v1/events/{ev}/queue/lottery"), "lot-00", None, None).await;
            assert_eq!(r.status, 200, "{}", r.text);
            assert_eq!(r.body["commitment"], commitment.as_str(), "every instance publishes the same commitment");
            assert!(
                r.body["seed"].is_null() && r.body["joiners"].is_null(),
                "nothing revealed before the draw: {}",
                r.text
            );
        }
        // After the opening the law admits everyone (target 20).
        let deadline = tokio::time::Instant::now() + ADMIT_WAIT;
        let mut round = 0;
        let tokens: BTreeMap<String, String> = loop {
            round += 1;
            let statuses = poll_all(&apis, ev, &users, round).await;
            let admitted: BTreeMap<String, String> = users
                .iter()
                .zip(&statuses)
                .filter(|(_, s)| s["state"] == "admitted")
                .map(|(u, s)| (u.clone(), s["admission_token"].as_str().unwrap().to_string()))
                .collect();
            if admitted.len() == users.len() {
                break admitted;
            }
            assert!(tokio::time::Instant::now() < deadline, "{} of 20 admitted within {ADMIT_WAIT:?}", admitted.len());
            tokio::time::sleep(POLL).await;
        };
        let r = apis[1].call("GET", &format!("/v1/events/{ev}/queue/lottery"), "lot-07", None, None).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["commitment"], commitment.as_str());
        let seed = hex::decode(r.body["seed"].as_str().expect("the seed, revealed")).unwrap();
        assert_eq!(hex::encode(Sha256::digest(&seed)), commitment, "the revealed seed is the one committed to");
        let joiners: Vec<UserId> = serde_json::from_value(r.body["joiners"].clone()).unwrap();
        assert_eq!(joiners, users, "the joiners, in arrival order");
        let seed: [u8; 32] = seed.try_into().expect("a 32-byte seed");
        let order: Vec<String> = lottery_order(&seed, &joiners).into_iter().map(String::from).collect();
        let mut by_hand = users.clone();
        by_hand.sort_by_key(|u| Sha256::new().chain_update(seed).chain_update(u.as_bytes()).finalize().to_vec());
        assert_eq!(order, by_hand, "SHA-256(seed || user id) orders the draw");
        assert_eq!(order.iter().cloned().collect::<BTreeSet<_>>(), users.iter().cloned().collect(), "a permutation");
        assert_ne!(order, users, "the draw is not arrival order");
        assert_eq!(admission_order(&tokens), order, "admitted in the drawn order");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bypass_is_refused() {
    with_two_instances(|apis, _| async move {
        let (ev, other) = ("wr-gate", "wr-gate-2");
        apis[0].create_event(ev, 10).await;
        apis[1].create_event(other, 10).await;
        apis[0].open_room(ev, "fifo", now_ms() - 1_000, 5).await;
        apis[1].open_room(other, "fifo", now_ms() - 1_000, 5).await;
        for (i, u) in ["ann", "bob"].iter().enumerate() {
            apis[i].queue("POST", ev, u).await;
        }
        let deadline = tokio::time::Instant::now() + ADMIT_WAIT;
        let (ann, bob) = loop {
            let (a, b) = (apis[0].queue("GET", ev, "ann").await, apis[1].queue("GET", ev, "bob").await);
            if a["state"] == "admitted" && b["state"] == "admitted" {
                break (
                    a["admission_token"].as_str().unwrap().to_string(),
                    b["admission_token"].as_str().unwrap().to_string(),
                );
            }
            assert!(tokio::time::Instant::now() < deadline, "not admitted within {ADMIT_WAIT:?}: {a} {b}");
            tokio::time::sleep(POLL).await;
        };
        // The payload changed (one character), the MAC kept.
        let flip = if ann.as_bytes()[5] == b'A' { "B" } else { "A" };
        let forged = format!("{}{flip}{}", &ann[..5], &ann[6..]);
        for api in &apis {
            assert_problem(&api.hold_raw(ev, "ann", None, "s1").await, 403, "admission-required");
            assert_problem(&api.hold_raw(ev, "ann", Some(&forged), "s1").await, 403, "admission-forged");
            assert_problem(&api.hold_raw(ev, "ann", Some(&bob), "s1").await, 403, "admission-other-user");
            assert_problem(&api.hold_raw(other, "ann", Some(&ann), "s1").await, 403, "admission-other-event");
            assert_problem(&api.hold_raw(ev, "ann", Some("garbage"), "s1").await, 403, "admission-malformed");
            let hold = format!("/v1/events/{ev}/holds/{}/checkout", uuid::Uuid::nil());
            let r = api.call("POST", &hold, "ann", None, Some(json!({"seat_ids": ["s1"]}))).await;
            assert_problem(&r, 403, "admission-required");
        }
        // Nothing was held by the refused calls: ann buys s1 (hold on one instance, checkout on the other).
        let hold = apis[0].hold(ev, "ann", &ann, "s1").await;
        apis[1].checkout(ev, "ann", &ann, &hold, "s1").await;
        for api in &apis {
            assert_problem(&api.hold_raw(ev, "ann", Some(&ann), "s2").await, 403, "admission-session-ended");
        }
    })
    .await;
}

/// Joins `event`'s queue as `user` on `api` and polls until admitted; answers the admission token.
async fn admitted(api: &Api, event: &str, user: &str) -> String {
    let deadline = tokio::time::Instant::now() + ADMIT_WAIT;
    let mut s = api.queue("POST", event, user).await;
    loop {
        if s["state"] == "admitted" {
            return s["admission_token"].as_str().expect("an admitted user has a token").to_string();
        }
        assert!(matches!(s["state"].as_str(), Some("waiting" | "awaiting_draw")), "{user}: {s}");
        assert!(tokio::time::Instant::now() < deadline, "{user} not admitted within {ADMIT_WAIT:?}: {s}");
        tokio::time::sleep(POLL).await;
        s = api.queue("GET", event, user).await;
    }
}

/// Checks out `hold` (seat `seat`) of `event` as `user` under idempotency key `key`.
async fn checkout_keyed(
    api: &Api,
    event: &str,
    user: &str,
    admission: &str,
    hold: &str,
    seat: &str,
    key: &str,
) -> Resp {
    let path = format!("/v1/events/{event}/holds/{hold}/checkout");
    api.call_keyed("POST", &path, user, Some(admission), Some(json!({"seat_ids": [seat]})), key).await
}

/// Polls `order` until its status is `want` (bounded).
async fn order_becomes(api: &Api, user: &str, order: &str, want: &str) {
    let deadline = tokio::time::Instant::now() + ADMIT_WAIT;
    loop {
        let r = api.call("GET", &format!("/v1/orders/{order}"), user, None, None).await;
        if r.body["status"] == want {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "order {order} not {want}: {}", r.text);
        tokio::time::sleep(POLL).await;
    }
}

/// A release and a declined payment leave the buyer's session open (they
/// hold again); a purchase ends it: only that checkout's retry passes after
/// it, any other checkout or hold is `admission-session-ended`; rejoining
/// the queue makes a new arrival, admitted again in turn with a new session.
#[tokio::test]
async fn a_session_ends_on_a_purchase_not_on_a_release_or_a_decline() {
    with_two_instances(|apis, provider| async move {
        let (ev, u) = ("wr-sessions", "buyer");
        apis[0].create_event(ev, 10).await;
        apis[1].open_room(ev, "fifo", now_ms(), 3).await;
        let admission = admitted(&apis[0], ev, u).await;
        let hold = apis[0].hold(ev, u, &admission, "s1").await;
        let r = apis[1].call("DELETE", &format!("/v1/events/{ev}/holds/{hold}"), u, None, None).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(apis[0].queue("GET", ev, u).await["state"], "admitted", "a release leaves the session open");

        let faults = Api::new(provider);
        let r = faults.call("POST", "/admin/faults", "ops", None, Some(json!({"decline_rate": 1.0}))).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let hold = apis[1].hold(ev, u, &admission, "s2").await;
        let r = checkout_keyed(&apis[0], ev, u, &admission, &hold, "s2", "declined").await;
        assert_eq!(r.status, 201, "{}", r.text);
        order_becomes(&apis[1], u, r.body["order_id"].as_str().unwrap(), "failed").await;
        assert_eq!(apis[1].queue("GET", ev, u).await["state"], "admitted", "a declined card leaves the session open");
        let r = faults.call("POST", "/admin/faults", "ops", None, Some(json!({"decline_rate": 0.0}))).await;
        assert_eq!(r.status, 200, "{}", r.text);

        let bought = apis[0].hold(ev, u, &admission, "s3").await;
        let other = apis[1].hold(ev, u, &admission, "s4").await;
        let r = checkout_keyed(&apis[1], ev, u, &admission, &bought, "s3", "buy").await;
        assert_eq!(r.status, 201, "the purchase: {}", r.text);
        assert_eq!(apis[0].queue("GET", ev, u).await["state"], "session_ended", "a purchase ends the session");
        let retry = checkout_keyed(&apis[0], ev, u, &admission, &bought, "s3", "buy").await;
        assert_eq!((retry.status, &retry.body["replayed"]), (200, &json!(true)), "its retry: {}", retry.text);
        for (hold, seat, key) in [(&other, "s4", "other"), (&bought, "s3", "another-key")] {
            let r = checkout_keyed(&apis[1], ev, u, &admission, hold, seat, key).await;
            assert_problem(&r, 403, "admission-session-ended");
        }
        assert_problem(&apis[0].hold_raw(ev, u, Some(&admission), "s5").await, 403, "admission-session-ended");

        let again = admitted(&apis[1], ev, u).await;
        assert_ne!(admission_claims(&again)["session_id"], admission_claims(&admission)["session_id"]);
        apis[0].hold(ev, u, &again, "s5").await;
    })
    .await;
}

/// Polls `hold` without a token on every instance until each answers
/// `403 admission-required`; every answer before must be a 503 (bounded).
async fn until_gate_refuses(apis: &[&Api], event: &str) {
    let deadline = tokio::time::Instant::now() + ADMIT_WAIT;
    for (i, api) in apis.iter().enumerate() {
        loop {
            let r = api.hold_raw(event, "intruder", None, "s9").await;
            if r.status == 403 {
                assert_problem(&r, 403, "admission-required");
                break;
            }
            assert_eq!(r.status, 503, "instance {i}, no token: {}", r.text);
            assert!(tokio::time::Instant::now() < deadline, "instance {i} still 503 after Redis came back");
            tokio::time::sleep(POLL).await;
        }
    }
}

/// A private Redis on `port` (no persistence: a restart loses everything).
async fn private_redis(port: u16) -> Proc {
    let mut cmd = Command::new("redis-server");
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
    let redis = Proc::spawn("redis", cmd).unwrap();
    let deadline = tokio::time::Instant::now() + ADMIT_WAIT;
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(tokio::time::Instant::now() < deadline, "redis on {port} did not start:\n{}", redis.output());
        tokio::time::sleep(POLL).await;
    }
    redis
}

/// The gate through a Redis outage, on real processes and a private Redis:
/// no hold without an admission is ever granted, on an instance that saw
/// the room, one started during the outage, or one restarted during it
/// (`503` while Redis is down); when Redis returns empty, the room is rebuilt
/// from PostgreSQL by itself: issued tokens still admit, and those waiting
/// keep their order.
#[tokio::test]
async fn the_gate_holds_through_a_redis_outage_and_the_room_resumes_in_order() {
    let db = TestDb::create(2).await;
    let url = db_url(&db.name);
    let port = free_port();
    let redis_url = format!("redis://127.0.0.1:{port}");
    let mut redis = private_redis(port).await;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fake-provider"));
    cmd.args(["--listen", "127.0.0.1:0", "--webhook-secret", WEBHOOK_SECRET]).env("RUST_LOG", "warn");
    let (_provider, provider) = Proc::start("fake-provider", cmd).await.unwrap();
    let start = |name: &'static str| Proc::start(name, bookingd(&url, "127.0.0.1:0", provider, &redis_url));
    let (mut a, a_addr) = start("bookingd-a").await.unwrap();
    let api_a = Api::new(a_addr);
    let ev = "wr-outage";
    api_a.create_event(ev, 10).await;
    api_a.open_room(ev, "fifo", now_ms() + 1_000, 2).await;
    let users: Vec<String> = (0..6).map(|i| format!("line-{i}")).collect();
    for (i, u) in users.iter().enumerate() {
        assert_eq!(api_a.queue("POST", ev, u).await["position"], i + 1, "{u}");
    }
    let tokens = [admitted(&api_a, ev, &users[0]).await, admitted(&api_a, ev, &users[1]).await];
    assert_problem(&api_a.hold_raw(ev, "intruder", None, "s9").await, 403, "admission-required");

    redis.terminate();
    redis.wait_exit().await;
    assert_eq!(api_a.hold_raw(ev, "intruder", None, "s9").await.status, 503, "the instance that saw the room");
    let (_b, b_addr) = start("bookingd-b").await.unwrap();
    let api_b = Api::new(b_addr);
    assert_eq!(api_b.hold_raw(ev, "intruder", None, "s9").await.status, 503, "an instance started during the outage");
    a.terminate();
    a.wait_exit().await;
    let (_a2, a2_addr) = start("bookingd-a2").await.unwrap();
    let api_a2 = Api::new(a2_addr);
    assert_eq!(api_a2.hold_raw(ev, "intruder", None, "s9").await.status, 503, "an instance restarted during it");

    let _redis = private_redis(port).await;
    until_gate_refuses(&[&api_a2, &api_b], ev).await;
    api_b.hold(ev, &users[0], &tokens[0], "s1").await;
    api_a2.hold(ev, &users[1], &tokens[1], "s2").await;
    for (i, u) in users[2..].iter().enumerate() {
        let s = [&api_a2, &api_b][i % 2].queue("GET", ev, u).await;
        assert_eq!((&s["state"], &s["position"]), (&json!("waiting"), &json!(i + 1)), "{u} keeps their place: {s}");
    }
    db.drop_db().await;
}
