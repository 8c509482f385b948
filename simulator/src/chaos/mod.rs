//! Chaos mode: one scenario and one seed against the real stack: a fresh
//! PostgreSQL database, Redis, two or more `bookingd` processes and a
//! `fake-provider` process on loopback ports, real HTTP clients on a
//! multi-threaded runtime, and real faults ([`disrupt`]). Afterwards the same
//! [`invariants`] checkers judge a snapshot read from the PostgreSQL tables
//! and the provider's ledger, and the client history is judged for server
//! errors no fault explains.
//!
//! The seed decides the workload and the fault plan; the interleaving is
//! real, so a failing chaos seed may not fail again when rerun. Everything
//! needed to understand it is written to the run's directory: the fault log
//! with wall times, the client history, the final tables, the ledger and
//! every process's output.
//!
//! - [`stack`]: database and processes.
//! - [`workload`]: the users.
//! - [`disrupt`]: the faults; [`db_partition`]: a bookingd cut off from
//!   PostgreSQL, and the judge of its fast answers meanwhile;
//!   [`db_restart`]: the run's own PostgreSQL crashed and started again;
//!   [`provider_link`]: the payment path cut or muted between bookingd and
//!   the provider; [`clock_skew`]: processes on skewed clocks.
//! - [`hold_life`]: every hold lives its configured lifetime by the store's clock.
//! - [`seat_maps`]: every seat map served is whole and no staler than the cache allows.
//! - [`acknowledged`]: what a client was told was decided is in the tables.
//! - [`soak`]: `--time-budget`'s resource samples between runs and their growth check.
//! - [`client`]: HTTP and the client history.
//! - [`log`]: the fault log.
//! - [`room`], [`room_workload`], [`redis`]: waiting-room runs (the room,
//!   its users and intruders, the run's own Redis that the faults stop,
//!   restart empty and stall); `room_judge` judges them.

pub mod acknowledged;
pub mod cache_stall;
pub mod client;
pub mod clock_skew;
pub mod db_failover;
pub mod db_partition;
pub mod db_restart;
pub mod disrupt;
pub mod hold_life;
mod judge;
pub mod leave_out;
pub mod link_latency;
pub mod log;
pub mod nft;
pub mod packet_loss;
pub mod provider_link;
pub mod provider_word;
pub mod redis;
pub mod refused;
pub mod room;
mod room_judge;
pub mod room_workload;
pub mod seat_maps;
mod settle;
pub mod soak;
pub mod stack;
pub mod workload;

use crate::world::plan::Plan;
use booking::clock::SystemClock;
use booking::fake_provider::Ledger;
use booking::fault::Plant;
use booking::http::auth::{Authenticator, Claims};
use booking::ids::SeededIds;
use booking::model::{EventId, SeatId, Snapshot, UserId};
use booking::store::{PgClock, PgStore, Store};
use client::{Api, History, Op, Outcome};
use disrupt::FaultPlan;
use log::{ChaosFault, FaultLog};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use stack::{Stack, StackConfig};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, watch};
use workload::WorkloadConfig;

/// A waiting-room run's Redis outage (stop, then start again empty) lasts
/// this long at least, wall ms (and until the bookingd killed during it
/// serves again); it begins in the window's second quarter.
const REDIS_DOWN_MS: (u64, u64) = (1_500, 2_500);
/// How long the seat-map cache's Redis stays down, wall ms.
const CACHE_REDIS_DOWN_MS: (u64, u64) = (500, 1_000);
/// How long the seat-map cache's Redis stalls, wall ms: long enough that a
/// request sent in its first part would wait past [`cache_stall`]'s bound
/// on a cache that waited for Redis.
const CACHE_STALL_MS: (u64, u64) = (1_800, 2_500);
/// A waiting-room run's Redis stall, wall ms: past bookingd's 2 s response
/// timeout or shorter (slow, yet answered); in the window's last quarter.
pub(crate) const REDIS_STALL_MS: (u64, u64) = (300, 2_500);
/// A waiting-room run's flow window at least, wall ms: users queue, wait,
/// shop and queue again around a Redis outage and a stall.
const ROOM_WINDOW_MIN_MS: u64 = 10_000;

