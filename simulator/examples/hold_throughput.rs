//! Hold acquisitions per second on the real stack: through `PgStore`, through
//! `bookingd` (HTTP), and through `pgbench -M prepared` running the same
//! conditional `UPDATE … RETURNING`, with the same client count, on 1000
//! seats (uniform) and on 10 hot seats, every figure measured in the same run.
//!
//! Every attempt asks for one random seat with a 1 ms hold lifetime, so the
//! seat is free again (its hold expired) by the next attempt on it: in the
//! steady state nearly every attempt is a takeover of an expired hold, the
//! write the brief's rush is made of. Refusals (the seat's hold is not yet
//! past its deadline, or another transaction got there first) are counted.
//!
//! Rows (all against pgbench running the bare `UPDATE`, on the same seats):
//! - `pgbench UPDATE`: one autocommit statement, the conditional write alone;
//! - `pgbench PgStore statement`: the one statement `PgStore::acquire_hold`
//!   sends (the seats locked in sorted order, the decision, the conditional
//!   write, before- and after-images): the database's share of PgStore's
//!   cost, without Rust;
//! - `PgStore`: the library, one tokio task a client, pool of CLIENTS connections;
//! - `bookingd`: one `bookingd` process (with Redis for the seat-map cache,
//!   as shipped), CLIENTS HTTP clients with keep-alive, one user each.
//!
//! The profile beside each row is CPU time per attempt, by process: the
//! PostgreSQL server (all its processes, exited ones included), `bookingd`,
//! and the client (pgbench, or this process for PgStore and the HTTP
//! clients), read from /proc. On a 2-core machine the components share the
//! cores, so CPU per attempt is what decides throughput.
//!
//! `cargo build --release -p simulator && cargo run --release -p simulator --example hold_throughput -- [CLIENTS] [DURATION_S]`
//! (defaults 8 clients, 10 s a row). Needs PostgreSQL (HOLDFAST_TEST_DATABASE_URL,
//! default the local `postgres` database), Redis on 127.0.0.1:6379 (REDIS_URL)
//! and `pgbench` on PATH. Prints a markdown table.

use booking::ids::RandomIds;
use booking::store::{AcquireHold, CreateEvent, Store, StoreError};
use booking::store::{PgClock, PgStore};
use rand::{Rng, SeedableRng};
use serde_json::json;
use simulator::chaos::client::{Api, History};
use simulator::chaos::log::FaultLog;
use simulator::chaos::stack::{Stack, StackConfig};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// Seats in the benchmark event.
const SEATS: usize = 1_000;
/// Seats every client aims at in the hot rows.
const HOT_SEATS: usize = 10;
/// Event id.
const EVENT: &str = "bench";
/// Hold lifetime, ms: the seat is free again by the next attempt on it.
const HOLD_TTL_MS: i64 = 1;
/// Kernel clock ticks per second for /proc/<pid>/stat (USER_HZ, 100 on Linux).
const TICKS_PER_S: f64 = 100.0;

/// The store's clock, as `PgStore` reads it inside the transaction.
const NOW: &str = "(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000)::BIGINT";

/// The conditional write of `PgStore::acquire_hold` (`hold_sql` with sound
/// rules), for one seat, with the store's clock inline.
fn bare_update_script() -> String {
    format!(
        "\\set seat random(0, :nseats - 1)\n\
         UPDATE seats SET state = 'held', hold_token = gen_random_uuid(), holder_id = 'bench', \
         hold_expires_at_ms = {NOW} + {HOLD_TTL_MS}, order_id = NULL, booking_id = NULL, version = version + 1 \
         WHERE event_id = '{EVENT}' AND seat_id = ANY(ARRAY['s' || lpad((:seat)::text, 5, '0')]::text[]) \
         AND (state = 'available' OR (state = 'held' AND hold_expires_at_ms <= {NOW})) \
         RETURNING seat_id, version;\n"
    )
}

