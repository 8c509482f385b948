//! What a chaos run is set up with before its users start: its own servers
//! (a waiting-room or cache-fault run's Redis, a crash-fault run's
//! PostgreSQL pair), every `bookingd`'s arguments, the events, rooms and
//! users' tokens, and the clock skews the processes start with.

use super::log::{ChaosFault, FaultLog};
use super::stack::{self, Stack};
use super::{ChaosOptions, client::Api, clock_skew, db_failover, redis, room};
use crate::world::plan::Plan;
use booking::clock::SystemClock;
use booking::http::auth::{Authenticator, Claims};
use booking::model::{EventId, SeatId, UserId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::Mutex;

/// A waiting-room run's flow window at least, wall ms: users queue, wait,
/// shop and queue again around a Redis outage and a stall.
const ROOM_WINDOW_MIN_MS: u64 = 10_000;

/// Users at most (tasks); scenarios with more are scaled down.
const MAX_USERS: usize = 48;
/// Events at most.
const MAX_EVENTS: usize = 3;
/// Seats per event at most.
const MAX_SEATS_PER_EVENT: usize = 60;

/// The servers a run has of its own, and its options pointed at them: a
/// waiting-room or cache-fault run's Redis (a cache-fault run's persists,
/// so that it can come back with its data); a crash-fault run's PostgreSQL
/// pair, which fails over (when chaos mode runs its own servers: the
/// restart of the shared one is then not this run's).
pub(super) async fn own_servers(
    cfg: &crate::world::config::WorldConfig,
    opts: &ChaosOptions,
    records: &std::path::Path,
) -> Result<(ChaosOptions, Option<Arc<Mutex<redis::PrivateRedis>>>, Option<Arc<db_failover::Pair>>), String> {
    let private_redis = if cfg.waiting_room.is_some() {
        Some(Arc::new(Mutex::new(redis::PrivateRedis::start(None).await?)))
    } else if cfg.cache_faults.is_some() {
        Some(Arc::new(Mutex::new(redis::PrivateRedis::start(Some(records.join("redis-data"))).await?)))
    } else {
        None
    };
    let mut opts = opts.clone();
    if let Some(r) = &private_redis {
        opts.redis_url = Some(r.lock().await.url());
    }
    if cfg.waiting_room.is_some() {
        opts.duration_ms = opts.duration_ms.max(ROOM_WINDOW_MIN_MS);
    }
    let failover = match (&cfg.crash, &opts.own_pg) {
        (Some(_), Some(_)) => Some(Arc::new(db_failover::Pair::start().await?)),
        _ => None,
    };
    if let Some(pair) = &failover {
        opts.admin_url = pair.admin_url();
        opts.own_pg = None;
    }
    Ok((opts, private_redis, failover))
}

/// Logs the clock skew of every process's first life, when the run skews clocks.
pub(super) fn log_skews(stack: &Stack, log: &FaultLog) {
    if stack.provider_skew_ms != 0 {
        log.record(
            ChaosFault::ClockSkew,
            format!("fake-provider runs its clock {}", clock_skew::describe(stack.provider_skew_ms)),
        );
    }
    for (i, slot) in stack.slots.iter().enumerate().filter(|(_, s)| s.skew_ms != 0) {
        log.record_at(
            ChaosFault::ClockSkew,
            i,
            format!("bookingd {i} runs its clock {}", clock_skew::describe(slot.skew_ms)),
        );
    }
}

/// The `bookingd serve` arguments every process of a run gets.
pub(super) fn bookingd_args(
    plan: &Plan,
    cfg: &crate::world::config::WorldConfig,
    hold_ttl_ms: i64,
    payment_ttl_ms: i64,
) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--hold-ttl-ms".into(),
        hold_ttl_ms.to_string(),
        "--payment-ttl-ms".into(),
        payment_ttl_ms.to_string(),
        "--hold-attempts-per-minute".into(),
        "100000".into(),
        // Loopback: a call unanswered for a second is lost (the one-way
        // partition's calls time out well inside it).
        "--provider-timeout-ms".into(),
        "1000".into(),
        // A killed dispatcher's rows come back after this: short, so runs settle soon.
        "--outbox-lease-ms".into(),
        "4000".into(),
        "--max-db-connections".into(),
        "8".into(),
    ];
    if let Some(p) = plan.plant {
        args.extend(["--plant".to_string(), p.name().to_string()]);
    }
    if cfg.waiting_room.is_some() {
        args.extend(room::bookingd_args());
    }
    args
}