/// Users at most (tasks); scenarios with more are scaled down.
const MAX_USERS: usize = 48;
/// Events at most.
const MAX_EVENTS: usize = 3;
/// Seats per event at most.
const MAX_SEATS_PER_EVENT: usize = 60;
/// Hold lifetime bounds in chaos (wall ms): short, so expiry happens within a run.
const HOLD_TTL_MS: (i64, i64) = (1_500, 3_000);
/// Payment deadline bounds in chaos (wall ms).
const PAYMENT_TTL_MS: (i64, i64) = (3_000, 6_000);
/// How long the settle phase may wait for every order and refund to resolve
/// unless told otherwise ([`ChaosOptions::settle_max_ms`]).
pub const SETTLE_MAX_MS: u64 = 60_000;
/// After a destructive fault (crash, kill, restart, terminated backends), how
/// long a 503 is explained by it, in wall ms.
const FAULT_SHADOW_MS: u64 = 3_000;
/// How long before its log entry a fault may already have hit, in wall ms.
const FAULT_LOG_LAG_MS: u64 = 500;
/// Concurrent disconnecting clients.
const DISCONNECTORS: usize = 6;

/// How a chaos run is run.
#[derive(Debug, Clone)]
pub struct ChaosOptions {
    /// The server's maintenance database URL.
    pub admin_url: String,
    /// The server itself, when chaos mode started it (then it is restarted
    /// under load: [`db_restart`]); `None` for a server of the caller's.
    pub own_pg: Option<Arc<test_services::own_postgres::OwnPostgres>>,
    /// Redis for the cache (and the poison fault); `None`: no cache.
    pub redis_url: Option<String>,
    /// bookingd processes, >= 1 (2 by default).
    pub bookingds: usize,
    /// How long users start new flows, in wall ms.
    pub duration_ms: u64,
    /// How long the settle phase waits at most for every order and refund to
    /// resolve, in wall ms (at least three payment deadlines are waited anyway).
    pub settle_max_ms: u64,
    /// Where each run writes its records (`<dir>/<scenario>-<seed>/`).
    pub out_dir: PathBuf,
    /// Keep the database after the run.
    pub keep_db: bool,
    /// Keep the database of a run that found a violation (off when a
    /// violation is the expected outcome: a plant's proof).
    pub keep_failing_db: bool,
    /// Nemeses left out of every run ([`leave_out`]).
    pub without: Vec<log::ChaosFault>,
}

/// A finding of the client history.
#[derive(Debug, Clone, Serialize)]
pub struct ServerError {
    /// The request and its answer.
    pub op: Op,
    /// Why no fault explains it.
    pub why: String,
}

/// The verdict of one chaos run.
#[derive(Debug, Clone, Serialize)]
pub struct ChaosVerdict {
    /// Scenario.
    pub scenario: String,
    /// Seed.
    pub seed: u64,
    /// The planted bug, if any.
    pub plant: Option<String>,
    /// Violations the checkers found in the final tables and the ledger.
    pub violations: Vec<String>,
    /// The invariants violated (names).
    pub invariants: Vec<String>,
    /// 5xx answers no fault explains.
    pub server_errors: Vec<ServerError>,
    /// Whether every order, payment and refund resolved within the settle bound.
    pub settled: bool,
    /// How often each real fault happened.
    pub faults: BTreeMap<ChaosFault, u64>,
    /// Requests sent by users, and how many came to an unknown outcome.
    pub requests: u64,
    /// See `requests`.
    pub unknown_outcomes: u64,
    /// Bookings, charges and refunds in the final records.
    pub bookings: usize,
    /// See `bookings`.
    pub charges: usize,
    /// See `bookings`.
    pub refunds: usize,
    /// Wall time of the run, in ms.
    pub wall_ms: u64,
    /// Where the run's records are.
    pub records: String,
    /// A harness error (the stack did not start, ...): the run proves nothing.
    pub error: Option<String>,
    /// The run's database, when it was kept for inspection (`--keep-db`, or a violation).
    pub kept_database: Option<String>,
}

impl ChaosVerdict {
    /// Whether the run passed: no violation, no unexplained server error, settled, no harness error.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.server_errors.is_empty() && self.settled && self.error.is_none()
    }
}

