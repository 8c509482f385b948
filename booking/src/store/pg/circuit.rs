//! The circuit in front of one PostgreSQL pool: how `bookingd` answers fast
//! and honestly while its database cannot.
//!
//! Without it, every request that needs the database during an outage waits
//! for the pool's acquire timeout (seconds) before its `503`, and so does a
//! health check: a load balancer with a shorter timeout sees timeouts, never
//! the documented answer. With it:
//!
//! - a **probe** ([`Circuit::probe`], run by `bookingd serve`) asks the
//!   database every [`PROBE_INTERVAL_MS`] on a connection of its own (outside
//!   the pool, so a pool busy with load never looks like an outage), each
//!   attempt bounded by [`PROBE_TIMEOUT_MS`]. A failed attempt is tried once
//!   more on a fresh connection (one terminated backend is not an outage);
//!   two failures in a row **open** the circuit, the next success **closes**
//!   it. The probe alone decides: a request's own error never opens it.
//! - while it is open, every acquire of a pooled connection fails at once
//!   (and one already waiting in the pool stops waiting), so a request that
//!   needs the store answers `503` with `Retry-After` without any I/O, and
//!   `/readyz` answers from the circuit's state alone;
//! - every database error of the store is counted by [`DbErrorKind`], and
//!   every acquire's wait is summed, for `/metrics` ([`Circuit::render`]).
//!
//! The bound an operator can rely on: from the moment the database stops
//! answering, the circuit opens within [`OUTAGE_DETECTION_BOUND_MS`]; from
//! then on answers that need the store take no database time at all.

use crate::fault::FaultSeam;
use sqlx::pool::PoolConnection;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection, PgPool, Postgres};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// How often the probe asks the database, ms.
pub const PROBE_INTERVAL_MS: u64 = 250;
/// How long one probe attempt (connect if needed, then `SELECT 1`) may take, ms.
pub const PROBE_TIMEOUT_MS: u64 = 500;
/// The longest from an outage's start to the circuit open: one interval and
/// two attempts (the failed one and its retry on a fresh connection), ms.
pub const OUTAGE_DETECTION_BOUND_MS: u64 = PROBE_INTERVAL_MS + 2 * PROBE_TIMEOUT_MS;
/// What a `503` of an open circuit tells the client to wait, s: about when
/// the probe will have asked again a few times.
pub const OPEN_RETRY_AFTER_S: u64 = 1;

/// The kinds of database error `/metrics` counts (`holdfast_db_errors_total{kind}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DbErrorKind {
    /// The database could not be reached or dropped the connection (refused,
    /// reset, shut down, TLS, protocol).
    Connect,
    /// Waiting for a pooled connection, or a statement, took too long.
    Timeout,
    /// A serialization failure or deadlock (retried by the store, bounded).
    Serialization,
    /// Refused by the open circuit without trying (the probe found the database down).
    CircuitOpen,
    /// Anything else the database answered.
    Other,
}

impl DbErrorKind {
    /// Every kind, in the order `/metrics` lists them.
    pub const ALL: [DbErrorKind; 5] =
        [Self::Connect, Self::Timeout, Self::Serialization, Self::CircuitOpen, Self::Other];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connect => "connect",
            Self::Timeout => "timeout",
            Self::Serialization => "serialization",
            Self::CircuitOpen => "circuit_open",
            Self::Other => "other",
        }
    }

    /// The kind of `e`.
    pub fn of(e: &sqlx::Error) -> Self {
        match e {
            sqlx::Error::PoolTimedOut => Self::Timeout,
            sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::NotConnected && is_open_refusal(io) => {
                Self::CircuitOpen
            }
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => Self::Connect,
            sqlx::Error::Database(db) => match db.code().as_deref() {
                Some("40001" | "40P01") => Self::Serialization,
                Some("57014") => Self::Timeout,
                Some(c) if c.starts_with("08") || matches!(c, "57P01" | "57P02" | "57P03") => Self::Connect,
                _ => Self::Other,
            },
            _ => Self::Other,
        }
    }
}

/// The text of the error an open circuit answers with.
const OPEN_REFUSAL: &str = "the database is unreachable (the circuit is open until the probe reaches it again)";

