//! `PgStore`: the authoritative store on PostgreSQL (sqlx 0.9), for production.
//!
//! Every operation is one short transaction: the store's clock is read first,
//! rows are locked in one global order (seats sorted by seat id; payment op
//! before order before seats; compensation before order), the shared
//! decisions in [`decide`](super::decide) pick the answer, and every ownership
//! change is a conditional `UPDATE ... WHERE <state, token, holder, deadline>`
//! whose row count is asserted. A refused operation rolls back and changes
//! nothing. Serialization failures and deadlocks are retried a bounded number
//! of times with the same ids, then surface as `StoreError::Backend`. A hold,
//! the on-sale's hot write, is one statement in one round trip instead
//! ([`hold_statement`]): the same locks, decisions and conditional write, in
//! its own implicit transaction.
//!
//! Queries are runtime `sqlx::query` strings with bound parameters only; we do
//! not use the `query!` macros, so building needs no `DATABASE_URL` and no
//! `.sqlx` offline cache. The schema (`booking/migrations`) keys every table by
//! `event_id` first and uses plain SQL that Citus, CockroachDB and YugabyteDB
//! accept: no advisory locks, no triggers.
//!
//! Observable behaviour (results, named errors, ids consumed from the
//! [`IdSource`] and in which order) is `MemStore`'s; the differential test
//! (`booking/tests/differential.rs`) holds the two to it.

pub mod circuit;
mod hold_statement;
mod holds;
mod outbox;
mod payments;
mod reads;
mod reconcile;
mod rows;
mod tx;
mod unused_ids;

use super::rules::Rules;
use super::types::*;
use super::{Store, StoreError};
use crate::clock::Clock;
use crate::fault::FaultSeam;
use crate::ids::IdSource;
use crate::model::{
    Booking, Compensation, CompensationId, EventId, Order, OrderId, OutboxEvent, OutboxId, PaymentOp, PaymentOpId,
    Seat, SeatId, SeatState, Snapshot, valid_id,
};
use async_trait::async_trait;
use sqlx::{PgPool, Row};
use std::sync::Arc;
use tx::{Fail, TxConn, backend, in_tx, into_store_error};

/// Where a [`PgStore`] reads "now", the time that decides expiry.
#[derive(Clone)]
pub enum PgClock {
    /// The database's clock: `CURRENT_TIMESTAMP` (the transaction's start),
    /// read as the first statement of every transaction. Production.
    Database,
    /// An injected clock, read once at the start of every transaction. Tests
    /// and the differential test (with a `ManualClock`).
    Manual(Arc<dyn Clock>),
}

impl std::fmt::Debug for PgClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PgClock::Database => f.write_str("PgClock::Database"),
            PgClock::Manual(c) => write!(f, "PgClock::Manual(now_ms = {})", c.now_ms()),
        }
    }
}

/// The PostgreSQL store. Cheap to clone (clones share the pool).
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    clock: PgClock,
    /// Ids given back by refused holds come first (see [`unused_ids`]).
    ids: Arc<unused_ids::UnusedIds>,
    /// The rules it applies: sound, unless a bug is planted through the fault seam.
    rules: Rules,
    /// Every pooled connection is taken through it (fails fast while the
    /// database is known down), and every database error is counted by it.
    circuit: Arc<circuit::Circuit>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("clock", &self.clock).finish_non_exhaustive()
    }
}

/// The one statement that reads the database's clock, in ms since the Unix epoch.
const DB_NOW_MS: &str = "SELECT (EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000)::BIGINT AS now_ms";

impl PgStore {
    /// A store on `pool` (whose database [`PgStore::migrate`] has prepared),
    /// judging expiry by `clock`, drawing ids from `ids`.
    pub fn new(pool: PgPool, clock: PgClock, ids: Arc<dyn IdSource>) -> Self {
        let circuit = Arc::new(circuit::Circuit::new(pool.clone()));
        Self { pool, clock, ids: Arc::new(unused_ids::UnusedIds::new(ids)), rules: Rules::SOUND, circuit }
    }