/// Whether a library scenario has faults chaos mode applies to real things:
/// crashes, network faults (the payment path's partitions), clock skew, pauses, stale tokens, provider faults.
pub fn has_real_faults(plan: &Plan, seed: u64) -> bool {
    let c = plan.world_for(seed);
    let p = &c.provider;
    let provider = p.lost_response_rate > 0.0
        || p.error_rate > 0.0
        || p.decline_rate > 0.0
        || p.late_success_rate > 0.0
        || p.refund_failure_rate > 0.0
        || p.webhook_duplicate_rate > 0.0
        || p.webhook_reorder_rate > 0.0
        || p.webhook_hold_rate > 0.0;
    c.crash.is_some()
        || c.link_faults.is_some()
        || c.clock_skew_ms > 0
        || c.cache_faults.is_some()
        || c.user.pause.is_some()
        || c.user.stale_replay.is_some()
        || provider
}

/// `n` sorted wall moments in the last three quarters of a window of `d` ms.
fn moments(rng: &mut ChaCha8Rng, d: u64, n: usize) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).map(|_| rng.random_range(d / 4..d)).collect();
    v.sort_unstable();
    v
}

/// The fault plan of `seed` for a world config.
fn fault_plan(cfg: &crate::world::config::WorldConfig, opts: &ChaosOptions, rng: &mut ChaCha8Rng) -> FaultPlan {
    let d = opts.duration_ms.max(1_000);
    let (crash_points, crash_skip) = match &cfg.crash {
        Some(c) => {
            // About one crash per 1/p commits at the chosen points.
            let mean = (1.0 / c.probability.max(0.01)).min(200.0) as u64;
            (c.points.iter().map(|p| p.to_string()).collect(), (mean / 2, mean + mean / 2))
        }
        None => (Vec::new(), (0, 0)),
    };
    let kills = if cfg.crash.is_some() { moments(rng, d, 2) } else { Vec::new() };
    let mut plan = FaultPlan {
        crash_points,
        crash_skip,
        restart_after_ms: cfg.crash.as_ref().map(|c| c.restart_after_ms.min(500)).unwrap_or(200),
        kills_at_ms: kills,
        pg_terminations_at_ms: moments(rng, d, 2),
        redis_poison_at_ms: if opts.redis_url.is_some() { moments(rng, d, 2) } else { Vec::new() },
        disconnectors: DISCONNECTORS,
        redis_stops: Vec::new(),
        redis_stalls: Vec::new(),
        db_partitions: vec![(
            rng.random_range(d / 4..3 * d / 4),
            rng.random_range(db_partition::PARTITION_MS.0..=db_partition::PARTITION_MS.1),
        )],
        pg_restarts: Vec::new(),
        provider_links: Vec::new(),
        pg_failover_at_ms: None,
        link_latency: Vec::new(),
        packet_loss: None,
    };
    if cfg.link_faults.is_some() {
        plan.provider_links = provider_link::plan(rng, d, opts.bookingds.max(1));
        plan.link_latency = link_latency::plan(rng, d, opts.bookingds.max(1), cfg.message_latency_ms.1);
        plan.packet_loss = Some(packet_loss::plan(rng, d, opts.bookingds.max(1)));
    }
    if opts.own_pg.is_some() {
        let down_ms = rng.random_range(db_restart::DOWN_MS.0..=db_restart::DOWN_MS.1);
        // Nothing is dispatched while the database is down: with the payment
        // path's partitions, not before the one-way one has had its effect.
        let from_ms = if plan.provider_links.is_empty() { d / 4 } else { 5 * d / 8 };
        plan.pg_restarts = vec![(rng.random_range(from_ms..3 * d / 4), down_ms)];
    }
    if cfg.waiting_room.is_some() {
        let stop_at = rng.random_range(d / 4..d / 2);
        let down_ms = rng.random_range(REDIS_DOWN_MS.0..=REDIS_DOWN_MS.1);
        plan.redis_stops = vec![disrupt::RedisStop { at_ms: stop_at, down_ms, keep_data: false, kill_bookingd: true }];
        let stall_at = rng.random_range(3 * d / 4..d);
        plan.redis_stalls = vec![(stall_at, rng.random_range(REDIS_STALL_MS.0..=REDIS_STALL_MS.1))];
    } else if cfg.cache_faults.is_some() {
        // The seat-map cache's Redis: back with its data once, slow for a
        // while, empty once (short outages, so all fit a window).
        let mut stop = |from_ms: u64, to_ms: u64, keep_data: bool| disrupt::RedisStop {
            at_ms: rng.random_range(from_ms..to_ms),
            down_ms: rng.random_range(CACHE_REDIS_DOWN_MS.0..=CACHE_REDIS_DOWN_MS.1),
            keep_data,
            kill_bookingd: false,
        };
        plan.redis_stops = vec![stop(d / 8, d / 4, true), stop(5 * d / 8, 3 * d / 4, false)];
        // Between the two, while users still come: requests meet the stall.
        let stall_at = rng.random_range(d / 4..3 * d / 8);
        plan.redis_stalls = vec![(stall_at, rng.random_range(CACHE_STALL_MS.0..=CACHE_STALL_MS.1))];
    }
    plan
}

