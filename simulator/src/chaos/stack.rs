//! The real stack of one chaos run: a fresh PostgreSQL database (dropped at
//! the end), a `fake-provider` process and several `bookingd` processes on
//! loopback ports. The processes are this very binary (`simulator bookingd`,
//! `simulator fake-provider`): the released daemon's code, built with the
//! fault seam, so a process can crash itself right after a commit.

use super::log::FaultLog;
use sqlx::{Connection, PgConnection};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use test_services::link::Link;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

/// The secret bookingd signs user tokens with (chaos runs only).
pub const TOKEN_SECRET: &str = "chaos-token-secret-0123456789";
/// The secret webhooks are signed with (chaos runs only).
pub const WEBHOOK_SECRET: &str = "chaos-webhook-secret-0123456789";
/// A bearer token for `sub` on every event, valid for an hour, signed with
/// [`TOKEN_SECRET`] (what the stack's bookingds verify); `admin` makes it an
/// operator's. For the real-stack benchmarks' clients.
pub fn token(sub: &str, admin: bool) -> String {
    use booking::clock::{Clock, SystemClock};
    let auth = booking::http::auth::Authenticator::new(TOKEN_SECRET.as_bytes(), std::sync::Arc::new(SystemClock));
    let exp_ms = SystemClock.now_ms() + 3_600_000;
    auth.issue(&booking::http::auth::Claims { sub: sub.into(), events: vec!["*".into()], exp_ms, admin, tier: None })
}

/// Names the simulator binary to run the processes with, when the caller is
/// not it (a benchmark example); default: this very binary.
pub const SIMULATOR_EXE_VAR: &str = "HOLDFAST_SIMULATOR_EXE";
/// How long a process may take to print its listening line.
const START_WAIT: Duration = Duration::from_secs(20);
/// Output kept per process for the report, in bytes.
const MAX_LOG_BYTES: usize = 256 * 1024;
/// Attempts to bind a port that was free a moment ago.
const PORT_ATTEMPTS: usize = 5;

/// What the stack is started with.
#[derive(Debug, Clone)]
pub struct StackConfig {
    /// The PostgreSQL server's maintenance database URL (a database is created on it).
    pub admin_url: String,
    /// Redis for the seat-map cache; `None`: no cache.
    pub redis_url: Option<String>,
    /// How many bookingd processes, >= 1.
    pub bookingds: usize,
    /// Extra `bookingd serve` arguments for every process (ttls, crash points, plant).
    pub bookingd_args: Vec<String>,
    /// Fake provider knobs as JSON.
    pub provider_faults_json: String,
    /// Fake provider seed.
    pub provider_seed: u64,
    /// Each process's wall clock runs up to this many ms off the real one
    /// ([`super::clock_skew`]); 0: no skew.
    pub clock_skew_max_ms: i64,
    /// Seeds the skew of every process life.
    pub skew_seed: u64,
    /// bookingd connects to PostgreSQL straight, not through its slot's link
    /// (benchmarks: the link's copying is not bookingd's cost). No database
    /// nemesis can reach such a stack.
    pub db_direct: bool,
}