/// The statement `PgStore::acquire_hold` sends (its sound text, no cap, the
/// database's clock), with pgbench's variables for its parameters.
fn pgstore_statement_script() -> String {
    // `$1`…`$7`; replaced from the last so `$1` does not match a prefix.
    let params = [
        ("$7", "NULL"),
        ("$6", "NULL"),
        ("$5", "(:ttl)::bigint"),
        ("$4", "'bench'"),
        ("$3", "gen_random_uuid()"),
        ("$2", "ARRAY['s' || lpad((:seat)::text, 5, '0')]"),
        ("$1", "'bench'"),
    ];
    let mut sql = PgStore::hold_statement_text().to_string();
    for (param, value) in params {
        sql = sql.replace(param, value);
    }
    format!("\\set seat random(0, :nseats - 1)\n\\set ttl {HOLD_TTL_MS}\n{sql};\n")
}

fn seat(i: usize) -> String {
    format!("s{i:05}")
}

/// CPU seconds used so far by a set of processes.
#[derive(Clone, Copy, Default)]
struct Cpu {
    postgres_s: f64,
    bookingd_s: f64,
    client_s: f64,
}

impl Cpu {
    fn since(self, before: Cpu) -> Cpu {
        Cpu {
            postgres_s: self.postgres_s - before.postgres_s,
            bookingd_s: self.bookingd_s - before.bookingd_s,
            client_s: self.client_s - before.client_s,
        }
    }
}

/// (utime + stime, cutime + cstime) of a process, in seconds.
fn proc_cpu(pid: &str) -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at state (field 3).
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i - 3).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    Some(((n(14) + n(15)) / TICKS_PER_S, (n(16) + n(17)) / TICKS_PER_S))
}

fn comm(pid: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string()
}

fn ppid(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].split_whitespace().nth(1).map(str::to_string)
}

/// PostgreSQL's CPU (live processes, plus the postmaster's reaped children),
/// `bookingd`'s, and this process's own plus its reaped children (pgbench).
fn sample_cpu(bookingd: Option<u32>) -> Cpu {
    let mut cpu = Cpu::default();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = entry.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || comm(&pid) != "postgres" {
            continue;
        }
        let Some((own, children)) = proc_cpu(&pid) else { continue };
        cpu.postgres_s += own;
        // The postmaster (its parent is not postgres) has reaped the exited backends.
        if ppid(&pid).map(|p| comm(&p) != "postgres").unwrap_or(false) {
            cpu.postgres_s += children;
        }
    }
    if let Some((own, _)) = bookingd.and_then(|p| proc_cpu(&p.to_string())) {
        cpu.bookingd_s = own;
    }
    if let Some((own, children)) = proc_cpu("self") {
        cpu.client_s = own + children;
    }
    cpu
}

/// Counters of one database from `pg_stat_database` (transactions, rows
/// read and written, buffer reads): what each path makes the server do.
#[derive(Clone, Copy, Default)]
struct DbStats {
    xacts: i64,
    tup_returned: i64,
    tup_updated: i64,
    blks_hit: i64,
}

impl DbStats {
    fn since(self, before: DbStats) -> DbStats {
        DbStats {
            xacts: self.xacts - before.xacts,
            tup_returned: self.tup_returned - before.tup_returned,
            tup_updated: self.tup_updated - before.tup_updated,
            blks_hit: self.blks_hit - before.blks_hit,
        }
    }
}

/// The counters of `db_url`'s database, once the server has published them
/// (backends flush their statistics within a second of going idle).
async fn db_stats(db_url: &str) -> Result<DbStats, String> {
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let pool =
        sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(db_url).await.map_err(|e| e.to_string())?;
    sqlx::query("SELECT pg_stat_clear_snapshot()").execute(&pool).await.map_err(|e| e.to_string())?;
    let (xacts, tup_returned, tup_updated, blks_hit): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (xact_commit + xact_rollback)::BIGINT, tup_returned::BIGINT, tup_updated::BIGINT, blks_hit::BIGINT \
         FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(&pool)
    .await
    .map_err(|e| e.to_string())?;
    pool.close().await;
    Ok(DbStats { xacts, tup_returned, tup_updated, blks_hit })
}

struct Row {
    db: DbStats,
    path: &'static str,
    hot: bool,
    attempts: u64,
    acquired: u64,
    wall_s: f64,
    cpu: Cpu,
}

impl Row {
    fn acquired_per_s(&self) -> f64 {
        self.acquired as f64 / self.wall_s
    }
    fn attempts_per_s(&self) -> f64 {
        self.attempts as f64 / self.wall_s
    }
}