/// When a run's own primary fails over, wall ms: in the middle half of a
/// window of `duration_ms`.
fn failover_at_ms(seed: u64, duration_ms: u64) -> u64 {
    let d = duration_ms.max(1_000);
    ChaCha8Rng::seed_from_u64(seed ^ 0xfa11).random_range(d / 4..3 * d / 4)
}

/// The servers a run has of its own, and its options pointed at them: a
/// waiting-room or cache-fault run's Redis (a cache-fault run's persists,
/// so that it can come back with its data); a crash-fault run's PostgreSQL
/// pair, which fails over (when chaos mode runs its own servers: the
/// restart of the shared one is then not this run's).
async fn own_servers(
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

/// Runs `plan` at `seed` on the real stack. Never panics on a harness
/// failure: it becomes the verdict's `error`.
pub async fn run_one(plan: &Plan, seed: u64, opts: &ChaosOptions) -> ChaosVerdict {
    let started = tokio::time::Instant::now();
    let records = opts.out_dir.join(format!("{}-{seed}", plan.name));
    let mut verdict = ChaosVerdict {
        scenario: plan.name.clone(),
        seed,
        plant: plan.plant.map(|p| p.name().to_string()),
        violations: Vec::new(),
        invariants: Vec::new(),
        server_errors: Vec::new(),
        settled: false,
        faults: BTreeMap::new(),
        requests: 0,
        unknown_outcomes: 0,
        bookings: 0,
        charges: 0,
        refunds: 0,
        wall_ms: 0,
        records: records.display().to_string(),
        error: None,
        kept_database: None,
    };
    if let Err(e) = run_inner(plan, seed, opts, &records, &mut verdict).await {
        verdict.error = Some(e);
    }
    verdict.wall_ms = started.elapsed().as_millis() as u64;
    let _ = std::fs::create_dir_all(&records);
    let _ = std::fs::write(records.join("verdict.json"), serde_json::to_string_pretty(&verdict).unwrap_or_default());
    verdict
}

async fn run_inner(
    plan: &Plan,
    seed: u64,
    opts: &ChaosOptions,
    records: &std::path::Path,
    verdict: &mut ChaosVerdict,
) -> Result<(), String> {
    std::fs::create_dir_all(records).map_err(|e| format!("{}: {e}", records.display()))?;
    let cfg = plan.world_for(seed);
    let (opts, private_redis, failover) = own_servers(&cfg, opts, records).await?;
    let opts = &opts;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let hold_ttl_ms = cfg.hold_ttl_ms.clamp(HOLD_TTL_MS.0, HOLD_TTL_MS.1);
    let payment_ttl_ms = cfg.payment_ttl_ms.clamp(PAYMENT_TTL_MS.0, PAYMENT_TTL_MS.1);
    let mut faults = fault_plan(&cfg, opts, &mut rng);
    faults.pg_failover_at_ms = failover.as_ref().map(|_| failover_at_ms(seed, opts.duration_ms));
    leave_out::apply(&mut faults, &opts.without);

    // The provider's knobs, scaled to wall time.
    let mut provider = cfg.provider.clone();
    provider.latency_ms = provider.latency_ms.min(200);
    provider.latency_max_ms = provider.latency_max_ms.min(200);
    provider.webhook_hold_ms = provider.webhook_hold_ms.min(payment_ttl_ms as u64 + 1_000);
    provider.webhook_delay_ms = provider.webhook_delay_ms.min(2_000);
    provider.late_success_delay_ms = provider.late_success_delay_ms.min(payment_ttl_ms as u64 + 1_000);
    let provider_json = serde_json::to_string(&provider).map_err(|e| e.to_string())?;

    let bookingd_args = bookingd_args(plan, &cfg, hold_ttl_ms, payment_ttl_ms);
    let mut life_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x11fe);
    let stack = Stack::start(
        StackConfig {
            admin_url: opts.admin_url.clone(),
            redis_url: opts.redis_url.clone(),
            bookingds: opts.bookingds.max(1),
            bookingd_args,
            provider_faults_json: provider_json,
            provider_seed: seed,
            clock_skew_max_ms: leave_out::skew_max_ms(
                cfg.clock_skew_ms.clamp(0, clock_skew::MAX_SKEW_MS),
                &opts.without,
            ),
            skew_seed: seed ^ 0xc10c,
            db_direct: false,
        },
        |_| disrupt::life_args(&faults, &mut ChaCha8Rng::seed_from_u64(life_rng.random::<u64>())),
    )
    .await?;
    // The run's clock (users' flow window, fault moments, history times)
    // starts once the stack is up: on a loaded machine starting it can take
    // longer than the whole window.
    let log = Arc::new(FaultLog::new());
    log_skews(&stack, &log);
    let run = Run {
        seed,
        opts,
        cfg: &cfg,
        faults: &faults,
        records,
        hold_ttl_ms,
        payment_ttl_ms,
        redis: private_redis,
        failover,
    };
    let result = drive(&run, stack, log.clone(), verdict).await;
    verdict.faults = log.counts();
    let _ =
        std::fs::write(records.join("faults.json"), serde_json::to_string_pretty(&log.entries()).unwrap_or_default());
    result
}

