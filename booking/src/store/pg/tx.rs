//! One short transaction per operation: the store's clock read first, a
//! bounded retry on serialization failures and deadlocks, the mapping of
//! database failures onto [`StoreError`], and a connection guard that makes a
//! dropped operation harmless ([`TxConn`]).

use crate::ids::IdSource;
use crate::store::{ONE_BOOKING_BREACH, StoreError};
use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, Postgres};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};
use uuid::Uuid;

/// Attempts per operation before a serialization failure or deadlock becomes
/// `StoreError::Backend`.
pub(super) const MAX_TX_ATTEMPTS: u32 = 8;

/// Backoff before retry `attempt` (1-based), in ms: linear, bounded.
pub(super) fn retry_backoff_ms(attempt: u32) -> u64 {
    u64::from(attempt.min(MAX_TX_ATTEMPTS)) * 2
}

/// The name of the unique index that is the promise itself.
pub(super) const ONE_CONFIRMED_BOOKING_INDEX: &str = "bookings_one_confirmed_per_seat";

/// Why a transaction body stopped.
#[derive(Debug)]
pub(super) enum Fail {
    /// The store refused the operation (a named error); roll back, no retry.
    Refused(StoreError),
    /// The database failed; retried when transient.
    Db(sqlx::Error),
    /// An invariant the SQL above should guarantee did not hold: a bug.
    Broken(String),
}

impl From<sqlx::Error> for Fail {
    fn from(e: sqlx::Error) -> Self {
        Fail::Db(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Refused(e)
    }
}

/// `Ok(())` when `holds`, else a [`Fail::Broken`] naming `what`.
pub(super) fn ensure(holds: bool, what: impl FnOnce() -> String) -> Result<(), Fail> {
    if holds { Ok(()) } else { Err(Fail::Broken(what())) }
}

/// `Ok(())` when the rows a conditional write returned (`written`) are
/// exactly the after-images the state machine decided (`expected`), in any
/// order, else a [`Fail::Broken`] naming the first difference: the SQL and
/// the machine disagree, a bug.
pub(super) fn ensure_written<T: PartialEq + std::fmt::Debug, K: Ord + std::fmt::Debug>(
    what: &str,
    expected: Vec<T>,
    written: Vec<T>,
    key: impl Fn(&T) -> K,
) -> Result<(), Fail> {
    crate::store::machine::expect_written(what, expected, written, key).map_err(Fail::Broken)
}

/// Whether a database error is transient: serialization failure (40001) or deadlock (40P01).
pub(super) fn retryable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => matches!(db.code().as_deref(), Some("40001") | Some("40P01")),
        _ => false,
    }
}

/// Maps a database error onto `StoreError::Backend`, or onto
/// `StoreError::InvariantBreach` when the one-booking index fired (which only a bug above the database can cause).
pub(super) fn backend(e: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &e
        && db.constraint() == Some(ONE_CONFIRMED_BOOKING_INDEX)
    {
        // The words MemStore uses too (the differential test compares them).
        tracing::error!(error = %db, "invariant violated: {ONE_BOOKING_BREACH}");
        return StoreError::InvariantBreach(ONE_BOOKING_BREACH.into());
    }
    StoreError::Backend(super::circuit::describe(&e))
}

/// Maps a final failure onto the caller's error.
pub(super) fn into_store_error(f: Fail) -> StoreError {
    match f {
        Fail::Refused(e) => e,
        Fail::Db(e) => backend(e),
        Fail::Broken(what) => {
            tracing::error!("invariant violated: {what}");
            StoreError::InvariantBreach(what)
        }
    }
}

/// The ids of one operation. A retried attempt gets the same ids again, in the
/// same order, so a retry consumes no more of the [`IdSource`] than one
/// successful attempt would (and the differential test stays exact).
pub(super) struct TxIds {
    source: Arc<dyn IdSource>,
    /// (ids drawn so far, index of the next one to hand out).
    state: Mutex<(Vec<Uuid>, usize)>,
}

impl TxIds {
    /// Ids for one operation, drawn lazily from `source`.
    pub(super) fn new(source: Arc<dyn IdSource>) -> Self {
        Self { source, state: Mutex::new((Vec::new(), 0)) }
    }

    /// The next id of this attempt.
    pub(super) fn next_uuid(&self) -> Uuid {
        let mut guard = self.state.lock().expect("TxIds poisoned");
        let (drawn, next) = &mut *guard;
        if *next == drawn.len() {
            drawn.push(self.source.next_uuid());
        }
        let id = drawn[*next];
        *next += 1;
        id
    }

    /// Starts a new attempt: hands out the same ids again.
    pub(super) fn rewind(&self) {
        self.state.lock().expect("TxIds poisoned").1 = 0;
    }
}

/// A pooled connection inside one transaction, safe to drop at any `.await`.
///
/// Cancellation is a fault: axum drops a handler's future when its client
/// hangs up, and sqlx 0.9.0's `begin()` does not roll back a `BEGIN` whose
/// future is dropped, so the connection went back to the pool inside a
/// transaction and broke the next caller's. `TxConn` sends
/// `BEGIN`/`COMMIT`/`ROLLBACK` itself and, unless one of the last two was
/// acknowledged, closes the connection on drop instead of pooling it: the
/// server then rolls back whatever was open. A dropped `COMMIT` may or may not
/// have committed, exactly like a crash after commit; callers retry with their
/// idempotency key.
pub(super) struct TxConn {
    conn: PoolConnection<Postgres>,
    /// Whether the server may be inside a transaction begun here: true from
    /// before `BEGIN` is sent until `COMMIT` or `ROLLBACK` is acknowledged.
    open: bool,
}

