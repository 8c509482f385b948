//! Real faults of a chaos run, each logged with its wall time: a supervisor
//! that restarts bookingd processes that crashed after a commit (or were
//! killed), `kill -9` at seeded moments, clients that reset their connection
//! a few ms after sending a request (on every endpoint, authenticated or
//! not), every PostgreSQL backend of the run terminated, and the run's Redis
//! cache entries poisoned.

use super::log::{ChaosFault, FaultLog};
use super::stack::Stack;
use booking::model::EventId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::{Mutex, watch};

/// The fault plan of one seed.
#[derive(Debug, Clone)]
pub struct FaultPlan {
    /// Crash after a commit at these points (`--crash-after-commit`); empty: none.
    pub crash_points: Vec<String>,
    /// Commits a process lets pass before crashing: drawn from this range per life.
    pub crash_skip: (u64, u64),
    /// How long a crashed or killed process stays down, in ms.
    pub restart_after_ms: u64,
    /// Wall ms at which a bookingd gets `kill -9`.
    pub kills_at_ms: Vec<u64>,
    /// Wall ms at which every backend of the run's database is terminated.
    pub pg_terminations_at_ms: Vec<u64>,
    /// Wall ms at which the run's cache entries are poisoned (needs Redis).
    pub redis_poison_at_ms: Vec<u64>,
    /// Concurrent disconnecting clients (0: none).
    pub disconnectors: usize,
    /// The run's own Redis stopped, a bookingd killed meanwhile, and started
    /// again (waiting-room and cache-fault runs).
    pub redis_stops: Vec<RedisStop>,
    /// The run's own Redis stalled at wall ms `.0` for `.1` ms (waiting-room runs).
    pub redis_stalls: Vec<(u64, u64)>,
    /// A bookingd cut off from PostgreSQL at wall ms `.0` for `.1` ms ([`super::db_partition`]).
    pub db_partitions: Vec<(u64, u64)>,
    /// The run's own PostgreSQL stopped at wall ms `.0` and started again
    /// `.1` ms later ([`super::db_restart`]); empty when the server is not the run's.
    pub pg_restarts: Vec<(u64, u64)>,
    /// Partitions of the payment path ([`super::provider_link`]); empty
    /// unless the scenario has network faults.
    pub provider_links: Vec<super::provider_link::Planned>,
    /// When the run's own PostgreSQL pair fails over, wall ms ([`super::db_failover`]).
    pub pg_failover_at_ms: Option<u64>,
    /// Slow database and provider links, when the scenario has network faults ([`super::link_latency`]).
    pub link_latency: Vec<super::link_latency::Planned>,
    /// A bookingd's lossy links, when the scenario has network faults ([`super::packet_loss`]).
    pub packet_loss: Option<super::packet_loss::Planned>,
}

/// One stop of the run's own Redis.
#[derive(Debug, Clone, Copy)]
pub struct RedisStop {
    /// When, wall ms into the window.
    pub at_ms: u64,
    /// How long it stays down, wall ms.
    pub down_ms: u64,
    /// Whether it comes back with its data (persistence on) or empty.
    pub keep_data: bool,
    /// Whether a bookingd is killed during it (and Redis stays down until it serves again).
    pub kill_bookingd: bool,
}

/// Extra `bookingd serve` arguments for one life of a process.
pub fn life_args(plan: &FaultPlan, rng: &mut ChaCha8Rng) -> Vec<String> {
    if plan.crash_points.is_empty() {
        return Vec::new();
    }
    let skip = rng.random_range(plan.crash_skip.0..=plan.crash_skip.1.max(plan.crash_skip.0));
    vec!["--crash-after-commit".into(), plan.crash_points.join(","), "--crash-skip".into(), skip.to_string()]
}

/// Restarts every process that exited, until `stop`; after `stop`, restarts
/// every process once more without crash points (the settle phase).
pub async fn supervise(
    stack: Arc<Mutex<Stack>>,
    plan: FaultPlan,
    seed: u64,
    log: Arc<FaultLog>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5u64);
    loop {
        let stopping = *stop.borrow();
        let slots = stack.lock().await.slots.len();
        for i in 0..slots {
            let exited = {
                let mut s = stack.lock().await;
                match s.slots[i].proc.as_mut().map(|p| p.exited()) {
                    Some(Some(code)) => Some(code),
                    None => Some(None),
                    Some(None) => None,
                }
            };
            let Some(code) = exited else { continue };
            if code == Some(booking::fault::process::CRASH_EXIT_CODE) {
                log.record(ChaosFault::CrashAfterCommit, format!("bookingd {i} crashed after a commit (exit 86)"));
            }
            tokio::time::sleep(Duration::from_millis(plan.restart_after_ms)).await;
            let args = if stopping { Vec::new() } else { life_args(&plan, &mut rng) };
            restart_logged(&stack, i, args, &log, &format!("previous exit {code:?}")).await?;
        }
        if stopping {
            // Faults end: a process still armed to crash would crash in the
            // settle phase with nobody to restart it. Restart those unarmed.
            if !plan.crash_points.is_empty() {
                for i in 0..slots {
                    restart_logged(&stack, i, Vec::new(), &log, "without crash points: faults end").await?;
                }
            }
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            _ = stop.changed() => {}
        }
    }
}