/// Logs the clock skew of every process's first life, when the run skews clocks.
fn log_skews(stack: &Stack, log: &FaultLog) {
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
fn bookingd_args(
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

/// What one run is: the seed, options, world, fault plan, where
/// its records go, and (waiting-room runs) its own Redis.
struct Run<'a> {
    seed: u64,
    opts: &'a ChaosOptions,
    cfg: &'a crate::world::config::WorldConfig,
    faults: &'a FaultPlan,
    records: &'a std::path::Path,
    hold_ttl_ms: i64,
    payment_ttl_ms: i64,
    redis: Option<Arc<Mutex<redis::PrivateRedis>>>,
    /// The run's own PostgreSQL pair, when it fails over.
    failover: Option<Arc<db_failover::Pair>>,
}

/// The run on a started stack, as a story: create the events (and their
/// rooms) and the users' tokens; run the users while the faults run; settle;
/// judge the final records, the ledger, the client history and the
/// processes' logs; write the records.
async fn drive(run: &Run<'_>, stack: Stack, log: Arc<FaultLog>, verdict: &mut ChaosVerdict) -> Result<(), String> {
    let (seed, cfg) = (run.seed, run.cfg);
    let addrs: Vec<_> = stack.slots.iter().map(|s| s.addr).collect();
    let provider_addr = stack.provider_addr;
    let db_name = stack.db_name.clone();
    let cache_namespace = stack.cache_namespace();
    let db_url = stack.db_url.clone();
    let stack = Arc::new(Mutex::new(stack));
    let history = Arc::new(History::new(log.start()));
    let api = Api::new(addrs.clone(), history.clone());
    let people = create_events(cfg, seed, run.opts, &db_name, &api).await?;
    let targets = FaultTargets { addrs, db_name: db_name.clone(), cache_namespace, event_ids: people.event_ids() };
    let room = people.room;
    let tiers = people.tiers.clone();
    let faults_end_wall_ms = users_under_faults(run, &stack, &log, &api, people, targets).await?;

    // Settle: provider faults off (refund leniency kept), every order resolves.
    let provider_api = Api::new(vec![provider_addr], Arc::new(History::new(tokio::time::Instant::now())));
    let calm = serde_json::json!({"lenient_refunds": cfg.provider.lenient_refunds});
    let _ = provider_api.send("harness", 0, "POST", "/admin/faults", &[], Some(calm)).await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect(&db_url)
        .await
        .map_err(|e| format!("connect {db_name}: {e}"))?;
    let store = PgStore::new(pool.clone(), PgClock::Database, Arc::new(SeededIds::new(seed)));
    let faults_end_store_ms = store.now_ms().await.map_err(|e| e.to_string())?;
    let settle_max =
        Duration::from_millis(run.opts.settle_max_ms).max(Duration::from_millis(3 * run.payment_ttl_ms as u64));
    verdict.settled = settle::until_resolved(&store, &pool, settle_max, &log).await;

    // The final records and the ledger.
    let snap: Snapshot = store.snapshot().await.map_err(|e| format!("snapshot: {e}"))?;
    let final_store_ms = store.now_ms().await.map_err(|e| e.to_string())?;
    let ledger: Ledger = {
        let r = provider_api.send("harness", 0, "GET", "/admin/ledger", &[], None).await?;
        serde_json::from_value(r.body).map_err(|e| format!("ledger: {e}"))?
    };
    let joined = match &room {
        Some(_) => queued_users(&pool, &snap).await?,
        None => BTreeMap::new(),
    };
    pool.close().await;
    judge::records(&snap, &ledger, final_store_ms, faults_end_store_ms, verdict)?;
    judge::add(verdict, provider_word::judge(&snap, &ledger), "tables and ledger");
    let ops = history.ops();
    judge::history(&ops, &log, faults_end_wall_ms, &cache_stall::lengths_ms(cfg, run.faults), verdict);
    judge::add(verdict, acknowledged::judge(&ops, &snap), "client history and tables");
    judge::add(verdict, refused::judge(&ops, &snap), "client history and tables");
    judge::add(verdict, hold_life::judge(&ops, history.epoch_start_ms(), run.hold_ttl_ms), "client history");
    judge::add(verdict, seat_maps::judge(&ops, booking::daemon::DEFAULT_CACHE_TTL_MS), "client history");
    if let Some(room) = &room {
        let events: Vec<EventId> = snap.events.iter().map(|e| e.event_id.clone()).collect();
        let epoch_start_ms = history.epoch_start_ms();
        let (tiers, orders, joined) = (&tiers, &snap.orders, &joined);
        let facts = room_judge::RoomFacts { room, events: &events, tiers, epoch_start_ms, orders, joined };
        judge::add(verdict, room_judge::judge(&ops, &facts), "client history and tables");
    }
    verdict.requests = ops.len() as u64;
    verdict.unknown_outcomes = ops.iter().filter(|o| matches!(o.outcome, Outcome::Unknown(_))).count() as u64;
    verdict.bookings = snap.bookings.len();
    verdict.charges = ledger.payments.iter().filter(|p| p.status == "succeeded").count();
    verdict.refunds = ledger.refunds.len();

    let stack = Arc::try_unwrap(stack).map_err(|_| "stack still shared".to_string())?.into_inner();
    finish(run, stack, &log, &ops, &snap, &ledger, verdict).await
}

/// Judges the processes' logs, writes the run's records, stops the stack
/// (keeping the database when asked to or when a violation wants it) and the run's Redis.
async fn finish(
    run: &Run<'_>,
    stack: Stack,
    log: &FaultLog,
    ops: &[client::Op],
    snap: &Snapshot,
    ledger: &Ledger,
    verdict: &mut ChaosVerdict,
) -> Result<(), String> {
    let outputs = stack.outputs();
    judge::logs(&outputs, verdict);
    let write = |name: &str, text: String| std::fs::write(run.records.join(name), text);
    let _ = write("history.json", serde_json::to_string_pretty(ops).unwrap_or_default());
    let _ = write("tables.json", serde_json::to_string_pretty(snap).unwrap_or_default());
    let _ = write("ledger.json", serde_json::to_string_pretty(ledger).unwrap_or_default());
    for (i, out) in outputs.iter().enumerate() {
        let _ = write(&format!("bookingd-{i}.log"), out.clone());
    }
    let _ = write("fake-provider.log", stack.provider.output());
    let keep = run.opts.keep_db || (run.opts.keep_failing_db && !verdict.violations.is_empty());
    verdict.kept_database = stack.finish(keep, log).await?;
    if let Some(r) = &run.redis {
        r.lock().await.stop().await;
    }
    Ok(())
}

/// Per event with a room, the users its table `waiting_room_users` holds.
async fn queued_users(pool: &sqlx::PgPool, snap: &Snapshot) -> Result<BTreeMap<EventId, BTreeSet<UserId>>, String> {
    use booking::admission::records::{PgRoomRecords, RoomRecords};
    let records = PgRoomRecords::new(pool.clone());
    let mut joined = BTreeMap::new();
    for e in &snap.events {
        if let Some(journal) = records.journal(&e.event_id).await.map_err(|err| format!("room journal: {err}"))? {
            joined.insert(e.event_id.clone(), journal.users.into_iter().map(|u| u.user_id).collect());
        }
    }
    Ok(joined)
}

/// The run's events and users: events named for this run (the cache is
/// shared between runs), created through the API as an operator, a room in
/// front of each in a waiting-room run, and a bearer token per user.
struct People {
    events: Vec<(EventId, Vec<SeatId>)>,
    tokens: Vec<String>,
    /// The room in front of every event (waiting-room runs).
    room: Option<room::ChaosRoom>,
    /// Users with a members' credential, by name (priority rooms).
    tiers: BTreeMap<String, u8>,
}

impl People {
    fn event_ids(&self) -> Vec<EventId> {
        self.events.iter().map(|(e, _)| e.clone()).collect()
    }
}

/// Creates the run's events (scaled to chaos bounds), their rooms and the users' tokens.
async fn create_events(
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
            let sub = format!("user{i}");
            let member = room.is_some_and(|r| r.policy == booking::admission::room::Policy::Priority)
                && rng.random_bool(room.map(|r| r.member_share).unwrap_or(0.0));
            let tier = member.then_some(0u8);
            if let Some(t) = tier {
                tiers.insert(sub.clone(), t);
            }
            auth.issue(&Claims { sub: UserId::from(sub), events: vec!["*".into()], exp_ms: far, admin: false, tier })
        })
        .collect();
    Ok(People { events, tokens, room, tiers })
}