fn is_open_refusal(io: &std::io::Error) -> bool {
    io.get_ref().is_some_and(|inner| inner.to_string().starts_with(OPEN_REFUSAL))
}

/// `e` in words for logs and operators, without PostgreSQL's source line
/// (sqlx renders a server error as "<message> at line <n of a C file>"): the
/// message and its SQLSTATE instead.
pub fn describe(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => match db.code() {
            Some(code) => format!("{} (SQLSTATE {code})", db.message()),
            None => db.message().to_string(),
        },
        other => other.to_string(),
    }
}

/// The circuit of one pool (see the module doc). Shared by the store, the
/// waiting room's records, the probe and the HTTP service.
#[derive(Debug)]
pub struct Circuit {
    pool: PgPool,
    /// `true` while open; a waiting acquire watches it.
    open: watch::Sender<bool>,
    opened_total: AtomicU64,
    errors: [AtomicU64; DbErrorKind::ALL.len()],
    acquires: AtomicU64,
    acquire_wait_us: AtomicU64,
    /// Why the probe last failed (for logs and `/readyz`).
    last_failure: Mutex<String>,
    /// The fault seam (a planted bug may keep the circuit closed).
    faults: FaultSeam,
}

impl Circuit {
    /// A closed circuit in front of `pool`. Without [`probe`](Self::probe)
    /// running it never opens (it still counts errors and waits).
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            open: watch::Sender::new(false),
            opened_total: AtomicU64::new(0),
            errors: Default::default(),
            acquires: AtomicU64::new(0),
            acquire_wait_us: AtomicU64::new(0),
            last_failure: Mutex::new(String::new()),
            faults: FaultSeam::none(),
        }
    }

    /// This circuit, with the fault seam `faults`.
    pub fn with_faults(mut self, faults: &FaultSeam) -> Self {
        self.faults = faults.clone();
        self
    }

    /// Whether the circuit is open (the probe found the database down).
    pub fn is_open(&self) -> bool {
        *self.open.borrow()
    }

    /// Why the probe last failed ("" before any failure).
    pub fn last_failure(&self) -> String {
        self.last_failure.lock().expect("circuit lock").clone()
    }

    /// How many times the circuit has opened.
    pub fn opened_total(&self) -> u64 {
        self.opened_total.load(Ordering::Relaxed)
    }

    /// The errors of `kind` counted so far.
    pub fn errors(&self, kind: DbErrorKind) -> u64 {
        self.errors[kind as usize].load(Ordering::Relaxed)
    }

    /// Counts `e` by its kind.
    pub fn record(&self, e: &sqlx::Error) {
        self.errors[DbErrorKind::of(e) as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// A connection from the pool; at once an error while the circuit is
    /// open, and a waiting acquire gives up when it opens. Counts errors and
    /// the time waited.
    pub async fn acquire(&self) -> Result<PoolConnection<Postgres>, sqlx::Error> {
        let mut open = self.open.subscribe();
        let result = if *open.borrow_and_update() {
            Err(refusal())
        } else {
            let started = tokio::time::Instant::now();
            let r = tokio::select! {
                conn = self.pool.acquire() => conn,
                _ = open.wait_for(|o| *o) => Err(refusal()),
            };
            let waited_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.acquires.fetch_add(1, Ordering::Relaxed);
            self.acquire_wait_us.fetch_add(waited_us, Ordering::Relaxed);
            r
        };
        if let Err(e) = &result {
            self.record(e);
        }
        result
    }

    /// Opens the circuit because of `why` (logged once per opening).
    fn trip(&self, why: String) {
        if crate::planted!(self.faults, CircuitNeverOpens) {
            *self.last_failure.lock().expect("circuit lock") = why;
            return;
        }
        let newly = self.open.send_if_modified(|o| !std::mem::replace(o, true));
        if newly {
            self.opened_total.fetch_add(1, Ordering::Relaxed);
            tracing::error!(error = %why, "database unreachable: answering 503 at once until it answers again");
        }
        *self.last_failure.lock().expect("circuit lock") = why;
    }

    /// Closes the circuit (logged once per closing).
    fn reset(&self) {
        if self.open.send_if_modified(|o| std::mem::replace(o, false)) {
            tracing::warn!("database reachable again: circuit closed");
        }
    }

    /// Asks the database every [`PROBE_INTERVAL_MS`] until `stop` turns
    /// true, opening and closing the circuit (see the module doc).
    pub async fn probe(&self, opts: PgConnectOptions, mut stop: watch::Receiver<bool>) {
        let mut conn: Option<PgConnection> = None;
        loop {
            let mut outcome = probe_once(&mut conn, &opts).await;
            if outcome.is_err() {
                // One more try on a fresh connection: a terminated backend is not an outage.
                conn = None;
                outcome = probe_once(&mut conn, &opts).await;
            }
            match outcome {
                Ok(()) => self.reset(),
                Err(why) => {
                    conn = None;
                    self.trip(why);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(PROBE_INTERVAL_MS)) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }

    /// Appends the circuit's and the pool's series to a Prometheus text page.
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP holdfast_db_errors_total Database errors of the store and the waiting room's records, by kind.\n# TYPE holdfast_db_errors_total counter"
        );
        for kind in DbErrorKind::ALL {
            let _ = writeln!(out, "holdfast_db_errors_total{{kind=\"{}\"}} {}", kind.as_str(), self.errors(kind));
        }
        let gauges: [(&str, &str, u64); 4] = [
            (
                "holdfast_db_circuit_open",
                "1 while the probe finds the database unreachable (requests needing it answer 503 at once), else 0.",
                u64::from(self.is_open()),
            ),
            (
                "holdfast_db_pool_connections",
                "Connections the pool holds now (in use and idle).",
                u64::from(self.pool.size()),
            ),
            ("holdfast_db_pool_idle_connections", "Idle connections in the pool now.", self.pool.num_idle() as u64),
            (
                "holdfast_db_pool_max_connections",
                "The pool's limit (--max-db-connections).",
                u64::from(self.pool.options().get_max_connections()),
            ),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let counters: [(&str, &str, u64); 2] = [
            (
                "holdfast_db_pool_acquires_total",
                "Pooled connections asked for (see holdfast_db_pool_wait_seconds_sum).",
                self.acquires.load(Ordering::Relaxed),
            ),
            ("holdfast_db_circuit_opened_total", "Times the circuit has opened since start.", self.opened_total()),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
        }
        let wait_s = self.acquire_wait_us.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(
            out,
            "# HELP holdfast_db_pool_wait_seconds_sum Time spent waiting for pooled connections, summed.\n# TYPE holdfast_db_pool_wait_seconds_sum counter\nholdfast_db_pool_wait_seconds_sum {wait_s:.6}"
        );
    }
}

fn refusal() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(std::io::ErrorKind::NotConnected, OPEN_REFUSAL))
}