    /// `opts` with the session settings PgStore's statements are planned
    /// for ([`SESSION_SETTINGS`](Self::SESSION_SETTINGS)). Give every pool a
    /// PgStore runs on these options.
    pub fn connect_options(opts: sqlx::postgres::PgConnectOptions) -> sqlx::postgres::PgConnectOptions {
        opts.options(Self::SESSION_SETTINGS)
    }

    /// The session settings PgStore's statements are planned for, as (name, value):
    /// - `plan_cache_mode = force_generic_plan`: a hold is one prepared
    ///   statement of several parts; left to choose, PostgreSQL kept making
    ///   it a custom plan per execution, and planning cost more than running
    ///   it (`examples/hold_throughput`: the database's CPU per hold about
    ///   twice that with generic plans);
    /// - `random_page_cost = 1.1`: an on-sale's seats are in memory or on
    ///   SSD, not on the spinning disk the default 4 prices; under the default
    ///   a generic plan locked a hold's seats of a 1,000-seat event by reading
    ///   the whole table (`booking/tests/hold_cost.rs`).
    pub const SESSION_SETTINGS: [(&'static str, &'static str); 2] =
        [("plan_cache_mode", "force_generic_plan"), ("random_page_cost", "1.1")];

    /// The hold's one statement under sound rules, as sent: `$1` event,
    /// `$2` sorted seats, `$3` new token, `$4` holder, `$5` lifetime in ms,
    /// `$6` the injected clock in ms or NULL for the database's, `$7` the
    /// cap or NULL. For benchmarks that send it without the library.
    pub fn hold_statement_text() -> &'static str {
        hold_statement::sound_text()
    }

    /// Takes its connections through `circuit` (one made for this store's
    /// pool, shared with the probe, the waiting room's records and the service).
    pub fn with_circuit(mut self, circuit: Arc<circuit::Circuit>) -> Self {
        self.circuit = circuit;
        self
    }

    /// The circuit its connections go through.
    pub fn circuit(&self) -> &Arc<circuit::Circuit> {
        &self.circuit
    }

    /// Counts `e` and maps it onto the caller's error (see [`tx::backend`]).
    fn backend(&self, e: sqlx::Error) -> StoreError {
        self.circuit.record(&e);
        backend(e)
    }

    /// Applies the rules `faults` leaves standing: all of them, unless a bug
    /// is planted (`fault-injection` builds only; see [`Rules::of`]).
    pub fn with_faults(mut self, faults: &FaultSeam) -> Self {
        self.rules = Rules::of(faults);
        self
    }

    /// The pool this store runs on.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Applies the migrations in `booking/migrations` (idempotent), one
    /// migrator at a time: instances started together wait for each other
    /// on a row lock of `holdfast_migration_lock` (held on a connection of
    /// its own for the whole run), not on an advisory lock, which holdfast
    /// does not use (a no-op on some PostgreSQL-compatible engines).
    pub async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
        let failed = |e: sqlx::Error| StoreError::Backend(format!("migration failed: {}", circuit::describe(&e)));
        let mut lock = migration_lock(pool).await.map_err(failed)?;
        let mut migrator = sqlx::migrate!("./migrations");
        migrator.set_locking(false);
        let ran = migrator.run(pool).await.map_err(|e| StoreError::Backend(format!("migration failed: {e}")));
        // Releases the lock either way (closing the connection would too).
        let _ = sqlx::raw_sql("COMMIT").execute(&mut lock).await;
        ran
    }

    /// Begins a write transaction and reads the store's clock for it: for
    /// [`PgClock::Database`] the transaction's first statement, sent with the
    /// `BEGIN` in one round trip.
    /// Every error is counted by the circuit once (the acquire's by the acquire).
    async fn begin_tx(&self) -> Result<(TxConn, i64), sqlx::Error> {
        let conn = self.circuit.acquire().await?;
        let begun = match &self.clock {
            PgClock::Manual(clock) => TxConn::begin(conn, "BEGIN").await.map(|tx| (tx, clock.now_ms())),
            PgClock::Database => TxConn::begin_reading_clock(conn, DB_NOW_MS).await,
        };
        if let Err(e) = &begun {
            self.circuit.record(e);
        }
        begun
    }

    /// Runs a read-only body in one `REPEATABLE READ` transaction: a consistent view.
    async fn read<T>(
        &self,
        body: impl AsyncFnOnce(&mut sqlx::PgConnection) -> Result<T, Fail>,
    ) -> Result<T, StoreError> {
        let conn = self.circuit.acquire().await.map_err(backend)?;
        let mut tx = TxConn::begin(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await
            .map_err(|e| self.backend(e))?;
        match body(&mut tx).await {
            Ok(out) => {
                tx.commit().await.map_err(|e| self.backend(e))?;
                Ok(out)
            }
            Err(f) => {
                // A failed rollback closes the connection: nothing was written either way.
                let _ = tx.rollback().await;
                if let Fail::Db(e) = &f {
                    self.circuit.record(e);
                }
                Err(into_store_error(f))
            }
        }
    }
}

