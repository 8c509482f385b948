//! The `bookingd` command line: the holdfast booking service on PostgreSQL
//! (authority), Redis (seat-map cache) and an HTTP payment provider.
//!
//! A library module so that two binaries share it: `bookingd` (released,
//! without the fault seam) and `simulator bookingd` (built with the
//! `fault-injection` feature, for chaos mode's real processes).

use crate::admission::records::PgRoomRecords;
use crate::admission::room::{LazyRedisRooms, Rooms};
use crate::admission::waiting_room::{WaitingRoomConfig, WaitingRoomParts};
use crate::clock::{Clock, SystemClock};
use crate::fault::FaultSeam;
use crate::http::auth::{Authenticator, Claims};
use crate::http::cache::{LazyRedisCache, NoCache, SeatMapCache};
use crate::http::{ServiceConfig, serve};
use crate::ids::RandomIds;
use crate::model::{MAX_HOLD_TTL_MS, MAX_PAYMENT_TTL_MS};
use crate::payment::http_provider::HttpProvider;
use crate::payment::workflow::WorkflowConfig;
use crate::service::{Service, ServiceParts};
use crate::store::circuit::Circuit;
use crate::store::{PgClock, PgStore};
use crate::sweeper::SweeperConfig;
use clap::{Parser, Subcommand};
use std::sync::Arc;
use std::time::Duration;

mod database;

use database::{migrated_pool, pg_options};

/// The holdfast booking service: seat holds, checkout, payment workflow.
///
/// Secrets come from the environment: HOLDFAST_TOKEN_SECRET (signs user
/// tokens) and HOLDFAST_WEBHOOK_SECRET (verifies provider webhooks), each at
/// least 16 bytes; `serve` also reads HOLDFAST_ADMISSION_SECRET (signs
/// waiting-room admission tokens; optional, at least 16 bytes when set,
/// derived from HOLDFAST_TOKEN_SECRET when unset). Logs go to stderr (filter
/// with RUST_LOG, default `info`).
#[derive(Debug, Parser)]
#[command(name = "bookingd", version, after_long_help = QUICK_START)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Shown at the end of `bookingd --help`: every subcommand with its main flags.
const QUICK_START: &str = "\
Quick start (PostgreSQL and Redis on localhost, fake-provider on :9000):
  export HOLDFAST_TOKEN_SECRET=dev-token-secret-0123 HOLDFAST_WEBHOOK_SECRET=dev-webhook-secret
  bookingd migrate --database-url postgres://postgres@127.0.0.1:5432/holdfast
  bookingd serve --database-url postgres://postgres@127.0.0.1:5432/holdfast \\
      --redis-url redis://127.0.0.1:6379 --provider-url http://127.0.0.1:9000 --listen 127.0.0.1:8080
  bookingd issue-token --user alice --events e1 [--admin] [--ttl-s 3600]

Each subcommand's --help lists all its flags (`bookingd serve --help`).";

#[derive(Debug, Subcommand)]
enum Command {
    /// Migrate the database, then serve the API until SIGINT/SIGTERM (graceful).
    ///
    /// Needs HOLDFAST_TOKEN_SECRET and HOLDFAST_WEBHOOK_SECRET (>= 16 bytes
    /// each). HOLDFAST_ADMISSION_SECRET signs waiting-room admission tokens and
    /// derives lottery seeds: set, it must be >= 16 bytes (shorter or empty
    /// refuses to start); unset, one is derived from HOLDFAST_TOKEN_SECRET (and
    /// logged). Instances sharing waiting rooms need the same one. Prints
    /// `bookingd listening on ADDR` on stdout once it accepts connections. The
    /// payment provider must send its webhooks to
    /// `http://ADDR/v1/webhooks/provider`, signed with HOLDFAST_WEBHOOK_SECRET.
    Serve(Box<ServeArgs>),
    /// Apply the database migrations and exit (`serve` also migrates on start).
    Migrate {
        /// PostgreSQL URL of the authoritative store.
        #[arg(long, env = "DATABASE_URL")]
        database_url: String,
    },
    /// Print a signed user (or admin) token on stdout, for demos and tests.
    ///
    /// Signed with HOLDFAST_TOKEN_SECRET, which must be the one bookingd serves with.
    /// Send it as `Authorization: Bearer <token>`.
    IssueToken {
        /// The user id the token names (1..=64 characters of [A-Za-z0-9_.-]).
        #[arg(long)]
        user: String,
        /// Events the user may touch, comma separated; `*` for all.
        #[arg(long, value_delimiter = ',', default_value = "*")]
        events: Vec<String>,
        /// Lifetime in seconds (1..=31536000).
        #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(i64).range(1..=MAX_TOKEN_TTL_S))]
        ttl_s: i64,
        /// Make an operator (admin) credential: may create events and read every order and the unresolved list.
        #[arg(long)]
        admin: bool,
        /// Priority tier for priority waiting rooms (0 is admitted first; absent: the public).
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..=i64::from(crate::admission::queue::MAX_TIERS) - 1))]
        tier: Option<u8>,
    },
}