/// Sleeps until wall ms `at_ms` of the run; `false` when `stop` came first.
pub(super) async fn until(log: &FaultLog, at_ms: u64, stop: &mut watch::Receiver<bool>) -> bool {
    let wait = at_ms.saturating_sub(log.now_ms());
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(wait)) => !*stop.borrow(),
        _ = stop.changed() => false,
    }
}

/// `kill -9` of a seeded bookingd at each planned moment (the supervisor restarts it).
pub async fn kills(
    stack: Arc<Mutex<Stack>>,
    plan: FaultPlan,
    seed: u64,
    log: Arc<FaultLog>,
    mut stop: watch::Receiver<bool>,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x9u64);
    for at in plan.kills_at_ms {
        if !until(&log, at, &mut stop).await {
            return;
        }
        let mut s = stack.lock().await;
        let i = rng.random_range(0..s.slots.len());
        if let Some(p) = s.slots[i].proc.as_mut() {
            p.kill9().await;
            log.record(ChaosFault::Kill9, format!("bookingd {i} killed (SIGKILL)"));
        }
    }
}

/// Terminates every backend of the run's database at each planned moment.
pub async fn pg_terminations(
    admin_url: String,
    db_name: String,
    plan: FaultPlan,
    log: Arc<FaultLog>,
    mut stop: watch::Receiver<bool>,
) {
    use sqlx::Connection;
    for at in plan.pg_terminations_at_ms {
        if !until(&log, at, &mut stop).await {
            return;
        }
        let result = async {
            let mut c = sqlx::PgConnection::connect(&admin_url).await?;
            let n: i64 = sqlx::query_scalar(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            )
            .bind(&db_name)
            .fetch_one(&mut c)
            .await?;
            let _ = c.close().await;
            Ok::<i64, sqlx::Error>(n)
        }
        .await;
        match result {
            Ok(n) => log.record(ChaosFault::PgTerminateBackends, format!("{n} backends of {db_name} terminated")),
            Err(e) => log.note(format!("pg_terminate_backend failed: {e}")),
        }
    }
}

/// How long each cache poisoning lasts, wall ms: the entries are written
/// again every [`POISON_EVERY_MS`] meanwhile, since every write to an event
/// drops its entry (a garbage entry written once lasts until the next hold).
pub const POISON_MS: u64 = 500;
/// How often a poisoning writes the garbage again, wall ms.
pub const POISON_EVERY_MS: u64 = 20;

/// Attempts at a poisoning while Redis cannot be reached (a Redis outage
/// of the run), [`POISON_RETRY_MS`] apart.
const POISON_ATTEMPTS: u32 = 20;
/// Wait between poisoning attempts, wall ms.
const POISON_RETRY_MS: u64 = 100;

/// Overwrites the run's seat-map cache entries (keys under `namespace`)
/// with garbage at each planned moment, again and again for [`POISON_MS`]
/// (while Redis is down, once it is back: at most [`POISON_ATTEMPTS`] tries).
pub async fn redis_poison(
    redis_url: String,
    namespace: String,
    events: Vec<EventId>,
    plan: FaultPlan,
    log: Arc<FaultLog>,
    mut stop: watch::Receiver<bool>,
) {
    for at in plan.redis_poison_at_ms {
        if !until(&log, at, &mut stop).await {
            return;
        }
        let mut last = String::new();
        for _ in 0..POISON_ATTEMPTS {
            let mut writes = 0;
            match poison_burst(&redis_url, &namespace, &events, &mut writes).await {
                Ok(()) => {
                    let what =
                        format!("{} seat-map entries poisoned for {POISON_MS} ms ({writes} writes)", events.len());
                    log.record(ChaosFault::RedisPoison, what);
                    last.clear();
                    break;
                }
                Err(e) => last = format!("redis poison failed after {writes} writes: {e}"),
            }
            if *stop.borrow() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(POISON_RETRY_MS)).await;
        }
        if !last.is_empty() {
            log.note(last);
        }
    }
}