/// Attempts at creating the migration lock's table: instances racing on
/// `CREATE TABLE IF NOT EXISTS` may see PostgreSQL's duplicate-key error.
const MIGRATION_LOCK_ATTEMPTS: u32 = 5;

/// A connection of its own, inside a transaction holding the migration
/// lock's one row `FOR UPDATE` (the table and the row made first if missing).
async fn migration_lock(pool: &PgPool) -> Result<sqlx::PgConnection, sqlx::Error> {
    use sqlx::Connection as _;
    const SETUP: &str = "CREATE TABLE IF NOT EXISTS holdfast_migration_lock (id INT PRIMARY KEY);
        INSERT INTO holdfast_migration_lock (id) VALUES (1) ON CONFLICT (id) DO NOTHING";
    let mut conn = sqlx::PgConnection::connect_with(&pool.connect_options()).await?;
    let mut attempt = 0;
    loop {
        attempt += 1;
        match sqlx::raw_sql(SETUP).execute(&mut conn).await {
            Ok(_) => break,
            // 23505 unique_violation, 42P07 duplicate_table, 42710 duplicate_object
            // (the table's row type, made by a concurrent CREATE TABLE IF NOT
            // EXISTS; about 1 in 3 runs of six migrators started together
            // failed so): another migrator made it meanwhile.
            Err(sqlx::Error::Database(db))
                if attempt < MIGRATION_LOCK_ATTEMPTS
                    && matches!(db.code().as_deref(), Some("23505" | "42P07" | "42710")) =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(20 * u64::from(attempt))).await;
            }
            Err(e) => return Err(e),
        }
    }
    sqlx::raw_sql("BEGIN; SELECT id FROM holdfast_migration_lock WHERE id = 1 FOR UPDATE").execute(&mut conn).await?;
    Ok(conn)
}

#[async_trait]
impl Store for PgStore {
    async fn now_ms(&self) -> Result<i64, StoreError> {
        match &self.clock {
            PgClock::Manual(clock) => Ok(clock.now_ms()),
            PgClock::Database => {
                let mut c = self.circuit.acquire().await.map_err(backend)?;
                let row = sqlx::query(DB_NOW_MS).fetch_one(&mut *c).await.map_err(|e| self.backend(e))?;
                row.try_get("now_ms").map_err(backend)
            }
        }
    }