/// What the faults act on: the bookingd addresses, the run's database, its
/// cache namespace and its events.
struct FaultTargets {
    addrs: Vec<std::net::SocketAddr>,
    db_name: String,
    cache_namespace: String,
    event_ids: Vec<EventId>,
}

/// Runs the users while the faults run (a supervisor restarting crashed
/// processes, kills, terminated backends, disconnecting clients, a poisoned
/// cache; in a waiting-room run, Redis stopped, restarted empty and
/// stalled), then stops the faults. Returns the fault log's time at the end.
async fn users_under_faults(
    run: &Run<'_>,
    stack: &Arc<Mutex<Stack>>,
    log: &Arc<FaultLog>,
    api: &Api,
    people: People,
    t: FaultTargets,
) -> Result<u64, String> {
    let (seed, cfg, faults) = (run.seed, run.cfg, run.faults);
    let mut user = cfg.user.clone();
    user.events = Arc::new(people.events.clone());
    let (stop_tx, stop_rx) = watch::channel(false);
    let supervisor =
        tokio::spawn(disrupt::supervise(stack.clone(), faults.clone(), seed, log.clone(), stop_rx.clone()));
    let fault_tasks = spawn_fault_tasks(run, stack, log, &people.tokens[0], &t, &stop_rx);
    let outages = spawn_outages(run, stack, log, &stop_rx).await;
    drive_users(run, api, people, user, log).await;
    let _ = stop_tx.send(true);
    for task in fault_tasks {
        let _ = task.await;
    }
    for (what, task) in outages {
        task.await.map_err(|e| format!("{what}: {e}"))??;
    }
    supervisor.await.map_err(|e| format!("supervisor: {e}"))??;
    Ok(log.now_ms())
}