/// Longest token lifetime `issue-token` issues: a year.
const MAX_TOKEN_TTL_S: i64 = 365 * 24 * 60 * 60;

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// PostgreSQL URL of the authoritative store.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Redis URL for the seat-map cache and the waiting rooms; without it reads go to the store
    /// and a waiting room's live state is in this one process's memory (instances do not share
    /// it). Which events have a room is PostgreSQL's record, whatever Redis does. Redis down (at
    /// start or later) makes reads slower, never errors (the cache is used again once Redis is
    /// back); on an event with a room, queue calls, holds and checkouts answer 503 with
    /// Retry-After until it is back, on every instance, including one started during the outage
    /// (never a hold without an admission). A room Redis lost (a restart without persistence)
    /// is rebuilt from PostgreSQL by the first call that finds it gone: tokens issued stay
    /// valid, purchases stay purchases, the waiting keep their order.
    #[arg(long, env = "REDIS_URL")]
    redis_url: Option<String>,
    /// Base URL of the payment provider (e.g. http://127.0.0.1:9000).
    #[arg(long, env = "PROVIDER_URL")]
    provider_url: String,
    /// Address to listen on; port 0 picks a free port (the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// How long a hold lasts (the database's clock decides).
    #[arg(long, default_value_t = 300_000, value_parser = clap::value_parser!(i64).range(1..=MAX_HOLD_TTL_MS))]
    hold_ttl_ms: i64,
    /// How long a payment may stay unresolved before its seats may be released.
    #[arg(long, default_value_t = 120_000, value_parser = clap::value_parser!(i64).range(1..=MAX_PAYMENT_TTL_MS))]
    payment_ttl_ms: i64,
    /// Hold attempts one user may make per minute (then 429 with Retry-After).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=MAX_PER_MINUTE))]
    hold_attempts_per_minute: u32,
    /// Queue polls (GET /v1/events/{id}/queue) one user may make per event per minute
    /// (then 429 with Retry-After); a client that waits as told needs at most 30.
    #[arg(long, default_value_t = crate::http::state::DEFAULT_QUEUE_POLLS_PER_MINUTE,
          value_parser = clap::value_parser!(u32).range(1..=MAX_PER_MINUTE))]
    queue_polls_per_minute: u32,
    /// Seats of one event one user may have at once, held or in payment (a
    /// hold past it is refused 409 hold-limit); 0 for no cap.
    #[arg(long, default_value_t = crate::http::DEFAULT_MAX_HELD_SEATS_PER_USER,
          value_parser = clap::value_parser!(u32).range(0..=crate::model::MAX_SEATS_PER_EVENT as i64))]
    max_seats_held_per_user: u32,
    /// Prefix of this deployment's cache keys in Redis (`NAMESPACE:seatmap:<event>`).
    /// Default: `holdfast:<cluster id>:<database>`, from the database itself, so
    /// deployments on different databases sharing one Redis never read each other's entries.
    #[arg(long, env = "HOLDFAST_CACHE_NAMESPACE", value_parser = parse_cache_namespace)]
    cache_namespace: Option<String>,
    /// The admission law's prior mean checkout session, ms: before any session ended, a room
    /// admits about target_active_sessions / (this / 1000) users per second.
    #[arg(long, default_value_t = WaitingRoomConfig::default().prior_session_ms,
          value_parser = clap::value_parser!(u64).range(1..=MAX_ADMISSION_PRIOR_SESSION_MS))]
    admission_prior_session_ms: u64,
    /// How often the admission law runs, ms (a crashed leader's lease, 3 ticks, is taken over after it).
    #[arg(long, default_value_t = WaitingRoomConfig::default().tick_ms,
          value_parser = clap::value_parser!(u64).range(1..=MAX_ADMISSION_TICK_MS))]
    admission_tick_ms: u64,
    /// The longest `Retry-After` a waiting client is told, s: users far back in a queue ask
    /// again this seldom (fewer requests at the door), and learn of a sell-out at most this late.
    #[arg(long, default_value_t = WaitingRoomConfig::default().poll_max_s,
          value_parser = clap::value_parser!(u64).range(WaitingRoomConfig::default().poll_min_s..=MAX_ADMISSION_POLL_S))]
    admission_poll_max_s: u64,
    /// Seat-map cache entry lifetime: bounds how stale a cached seat map can be (writes never read the cache).
    #[arg(long, default_value_t = DEFAULT_CACHE_TTL_MS, value_parser = clap::value_parser!(u64).range(1..=MAX_CACHE_TTL_MS))]
    cache_ttl_ms: u64,
    /// Timeout of one call to the payment provider; must be below the outbox lease (30000 ms).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=MAX_OUTBOX_LEASE_MS as u64))]
    provider_timeout_ms: u64,
    /// How long a dispatcher's claim on an outbox row (a charge or a refund to
    /// send) lasts: the row of a dispatcher that died is taken over after it.
    /// Must exceed --provider-timeout-ms.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(i64).range(1..=MAX_OUTBOX_LEASE_MS))]
    outbox_lease_ms: i64,
    /// Provider calls one dispatcher keeps in flight at once (1..=32).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=32))]
    dispatch_concurrency: u32,
    /// Maximum PostgreSQL connections.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    max_db_connections: u32,
    /// TESTING ONLY (fault-injection builds): exit abruptly right after the
    /// store commits at these points (`hold`, `checkout`, `webhook`, `sweep`,
    /// ...), before the answer or the next step (crash-safety tests).
    #[cfg(feature = "fault-injection")]
    #[arg(long, hide = true, value_delimiter = ',')]
    crash_after_commit: Vec<String>,
    /// TESTING ONLY (fault-injection builds): let this many commits at the
    /// `--crash-after-commit` points pass before crashing at the next one.
    #[cfg(feature = "fault-injection")]
    #[arg(long, hide = true, default_value_t = 0)]
    crash_skip: u64,
    /// TESTING ONLY (fault-injection builds): run with this planted bug.
    #[cfg(feature = "fault-injection")]
    #[arg(long, hide = true)]
    plant: Option<String>,
}