impl TxConn {
    /// Runs `begin_sql` (a `BEGIN ...` statement) on `conn`, a connection
    /// fresh from the pool.
    pub(super) async fn begin(conn: PoolConnection<Postgres>, begin_sql: &'static str) -> Result<TxConn, sqlx::Error> {
        debug_assert!(begin_sql.starts_with("BEGIN"), "begin_sql starts a transaction: {begin_sql}");
        let mut tx = TxConn { conn, open: true };
        sqlx::raw_sql(begin_sql).execute(&mut *tx.conn).await?;
        Ok(tx)
    }

    /// Like [`begin`](Self::begin), and reads the store's clock as the
    /// transaction's first statement in the same round trip (`BEGIN; SELECT
    /// <now>` as one simple query): the clock the whole transaction decides by.
    pub(super) async fn begin_reading_clock(
        conn: PoolConnection<Postgres>,
        now_sql: &'static str,
    ) -> Result<(TxConn, i64), sqlx::Error> {
        let mut tx = TxConn { conn, open: true };
        let rows = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("BEGIN; {now_sql}"))).fetch_all(&mut *tx.conn).await?;
        let row = rows.first().ok_or_else(|| sqlx::Error::Protocol("the clock query returned no row".into()))?;
        let now_ms: i64 = sqlx::Row::try_get(row, "now_ms")?;
        Ok((tx, now_ms))
    }

    /// `conn`, fresh from the pool, for one statement sent outside any
    /// transaction (its own implicit one): until [`finish`](Self::finish),
    /// dropping it closes the connection, so a statement whose answer was
    /// never read does not meet the connection's next user.
    pub(super) fn implicit(conn: PoolConnection<Postgres>) -> TxConn {
        TxConn { conn, open: true }
    }

    /// The statement of an [`implicit`](Self::implicit) connection was
    /// answered (success or error): the connection may go back to the pool.
    pub(super) fn finish(mut self) {
        self.open = false;
    }

    /// Commits; the connection goes back to the pool only once the server acknowledged it.
    pub(super) async fn commit(mut self) -> Result<(), sqlx::Error> {
        sqlx::raw_sql("COMMIT").execute(&mut *self.conn).await?;
        self.open = false;
        Ok(())
    }

    /// Rolls back; on failure the connection is closed instead (nothing commits either way).
    pub(super) async fn rollback(mut self) -> Result<(), sqlx::Error> {
        sqlx::raw_sql("ROLLBACK").execute(&mut *self.conn).await?;
        self.open = false;
        Ok(())
    }
}

impl Deref for TxConn {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        &self.conn
    }
}

impl DerefMut for TxConn {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.conn
    }
}

impl Drop for TxConn {
    fn drop(&mut self) {
        if self.open {
            // Runs before `conn` is dropped: the pool closes it instead of reusing it.
            self.conn.close_on_drop();
        }
    }
}

/// Runs `$body` (an expression producing a future of `Result<T, Fail>`, with
/// `$c: &mut PgConnection`, `$now: i64` and `$ids: &TxIds` in scope) in one
/// transaction of `$store`: commits on `Ok`, rolls back on any `Err`, retries
/// transient failures up to [`MAX_TX_ATTEMPTS`] times with the same ids.
macro_rules! in_tx {
    ($store:expr, |$c:ident, $now:ident, $ids:ident| $body:expr) => {{
        let store: &$crate::store::pg::PgStore = $store;
        let tx_ids = $crate::store::pg::tx::TxIds::new(store.ids.clone());
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            assert!(attempt <= $crate::store::pg::tx::MAX_TX_ATTEMPTS, "retry loop is bounded");
            // (begin_tx counts its own errors.)
            let (mut tx, tx_now_ms) = store.begin_tx().await.map_err($crate::store::pg::tx::backend)?;
            let outcome: Result<_, $crate::store::pg::tx::Fail> = async {
                let $now: i64 = tx_now_ms;
                let $c: &mut sqlx::PgConnection = &mut tx;
                let $ids: &$crate::store::pg::tx::TxIds = &tx_ids;
                $body.await
            }
            .await;
            let outcome = match outcome {
                Ok(v) => tx.commit().await.map(|()| v).map_err($crate::store::pg::tx::Fail::Db),
                Err(f) => {
                    // A failed rollback leaves nothing committed: the connection is closed.
                    let _ = tx.rollback().await;
                    Err(f)
                }
            };
            if let Err($crate::store::pg::tx::Fail::Db(e)) = &outcome {
                store.circuit.record(e);
            }
            match outcome {
                Ok(v) => break Ok(v),
                Err($crate::store::pg::tx::Fail::Db(e))
                    if $crate::store::pg::tx::retryable(&e) && attempt < $crate::store::pg::tx::MAX_TX_ATTEMPTS =>
                {
                    tx_ids.rewind();
                    tokio::time::sleep(std::time::Duration::from_millis($crate::store::pg::tx::retry_backoff_ms(
                        attempt,
                    )))
                    .await;
                }
                Err(f) => break Err($crate::store::pg::tx::into_store_error(f)),
            }
        }
    }};
}
pub(super) use in_tx;
