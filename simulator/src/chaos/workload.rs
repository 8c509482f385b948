//! The chaos workload: the scenario's users as tasks on a multi-threaded
//! runtime, each a seeded sequence of (a seat-map read to pick from), hold,
//! think, (pause), checkout with an
//! idempotency key retried on unknown outcomes, order polls, and stale-token
//! replays. The seed decides every choice; the interleaving is real.

use super::client::{Api, Resp};
use super::log::{ChaosFault, FaultLog};
use crate::world::user::UserParams;
use booking::model::{EventId, HoldToken, SeatId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// The workload's knobs, already scaled to wall time.
#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    /// The scenario's user model (events and seats filled in).
    pub user: UserParams,
    /// Users (tasks), >= 1.
    pub users: usize,
    /// How long users start new flows, in wall ms.
    pub duration_ms: u64,
    /// The hold lifetime bookingd runs with: a pause lasts longer.
    pub hold_ttl_ms: u64,
    /// Longest think time, in ms (scenario think times are simulated seconds).
    pub max_think_ms: u64,
}

/// Marks a client name in the history whose request replays a spent hold token.
pub const STALE_SUFFIX: &str = ":stale";

/// Marks a client name in the history whose checkout is of a hold whose
/// lifetime had passed, by the client's own clock, before it was sent.
pub const EXPIRED_SUFFIX: &str = ":expired";
/// Margin between a hold's lifetime and the client's certainty that it expired, in ms.
const EXPIRY_MARGIN_MS: u64 = 100;
/// The share of flows that start by reading the event's seat map and pick
/// their seats among those it shows available (the rest pick blind).
const BROWSE_SHARE: f64 = 0.5;

/// A user's bearer tokens: `user{i}` may touch every event.
pub type Tokens = Arc<Vec<String>>;

fn pick_seats(rng: &mut ChaCha8Rng, p: &UserParams) -> (EventId, Vec<SeatId>) {
    let (event, seats) = &p.events[rng.random_range(0..p.events.len())];
    let n = if rng.random_bool(p.multi_seat_share.clamp(0.0, 1.0)) {
        rng.random_range(2..=p.max_seats_per_hold.max(2)).min(seats.len())
    } else {
        1
    };
    let span = if p.hot_seats > 0 && rng.random_bool(p.hot_share.clamp(0.0, 1.0)) {
        p.hot_seats.min(seats.len())
    } else {
        seats.len()
    };
    let start = rng.random_range(0..=span.saturating_sub(n));
    (event.clone(), seats[start..(start + n).min(seats.len())].to_vec())
}

/// Reads `event`'s seat map on `slot` as `name` and picks as many seats as
/// `blind` among those it shows available, next to each other; `blind` when
/// it shows fewer, or no map came.
pub(super) async fn read_map(
    rng: &mut ChaCha8Rng,
    api: &Api,
    name: &str,
    slot: usize,
    auth: &[(&str, String); 1],
    event: &EventId,
    blind: Vec<SeatId>,
) -> Vec<SeatId> {
    let path = format!("/v1/events/{event}/seats");
    match api.send_keeping(name, slot, "GET", &path, auth, None, super::seat_maps::map_fact).await {
        Ok(map) => available(&map.body, blind.len(), rng).unwrap_or(blind),
        Err(_) => blind,
    }
}

/// `n` seats a seat map shows available, next to each other in its order
/// from a seeded start; `None` when it shows fewer (or is not a map).
fn available(map: &serde_json::Value, n: usize, rng: &mut ChaCha8Rng) -> Option<Vec<SeatId>> {
    let free: Vec<SeatId> = map["seats"]
        .as_array()?
        .iter()
        .filter(|s| s["state"] == "available")
        .filter_map(|s| s["seat_id"].as_str().map(SeatId::from))
        .collect();
    if free.len() < n || n == 0 {
        return None;
    }
    let start = rng.random_range(0..=free.len() - n);
    Some(free[start..start + n].to_vec())
}