/// While Redis is unreachable, how often a new connection is tried.
const REDIS_RECONNECT_INTERVAL: Duration = Duration::from_secs(1);

/// Longest `--admission-prior-session-ms`: a day.
const MAX_ADMISSION_PRIOR_SESSION_MS: u64 = 24 * 60 * 60 * 1000;
/// Longest `--admission-tick-ms`: a minute.
const MAX_ADMISSION_TICK_MS: u64 = 60 * 1000;
/// Longest `--admission-poll-max-s`: an hour.
const MAX_ADMISSION_POLL_S: u64 = 60 * 60;

/// Most `--hold-attempts-per-minute` and `--queue-polls-per-minute`.
const MAX_PER_MINUTE: i64 = 1_000_000;

/// Longest outbox lease: an hour.
const MAX_OUTBOX_LEASE_MS: i64 = 60 * 60 * 1000;

/// Seat-map cache entry lifetime unless `--cache-ttl-ms` says otherwise.
pub const DEFAULT_CACHE_TTL_MS: u64 = 1_000;
/// Longest seat-map cache lifetime: an hour.
const MAX_CACHE_TTL_MS: u64 = 60 * 60 * 1000;

/// The fault seam of this process: none, unless built with the
/// `fault-injection` feature and asked for faults on the command line.
fn faults(args: &ServeArgs) -> Result<FaultSeam, String> {
    #[cfg(feature = "fault-injection")]
    if !args.crash_after_commit.is_empty() || args.plant.is_some() {
        let injector = crate::fault::process::ProcessInjector::parse(&args.crash_after_commit, args.plant.as_deref())?
            .skipping(args.crash_skip);
        return Ok(FaultSeam::new(Arc::new(injector)));
    }
    let _ = args;
    Ok(FaultSeam::none())
}