async fn version_sum(pool: &sqlx::PgPool) -> Result<i64, String> {
    sqlx::query_scalar::<_, i64>("SELECT COALESCE(SUM(version), 0)::BIGINT FROM seats WHERE event_id = $1")
        .bind(EVENT)
        .fetch_one(pool)
        .await
        .map_err(|e| e.to_string())
}

/// Frees every seat (between rows).
async fn reset(pool: &sqlx::PgPool) -> Result<(), String> {
    sqlx::query(
        "UPDATE seats SET state = 'available', hold_token = NULL, holder_id = NULL, hold_expires_at_ms = NULL \
         WHERE event_id = $1",
    )
    .bind(EVENT)
    .execute(pool)
    .await
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// pgbench's "number of transactions actually processed" (failed ones are none here: no retries, no errors).
fn parse_pgbench_transactions(out: &str) -> Result<u64, String> {
    out.lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no transaction count in pgbench output:\n{out}"))
}

async fn pgbench(
    path: &'static str,
    script: &str,
    hot: bool,
    clients: usize,
    duration_s: u64,
    db_url: &str,
    pool: &sqlx::PgPool,
) -> Result<Row, String> {
    reset(pool).await?;
    let file = std::env::temp_dir().join(format!("holdfast-hold-{}-{}.pgbench", std::process::id(), path.len()));
    std::fs::write(&file, script).map_err(|e| e.to_string())?;
    let before_versions = version_sum(pool).await?;
    let before_db = db_stats(db_url).await?;
    let before = sample_cpu(None);
    let t0 = Instant::now();
    let out = tokio::process::Command::new("pgbench")
        // The session settings PgStore's pools get (`PgStore::connect_options`).
        .env("PGOPTIONS", PgStore::SESSION_SETTINGS.map(|(k, v)| format!("-c {k}={v}")).join(" "))
        .args(["-n", "-M", "prepared", "-c", &clients.to_string(), "-j", "2", "-T", &duration_s.to_string()])
        .args(["-D", &format!("nseats={}", if hot { HOT_SEATS } else { SEATS })])
        .arg("-f")
        .arg(&file)
        .arg(db_url)
        .output()
        .await
        .map_err(|e| format!("pgbench: {e}"))?;
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu = sample_cpu(None).since(before);
    let _ = std::fs::remove_file(&file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("pgbench failed: {stdout}{}", String::from_utf8_lossy(&out.stderr)));
    }
    let attempts = parse_pgbench_transactions(&stdout)?;
    let acquired = (version_sum(pool).await? - before_versions) as u64;
    let db = db_stats(db_url).await?.since(before_db);
    Ok(Row { db, path, hot, attempts, acquired, wall_s, cpu })
}

