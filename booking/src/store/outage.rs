//! A store behind an outage switch: while the switch is on, every call
//! fails with a backend error before it reaches the store (the database
//! unreachable: nothing is written), as PgStore's calls fail when
//! PostgreSQL is down. The simulator's outage nemesis flips it; a test
//! switches it on to show that a guard above the store refuses alone.

use crate::model::{
    Booking, Compensation, CompensationId, EventId, Order, OrderId, OutboxEvent, OutboxId, PaymentOp, PaymentOpId,
    Seat, SeatId, SeatState, Snapshot,
};
use crate::store::*;
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What every call answers during an outage.
pub const OUTAGE: &str = "the store is unreachable (simulated outage)";

/// A store that fails every call while `down` is on.
pub struct OutageStore {
    inner: Arc<dyn Store>,
    down: Arc<AtomicBool>,
}

impl OutageStore {
    /// `inner`, failing while `down` is on.
    pub fn new(inner: Arc<dyn Store>, down: Arc<AtomicBool>) -> Self {
        Self { inner, down }
    }

    fn up(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) { Err(StoreError::Backend(OUTAGE.into())) } else { Ok(()) }
    }
}

#[async_trait]
impl Store for OutageStore {
    async fn now_ms(&self) -> Result<i64, StoreError> {
        self.up()?;
        self.inner.now_ms().await
    }
    async fn create_event(&self, req: &CreateEvent) -> Result<(), StoreError> {
        self.up()?;
        self.inner.create_event(req).await
    }
    async fn acquire_hold(&self, req: &AcquireHold) -> Result<HoldGrant, StoreError> {
        self.up()?;
        self.inner.acquire_hold(req).await
    }
    async fn release_hold(&self, req: &ReleaseHold) -> Result<Vec<SeatId>, StoreError> {
        self.up()?;
        self.inner.release_hold(req).await
    }
    async fn sweep_expired_holds(&self, limit_seats: u32) -> Result<Vec<ExpiredHold>, StoreError> {
        self.up()?;
        self.inner.sweep_expired_holds(limit_seats).await
    }
    async fn begin_payment(&self, req: &BeginPayment) -> Result<BeginPaymentOutcome, StoreError> {
        self.up()?;
        self.inner.begin_payment(req).await
    }
    async fn record_payment_success(&self, req: &PaymentSuccess) -> Result<Recorded<SaleOutcome>, StoreError> {
        self.up()?;
        self.inner.record_payment_success(req).await
    }
    async fn record_payment_failure(&self, id: PaymentOpId, reason: &str) -> Result<Recorded<Order>, StoreError> {
        self.up()?;
        self.inner.record_payment_failure(id, reason).await
    }
    async fn record_payment_unknown(&self, id: PaymentOpId, error: &str) -> Result<Order, StoreError> {
        self.up()?;
        self.inner.record_payment_unknown(id, error).await
    }
    async fn release_unresolved_payment(&self, id: PaymentOpId, reason: &str) -> Result<Order, StoreError> {
        self.up()?;
        self.inner.release_unresolved_payment(id, reason).await
    }
    async fn claim_outbox(&self, limit: u32, lease_ms: i64) -> Result<Vec<OutboxEvent>, StoreError> {
        self.up()?;
        self.inner.claim_outbox(limit, lease_ms).await
    }
    async fn complete_outbox(&self, event_id: &EventId, outbox_id: OutboxId) -> Result<(), StoreError> {
        self.up()?;
        self.inner.complete_outbox(event_id, outbox_id).await
    }
    async fn retry_outbox(
        &self,
        event_id: &EventId,
        id: OutboxId,
        error: &str,
        after_ms: i64,
    ) -> Result<(), StoreError> {
        self.up()?;
        self.inner.retry_outbox(event_id, id, error, after_ms).await
    }
    async fn start_compensation_attempt(
        &self,
        id: CompensationId,
        lease_ms: i64,
    ) -> Result<CompensationAttempt, StoreError> {
        self.up()?;
        self.inner.start_compensation_attempt(id, lease_ms).await
    }
    async fn finish_compensation_attempt(&self, req: &CompensationResult) -> Result<Compensation, StoreError> {
        self.up()?;
        self.inner.finish_compensation_attempt(req).await
    }
    async fn compensation(&self, id: CompensationId) -> Result<Compensation, StoreError> {
        self.up()?;
        self.inner.compensation(id).await
    }
    async fn seat_map(&self, event_id: &EventId) -> Result<Vec<Seat>, StoreError> {
        self.up()?;
        self.inner.seat_map(event_id).await
    }
    async fn seat_map_version(&self, event_id: &EventId) -> Result<SeatMapVersion, StoreError> {
        self.up()?;
        self.inner.seat_map_version(event_id).await
    }
    async fn seats_in_state(
        &self,
        event_id: &EventId,
        state: SeatState,
    ) -> Result<(SeatMapVersion, Vec<Seat>), StoreError> {
        self.up()?;
        self.inner.seats_in_state(event_id, state).await
    }
    async fn order(&self, id: OrderId) -> Result<Order, StoreError> {
        self.up()?;
        self.inner.order(id).await
    }
    async fn payment_op(&self, id: PaymentOpId) -> Result<PaymentOp, StoreError> {
        self.up()?;
        self.inner.payment_op(id).await
    }
    async fn compensations_for_order(&self, id: OrderId) -> Result<Vec<Compensation>, StoreError> {
        self.up()?;
        self.inner.compensations_for_order(id).await
    }
    async fn order_details(&self, id: OrderId) -> Result<OrderDetails, StoreError> {
        self.up()?;
        self.inner.order_details(id).await
    }
    async fn bookings(&self, event_id: &EventId) -> Result<Vec<Booking>, StoreError> {
        self.up()?;
        self.inner.bookings(event_id).await
    }
    async fn claim_reconcile(
        &self,
        limit: u32,
        backoff: ReconcileBackoff,
    ) -> Result<Vec<(Order, PaymentOp)>, StoreError> {
        self.up()?;
        self.inner.claim_reconcile(limit, backoff).await
    }
    async fn needs_resolution(&self) -> Result<Resolution, StoreError> {
        self.up()?;
        self.inner.needs_resolution().await
    }
    /// Never down: the checkers' own read.
    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        self.inner.snapshot().await
    }
}