fn secret(name: &str) -> Result<Vec<u8>, String> {
    let v = std::env::var(name).map_err(|_| format!("{name} must be set (at least 16 bytes)"))?;
    if v.len() < 16 {
        return Err(format!("{name} must be at least 16 bytes"));
    }
    Ok(v.into_bytes())
}

/// The store's clock: the database's (the one authority on expiry, whatever
/// this host's clock says), unless a test planted the bug that trusts this host's.
fn store_clock(faults: &FaultSeam) -> PgClock {
    if crate::planted!(faults, StoreTrustsLocalClock) {
        return PgClock::Manual(Arc::new(crate::clock::SystemClock));
    }
    PgClock::Database
}

async fn run_serve(args: ServeArgs) -> Result<(), String> {
    let token_secret = secret("HOLDFAST_TOKEN_SECRET")?;
    let webhook_secret = secret("HOLDFAST_WEBHOOK_SECRET")?;
    let admission_secret = admission_secret(optional_env(ADMISSION_SECRET_VAR)?, &token_secret)?;
    let workflow = workflow_config(&args)?;
    let provider = HttpProvider::with_http(&args.provider_url, Duration::from_millis(args.provider_timeout_ms))
        .map_err(|e| format!("--provider-url: {e}"))?;
    let pool = migrated_pool(&args.database_url, args.max_db_connections).await?;
    let faults = faults(&args)?;
    let circuit = Arc::new(Circuit::new(pool.clone()).with_faults(&faults));
    let store = Arc::new(
        PgStore::new(pool, store_clock(&faults), Arc::new(RandomIds))
            .with_faults(&faults)
            .with_circuit(circuit.clone()),
    );
    let (cache, rooms) = redis_parts(&args, store.pool(), &faults).await?;
    let mut waiting_room = WaitingRoomParts {
        instance: format!("{}#{}", args.listen, std::process::id()),
        config: waiting_room_config(&args),
        // Which events have rooms, and what rebuilds a lost one: PostgreSQL's word.
        records: Arc::new(PgRoomRecords::with_circuit(circuit.clone())),
        ..WaitingRoomParts::in_memory(&admission_secret)
    };
    if let Some(rooms) = rooms {
        waiting_room.rooms = rooms;
    }
    let service = Arc::new(
        Service::new(ServiceParts {
            store,
            cache,
            provider: Arc::new(provider),
            clock: Arc::new(SystemClock),
            token_secret,
            webhook_secret,
            config: service_config(&args),
            workflow,
            sweeper: SweeperConfig::default(),
            faults,
            waiting_room,
        })
        .map_err(|e| e.to_string())?
        .with_db_circuit(circuit.clone()),
    );
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    println!("bookingd listening on {}", listener.local_addr().map_err(|e| e.to_string())?);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let probe = {
        let (circuit, opts, stop) = (circuit.clone(), pg_options(&args.database_url)?, stop_rx.clone());
        tokio::spawn(async move { circuit.probe(opts, stop).await })
    };
    let background = {
        let service = service.clone();
        tokio::spawn(async move { service.run_background(stop_rx).await })
    };
    serve(listener, service.router(), shutdown_signal()).await.map_err(|e| e.to_string())?;
    let _ = stop_tx.send(true);
    let _ = background.await;
    let _ = probe.await;
    Ok(())
}

/// The payment workflow's tunables from the serve flags, checked.
fn workflow_config(args: &ServeArgs) -> Result<WorkflowConfig, String> {
    let workflow = WorkflowConfig {
        outbox_lease_ms: args.outbox_lease_ms,
        dispatch_concurrency: args.dispatch_concurrency,
        ..WorkflowConfig::default()
    };
    workflow.validate().map_err(|e| format!("--outbox-lease-ms/--dispatch-concurrency: {e}"))?;
    // A provider call must end before its outbox row's lease does, or another
    // dispatcher could take the row over mid-call.
    if i64::try_from(args.provider_timeout_ms).map_or(true, |t| t >= workflow.outbox_lease_ms) {
        return Err(format!("--provider-timeout-ms must be below the outbox lease of {} ms", workflow.outbox_lease_ms));
    }
    Ok(workflow)
}