/// A fault task that may fail the run, named for its error.
type Outage = (&'static str, tokio::task::JoinHandle<Result<(), String>>);

/// The outages that run beside the users until `stop_rx` says stop, each
/// healed by then: a bookingd cut off from PostgreSQL, the payment path's
/// partitions, the run's own PostgreSQL restarted or failed over, and its
/// own Redis stopped and stalled.
async fn spawn_outages(
    run: &Run<'_>,
    stack: &Arc<Mutex<Stack>>,
    log: &Arc<FaultLog>,
    stop_rx: &watch::Receiver<bool>,
) -> Vec<Outage> {
    let (seed, faults) = (run.seed, run.faults);
    let (links, provider_links, webhook_link) = {
        let s = stack.lock().await;
        (s.links.clone(), s.provider_links.clone(), s.webhook_link.clone())
    };
    let partitions = db_partition::run(links.clone(), faults.db_partitions.clone(), seed, log.clone(), stop_rx.clone());
    let slow = link_latency::run(
        links.clone(),
        provider_links.clone(),
        faults.link_latency.clone(),
        log.clone(),
        stop_rx.clone(),
    );
    let lossy =
        packet_loss::run(links.clone(), provider_links.clone(), faults.packet_loss, log.clone(), stop_rx.clone());
    let payment_path =
        provider_link::run(provider_links, webhook_link, faults.provider_links.clone(), log.clone(), stop_rx.clone());
    let mut outages: Vec<Outage> = vec![
        (
            "slow links",
            tokio::spawn(async move {
                slow.await;
                Ok(())
            }),
        ),
        ("packet loss", tokio::spawn(lossy)),
        ("database partitions", tokio::spawn(partitions)),
        ("payment path partitions", tokio::spawn(payment_path)),
    ];
    if let Some(pair) = run.failover.clone() {
        let failover = db_failover::run(pair, faults.pg_failover_at_ms, log.clone(), stop_rx.clone());
        outages.push(("database failover", tokio::spawn(failover)));
    }
    if let Some(pg) = run.opts.own_pg.clone() {
        let restarts = db_restart::run(pg, links, faults.pg_restarts.clone(), log.clone(), stop_rx.clone());
        outages.push(("database restarts", tokio::spawn(restarts)));
    }
    if let Some(r) = &run.redis {
        let redis =
            disrupt::redis_outages(r.clone(), stack.clone(), faults.clone(), seed, log.clone(), stop_rx.clone());
        outages.push(("redis outages", tokio::spawn(redis)));
    }
    outages
}

/// The fault tasks that run beside the users until `stop_rx` says stop:
/// kills, terminated PostgreSQL backends, disconnecting clients (with the
/// first user's `token`), and with a cache the poisoned entries.
fn spawn_fault_tasks(
    run: &Run<'_>,
    stack: &Arc<Mutex<Stack>>,
    log: &Arc<FaultLog>,
    token: &str,
    t: &FaultTargets,
    stop_rx: &watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let (seed, opts, faults) = (run.seed, run.opts, run.faults);
    let mut fault_tasks = vec![
        tokio::spawn(disrupt::kills(stack.clone(), faults.clone(), seed, log.clone(), stop_rx.clone())),
        tokio::spawn(disrupt::pg_terminations(
            opts.admin_url.clone(),
            t.db_name.clone(),
            faults.clone(),
            log.clone(),
            stop_rx.clone(),
        )),
        tokio::spawn(disrupt::disconnects(
            t.addrs.clone(),
            t.event_ids.clone(),
            token.to_string(),
            seed,
            faults.clone(),
            log.clone(),
            stop_rx.clone(),
        )),
    ];
    if let Some(r) = &opts.redis_url {
        fault_tasks.push(tokio::spawn(disrupt::redis_poison(
            r.clone(),
            t.cache_namespace.clone(),
            t.event_ids.clone(),
            faults.clone(),
            log.clone(),
            stop_rx.clone(),
        )));
    }
    fault_tasks
}

/// Runs the users to the end of the run's duration: through the waiting
/// room when the run has one, else straight at the seats.
async fn drive_users(
    run: &Run<'_>,
    api: &Api,
    people: People,
    user: crate::world::user::UserParams,
    log: &Arc<FaultLog>,
) {
    let (seed, opts, cfg) = (run.seed, run.opts, run.cfg);
    let tokens = Arc::new(people.tokens);
    let max_think_ms = 400;
    match people.room {
        Some(room) => {
            let wl = room_workload::RoomWorkloadConfig { user, room, duration_ms: opts.duration_ms, max_think_ms };
            room_workload::run(seed, wl, tokens.len(), api.clone(), tokens, log.clone()).await;
        }
        None => {
            let hold_ttl_ms = cfg.hold_ttl_ms.clamp(HOLD_TTL_MS.0, HOLD_TTL_MS.1) as u64;
            let wl =
                WorkloadConfig { user, users: tokens.len(), duration_ms: opts.duration_ms, hold_ttl_ms, max_think_ms };
            workload::run(seed, wl, api.clone(), tokens, log.clone()).await;
        }
    }
}

/// The checkers chaos mode runs: those sound on the final tables and the
/// provider's ledger alone. The others judge the store's trace of seat,
/// order and compensation changes, which only the simulator records.
pub const CHAOS_CHECKERS: &[&str] =
    &["bookings", "hidden_charges", "refunds", "liveness", "ticket_refunds", "provider_refunds"];

/// The plant a chaos run applies, by name (for the CLI).
pub fn plant(name: &str) -> Option<Plant> {
    Plant::parse(name)
}
