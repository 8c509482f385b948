//! bookingd's way to its database at start: connect options from a URL
//! (PostgreSQL's only), a first connection retried for a bound, a pool, and
//! the migrations applied with bounded retries.

use crate::store::PgStore;
use std::time::Duration;

/// How long bookingd waits for the database at start (and for a pooled connection later).
const DB_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts at applying the migrations on start: a restart often meets a
/// database that is restarting too, or a connection an operator terminates.
const MIGRATE_ATTEMPTS: u32 = 5;
/// Pause before the next migration attempt, times the attempts made so far.
const MIGRATE_BACKOFF: Duration = Duration::from_millis(250);

/// Runs `op` up to `attempts` (>= 1) times, pausing `backoff` times the
/// attempts made so far between them; the last error names the attempts.
/// Only for idempotent work (each migration is its own transaction, so an
/// interrupted one rolls back and is applied again).
pub(super) async fn with_retries<F, Fut>(attempts: u32, backoff: Duration, mut op: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    assert!(attempts >= 1, "at least one attempt");
    let mut made = 0;
    loop {
        made += 1;
        match op().await {
            Ok(()) => return Ok(()),
            Err(e) if made >= attempts => return Err(format!("{e} (after {made} attempts)")),
            Err(e) => {
                tracing::warn!(attempt = made, error = %e, "retrying");
                tokio::time::sleep(backoff * made).await;
            }
        }
    }
}

/// Applies the migrations, retried (bounded) through transient failures.
pub(super) async fn migrate(pool: &sqlx::PgPool) -> Result<(), String> {
    with_retries(MIGRATE_ATTEMPTS, MIGRATE_BACKOFF, || async {
        PgStore::migrate(pool).await.map_err(|e| format!("migration failed: {e}"))
    })
    .await
}

/// `url` as PostgreSQL connect options: only a `postgres://` or
/// `postgresql://` URL (sqlx would read another scheme's URL as PostgreSQL's).
pub(super) fn pg_options(url: &str) -> Result<sqlx::postgres::PgConnectOptions, String> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("postgres" | "postgresql")) {
        return Err(format!(
            "--database-url must be a PostgreSQL URL (postgres://user@host:port/database), not {}",
            scheme.map_or_else(|| "a string without a scheme".to_string(), |s| format!("a {s}:// URL"))
        ));
    }
    url.parse().map_err(|e| format!("--database-url is not a PostgreSQL URL: {e}"))
}

/// Where `opts` points, without the password: what an operator needs to find the problem.
pub(super) fn pg_target(opts: &sqlx::postgres::PgConnectOptions) -> String {
    let db = opts.get_database().unwrap_or("(the user's default database)");
    format!("{}:{}/{db}", opts.get_host(), opts.get_port())
}

/// A pool of at most `max` connections to `url`, once one direct connection
/// proved the database answers. A database that does not answer yet (one
/// restarting with this process, say) is tried every
/// [`DB_CONNECT_RETRY`] for [`DB_ACQUIRE_TIMEOUT`]; then the last error is
/// reported in PostgreSQL's or the system's words ("Connection refused"),
/// not as the pool's "pool timed out".
pub(super) async fn pool(url: &str, max: u32) -> Result<sqlx::PgPool, String> {
    let opts = PgStore::connect_options(pg_options(url)?);
    let cannot = |why: String| {
        format!(
            "cannot connect to the database at {}: {why} (is PostgreSQL running there, and does the database \
             exist? `bookingd migrate` needs it to exist)",
            pg_target(&opts)
        )
    };
    first_connection(&opts).await.map_err(cannot)?;
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(DB_ACQUIRE_TIMEOUT)
        .connect_with(opts.clone())
        .await
        .map_err(|e| cannot(crate::store::circuit::describe(&e)))
}

/// A [`pool`] whose schema [`migrate`] brought up to date, the pair tried
/// again for [`DB_ACQUIRE_TIMEOUT`] when either fails: a server that stops
/// or fails over between the first connection and the migrations (a
/// process started in the middle of a failover) is waited for, not a
/// reason to exit.
pub(super) async fn migrated_pool(url: &str, max: u32) -> Result<sqlx::PgPool, String> {
    let deadline = tokio::time::Instant::now() + DB_ACQUIRE_TIMEOUT;
    loop {
        let attempt = async {
            let pool = pool(url, max).await?;
            migrate(&pool).await?;
            Ok::<_, String>(pool)
        };
        match attempt.await {
            Ok(pool) => return Ok(pool),
            Err(e) if tokio::time::Instant::now() + DB_CONNECT_RETRY < deadline => {
                tracing::warn!(error = %e, "database lost while starting; trying again");
                tokio::time::sleep(DB_CONNECT_RETRY).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Pause between two start-up connection attempts.
const DB_CONNECT_RETRY: Duration = Duration::from_millis(250);

/// Connects once to `opts` (then closes), retrying for [`DB_ACQUIRE_TIMEOUT`];
/// the error names the last failure and how long it was tried.
pub(super) async fn first_connection(opts: &sqlx::postgres::PgConnectOptions) -> Result<(), String> {
    use sqlx::Connection as _;
    let deadline = tokio::time::Instant::now() + DB_ACQUIRE_TIMEOUT;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let why = match tokio::time::timeout(left, sqlx::PgConnection::connect_with(opts)).await {
            Ok(Ok(conn)) => return conn.close().await.or(Ok(())),
            Ok(Err(e)) => crate::store::circuit::describe(&e),
            Err(_) => "no answer".to_string(),
        };
        if tokio::time::Instant::now() + DB_CONNECT_RETRY >= deadline {
            return Err(format!("{why} ({attempts} attempts over {} s)", DB_ACQUIRE_TIMEOUT.as_secs()));
        }
        if attempts == 1 {
            tracing::warn!(error = %why, "database not reachable yet; trying again for {} s", DB_ACQUIRE_TIMEOUT.as_secs());
        }
        tokio::time::sleep(DB_CONNECT_RETRY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn startup_work_is_retried_a_bounded_number_of_times() {
        let calls = AtomicU32::new(0);
        let flaky = || async {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            if n < 3 { Err(format!("terminated ({n})")) } else { Ok(()) }
        };
        assert_eq!(with_retries(5, Duration::ZERO, flaky).await, Ok(()));
        assert_eq!(calls.load(Ordering::SeqCst), 3, "stops at the first success");

        calls.store(0, Ordering::SeqCst);
        let broken = || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err("bad migration".to_string())
        };
        assert_eq!(with_retries(4, Duration::ZERO, broken).await, Err("bad migration (after 4 attempts)".to_string()));
        assert_eq!(calls.load(Ordering::SeqCst), 4, "gives up after its bound");
    }
}