/// The service's tunables from the serve flags.
fn service_config(args: &ServeArgs) -> ServiceConfig {
    ServiceConfig {
        hold_ttl_ms: args.hold_ttl_ms,
        payment_ttl_ms: args.payment_ttl_ms,
        hold_attempts_per_minute: args.hold_attempts_per_minute,
        queue_polls_per_minute: args.queue_polls_per_minute,
        max_held_seats_per_user: (args.max_seats_held_per_user > 0).then_some(args.max_seats_held_per_user),
        ..ServiceConfig::default()
    }
}

/// The seat-map cache and the shared waiting rooms in Redis (`--redis-url`),
/// or no cache and rooms in this process. Redis down is no reason not to
/// start; a malformed URL is.
async fn redis_parts(
    args: &ServeArgs,
    pool: &sqlx::PgPool,
    faults: &FaultSeam,
) -> Result<(Arc<dyn SeatMapCache>, Option<Arc<dyn Rooms>>), String> {
    let Some(url) = &args.redis_url else { return Ok((Arc::new(NoCache), None)) };
    let namespace = cache_namespace(args, pool).await;
    // Instances on the same database (the same namespace) share their
    // waiting rooms. Both first connection attempts at once: with Redis
    // down, each takes its retries' time before giving up.
    let rooms_prefix = format!("{namespace}:rooms");
    let (cache, rooms) = tokio::join!(
        LazyRedisCache::new(url, args.cache_ttl_ms, &namespace, REDIS_RECONNECT_INTERVAL, faults),
        LazyRedisRooms::new(url, &rooms_prefix, REDIS_RECONNECT_INTERVAL),
    );
    let cache = cache.map_err(|e| format!("--redis-url: {e}"))?;
    let rooms = rooms.map_err(|e| format!("--redis-url: {e}"))?;
    Ok((Arc::new(cache), Some(Arc::new(rooms))))
}

/// The waiting room's tunables from the serve flags (the lease lasts three ticks).
fn waiting_room_config(args: &ServeArgs) -> WaitingRoomConfig {
    WaitingRoomConfig {
        tick_ms: args.admission_tick_ms,
        lease_ms: i64::try_from(args.admission_tick_ms.saturating_mul(3)).unwrap_or(i64::MAX),
        prior_session_ms: args.admission_prior_session_ms,
        poll_max_s: args.admission_poll_max_s,
        ..WaitingRoomConfig::default()
    }
}

/// The variable naming the admission-token secret (optional).
const ADMISSION_SECRET_VAR: &str = "HOLDFAST_ADMISSION_SECRET";

/// The variable `name`, `None` when unset; set but not UTF-8 is an error.
fn optional_env(name: &str) -> Result<Option<String>, String> {
    match std::env::var(name) {
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{name} must be UTF-8 text")),
    }
}

/// The admission-token secret from `configured`, the value of
/// `HOLDFAST_ADMISSION_SECRET`: when set it must be at least 16 bytes (an
/// error otherwise, empty included); unset, one is derived from the
/// user-token secret (HMAC-SHA256 under a label of its own, so neither token
/// verifies as the other), and the log says so.
fn admission_secret(configured: Option<String>, token_secret: &[u8]) -> Result<Vec<u8>, String> {
    use hmac::Mac as _;
    match configured {
        Some(s) if s.len() < 16 => Err(format!(
            "{ADMISSION_SECRET_VAR} must be at least 16 bytes when set (unset, one is derived from HOLDFAST_TOKEN_SECRET)"
        )),
        Some(s) => Ok(s.into_bytes()),
        None => {
            tracing::info!(
                "admission secret derived from HOLDFAST_TOKEN_SECRET because {ADMISSION_SECRET_VAR} is unset"
            );
            let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(token_secret).expect("hmac takes any key length");
            mac.update(b"holdfast admission tokens");
            Ok(mac.finalize().into_bytes().to_vec())
        }
    }
}

