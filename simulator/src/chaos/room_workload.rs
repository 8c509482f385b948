//! The chaos workload in front of waiting rooms: each user joins an event's
//! queue, polls until admitted (or told sold out), then holds and checks
//! out with the admission token until the session ends (a purchase, its
//! expiry), and joins again as a new arrival while the window lasts. After
//! the window, users still waiting keep polling (bounded) until admitted or
//! told sold out: the queue's liveness is judged on that.
//!
//! Requests that must be refused carry a suffix in the history's client
//! name ([`BYPASS`], [`ADMISSION_EXPIRED`], [`SPENT_AFTER`]): holds without
//! a token, with a forged, borrowed or other-event one (a share of users,
//! and intruders who never queue, all run long), with one past its expiry,
//! and with one whose session a purchase ended. The queue answers keep their
//! state and admission expiry in the history ([`super::room_judge`] reads
//! them).

use super::client::Api;
use super::log::{ChaosFault, FaultLog};
use super::room::ChaosRoom;
use crate::world::user::UserParams;
use booking::clock::{Clock, SystemClock};
use booking::model::{EventId, HoldToken, SeatId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// Marks a request without a valid admission of the sender's own (no
/// token, a forged, borrowed or other-event one): any 2xx is a bypass.
pub const BYPASS: &str = ":bypass";
/// Marks a hold with the sender's own admission after its expiry (by the
/// client's clock, with [`EXPIRY_MARGIN_MS`]): any 2xx is a bypass.
pub const ADMISSION_EXPIRED: &str = ":admission-expired";
/// Marks a hold with the sender's own admission after a checkout under it
/// created order `<id>` (`user3:spent-after:<id>`): a 2xx is a bypass unless that order failed.
pub const SPENT_AFTER: &str = ":spent-after:";
/// Margin between an admission's expiry and the client's certainty that it passed, ms.
pub const EXPIRY_MARGIN_MS: i64 = 200;
/// How long users still waiting after the window keep polling, ms.
pub const LIVENESS_MS: u64 = 30_000;
/// Wait between two queue requests of one user, ms (uniform).
const POLL_MS: (u64, u64) = (150, 400);
/// Queue requests of one user at most per wait (bounds a wait with the liveness bound).
const MAX_POLLS: u32 = 1_000;
/// Sessions (admissions) one user goes through at most.
const MAX_SESSIONS: usize = 4;
/// Intruders: users who never queue and hold without admission all run long.
const INTRUDERS: usize = 2;
/// Wait between two intrusions, ms (uniform).
const INTRUSION_MS: (u64, u64) = (50, 250);
/// Admission tokens remembered for borrowing.
const MAX_SHARED: usize = 256;

/// The workload's knobs, already scaled to wall time.
#[derive(Debug, Clone)]
pub struct RoomWorkloadConfig {
    /// The scenario's user model (events and seats filled in).
    pub user: UserParams,
    /// The room in front of every event.
    pub room: ChaosRoom,
    /// How long users start new flows, in wall ms.
    pub duration_ms: u64,
    /// Longest think time, in ms.
    pub max_think_ms: u64,
}

/// Admission tokens users were given (event, token), for bypassers to borrow.
type Shared = Arc<Mutex<Vec<(EventId, String)>>>;

/// Where a wait in the queue ended.
enum Standing {
    Admitted { token: String, expires_at_ms: i64 },
    SoldOut,
    GaveUp,
}

/// What a queue answer leaves in the history.
fn keep_queue(body: &Value) -> Option<Value> {
    Some(json!({"state": body["state"], "admission_expires_at": body["admission_expires_at"]}))
}

/// The epoch ms of an RFC 3339 time.
pub fn epoch_ms(rfc3339: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(rfc3339).ok().map(|t| t.timestamp_millis())
}

/// One user of the run: a name, bearer headers and a seeded rng.
struct Buyer {
    name: String,
    auth: (&'static str, String),
    rng: ChaCha8Rng,
    api: Api,
    log: Arc<FaultLog>,
    cfg: Arc<RoomWorkloadConfig>,
}

impl Buyer {
    fn headers(&self, admission: Option<&str>) -> Vec<(&'static str, String)> {
        let mut h = vec![self.auth.clone()];
        if let Some(a) = admission {
            h.push((booking::http::queue::ADMISSION_TOKEN, a.to_string()));
        }
        h
    }

    async fn pause(&mut self, range: (u64, u64)) {
        tokio::time::sleep(Duration::from_millis(self.rng.random_range(range.0..=range.1))).await;
    }

    async fn think(&mut self) {
        let (lo, hi) = self.cfg.user.think_ms;
        let hi = hi.min(self.cfg.max_think_ms).max(1);
        self.pause((lo.min(hi), hi)).await;
    }

    /// Joins `event`'s queue and polls until admitted, told sold out, or `give_up_ms` (wall, run time).
    async fn wait_in_queue(&mut self, event: &EventId, give_up_ms: u64) -> Standing {
        let path = format!("/v1/events/{event}/queue");
        let mut joined = false;
        for _ in 0..MAX_POLLS {
            if self.log.now_ms() >= give_up_ms {
                return Standing::GaveUp;
            }
            let method = if joined { "GET" } else { "POST" };
            let slot = self.rng.random_range(0..self.api.slots());
            let headers = self.headers(None);
            let r = self.api.send_keeping(&self.name, slot, method, &path, &headers, None, keep_queue).await;
            match r {
                Ok(r) if r.status == 200 => match r.body["state"].as_str() {
                    Some("admitted") => {
                        let token = r.body["admission_token"].as_str().unwrap_or_default().to_string();
                        let expires = r.body["admission_expires_at"].as_str().and_then(epoch_ms).unwrap_or(0);
                        return Standing::Admitted { token, expires_at_ms: expires };
                    }
                    Some("sold_out") => return Standing::SoldOut,
                    Some("waiting" | "awaiting_draw") => joined = true,
                    // Not joined (a join lost), or an earlier session ended: join (again).
                    _ => joined = false,
                },
                Ok(r) if r.status == 409 => return Standing::SoldOut,
                _ => {}
            }
            self.pause(POLL_MS).await;
        }
        Standing::GaveUp
    }

    /// A hold of `seats` on `event` with `admission`, as `client`.
    async fn hold(
        &mut self,
        client: &str,
        event: &EventId,
        seats: &[SeatId],
        admission: Option<&str>,
    ) -> Option<Value> {
        let slot = self.rng.random_range(0..self.api.slots());
        let headers = self.headers(admission);
        let path = format!("/v1/events/{event}/holds");
        let body = Some(json!({"seat_ids": seats}));
        let r = self.api.send_keeping(client, slot, "POST", &path, &headers, body, super::hold_life::hold_fact).await;
        match r {
            Ok(r) if r.status == 201 => Some(r.body),
            Ok(r) if r.status == 403 => Some(json!({"refused": r.body["type"]})),
            _ => None,
        }
    }

    /// Checks out `hold_token` (one idempotency key, retried on unknown
    /// outcomes and 5xx): the order's id when one was created.
    async fn checkout(
        &mut self,
        client: &str,
        event: &EventId,
        hold_token: HoldToken,
        seats: &[SeatId],
        admission: Option<&str>,
    ) -> Option<String> {
        let key = Uuid::from_u128(self.rng.random()).to_string();
        let path = format!("/v1/events/{event}/holds/{hold_token}/checkout");
        let mut headers = self.headers(admission);
        headers.push(("idempotency-key", key));
        let mut slot = self.rng.random_range(0..self.api.slots());
        for _ in 0..self.cfg.user.max_attempts.max(1) {
            let body = Some(json!({"seat_ids": seats}));
            let keep = super::acknowledged::order_fact;
            let r = self.api.send_keeping(client, slot, "POST", &path, &headers, body, keep).await;
            match r.as_ref().map(|r| r.status) {
                Ok(200 | 201) => return r.ok().and_then(|r| r.body["order_id"].as_str().map(str::to_string)),
                Ok(s) if s < 500 && s != 429 => return None,
                _ => {
                    slot += 1;
                    self.pause((100, 400)).await;
                }
            }
        }
        None
    }
}

/// Seats a flow asks for on `event` (one, or a short run for a multi-seat hold).
fn pick_seats(rng: &mut ChaCha8Rng, p: &UserParams, seats: &[SeatId]) -> Vec<SeatId> {
    let n = if rng.random_bool(p.multi_seat_share.clamp(0.0, 1.0)) {
        rng.random_range(2..=p.max_seats_per_hold.max(2)).min(seats.len())
    } else {
        1
    };
    let start = rng.random_range(0..=seats.len().saturating_sub(n));
    seats[start..start + n].to_vec()
}

/// How a session ended for its user.
enum SessionEnd {
    /// A checkout created this order.
    Purchased(String),
    /// The gate refused it (expired, or ended), or it expired by the client's clock.
    Over,
    /// The window closed (or the flows ran out) first.
    Done,
}

/// Holds and checks out with `admission` until the session ends.
async fn shop(b: &mut Buyer, event: &EventId, seats: &[SeatId], admission: &str, expires_at_ms: i64) -> SessionEnd {
    let name = b.name.clone();
    for _ in 0..b.cfg.user.max_flows.max(1) {
        if b.log.now_ms() >= b.cfg.duration_ms {
            return SessionEnd::Done;
        }
        if SystemClock.now_ms() >= expires_at_ms {
            return SessionEnd::Over;
        }
        let want = pick_seats(&mut b.rng, &b.cfg.user, seats);
        let Some(held) = b.hold(&name, event, &want, Some(admission)).await else {
            b.think().await;
            continue;
        };
        if let Some(kind) = held["refused"].as_str() {
            if kind.ends_with("admission-session-ended") || kind.ends_with("admission-expired") {
                return SessionEnd::Over;
            }
            b.think().await;
            continue;
        }
        let Some(hold_token) = held["hold_token"].as_str().and_then(|t| t.parse::<HoldToken>().ok()) else {
            b.think().await;
            continue;
        };
        b.think().await;
        let roll: f64 = b.rng.random();
        if roll < b.cfg.user.checkout_share {
            if let Some(order) = b.checkout(&name, event, hold_token, &want, Some(admission)).await {
                return SessionEnd::Purchased(order);
            }
        } else if roll >= b.cfg.user.checkout_share + b.cfg.user.abandon_share {
            // A release leaves the session open.
            let slot = b.rng.random_range(0..b.api.slots());
            let path = format!("/v1/events/{event}/holds/{hold_token}");
            let headers = b.headers(None);
            let _ = b.api.send(&name, slot, "DELETE", &path, &headers, None).await;
        }
        b.think().await;
    }
    SessionEnd::Done
}

/// Holds without a token, with a forged one, with another user's, and on
/// another event with this one: each must be refused.
async fn try_bypasses(b: &mut Buyer, event: &EventId, seats: &[SeatId], admission: &str, shared: &Shared) {
    let client = format!("{}{BYPASS}", b.name);
    let seat = vec![seats[b.rng.random_range(0..seats.len())].clone()];
    let _ = b.hold(&client, event, &seat, None).await;
    let mut forged = admission.as_bytes().to_vec();
    if forged.len() > 5 {
        forged[5] = if forged[5] == b'A' { b'B' } else { b'A' };
    }
    let _ = b.hold(&client, event, &seat, std::str::from_utf8(&forged).ok()).await;
    let borrowed = {
        let pool = shared.lock().expect("shared admissions poisoned");
        pool.iter().rev().find(|(e, t)| e == event && t != admission).map(|(_, t)| t.clone())
    };
    if let Some(t) = borrowed {
        let _ = b.hold(&client, event, &seat, Some(&t)).await;
    }
    let events = b.cfg.user.events.clone();
    if let Some((other, other_seats)) = events.iter().find(|(e, _)| e != event) {
        let _ = b.hold(&client, other, &other_seats[..1], Some(admission)).await;
    }
}

/// Runs user `i` until the window closes, then waits (bounded) for admission if still queued.
async fn user(
    i: usize,
    seed: u64,
    cfg: Arc<RoomWorkloadConfig>,
    api: Api,
    token: String,
    log: Arc<FaultLog>,
    shared: Shared,
) {
    let rng = ChaCha8Rng::seed_from_u64(seed ^ 0x0_5EA7 ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1)));
    let mut b =
        Buyer { name: format!("user{i}"), auth: ("authorization", format!("Bearer {token}")), rng, api, log, cfg };
    let (a_lo, a_hi) = b.cfg.user.arrival_ms;
    let arrival_ms = b.rng.random_range(a_lo.min(a_hi)..=a_hi).min(b.cfg.duration_ms / 2);
    tokio::time::sleep(Duration::from_millis(arrival_ms)).await;
    let events = b.cfg.user.events.clone();
    let (event, seats) = &events[b.rng.random_range(0..events.len())];
    let bypass = b.rng.random_bool(b.cfg.room.bypass_share);
    for _ in 0..MAX_SESSIONS {
        let give_up_ms = b.cfg.duration_ms + LIVENESS_MS;
        let Standing::Admitted { token: admission, expires_at_ms } = b.wait_in_queue(event, give_up_ms).await else {
            return;
        };
        if b.log.now_ms() >= b.cfg.duration_ms {
            return; // admitted after the window: the wait is what was judged
        }
        {
            let mut pool = shared.lock().expect("shared admissions poisoned");
            if pool.len() < MAX_SHARED {
                pool.push((event.clone(), admission.clone()));
            }
        }
        if bypass {
            try_bypasses(&mut b, event, seats, &admission, &shared).await;
        }
        let end = shop(&mut b, event, seats, &admission, expires_at_ms).await;
        let seat = vec![seats[b.rng.random_range(0..seats.len())].clone()];
        match end {
            SessionEnd::Purchased(order) => {
                let client = format!("{}{SPENT_AFTER}{order}", b.name);
                let _ = b.hold(&client, event, &seat, Some(&admission)).await;
            }
            SessionEnd::Over if SystemClock.now_ms() >= expires_at_ms + EXPIRY_MARGIN_MS => {
                let client = format!("{}{ADMISSION_EXPIRED}", b.name);
                let _ = b.hold(&client, event, &seat, Some(&admission)).await;
            }
            SessionEnd::Over => {}
            SessionEnd::Done => return,
        }
        if b.log.now_ms() >= b.cfg.duration_ms {
            return;
        }
        b.think().await;
    }
}

