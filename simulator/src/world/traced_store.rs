//! The world's store as the auditor sees it: every call of the shared
//! `MemStore`, with its answer, recorded in the trace at its linearization
//! point. MemStore's calls complete in one poll (one lock, no await inside),
//! so the record written right after a call returns follows its writes and
//! precedes anything another task does: the trace is the commit order. A
//! call made while serving a client request carries that request's op id
//! ([`crate::world::op_scope`]).

use crate::world::op_scope;
use crate::world::recorder::Recorder;
use async_trait::async_trait;
use booking::clock::Clock;
use booking::model::{
    Booking, Compensation, CompensationId, EventId, Order, OrderId, OutboxEvent, OutboxId, PaymentOp, PaymentOpId,
    Seat, SeatId, SeatState, Snapshot,
};
use booking::store::*;
use invariants::store_call::{SeatsDigest, StoreCall, answer_of};
use std::sync::Arc;

/// A store whose every call is traced.
pub struct TracedStore {
    inner: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    recorder: Recorder,
}

impl TracedStore {
    /// `inner`, its calls recorded into `recorder` with `clock`'s time (the store's own).
    pub fn new(inner: Arc<dyn Store>, clock: Arc<dyn Clock>, recorder: Recorder) -> Self {
        Self { inner, clock, recorder }
    }

    fn record(&self, call: StoreCall) {
        self.recorder.store(op_scope::current(), self.clock.now_ms(), call);
    }
}

#[async_trait]
impl Store for TracedStore {
    async fn now_ms(&self) -> Result<i64, StoreError> {
        let r = self.inner.now_ms().await;
        self.record(StoreCall::NowMs { answer: answer_of(&r, |t| *t) });
        r
    }

    async fn create_event(&self, req: &CreateEvent) -> Result<(), StoreError> {
        let r = self.inner.create_event(req).await;
        self.record(StoreCall::CreateEvent { req: req.clone(), answer: answer_of(&r, |_| ()) });
        r
    }