/// Resolves on SIGINT or SIGTERM (graceful shutdown), for both daemons.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// Runs the `bookingd` command line `args` (the first is the program name)
/// to completion on a runtime of its own; returns the process exit code.
/// Logs go to stderr (`RUST_LOG`, default `info`): stdout carries only the
/// answers (the listening line, a token).
pub fn main_from<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = Cli::parse_from(args);
    run_to_exit_code("bookingd", "info", async {
        match cli.command {
            Command::Serve(args) => run_serve(*args).await,
            Command::Migrate { database_url } => {
                migrated_pool(&database_url, 2).await?;
                println!("migrations applied");
                Ok(())
            }
            Command::IssueToken { user, events, ttl_s, admin, tier } => {
                let secret = secret("HOLDFAST_TOKEN_SECRET")?;
                if !crate::model::valid_id(&user) {
                    return Err("--user must be 1..=64 characters of [A-Za-z0-9_.-]".to_string());
                }
                let clock = Arc::new(SystemClock);
                let claims = Claims { sub: user.into(), events, exp_ms: clock.now_ms() + ttl_s * 1000, admin, tier };
                println!("{}", Authenticator::new(&secret, clock).issue(&claims));
                Ok(())
            }
        }
    })
}

/// Sets up logging to stderr (`RUST_LOG`, default `default_log`), runs `fut`
/// on a multi-threaded runtime of its own, and turns its result into an exit
/// code (0, or 2 with `name: error` on stderr). Shared by both daemons.
pub(crate) fn run_to_exit_code(
    name: &str,
    default_log: &str,
    fut: impl std::future::Future<Output = Result<(), String>>,
) -> i32 {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| default_log.into());
    // Colour codes only on a terminal: logs redirected to a file or a collector stay plain.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(ansi).with_env_filter(filter).try_init();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
        .and_then(|rt| rt.block_on(fut));
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{name}: {e}");
            2
        }
    }
}

/// Longest `--cache-namespace`.
const MAX_CACHE_NAMESPACE_LEN: usize = 128;

/// A cache namespace: 1..=128 printable ASCII characters, no spaces.
fn parse_cache_namespace(s: &str) -> Result<String, String> {
    if s.is_empty() || s.len() > MAX_CACHE_NAMESPACE_LEN || !s.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("1..={MAX_CACHE_NAMESPACE_LEN} printable ASCII characters without spaces"));
    }
    Ok(s.to_string())
}