/// One probe attempt within [`PROBE_TIMEOUT_MS`]: connect when `conn` is
/// `None`, then `SELECT 1`.
async fn probe_once(conn: &mut Option<PgConnection>, opts: &PgConnectOptions) -> Result<(), String> {
    let attempt = async {
        if conn.is_none() {
            *conn = Some(PgConnection::connect_with(opts).await.map_err(|e| describe(&e))?);
        }
        let c = conn.as_mut().expect("connected above");
        sqlx::query("SELECT 1").execute(c).await.map(|_| ()).map_err(|e| describe(&e))
    };
    match tokio::time::timeout(Duration::from_millis(PROBE_TIMEOUT_MS), attempt).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {PROBE_TIMEOUT_MS} ms")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified_by_what_an_operator_does_about_them() {
        let io = sqlx::Error::Io(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused"));
        assert_eq!(DbErrorKind::of(&io), DbErrorKind::Connect);
        assert_eq!(DbErrorKind::of(&sqlx::Error::PoolTimedOut), DbErrorKind::Timeout);
        assert_eq!(DbErrorKind::of(&sqlx::Error::PoolClosed), DbErrorKind::Connect);
        assert_eq!(DbErrorKind::of(&refusal()), DbErrorKind::CircuitOpen);
        assert_eq!(DbErrorKind::of(&sqlx::Error::RowNotFound), DbErrorKind::Other);
    }

    #[test]
    fn an_open_circuit_refuses_at_once_and_says_why() {
        let e = refusal();
        assert!(describe(&e).contains("circuit is open"), "{e}");
    }
}