/// An intruder: never queues; holds without an admission (and checks out
/// what it got) a seat the seat map shows free (else a random one) until
/// the window closes.
async fn intruder(k: usize, seed: u64, cfg: Arc<RoomWorkloadConfig>, api: Api, log: Arc<FaultLog>) {
    let rng = ChaCha8Rng::seed_from_u64(seed ^ 0x1_D7D3 ^ k as u64);
    let token = super::stack::token(&format!("intruder{k}"), false);
    let mut b =
        Buyer { name: format!("intruder{k}"), auth: ("authorization", format!("Bearer {token}")), rng, api, log, cfg };
    let client = format!("{}{BYPASS}", b.name);
    let events = b.cfg.user.events.clone();
    while b.log.now_ms() < b.cfg.duration_ms {
        let (event, seats) = &events[b.rng.random_range(0..events.len())];
        let blind = vec![seats[b.rng.random_range(0..seats.len())].clone()];
        // A seat the map shows free (a public read, not an intrusion), so
        // that a gate left open is seen granting it.
        let slot = b.rng.random_range(0..b.api.slots());
        let seat = super::workload::read_map(&mut b.rng, &b.api, &b.name, slot, &[b.auth.clone()], event, blind).await;
        if let Some(held) = b.hold(&client, event, &seat, None).await
            && let Some(hold_token) = held["hold_token"].as_str()
        {
            b.log.record(ChaosFault::Note, format!("{client} was granted a hold without an admission on {event}"));
            if let Ok(hold_token) = hold_token.parse::<HoldToken>() {
                let _ = b.checkout(&client, event, hold_token, &seat, None).await;
            }
        }
        b.pause(INTRUSION_MS).await;
    }
}

/// Runs every user and the intruders to completion. Precondition: one token per user.
pub async fn run(
    seed: u64,
    cfg: RoomWorkloadConfig,
    users: usize,
    api: Api,
    tokens: Arc<Vec<String>>,
    log: Arc<FaultLog>,
) {
    assert!(users >= 1 && tokens.len() >= users, "one token per user");
    let cfg = Arc::new(cfg);
    let shared: Shared = Arc::new(Mutex::new(Vec::new()));
    let mut tasks: Vec<_> = (0..users)
        .map(|i| tokio::spawn(user(i, seed, cfg.clone(), api.clone(), tokens[i].clone(), log.clone(), shared.clone())))
        .collect();
    tasks.extend((0..INTRUDERS).map(|k| tokio::spawn(intruder(k, seed, cfg.clone(), api.clone(), log.clone()))));
    for t in tasks {
        let _ = t.await;
    }
}
