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
//! - [`stack`]: database and processes; `setup`: a run's own servers,
//!   events, rooms and users; `fault_plan`: the faults a run will meet,
//!   drawn from its seed; [`ChaosVerdict`]: what a run came to.
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
mod fault_plan;
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
mod setup;
pub mod soak;
pub mod stack;
mod verdict;
pub mod workload;

use crate::world::plan::Plan;
use booking::fake_provider::Ledger;
use booking::fault::Plant;
use booking::ids::SeededIds;
use booking::model::{EventId, Snapshot, UserId};
use booking::store::{PgClock, PgStore, Store};
use client::{Api, History, Outcome};
use disrupt::FaultPlan;
use log::FaultLog;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stack::{Stack, StackConfig};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, watch};
use workload::WorkloadConfig;

pub use fault_plan::has_real_faults;
use fault_plan::{failover_at_ms, fault_plan};
use setup::{People, bookingd_args, create_events, log_skews, own_servers};
pub use verdict::{ChaosVerdict, ServerError};

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