fn think(rng: &mut ChaCha8Rng, cfg: &WorkloadConfig) -> Duration {
    let (lo, hi) = cfg.user.think_ms;
    let hi = hi.min(cfg.max_think_ms).max(1);
    Duration::from_millis(rng.random_range(lo.min(hi)..=hi))
}

fn status_of(r: &Result<Resp, String>) -> Option<u16> {
    r.as_ref().ok().map(|r| r.status)
}

/// A paused client (the scenario's `paused_clients`): with its probability,
/// `name` sleeps past its hold's lifetime before going on.
async fn maybe_pause(
    rng: &mut ChaCha8Rng,
    cfg: &WorkloadConfig,
    log: &FaultLog,
    name: &str,
    event: &EventId,
    seats: &[SeatId],
) {
    if let Some(crate::world::fault_params::PausedClients { probability: p, .. }) = cfg.user.pause
        && rng.random_bool(p.clamp(0.0, 1.0))
    {
        let pause_ms = cfg.hold_ttl_ms + rng.random_range(200..=1_500);
        log.record(ChaosFault::ClientPause, format!("{name} pauses {pause_ms} ms holding {event}/{seats:?}"));
        tokio::time::sleep(Duration::from_millis(pause_ms)).await;
    }
}

/// Runs user `i` until the workload's end.
async fn user(i: usize, seed: u64, cfg: Arc<WorkloadConfig>, api: Api, token: String, log: Arc<FaultLog>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1)));
    let name = format!("user{i}");
    let auth = [("authorization", format!("Bearer {token}"))];
    let (a_lo, a_hi) = cfg.user.arrival_ms;
    tokio::time::sleep(Duration::from_millis(rng.random_range(a_lo.min(a_hi)..=a_hi).min(cfg.duration_ms / 2))).await;
    let mut old_holds: Vec<(EventId, HoldToken, Vec<SeatId>)> = Vec::new();
    let mut flows = 0;
    while log.now_ms() < cfg.duration_ms && flows < cfg.user.max_flows {
        flows += 1;
        let (event, seats) = pick_seats(&mut rng, &cfg.user);
        let slot = rng.random_range(0..api.slots());
        let seats = if rng.random_bool(BROWSE_SHARE) {
            read_map(&mut rng, &api, &name, slot, &auth, &event, seats).await
        } else {
            seats
        };
        let (path, body) = (format!("/v1/events/{event}/holds"), Some(json!({"seat_ids": seats})));
        let held = api.send_keeping(&name, slot, "POST", &path, &auth, body, super::hold_life::hold_fact).await;
        let granted = match &held {
            Ok(r) if r.status == 201 => r.body["hold_token"].as_str().and_then(|t| t.parse::<HoldToken>().ok()),
            _ => None,
        };
        let Some(hold_token) = granted else {
            tokio::time::sleep(think(&mut rng, &cfg)).await;
            continue;
        };
        let held_at = tokio::time::Instant::now();
        tokio::time::sleep(think(&mut rng, &cfg)).await;
        maybe_pause(&mut rng, &cfg, &log, &name, &event, &seats).await;
        // The hold was granted before its answer arrived, so once its lifetime
        // (plus a margin) has passed on this clock, its deadline has passed on
        // the store's: no checkout of it may succeed.
        let expired = held_at.elapsed() >= Duration::from_millis(cfg.hold_ttl_ms + EXPIRY_MARGIN_MS);
        let who = if expired { format!("{name}{EXPIRED_SUFFIX}") } else { name.clone() };
        let roll: f64 = rng.random();
        // Whether this hold's token is spent for good: checked out into an order, or released.
        let spent = if roll < cfg.user.checkout_share {
            let ordered = checkout(&mut rng, &cfg, &api, &who, &auth, &event, hold_token, &seats).await;
            if let Some(p) = cfg.user.stale_replay
                && rng.random_bool(p.clamp(0.0, 1.0))
                && let Some((e, t, s)) = old_holds.get(rng.random_range(0..old_holds.len().max(1)))
            {
                // A stale token: an earlier hold of this user, spent. Any 2xx is
                // a stale authorization (the history's `:stale` ops are judged).
                log.record(ChaosFault::StaleReplay, format!("{name} replays checkout with spent hold {t}"));
                let key = Uuid::from_u128(rng.random()).to_string();
                let path = format!("/v1/events/{e}/holds/{t}/checkout");
                let headers = [auth[0].clone(), ("idempotency-key", key)];
                let stale = format!("{name}{STALE_SUFFIX}");
                let _ = api.send(&stale, slot, "POST", &path, &headers, Some(json!({"seat_ids": s}))).await;
            }
            ordered
        } else if roll < cfg.user.checkout_share + cfg.user.abandon_share {
            // Abandoned: the hold expires and the sweeper reclaims it.
            false
        } else {
            let path = format!("/v1/events/{event}/holds/{hold_token}");
            status_of(&api.send(&name, slot, "DELETE", &path, &auth, None).await) == Some(200)
        };
        if spent && old_holds.len() < 8 {
            old_holds.push((event, hold_token, seats));
        }
        tokio::time::sleep(think(&mut rng, &cfg)).await;
    }
}