/// A child process, killed on drop, whose output is kept.
pub struct Proc {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Proc {
    /// Whether it has exited, and its code (`None` for a signal).
    pub fn exited(&mut self) -> Option<Option<i32>> {
        self.child.try_wait().ok().flatten().map(|s| s.code())
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Its output so far (bounded).
    pub fn output(&self) -> String {
        self.log.lock().expect("log poisoned").clone()
    }

    /// `kill -9`: no cleanup, no graceful shutdown.
    pub async fn kill9(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(START_WAIT, self.child.wait()).await;
    }
}

fn append(log: &Mutex<String>, line: &str) {
    let mut l = log.lock().expect("log poisoned");
    if l.len() < MAX_LOG_BYTES {
        l.push_str(line);
        l.push('\n');
    }
}

fn drain(
    out: impl AsyncRead + Unpin + Send + 'static,
    log: Arc<Mutex<String>>,
    addr: Option<tokio::sync::oneshot::Sender<String>>,
) -> tokio::task::JoinHandle<()> {
    let mut addr = addr;
    tokio::spawn(async move {
        let mut lines = BufReader::new(out).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(a) = line.split("listening on ").nth(1)
                && let Some(tx) = addr.take()
            {
                let _ = tx.send(a.trim().trim_start_matches("http://").to_string());
            }
            append(&log, &line);
        }
    })
}

/// Spawns `args` of this binary (with `env` added) and waits for its `listening on ADDR` line.
async fn start(exe: &PathBuf, args: &[String], env: &[(String, String)]) -> Result<(Proc, SocketAddr), String> {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("HOLDFAST_TOKEN_SECRET", TOKEN_SECRET)
        .env("HOLDFAST_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .env("RUST_LOG", "warn")
        .env_remove("DATABASE_URL")
        .env_remove("REDIS_URL")
        .env_remove("PROVIDER_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("spawn {}: {e}", args[0]))?;
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = tokio::sync::oneshot::channel();
    let out = drain(child.stdout.take().expect("piped"), log.clone(), Some(tx));
    let err = drain(child.stderr.take().expect("piped"), log.clone(), None);
    let mut proc = Proc { child, log };
    match tokio::time::timeout(START_WAIT, rx).await {
        Ok(Ok(addr)) => Ok((proc, addr.parse().map_err(|e| format!("{}: bad address {addr:?}: {e}", args[0]))?)),
        Ok(Err(_)) => {
            let _ = tokio::time::timeout(START_WAIT, proc.child.wait()).await;
            // Read all it said (why it exited) before reporting.
            for d in [out, err] {
                let _ = tokio::time::timeout(Duration::from_secs(2), d).await;
            }
            Err(format!("{} exited before listening:\n{}", args[0], proc.output()))
        }
        Err(_) => Err(format!("{} did not listen within {START_WAIT:?}:\n{}", args[0], proc.output())),
    }
}

/// Ports bookingd listens on are drawn from here: below Linux's ephemeral
/// range (32768..=60999 by default), so the run's own outgoing connections
/// (a hundred thousand disconnects) never take a port a restart needs.
const LISTEN_PORTS: std::ops::Range<u16> = 20_000..32_000;
/// Draws before giving up on finding a free listening port.
const PORT_DRAWS: usize = 64;

/// A free loopback port below the ephemeral range.
pub fn free_port() -> Result<u16, String> {
    for _ in 0..PORT_DRAWS {
        let port = rand::random_range(LISTEN_PORTS);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(format!("no free port in {LISTEN_PORTS:?} after {PORT_DRAWS} draws"))
}

/// The URL of database `name` on the server of `admin_url`.
pub fn db_url(admin_url: &str, name: &str) -> String {
    let (base, query) = match admin_url.split_once('?') {
        Some((b, q)) => (b.to_string(), format!("?{q}")),
        None => (admin_url.to_string(), String::new()),
    };
    let server = base.rsplit_once('/').map(|(s, _)| s.to_string()).unwrap_or(base);
    format!("{server}/{name}{query}")
}

/// `n` links to the PostgreSQL server of `db_url`, one per bookingd slot.
async fn links(db_url: &str, n: usize) -> Result<Arc<Vec<Link>>, String> {
    let opts: sqlx::postgres::PgConnectOptions = db_url.parse().map_err(|e| format!("database URL: {e}"))?;
    let server = tokio::net::lookup_host((opts.get_host(), opts.get_port()))
        .await
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("cannot resolve {}:{}", opts.get_host(), opts.get_port()))?;
    let mut links = Vec::with_capacity(n);
    for _ in 0..n {
        links.push(Link::open(server).await.map_err(|e| format!("link to PostgreSQL: {e}"))?);
    }
    Ok(Arc::new(links))
}

/// `url` with its server (`host:port`, or a bare host) replaced by `addr`.
fn via(url: &str, addr: SocketAddr) -> String {
    let Ok(opts) = url.parse::<sqlx::postgres::PgConnectOptions>() else { return url.to_string() };
    let (host, port) = (opts.get_host(), opts.get_port());
    for lead in ["@", "//"] {
        for server in [format!("{host}:{port}"), host.to_string()] {
            let from = format!("{lead}{server}");
            if url.contains(&from) {
                return url.replacen(&from, &format!("{lead}{addr}"), 1);
            }
        }
    }
    url.to_string()
}

/// Creates database `db_name` on the server of `admin_url` and migrates it
/// once with `exe` (before any bookingd starts: concurrent migrations race).
/// Its URL.
async fn create_database(exe: &PathBuf, admin_url: &str, db_name: &str) -> Result<String, String> {
    let mut admin = PgConnection::connect(admin_url).await.map_err(|e| format!("PostgreSQL: {e}"))?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db_name}")))
        .execute(&mut admin)
        .await
        .map_err(|e| format!("create database: {e}"))?;
    let _ = admin.close().await;
    let db_url = db_url(admin_url, db_name);
    let migrate = Command::new(exe)
        .args(["bookingd", "migrate", "--database-url", &db_url])
        .env("RUST_LOG", "warn")
        .output()
        .await
        .map_err(|e| format!("migrate: {e}"))?;
    if !migrate.status.success() {
        return Err(format!("migrate failed: {}", String::from_utf8_lossy(&migrate.stderr)));
    }
    Ok(db_url)
}

/// The `fake-provider` arguments: its knobs, and webhooks to `webhook` (a link to bookingd).
fn provider_args(cfg: &StackConfig, webhook: SocketAddr) -> Vec<String> {
    [
        "fake-provider",
        "--listen",
        "127.0.0.1:0",
        "--webhook-url",
        &format!("http://{webhook}/v1/webhooks/provider"),
        "--webhook-secret",
        WEBHOOK_SECRET,
        "--seed",
        &cfg.provider_seed.to_string(),
        "--faults",
        &cfg.provider_faults_json,
        // Short, so a webhook whose answer was lost is retried within a run.
        "--webhook-timeout-ms",
        "1000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// One bookingd slot: its fixed address and the process serving it (if up).
pub struct Slot {
    /// Where clients reach it; a restart binds the same address.
    pub addr: SocketAddr,
    /// The running process; `None` while down.
    pub proc: Option<Proc>,
    /// Output of its earlier lives (crashed or killed processes).
    pub past_output: String,
    /// Whether a process ever served it (its address is then known to clients).
    started: bool,
    /// Its current life's clock skew, in ms (0: the real clock).
    pub skew_ms: i64,
}

/// Where each process life's clock skew comes from.
struct Skews {
    lib: PathBuf,
    rng: rand_chacha::ChaCha8Rng,
    max_ms: i64,
}

impl Skews {
    /// The skew of a new life and the environment that applies it.
    fn next(&mut self) -> (i64, Vec<(String, String)>) {
        let skew_ms = super::clock_skew::draw(&mut self.rng, self.max_ms);
        (skew_ms, super::clock_skew::env(&self.lib, skew_ms))
    }
}

/// The running stack.
pub struct Stack {
    exe: PathBuf,
    cfg: StackConfig,
    /// The database's name.
    pub db_name: String,
    /// Its URL.
    pub db_url: String,
    /// The fake provider.
    pub provider: Proc,
    /// Its clock skew, in ms.
    pub provider_skew_ms: i64,
    skews: Option<Skews>,
    /// Its address.
    pub provider_addr: SocketAddr,
    /// The bookingd slots.
    pub slots: Vec<Slot>,
    /// Slot `i`'s link to PostgreSQL: every connection of its processes goes
    /// through it, so a partition cuts that instance alone. Shared: a
    /// partition heals without waiting for the stack (whose lock a restart
    /// holds while the new process waits for its database).
    pub links: Arc<Vec<Link>>,
    /// Slot `i`'s link to the provider (its `--provider-url`): a provider
    /// partition cuts or mutes it ([`super::provider_link`]).
    pub provider_links: Arc<Vec<Link>>,
    /// The provider's link to bookingd slot 0's webhook endpoint (its `--webhook-url`).
    pub webhook_link: Arc<Link>,
}

impl Stack {
    /// Creates the database and starts the processes. `extra_args(i)` are the
    /// first life's extra arguments of slot `i` (crash skip counts).
    pub async fn start(cfg: StackConfig, mut extra_args: impl FnMut(usize) -> Vec<String>) -> Result<Stack, String> {
        assert!(cfg.bookingds >= 1, "at least one bookingd");
        let exe = match std::env::var_os(SIMULATOR_EXE_VAR) {
            Some(p) => PathBuf::from(p),
            None => std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?,
        };
        let db_name = format!("holdfast_chaos_{}", uuid::Uuid::from_u128(rand::random::<u128>()).simple());
        let db_url = create_database(&exe, &cfg.admin_url, &db_name).await?;
        let ports: Vec<u16> = (0..cfg.bookingds).map(|_| free_port()).collect::<Result<_, _>>()?;
        let webhook_link = Arc::new(
            Link::open(([127, 0, 0, 1], ports[0]).into()).await.map_err(|e| format!("link to bookingd: {e}"))?,
        );
        let provider_args = provider_args(&cfg, webhook_link.addr());
        let mut skews = match cfg.clock_skew_max_ms {
            0 => None,
            max_ms => {
                use rand::SeedableRng;
                let rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.skew_seed);
                Some(Skews { lib: super::clock_skew::libfaketime()?, rng, max_ms })
            }
        };
        let (provider_skew_ms, env) = skews.as_mut().map(Skews::next).unwrap_or_default();
        let (provider, provider_addr) = start(&exe, &provider_args, &env).await?;
        let links = links(&db_url, ports.len()).await?;
        let mut provider_links = Vec::with_capacity(ports.len());
        for _ in 0..ports.len() {
            provider_links.push(Link::open(provider_addr).await.map_err(|e| format!("link to the provider: {e}"))?);
        }
        let provider_links = Arc::new(provider_links);
        let slots = Vec::new();
        let mut stack = Stack {
            exe,
            cfg,
            db_name,
            db_url,
            provider,
            provider_addr,
            provider_skew_ms,
            skews,
            slots,
            links,
            provider_links,
            webhook_link,
        };
        for (i, port) in ports.into_iter().enumerate() {
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            stack.slots.push(Slot { addr, proc: None, past_output: String::new(), started: false, skew_ms: 0 });
            stack.restart(i, extra_args(i)).await?;
        }
        // Slot 0's first life may have moved to another port.
        stack.webhook_link.redirect(stack.slots[0].addr);
        Ok(stack)
    }

    fn bookingd_args(&self, i: usize, extra: Vec<String>) -> Vec<String> {
        let addr = self.slots[i].addr;
        let mut args: Vec<String> = [
            "bookingd",
            "serve",
            "--database-url",
            &if self.cfg.db_direct { self.db_url.clone() } else { via(&self.db_url, self.links[i].addr()) },
            "--provider-url",
            &format!("http://{}", self.provider_links[i].addr()),
            "--listen",
            &addr.to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(r) = &self.cfg.redis_url {
            args.extend([
                "--redis-url".to_string(),
                r.clone(),
                "--cache-namespace".to_string(),
                self.cache_namespace(),
            ]);
        }
        args.extend(self.cfg.bookingd_args.iter().cloned());
        args.extend(extra);
        args
    }

    /// The prefix of this run's seat-map cache keys in Redis (`NAMESPACE:seatmap:<event>`):
    /// its own, so runs sharing a Redis never meet.
    pub fn cache_namespace(&self) -> String {
        format!("holdfast-chaos:{}", self.db_name)
    }

    /// (Re)starts slot `i` on its address with `extra` arguments (bounded
    /// retries while the port is busy); with clock skew on, on a newly drawn skew.
    pub async fn restart(&mut self, i: usize, extra: Vec<String>) -> Result<(), String> {
        if let Some(mut old) = self.slots[i].proc.take() {
            old.kill9().await;
            let out = old.output();
            self.slots[i].past_output.push_str(&out);
        }
        let first_life = !self.slots[i].started;
        let (skew_ms, env) = self.skews.as_mut().map(Skews::next).unwrap_or_default();
        let mut last = String::new();
        for attempt in 0..PORT_ATTEMPTS {
            let args = self.bookingd_args(i, extra.clone());
            match start(&self.exe, &args, &env).await {
                Ok((proc, _)) => {
                    self.slots[i].proc = Some(proc);
                    self.slots[i].started = true;
                    self.slots[i].skew_ms = skew_ms;
                    return Ok(());
                }
                Err(e) if e.contains("cannot listen") => {
                    last = e;
                    if first_life {
                        // Someone took the port since it was free: before any
                        // client knows it, another one will do.
                        self.slots[i].addr = ([127, 0, 0, 1], free_port()?).into();
                    }
                    tokio::time::sleep(Duration::from_millis(200 * (attempt as u64 + 1))).await;
                }
                Err(e) => return Err(e),
            }
        }
        Err(format!("bookingd slot {i} could not bind {}: {last}", self.slots[i].addr))
    }

    /// Every bookingd's output, all lives, for the report.
    pub fn outputs(&self) -> Vec<String> {
        self.slots
            .iter()
            .map(|s| format!("{}{}", s.past_output, s.proc.as_ref().map(|p| p.output()).unwrap_or_default()))
            .collect()
    }

    /// Stops the processes and drops the database (unless `keep_db`).
    pub async fn finish(mut self, keep_db: bool, log: &FaultLog) -> Result<Option<String>, String> {
        for s in &mut self.slots {
            if let Some(mut p) = s.proc.take() {
                p.kill9().await;
            }
        }
        self.provider.kill9().await;
        if keep_db {
            log.note(format!("kept database {} for inspection", self.db_name));
            return Ok(Some(self.db_name.clone()));
        }
        let mut admin = PgConnection::connect(&self.cfg.admin_url).await.map_err(|e| format!("PostgreSQL: {e}"))?;
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db_name)))
            .execute(&mut admin)
            .await
            .map_err(|e| format!("drop database: {e}"))?;
        let _ = admin.close().await;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::via;

    #[test]
    fn a_url_is_pointed_at_the_link_whatever_names_its_server() {
        let link: std::net::SocketAddr = ([127, 0, 0, 1], 40_000).into();
        for (url, want) in [
            ("postgres://postgres@127.0.0.1:5432/db", "postgres://postgres@127.0.0.1:40000/db"),
            ("postgres://127.0.0.1:5432/db?sslmode=disable", "postgres://127.0.0.1:40000/db?sslmode=disable"),
            ("postgres://u:pw@localhost/db", "postgres://u:pw@127.0.0.1:40000/db"),
        ] {
            assert_eq!(via(url, link), want, "{url}");
        }
    }
}