/// `--cache-namespace`, or one derived from the database: the cluster's
/// system identifier and the database's name (the server's address where the
/// identifier is not readable), logged either way.
async fn cache_namespace(args: &ServeArgs, pool: &sqlx::PgPool) -> String {
    if let Some(ns) = &args.cache_namespace {
        tracing::info!(namespace = %ns, "seat-map cache namespace (--cache-namespace)");
        return ns.clone();
    }
    let derived: Result<(String, String), sqlx::Error> = async {
        let db: String = sqlx::query_scalar("SELECT current_database()::text").fetch_one(pool).await?;
        let cluster: String = match sqlx::query_scalar::<_, String>(
            "SELECT system_identifier::text FROM pg_control_system()",
        )
        .fetch_one(pool)
        .await
        {
            Ok(id) => id,
            Err(_) => sqlx::query_scalar(
                "SELECT COALESCE(host(inet_server_addr()), 'local') || '-' || COALESCE(inet_server_port(), 0)::text",
            )
            .fetch_one(pool)
            .await?,
        };
        Ok((cluster, db))
    }
    .await;
    let ns = match derived {
        Ok((cluster, db)) => format!("holdfast:{cluster}:{db}"),
        // The pool just migrated the database; should it fail now, key by the URL.
        Err(_) => format!("holdfast:{}", args.database_url.rsplit('@').next().unwrap_or(&args.database_url)),
    };
    tracing::info!(namespace = %ns, "seat-map cache namespace (derived from the database; set --cache-namespace to share one)");
    ns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve_args(extra: &[&str]) -> Result<ServeArgs, clap::Error> {
        let mut argv = vec!["bookingd", "serve", "--database-url", "postgres://x/y", "--provider-url", "http://p"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv)?.command {
            Command::Serve(args) => Ok(*args),
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn the_admission_flags_reach_the_waiting_room_config() {
        let default = waiting_room_config(&serve_args(&[]).unwrap());
        assert_eq!(default.poll_max_s, WaitingRoomConfig::default().poll_max_s);
        let args = serve_args(&["--admission-poll-max-s", "120", "--admission-tick-ms", "500"]).unwrap();
        let config = waiting_room_config(&args);
        assert_eq!((config.poll_max_s, config.tick_ms, config.lease_ms), (120, 500, 1_500));
        assert!(config.valid());
        // Below the shortest Retry-After, or above an hour: refused by the parser.
        assert!(serve_args(&["--admission-poll-max-s", "1"]).is_err());
        assert!(serve_args(&["--admission-poll-max-s", "3601"]).is_err());
    }

    /// docs/RUNNING_BOOKINGD.md's `serve` table states every numeric flag's
    /// enforced range (`a..=b`), and the parser enforces exactly it: both
    /// ends taken, one past either end refused, the default inside.
    #[test]
    fn the_guide_states_every_numeric_flags_range() {
        let guide = include_str!("../../docs/RUNNING_BOOKINGD.md");
        let table = guide.split("### `bookingd serve`").nth(1).unwrap().split("###").next().unwrap();
        let mut checked = Vec::new();
        for row in table.lines().filter(|l| l.starts_with("| `--")) {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let flag = cells[1].trim_matches('`');
            let default = cells[3].trim_matches('`');
            if default.parse::<i64>().is_err() {
                continue;
            }
            let range = cells[4]
                .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ')' || c == '(')
                .find_map(|w| w.split_once("..="))
                .unwrap_or_else(|| panic!("{flag}: no range in the guide: {row}"));
            let number = |t: &str| -> i64 {
                let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().unwrap_or_else(|_| panic!("{flag}: {t:?} is not a number: {row}"))
            };
            let (lo, hi) = (number(range.0), number(range.1));
            let ok = |v: i64| serve_args(&[flag, &v.to_string()]).is_ok();
            assert!(ok(lo) && ok(hi), "{flag}: {lo}..={hi} not both taken");
            assert!(!ok(lo - 1) && !ok(hi + 1), "{flag}: the parser takes more than {lo}..={hi}");
            let d: i64 = default.parse().unwrap();
            assert!((lo..=hi).contains(&d), "{flag}: default {d} outside {lo}..={hi}");
            checked.push(flag.to_string());
        }
        // Every flag with a numeric default is in the table, and no other.
        let cli = <Cli as clap::CommandFactory>::command();
        let serve = cli.find_subcommand("serve").unwrap();
        let numeric: Vec<String> = serve
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter(|a| {
                a.get_default_values().first().and_then(|v| v.to_str()).is_some_and(|v| v.parse::<i64>().is_ok())
            })
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        assert_eq!(
            checked.len(),
            numeric.len(),
            "the guide's ranged flags {checked:?}, the parser's numeric ones {numeric:?}"
        );
    }

    const TOKEN_SECRET: &[u8] = b"token-secret-0123456789";

    #[test]
    fn a_short_or_empty_admission_secret_is_a_startup_error_naming_the_variable() {
        for short in ["", "x", "fifteen-bytes-x"] {
            let e = admission_secret(Some(short.to_string()), TOKEN_SECRET).unwrap_err();
            assert!(e.contains("HOLDFAST_ADMISSION_SECRET") && e.contains("16 bytes"), "{short:?}: {e}");
        }
    }

    #[test]
    fn an_unset_admission_secret_is_derived_from_the_token_secret() {
        let derived = admission_secret(None, TOKEN_SECRET).unwrap();
        assert_ne!(derived, TOKEN_SECRET, "a user token never verifies as an admission token");
        assert_eq!(derived.len(), 32);
        assert_eq!(admission_secret(None, TOKEN_SECRET).unwrap(), derived, "instances with one token secret agree");
        assert_ne!(admission_secret(None, b"another-token-secret-01").unwrap(), derived);
    }

    #[test]
    fn an_admission_secret_of_16_bytes_or_more_is_used_as_is() {
        for s in ["sixteen-bytes-xx", "a-longer-admission-secret-0123456789"] {
            assert_eq!(admission_secret(Some(s.to_string()), TOKEN_SECRET).unwrap(), s.as_bytes());
        }
    }
}