/// Checkout with one idempotency key, retried (same key, another slot) while
/// the outcome is unknown or the service unavailable; then polls the order.
/// Whether an order was created (the hold's token is then spent).
#[allow(clippy::too_many_arguments)]
async fn checkout(
    rng: &mut ChaCha8Rng,
    cfg: &WorkloadConfig,
    api: &Api,
    name: &str,
    auth: &[(&str, String); 1],
    event: &EventId,
    hold_token: HoldToken,
    seats: &[SeatId],
) -> bool {
    let key = Uuid::from_u128(rng.random()).to_string();
    let path = format!("/v1/events/{event}/holds/{hold_token}/checkout");
    let headers = [auth[0].clone(), ("idempotency-key", key)];
    let mut slot = rng.random_range(0..api.slots());
    let mut order_id = None;
    for _ in 0..cfg.user.max_attempts.max(1) {
        let body = Some(json!({"seat_ids": seats}));
        let r = api.send_keeping(name, slot, "POST", &path, &headers, body, super::acknowledged::order_fact).await;
        match status_of(&r) {
            Some(200 | 201) => {
                order_id = r.ok().and_then(|r| r.body["order_id"].as_str().map(str::to_string));
                break;
            }
            Some(s) if s < 500 && s != 429 => return false,
            _ => {
                slot += 1;
                tokio::time::sleep(Duration::from_millis(rng.random_range(100..=400))).await;
            }
        }
    }
    let Some(order_id) = order_id else { return false };
    for _ in 0..cfg.user.max_status_polls {
        tokio::time::sleep(Duration::from_millis(rng.random_range(200..=500))).await;
        let (slot, path) = (rng.random_range(0..api.slots()), format!("/v1/orders/{order_id}"));
        let r = api.send_keeping(name, slot, "GET", &path, auth, None, super::acknowledged::order_fact).await;
        if let Ok(r) = r
            && r.status == 200
            && !matches!(r.body["status"].as_str(), Some("pending" | "reconciling"))
        {
            break;
        }
    }
    true
}

/// Runs every user to completion.
pub async fn run(seed: u64, cfg: WorkloadConfig, api: Api, tokens: Tokens, log: Arc<FaultLog>) {
    assert!(cfg.users >= 1 && tokens.len() >= cfg.users, "one token per user");
    let cfg = Arc::new(cfg);
    let tasks: Vec<_> = (0..cfg.users)
        .map(|i| tokio::spawn(user(i, seed, cfg.clone(), api.clone(), tokens[i].clone(), log.clone())))
        .collect();
    for t in tasks {
        let _ = t.await;
    }
}