    async fn create_event(&self, req: &CreateEvent) -> Result<(), StoreError> {
        let sorted = req.validate()?;
        in_tx!(self, |c, now, _ids| holds::create_event(c, now, req, &sorted))?;
        // The planner's statistics, before the on-sale's first hold: without
        // them a generic plan of the hold's lock scans every seat of the event
        // to find one (booking/tests/hold_cost.rs). Best effort: the event exists
        // either way, and autovacuum analyzes the table later.
        if let Err(e) = sqlx::query("ANALYZE seats").execute(&self.pool).await {
            tracing::warn!(error = %e, event_id = %req.event_id, "ANALYZE seats after creating an event failed");
        }
        Ok(())
    }

    async fn acquire_hold(&self, req: &AcquireHold) -> Result<HoldGrant, StoreError> {
        let sorted = req.validate()?;
        hold_statement::acquire_hold(self, req, &sorted).await
    }

    async fn release_hold(&self, req: &ReleaseHold) -> Result<Vec<SeatId>, StoreError> {
        req.validate()?;
        in_tx!(self, |c, now, _ids| holds::release_hold(c, now, req))
    }

    async fn sweep_expired_holds(&self, limit_seats: u32) -> Result<Vec<ExpiredHold>, StoreError> {
        in_tx!(self, |c, now, _ids| holds::sweep_expired_holds(c, now, limit_seats, &self.rules))
    }

    async fn begin_payment(&self, req: &BeginPayment) -> Result<BeginPaymentOutcome, StoreError> {
        let sorted = req.validate()?;
        in_tx!(self, |c, now, ids| payments::begin_payment(c, now, ids, req, &sorted, &self.rules))
    }

    async fn record_payment_success(&self, req: &PaymentSuccess) -> Result<Recorded<SaleOutcome>, StoreError> {
        req.validate()?;
        in_tx!(self, |c, now, ids| payments::record_payment_success(c, now, ids, req, &self.rules))
    }

    async fn record_payment_failure(
        &self,
        payment_op_id: PaymentOpId,
        reason: &str,
    ) -> Result<Recorded<Order>, StoreError> {
        let reason = bounded_text(reason);
        in_tx!(self, |c, now, _ids| payments::record_payment_failure(c, now, payment_op_id, &reason, &self.rules))
    }

    async fn record_payment_unknown(&self, payment_op_id: PaymentOpId, error: &str) -> Result<Order, StoreError> {
        let error = bounded_text(error);
        in_tx!(self, |c, now, _ids| payments::record_payment_unknown(c, now, payment_op_id, &error, &self.rules))
    }

    async fn release_unresolved_payment(&self, payment_op_id: PaymentOpId, reason: &str) -> Result<Order, StoreError> {
        let reason = bounded_text(reason);
        in_tx!(self, |c, now, _ids| payments::release_unresolved_payment(c, now, payment_op_id, &reason, &self.rules))
    }

    async fn claim_outbox(&self, limit: u32, lease_ms: i64) -> Result<Vec<OutboxEvent>, StoreError> {
        validate_lease_ms(lease_ms)?;
        in_tx!(self, |c, now, _ids| outbox::claim_outbox(c, now, limit, lease_ms))
    }

    async fn complete_outbox(&self, event_id: &EventId, outbox_id: OutboxId) -> Result<(), StoreError> {
        if !valid_id(event_id) {
            // No such id can exist (create_event validates); SQL text cannot hold every string.
            return Err(StoreError::UnknownOutboxEvent(outbox_id));
        }
        in_tx!(self, |c, _now, _ids| outbox::complete_outbox(c, event_id, outbox_id))
    }

    async fn retry_outbox(
        &self,
        event_id: &EventId,
        outbox_id: OutboxId,
        error: &str,
        retry_after_ms: i64,
    ) -> Result<(), StoreError> {
        validate_retry_after_ms(retry_after_ms)?;
        let error = bounded_text(error);
        if !valid_id(event_id) {
            return Err(StoreError::UnknownOutboxEvent(outbox_id));
        }
        in_tx!(self, |c, now, _ids| outbox::retry_outbox(c, now, event_id, outbox_id, &error, retry_after_ms))
    }