/// The run's events and users: events named for this run (the cache is
/// shared between runs), created through the API as an operator, a room in
/// front of each in a waiting-room run, and a bearer token per user.
pub(super) struct People {
    pub(super) events: Vec<(EventId, Vec<SeatId>)>,
    pub(super) tokens: Vec<String>,
    /// The room in front of every event (waiting-room runs).
    pub(super) room: Option<room::ChaosRoom>,
    /// Users with a members' credential, by name (priority rooms).
    pub(super) tiers: BTreeMap<UserId, u8>,
}

impl People {
    pub(super) fn event_ids(&self) -> Vec<EventId> {
        self.events.iter().map(|(e, _)| e.clone()).collect()
    }
}

/// Creates the run's events (scaled to chaos bounds), their rooms and the users' tokens.
pub(super) async fn create_events(
    cfg: &crate::world::config::WorldConfig,
    seed: u64,
    opts: &ChaosOptions,
    db_name: &str,
    api: &Api,
) -> Result<People, String> {
    let tag = &db_name[db_name.len() - 8..];
    let events: Vec<(EventId, Vec<SeatId>)> = (0..cfg.events.clamp(1, MAX_EVENTS))
        .map(|e| {
            let seats = (0..cfg.seats_per_event.clamp(1, MAX_SEATS_PER_EVENT))
                .map(|s| SeatId::from(format!("s{s:05}")))
                .collect();
            (EventId::from(format!("ev{e}-{tag}")), seats)
        })
        .collect();
    let auth = Authenticator::new(stack::TOKEN_SECRET.as_bytes(), Arc::new(SystemClock));
    let now = booking::clock::Clock::now_ms(&SystemClock);
    let far = now + 3_600_000;
    let admin =
        auth.issue(&Claims { sub: "operator".into(), events: vec!["*".into()], exp_ms: far, admin: true, tier: None });
    let users = cfg.users.clamp(1, MAX_USERS);
    let room = cfg.waiting_room.as_ref().map(|r| room::ChaosRoom::scaled(r, users, opts.duration_ms, now));
    for (event, seats) in &events {
        let ranges = booking::http::api::SeatRange::covering("s", seats.len() as u32, 5);
        let body = serde_json::json!({"event_id": event, "seat_ranges": ranges, "price_cents": 2_500});
        let headers = [("authorization", format!("Bearer {admin}"))];
        let r = api.send("operator", 0, "POST", "/v1/events", &headers, Some(body)).await?;
        if r.status != 201 {
            return Err(format!("create event {event}: {} {}", r.status, r.body));
        }
        if let Some(room) = &room {
            room.open(api, &admin, event).await?;
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7135);
    let mut tiers = BTreeMap::new();
    let tokens = (0..users)
        .map(|i| {
            let sub = UserId::from(format!("user{i}"));
            let member = room.is_some_and(|r| r.policy == booking::admission::room::Policy::Priority)
                && rng.random_bool(room.map(|r| r.member_share).unwrap_or(0.0));
            let tier = member.then_some(0u8);
            if let Some(t) = tier {
                tiers.insert(sub.clone(), t);
            }
            auth.issue(&Claims { sub, events: vec!["*".into()], exp_ms: far, admin: false, tier })
        })
        .collect();
    Ok(People { events, tokens, room, tiers })
}