    async fn acquire_hold(&self, req: &AcquireHold) -> Result<HoldGrant, StoreError> {
        let r = self.inner.acquire_hold(req).await;
        self.record(StoreCall::AcquireHold { req: req.clone(), answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn release_hold(&self, req: &ReleaseHold) -> Result<Vec<SeatId>, StoreError> {
        let r = self.inner.release_hold(req).await;
        self.record(StoreCall::ReleaseHold { req: req.clone(), answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn sweep_expired_holds(&self, limit_seats: u32) -> Result<Vec<ExpiredHold>, StoreError> {
        let r = self.inner.sweep_expired_holds(limit_seats).await;
        self.record(StoreCall::Sweep { limit_seats, answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn begin_payment(&self, req: &BeginPayment) -> Result<BeginPaymentOutcome, StoreError> {
        let r = self.inner.begin_payment(req).await;
        self.record(StoreCall::BeginPayment { req: req.clone(), answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn record_payment_success(&self, req: &PaymentSuccess) -> Result<Recorded<SaleOutcome>, StoreError> {
        let r = self.inner.record_payment_success(req).await;
        self.record(StoreCall::PaymentSuccess { req: req.clone(), answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn record_payment_failure(
        &self,
        payment_op_id: PaymentOpId,
        reason: &str,
    ) -> Result<Recorded<Order>, StoreError> {
        let r = self.inner.record_payment_failure(payment_op_id, reason).await;
        self.record(StoreCall::PaymentFailure {
            payment_op_id,
            reason: reason.into(),
            answer: answer_of(&r, Clone::clone),
        });
        r
    }

    async fn record_payment_unknown(&self, payment_op_id: PaymentOpId, error: &str) -> Result<Order, StoreError> {
        let r = self.inner.record_payment_unknown(payment_op_id, error).await;
        self.record(StoreCall::PaymentUnknown {
            payment_op_id,
            error: error.into(),
            answer: answer_of(&r, Clone::clone),
        });
        r
    }

    async fn release_unresolved_payment(&self, payment_op_id: PaymentOpId, reason: &str) -> Result<Order, StoreError> {
        let r = self.inner.release_unresolved_payment(payment_op_id, reason).await;
        let answer = answer_of(&r, Clone::clone);
        self.record(StoreCall::ReleaseUnresolved { payment_op_id, reason: reason.into(), answer });
        r
    }

    async fn claim_outbox(&self, limit: u32, lease_ms: i64) -> Result<Vec<OutboxEvent>, StoreError> {
        let r = self.inner.claim_outbox(limit, lease_ms).await;
        self.record(StoreCall::ClaimOutbox { limit, lease_ms, answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn complete_outbox(&self, event_id: &EventId, outbox_id: OutboxId) -> Result<(), StoreError> {
        let r = self.inner.complete_outbox(event_id, outbox_id).await;
        self.record(StoreCall::CompleteOutbox { event_id: event_id.clone(), outbox_id, answer: answer_of(&r, |_| ()) });
        r
    }

    async fn retry_outbox(
        &self,
        event_id: &EventId,
        outbox_id: OutboxId,
        error: &str,
        retry_after_ms: i64,
    ) -> Result<(), StoreError> {
        let r = self.inner.retry_outbox(event_id, outbox_id, error, retry_after_ms).await;
        let (event_id, error) = (event_id.clone(), error.to_string());
        self.record(StoreCall::RetryOutbox {
            event_id,
            outbox_id,
            error,
            retry_after_ms,
            answer: answer_of(&r, |_| ()),
        });
        r
    }

    async fn start_compensation_attempt(
        &self,
        compensation_id: CompensationId,
        attempt_lease_ms: i64,
    ) -> Result<CompensationAttempt, StoreError> {
        let r = self.inner.start_compensation_attempt(compensation_id, attempt_lease_ms).await;
        let answer = answer_of(&r, Clone::clone);
        self.record(StoreCall::StartCompensation { compensation_id, attempt_lease_ms, answer });
        r
    }

    async fn finish_compensation_attempt(&self, req: &CompensationResult) -> Result<Compensation, StoreError> {
        let r = self.inner.finish_compensation_attempt(req).await;
        self.record(StoreCall::FinishCompensation { req: req.clone(), answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn compensation(&self, compensation_id: CompensationId) -> Result<Compensation, StoreError> {
        let r = self.inner.compensation(compensation_id).await;
        self.record(StoreCall::Compensation { compensation_id, answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn seat_map(&self, event_id: &EventId) -> Result<Vec<Seat>, StoreError> {
        let r = self.inner.seat_map(event_id).await;
        self.record(StoreCall::SeatMap {
            event_id: event_id.clone(),
            answer: answer_of(&r, |s| SeatsDigest::of(s.iter())),
        });
        r
    }

    async fn seat_map_version(&self, event_id: &EventId) -> Result<SeatMapVersion, StoreError> {
        let r = self.inner.seat_map_version(event_id).await;
        self.record(StoreCall::SeatMapVersion { event_id: event_id.clone(), answer: answer_of(&r, |v| *v) });
        r
    }

    async fn seats_in_state(
        &self,
        event_id: &EventId,
        state: SeatState,
    ) -> Result<(SeatMapVersion, Vec<Seat>), StoreError> {
        let r = self.inner.seats_in_state(event_id, state).await;
        let answer = answer_of(&r, |(v, s)| (*v, SeatsDigest::of(s.iter())));
        self.record(StoreCall::SeatsInState { event_id: event_id.clone(), state, answer });
        r
    }

    async fn order(&self, order_id: OrderId) -> Result<Order, StoreError> {
        let r = self.inner.order(order_id).await;
        self.record(StoreCall::Order { order_id, answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn payment_op(&self, payment_op_id: PaymentOpId) -> Result<PaymentOp, StoreError> {
        let r = self.inner.payment_op(payment_op_id).await;
        self.record(StoreCall::PaymentOp { payment_op_id, answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn compensations_for_order(&self, order_id: OrderId) -> Result<Vec<Compensation>, StoreError> {
        let r = self.inner.compensations_for_order(order_id).await;
        self.record(StoreCall::CompensationsForOrder { order_id, answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn order_details(&self, order_id: OrderId) -> Result<OrderDetails, StoreError> {
        let r = self.inner.order_details(order_id).await;
        self.record(StoreCall::OrderDetails { order_id, answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn bookings(&self, event_id: &EventId) -> Result<Vec<Booking>, StoreError> {
        let r = self.inner.bookings(event_id).await;
        self.record(StoreCall::Bookings { event_id: event_id.clone(), answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn claim_reconcile(
        &self,
        limit: u32,
        backoff: ReconcileBackoff,
    ) -> Result<Vec<(Order, PaymentOp)>, StoreError> {
        let r = self.inner.claim_reconcile(limit, backoff).await;
        self.record(StoreCall::ClaimReconcile { limit, backoff, answer: answer_of(&r, Clone::clone) });
        r
    }

    async fn needs_resolution(&self) -> Result<Resolution, StoreError> {
        let r = self.inner.needs_resolution().await;
        self.record(StoreCall::NeedsResolution { answer: answer_of(&r, Clone::clone) });
        r
    }

    /// Not traced: the checkers' own read of everything.
    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        self.inner.snapshot().await
    }
}