async fn pgstore(hot: bool, clients: usize, duration_s: u64, db_url: &str, pool: &sqlx::PgPool) -> Result<Row, String> {
    reset(pool).await?;
    let opts = db_url.parse().map_err(|e: sqlx::Error| e.to_string())?;
    let store_pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(clients as u32)
        .min_connections(clients as u32)
        .connect_with(PgStore::connect_options(opts))
        .await
        .map_err(|e| e.to_string())?;
    let store = Arc::new(PgStore::new(store_pool.clone(), PgClock::Database, Arc::new(RandomIds)));
    let attempts = Arc::new(AtomicU64::new(0));
    let acquired = Arc::new(AtomicU64::new(0));
    let before_versions = version_sum(pool).await?;
    let before_db = db_stats(db_url).await?;
    let before = sample_cpu(None);
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(duration_s);
    let n = if hot { HOT_SEATS } else { SEATS };
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (store, attempts, acquired) = (store.clone(), attempts.clone(), acquired.clone());
            tokio::spawn(async move {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(c as u64);
                while Instant::now() < deadline {
                    let req = AcquireHold {
                        event_id: EVENT.into(),
                        seat_ids: vec![seat(rng.random_range(0..n)).into()],
                        holder_id: format!("u{c}").into(),
                        ttl_ms: HOLD_TTL_MS,
                        max_held_seats: None,
                    };
                    match store.acquire_hold(&req).await {
                        Ok(_) => {
                            acquired.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(StoreError::SeatUnavailable { .. }) => {}
                        Err(e) => return Err(e.to_string()),
                    }
                    attempts.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu = sample_cpu(None).since(before);
    store_pool.close().await;
    let acquired = acquired.load(Ordering::Relaxed);
    let versions = (version_sum(pool).await? - before_versions) as u64;
    assert_eq!(versions, acquired, "every grant PgStore reported is one write in the table, and no more");
    let db = db_stats(db_url).await?.since(before_db);
    Ok(Row { db, path: "PgStore", hot, attempts: attempts.load(Ordering::Relaxed), acquired, wall_s, cpu })
}

async fn bookingd(hot: bool, clients: usize, duration_s: u64, admin_url: &str, redis_url: &str) -> Result<Row, String> {
    let stack = Stack::start(
        StackConfig {
            admin_url: admin_url.to_string(),
            redis_url: Some(redis_url.to_string()),
            bookingds: 1,
            bookingd_args: vec![
                "--hold-ttl-ms".into(),
                HOLD_TTL_MS.to_string(),
                "--hold-attempts-per-minute".into(),
                "1000000".into(),
            ],
            provider_faults_json: "{}".into(),
            provider_seed: 1,
            clock_skew_max_ms: 0,
            skew_seed: 0,
            db_direct: true,
        },
        |_| Vec::new(),
    )
    .await?;
    let log = Arc::new(FaultLog::new());
    let history = Arc::new(History::new(log.start()));
    let api = Api::new(vec![stack.slots[0].addr], history);
    let token = simulator::chaos::stack::token;
    let seats: Vec<String> = (0..SEATS).map(seat).collect();
    let admin = [("authorization", format!("Bearer {}", token("op", true)))];
    let body = json!({"event_id": EVENT, "seat_ids": seats, "price_cents": 2_500});
    let r = api.send("operator", 0, "POST", "/v1/events", &admin, Some(body)).await?;
    if r.status != 201 {
        return Err(format!("create event: {} {}", r.status, r.body));
    }
    let pid = stack.slots[0].proc.as_ref().and_then(|p| p.pid());
    let attempts = Arc::new(AtomicU64::new(0));
    let acquired = Arc::new(AtomicU64::new(0));
    let before_db = db_stats(&stack.db_url).await?;
    let before = sample_cpu(pid);
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(duration_s);
    let n = if hot { HOT_SEATS } else { SEATS };
    let path = format!("/v1/events/{EVENT}/holds");
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (api, attempts, acquired, path) = (api.clone(), attempts.clone(), acquired.clone(), path.clone());
            let bearer = [("authorization", format!("Bearer {}", token(&format!("u{c}"), false)))];
            tokio::spawn(async move {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(c as u64);
                while Instant::now() < deadline {
                    let body = json!({"seat_ids": [seat(rng.random_range(0..n))]});
                    let r = api.send("u", 0, "POST", &path, &bearer, Some(body)).await?;
                    match r.status {
                        201 => {
                            acquired.fetch_add(1, Ordering::Relaxed);
                        }
                        409 => {}
                        s => return Err(format!("hold answered {s}: {}", r.body)),
                    }
                    attempts.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu = sample_cpu(pid).since(before);
    let db = db_stats(&stack.db_url).await?.since(before_db);
    stack.finish(false, &log).await?;
    Ok(Row {
        db,
        path: "bookingd",
        hot,
        attempts: attempts.load(Ordering::Relaxed),
        acquired: acquired.load(Ordering::Relaxed),
        wall_s,
        cpu,
    })
}

/// A fresh database with the schema and the benchmark event, for the pgbench and PgStore rows.
async fn fresh_db(admin_url: &str) -> Result<(String, String, sqlx::PgPool), String> {
    let name = format!("holdfast_bench_{}", std::process::id());
    let admin =
        sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(admin_url).await.map_err(|e| e.to_string())?;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name}")))
        .execute(&admin)
        .await
        .map_err(|e| e.to_string())?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await
        .map_err(|e| e.to_string())?;
    admin.close().await;
    let url = simulator::chaos::stack::db_url(admin_url, &name);
    let pool =
        sqlx::postgres::PgPoolOptions::new().max_connections(2).connect(&url).await.map_err(|e| e.to_string())?;
    PgStore::migrate(&pool).await.map_err(|e| e.to_string())?;
    let store = PgStore::new(pool.clone(), PgClock::Database, Arc::new(RandomIds));
    store
        .create_event(&CreateEvent {
            event_id: EVENT.into(),
            seat_ids: (0..SEATS).map(|i| seat(i).into()).collect(),
            price_cents: 2_500,
        })
        .await
        .map_err(|e| e.to_string())?;
    Ok((name, url, pool))
}

async fn drop_db(admin_url: &str, name: &str) -> Result<(), String> {
    let admin =
        sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(admin_url).await.map_err(|e| e.to_string())?;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
        .execute(&admin)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

async fn run(clients: usize, duration_s: u64, admin_url: &str, redis_url: &str) -> Result<Vec<Row>, String> {
    let (name, url, pool) = fresh_db(admin_url).await?;
    let mut rows = Vec::new();
    for hot in [false, true] {
        rows.push(pgbench("pgbench UPDATE", &bare_update_script(), hot, clients, duration_s, &url, &pool).await?);
        rows.push(
            pgbench("pgbench PgStore statement", &pgstore_statement_script(), hot, clients, duration_s, &url, &pool)
                .await?,
        );
        rows.push(pgstore(hot, clients, duration_s, &url, &pool).await?);
    }
    pool.close().await;
    drop_db(admin_url, &name).await?;
    for hot in [false, true] {
        rows.push(bookingd(hot, clients, duration_s, admin_url, redis_url).await?);
    }
    Ok(rows)
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let clients: usize =
        args.get(1).map(|s| s.parse().map_err(|_| "CLIENTS must be a number")).transpose()?.unwrap_or(8);
    let duration_s: u64 =
        args.get(2).map(|s| s.parse().map_err(|_| "DURATION_S must be a number")).transpose()?.unwrap_or(10);
    if clients == 0 || clients > 64 || duration_s == 0 || duration_s > 600 {
        return Err("CLIENTS must be 1..=64 and DURATION_S 1..=600".into());
    }
    let admin_url = std::env::var("HOLDFAST_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let redis_url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    // The bookingd process is the simulator binary: run from target/release/examples, it is one directory up.
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let sim = exe.parent().and_then(Path::parent).map(|d| d.join("simulator")).ok_or("no simulator binary")?;
    if !sim.exists() {
        return Err(format!("{} not found: cargo build --release -p simulator first", sim.display()));
    }
    // SAFETY: single-threaded here, before the runtime starts any task.
    unsafe { std::env::set_var(simulator::chaos::stack::SIMULATOR_EXE_VAR, &sim) };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    let rows = rt.block_on(run(clients, duration_s, &admin_url, &redis_url))?;
    let base = |hot: bool| {
        rows.iter().find(|r| r.path == "pgbench UPDATE" && r.hot == hot).map(Row::acquired_per_s).unwrap_or(1.0)
    };
    let uniform = |path: &str| rows.iter().find(|r| r.path == path && !r.hot).map(Row::acquired_per_s).unwrap_or(1.0);
    println!(
        "| path | seats | attempts/s | acquired/s | acquired | vs pgbench UPDATE | hot vs uniform | CPU µs/attempt: postgres | bookingd | client | per attempt: transactions | rows read | rows updated | buffer hits |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let per = |s: f64| s * 1e6 / r.attempts.max(1) as f64;
        println!(
            "| {} | {} | {:.0} | {:.0} | {} | {:.2} | {} | {:.0} | {} | {:.0} | {:.2} | {:.1} | {:.2} | {:.1} |",
            r.path,
            if r.hot { format!("{HOT_SEATS} hot") } else { format!("{SEATS} uniform") },
            r.attempts_per_s(),
            r.acquired_per_s(),
            r.acquired,
            r.acquired_per_s() / base(r.hot),
            if r.hot { format!("{:.2}", r.acquired_per_s() / uniform(r.path)) } else { "".into() },
            per(r.cpu.postgres_s),
            if r.path == "bookingd" { format!("{:.0}", per(r.cpu.bookingd_s)) } else { "".into() },
            per(r.cpu.client_s),
            r.db.xacts as f64 / r.attempts.max(1) as f64,
            r.db.tup_returned as f64 / r.attempts.max(1) as f64,
            r.db.tup_updated as f64 / r.attempts.max(1) as f64,
            r.db.blks_hit as f64 / r.attempts.max(1) as f64,
        );
    }
    println!(
        "\n{clients} clients, {duration_s} s a row, one seat an attempt, holds of {HOLD_TTL_MS} ms; {} cores.",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
    );
    Ok(())
}