/// Writes garbage over every event's entry every [`POISON_EVERY_MS`] for
/// [`POISON_MS`], counting the writes made in `writes`.
async fn poison_burst(
    redis_url: &str,
    namespace: &str,
    events: &[EventId],
    writes: &mut u32,
) -> Result<(), redis::RedisError> {
    let client = redis::Client::open(redis_url)?;
    let mut c = client.get_multiplexed_async_connection().await?;
    for _ in 0..POISON_MS / POISON_EVERY_MS {
        for e in events {
            let _: () = redis::cmd("SET")
                .arg(format!("{namespace}:seatmap:{e}"))
                .arg("\u{0}poisoned{not json")
                .arg("PX")
                .arg(5_000)
                .query_async(&mut c)
                .await?;
            *writes += 1;
        }
        tokio::time::sleep(Duration::from_millis(POISON_EVERY_MS)).await;
    }
    Ok(())
}

/// What a disconnecting client sends: every endpoint, with and without a token.
fn request(rng: &mut ChaCha8Rng, events: &[EventId], token: &str) -> String {
    let e = &events[rng.random_range(0..events.len())];
    let hold = uuid::Uuid::from_u128(rng.random());
    let order = uuid::Uuid::from_u128(rng.random());
    let (method, path, body) = match rng.random_range(0..8) {
        0 => ("GET", "/metrics".to_string(), String::new()),
        1 => ("GET", "/healthz".to_string(), String::new()),
        2 => ("GET", format!("/v1/events/{e}/seats"), String::new()),
        3 => ("POST", format!("/v1/events/{e}/holds"), r#"{"seat_ids":["s00000"]}"#.to_string()),
        4 => ("POST", format!("/v1/events/{e}/holds/{hold}/checkout"), r#"{"seat_ids":["s00000"]}"#.to_string()),
        5 => ("GET", format!("/v1/orders/{order}"), String::new()),
        6 => ("DELETE", format!("/v1/events/{e}/holds/{hold}"), String::new()),
        _ => ("GET", "/v1/admin/unresolved".to_string(), String::new()),
    };
    let auth = if rng.random_bool(0.7) { format!("authorization: Bearer {token}\r\n") } else { String::new() };
    format!(
        "{method} {path} HTTP/1.1\r\nhost: chaos\r\n{auth}idempotency-key: {hold}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Clients that send a request and reset the connection 0..3 ms later, until `stop`.
pub async fn disconnects(
    addrs: Vec<std::net::SocketAddr>,
    events: Vec<EventId>,
    token: String,
    seed: u64,
    plan: FaultPlan,
    log: Arc<FaultLog>,
    stop: watch::Receiver<bool>,
) {
    let tasks: Vec<_> = (0..plan.disconnectors)
        .map(|k| {
            let (addrs, events, token, log, mut stop) =
                (addrs.clone(), events.clone(), token.clone(), log.clone(), stop.clone());
            tokio::spawn(async move {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (0xD15C0 + k as u64));
                while !*stop.borrow() {
                    let i = rng.random_range(0..addrs.len());
                    let req = request(&mut rng, &events, &token);
                    let delay_us = rng.random_range(0..3_000);
                    if let Ok(Ok(mut s)) =
                        tokio::time::timeout(Duration::from_millis(500), tokio::net::TcpStream::connect(addrs[i])).await
                    {
                        let _ = s.write_all(req.as_bytes()).await;
                        tokio::time::sleep(Duration::from_micros(delay_us)).await;
                        // SO_LINGER 0: closing sends RST, as a client that vanished does.
                        let _ = s.set_zero_linger();
                        drop(s);
                        let line = req.lines().next().unwrap_or_default().to_string();
                        log.record(ChaosFault::Disconnect, format!("bookingd {i}: {line} reset after {delay_us} us"));
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(rng.random_range(1..=10))) => {}
                        _ = stop.changed() => {}
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
}

/// How long after stopping Redis a bookingd is killed (it restarts while Redis is down).
const KILL_IN_OUTAGE_MS: u64 = 100;
/// How long an outage waits at most for the killed process to serve again.
const RESTART_WAIT_MS: u64 = 15_000;
/// How long the killed process, started again, serves with Redis still
/// down: requests must meet a fresh instance that has never reached the
/// rooms' store, and it must fail closed too.
const SERVE_IN_OUTAGE_MS: u64 = 750;

/// Waits (bounded) until slot `i` has a running process again.
async fn until_serving(stack: &Mutex<Stack>, i: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(RESTART_WAIT_MS);
    while tokio::time::Instant::now() < deadline {
        if stack.lock().await.slots[i].proc.as_mut().is_some_and(|p| p.exited().is_none()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The run's own Redis stopped and started again (empty, or with its data),
/// with a bookingd
/// killed during each outage (the supervisor starts it while Redis is still
/// down), and stalled, at the planned moments.
pub async fn redis_outages(
    redis: Arc<Mutex<super::redis::PrivateRedis>>,
    stack: Arc<Mutex<Stack>>,
    plan: FaultPlan,
    seed: u64,
    log: Arc<FaultLog>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xED15u64);
    let mut moments: Vec<(u64, Option<RedisStop>, Option<u64>)> =
        plan.redis_stops.iter().map(|s| (s.at_ms, Some(*s), None)).collect();
    moments.extend(plan.redis_stalls.iter().map(|&(at, ms)| (at, None, Some(ms))));
    moments.sort_unstable_by_key(|m| m.0);
    for (at, stopped, stall_ms) in moments {
        if !until(&log, at, &mut stop).await {
            return Ok(());
        }
        if let Some(ms) = stall_ms {
            match redis.lock().await.stall(ms).await {
                Ok(()) => log.record(ChaosFault::RedisStall, format!("Redis stalled for {ms} ms (DEBUG SLEEP)")),
                Err(e) => log.note(format!("Redis stall failed: {e}")),
            }
            continue;
        }
        if let Some(planned) = stopped {
            redis_stop(&redis, &stack, planned, &mut rng, &log).await?;
        }
    }
    Ok(())
}

/// One planned stop of the run's Redis: `kill -9`, with a seeded bookingd
/// killed 100 ms into it when planned (Redis then stays down until that
/// instance has served for [`SERVE_IN_OUTAGE_MS`]), and a start, empty or
/// with its data.
async fn redis_stop(
    redis: &Mutex<super::redis::PrivateRedis>,
    stack: &Arc<Mutex<Stack>>,
    planned: RedisStop,
    rng: &mut ChaCha8Rng,
    log: &FaultLog,
) -> Result<(), String> {
    let RedisStop { down_ms, keep_data, kill_bookingd, .. } = planned;
    redis.lock().await.stop().await;
    log.record(ChaosFault::RedisStop, format!("Redis stopped (SIGKILL) for {down_ms} ms"));
    let mut killed = None;
    if kill_bookingd {
        tokio::time::sleep(Duration::from_millis(KILL_IN_OUTAGE_MS)).await;
        let mut s = stack.lock().await;
        let i = rng.random_range(0..s.slots.len());
        if let Some(p) = s.slots[i].proc.as_mut() {
            p.kill9().await;
            log.record(ChaosFault::Kill9, format!("bookingd {i} killed (SIGKILL) while Redis is down"));
            killed = Some(i);
        }
    }
    let waited_ms = if kill_bookingd { KILL_IN_OUTAGE_MS } else { 0 };
    tokio::time::sleep(Duration::from_millis(down_ms.saturating_sub(waited_ms))).await;
    if let Some(i) = killed {
        // Redis stays down until the supervisor has started the killed process again.
        until_serving(stack, i).await;
        log.record(ChaosFault::Note, format!("bookingd {i} serves again, Redis still down"));
        tokio::time::sleep(Duration::from_millis(SERVE_IN_OUTAGE_MS)).await;
    }
    if keep_data {
        redis.lock().await.restart_keeping_data().await?;
        log.record(ChaosFault::RedisRestartKept, "Redis started again with its data (append-only file)".to_string());
    } else {
        redis.lock().await.restart_empty().await?;
        log.record(ChaosFault::RedisRestartEmpty, "Redis started again, empty".to_string());
    }
    Ok(())
}

/// Restarts slot `i` with `args` and logs it (`why`), with the new life's
/// clock skew when the run skews clocks.
async fn restart_logged(
    stack: &Arc<Mutex<Stack>>,
    i: usize,
    args: Vec<String>,
    log: &FaultLog,
    why: &str,
) -> Result<(), String> {
    let skew_ms = {
        let mut s = stack.lock().await;
        s.restart(i, args).await?;
        s.slots[i].skew_ms
    };
    log.record_at(ChaosFault::Restart, i, format!("bookingd {i} restarted ({why})"));
    if skew_ms != 0 {
        let clock = super::clock_skew::describe(skew_ms);
        log.record_at(ChaosFault::ClockSkew, i, format!("bookingd {i}'s new life runs its clock {clock}"));
    }
    Ok(())
}