    async fn start_compensation_attempt(
        &self,
        compensation_id: CompensationId,
        attempt_lease_ms: i64,
    ) -> Result<CompensationAttempt, StoreError> {
        validate_attempt_lease_ms(attempt_lease_ms)?;
        in_tx!(self, |c, now, _ids| outbox::start_compensation_attempt(
            c,
            now,
            compensation_id,
            attempt_lease_ms,
            &self.rules
        ))
    }

    async fn finish_compensation_attempt(&self, req: &CompensationResult) -> Result<Compensation, StoreError> {
        req.validate()?;
        in_tx!(self, |c, now, _ids| outbox::finish_compensation_attempt(c, now, req, &self.rules))
    }

    async fn compensation(&self, compensation_id: CompensationId) -> Result<Compensation, StoreError> {
        self.read(async |c| reads::compensation(c, compensation_id).await).await
    }

    async fn seat_map(&self, event_id: &EventId) -> Result<Vec<Seat>, StoreError> {
        if !valid_id(event_id) {
            return Err(StoreError::UnknownEvent(event_id.clone()));
        }
        self.read(async |c| {
            holds::require_event(c, event_id).await?;
            reads::seats_of_event(c, event_id).await
        })
        .await
    }

    async fn seat_map_version(&self, event_id: &EventId) -> Result<SeatMapVersion, StoreError> {
        if !valid_id(event_id) {
            return Err(StoreError::UnknownEvent(event_id.clone()));
        }
        let mut c = self.circuit.acquire().await.map_err(backend)?;
        reads::seat_map_version(&mut c, event_id).await.map_err(into_store_error)
    }

    async fn seats_in_state(
        &self,
        event_id: &EventId,
        state: SeatState,
    ) -> Result<(SeatMapVersion, Vec<Seat>), StoreError> {
        if !valid_id(event_id) {
            return Err(StoreError::UnknownEvent(event_id.clone()));
        }
        // One repeatable-read snapshot: the version and the seats agree.
        self.read(async |c| {
            let v = reads::seat_map_version(c, event_id).await?;
            Ok((v, reads::seats_of_event_in_state(c, event_id, state).await?))
        })
        .await
    }

    async fn order(&self, order_id: OrderId) -> Result<Order, StoreError> {
        self.read(async |c| reads::order(c, order_id).await).await
    }

    async fn payment_op(&self, payment_op_id: PaymentOpId) -> Result<PaymentOp, StoreError> {
        self.read(async |c| reads::payment_op(c, payment_op_id).await).await
    }

    async fn compensations_for_order(&self, order_id: OrderId) -> Result<Vec<Compensation>, StoreError> {
        self.read(async |c| payments::compensations_of_order(c, order_id).await).await
    }

    async fn order_details(&self, order_id: OrderId) -> Result<OrderDetails, StoreError> {
        self.read(async |c| {
            let order = reads::order(c, order_id).await?;
            let bookings = payments::bookings_of_order(c, &order).await?;
            let compensations = payments::compensations_of_order(c, order_id).await?;
            Ok(OrderDetails { order, bookings, compensations })
        })
        .await
    }

    async fn bookings(&self, event_id: &EventId) -> Result<Vec<Booking>, StoreError> {
        if !valid_id(event_id) {
            return Ok(Vec::new());
        }
        self.read(async |c| reads::bookings(c, event_id).await).await
    }

    async fn claim_reconcile(
        &self,
        limit: u32,
        backoff: ReconcileBackoff,
    ) -> Result<Vec<(Order, PaymentOp)>, StoreError> {
        backoff.validate()?;
        in_tx!(self, |c, now, _ids| reconcile::claim_reconcile(c, now, limit, backoff))
    }

    async fn needs_resolution(&self) -> Result<Resolution, StoreError> {
        self.read(async |c| reads::needs_resolution(c).await).await
    }

    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        self.read(async |c| reads::snapshot(c).await).await
    }
}
