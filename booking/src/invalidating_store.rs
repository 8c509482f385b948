//! The one place the seat-map cache is invalidated: a [`Store`] in front of
//! the authority that drops an event's cached seat map after every write
//! that may change it, whoever makes the write: a handler (create, hold,
//! release, checkout), the sweeper (expired holds), the dispatcher, the
//! reconciler or a webhook (a sale, a decline, an unresolved release).
//!
//! It invalidates after the write returns: when the event is known from
//! the request, on success or a backend error (a write whose answer was lost
//! may have committed), never on a refusal (it changed nothing); otherwise
//! from the result. Reads and writes that change no
//! seat pass straight through. A stale entry that slips past (a read that
//! put an older map after the invalidation) lives at most the cache's TTL.

use crate::http::cache::SeatMapCache;
use crate::model::{
    Booking, Compensation, CompensationId, EventId, Order, OrderId, OutboxEvent, OutboxId, PaymentOp, PaymentOpId,
    Seat, SeatId, SeatState, Snapshot,
};
use crate::store::*;
use async_trait::async_trait;
use std::sync::Arc;

/// `inner`, with `cache` invalidated on every seat-map change.
pub struct InvalidatingStore {
    inner: Arc<dyn Store>,
    cache: Arc<dyn SeatMapCache>,
}

impl InvalidatingStore {
    /// Writes go to `inner`; each seat-map change drops the event's entry from `cache`.
    pub fn new(inner: Arc<dyn Store>, cache: Arc<dyn SeatMapCache>) -> Self {
        Self { inner, cache }
    }

    async fn changed(&self, event_id: &EventId) {
        self.cache.invalidate(event_id).await;
    }

    /// Invalidates `event_id` unless `result` is a refusal, then returns it.
    /// A refused write (seat taken, stale token, ...) rolled back and changed
    /// nothing: in an on-sale rush most holds are refused, and dropping the
    /// map on each would empty the cache when it matters most. A `Backend`
    /// error may hide a commit whose answer was lost, so it invalidates.
    async fn after<T>(&self, event_id: &EventId, result: Result<T, StoreError>) -> Result<T, StoreError> {
        if matches!(result, Ok(_) | Err(StoreError::Backend(_))) {
            self.changed(event_id).await;
        }
        result
    }
}

#[async_trait]
impl Store for InvalidatingStore {
    async fn now_ms(&self) -> Result<i64, StoreError> {
        self.inner.now_ms().await
    }
    async fn create_event(&self, req: &CreateEvent) -> Result<(), StoreError> {
        let r = self.inner.create_event(req).await;
        self.after(&req.event_id, r).await
    }
    async fn acquire_hold(&self, req: &AcquireHold) -> Result<HoldGrant, StoreError> {
        let r = self.inner.acquire_hold(req).await;
        self.after(&req.event_id, r).await
    }
    async fn release_hold(&self, req: &ReleaseHold) -> Result<Vec<SeatId>, StoreError> {
        let r = self.inner.release_hold(req).await;
        self.after(&req.event_id, r).await
    }
    async fn sweep_expired_holds(&self, limit_seats: u32) -> Result<Vec<ExpiredHold>, StoreError> {
        let swept = self.inner.sweep_expired_holds(limit_seats).await?;
        let mut events: Vec<&EventId> = swept.iter().map(|h| &h.event_id).collect();
        events.sort_unstable();
        events.dedup();
        for ev in events {
            self.changed(ev).await;
        }
        Ok(swept)
    }
    async fn begin_payment(&self, req: &BeginPayment) -> Result<BeginPaymentOutcome, StoreError> {
        let r = self.inner.begin_payment(req).await;
        self.after(&req.event_id, r).await
    }
    async fn record_payment_success(&self, req: &PaymentSuccess) -> Result<Recorded<SaleOutcome>, StoreError> {
        let r = self.inner.record_payment_success(req).await?;
        let order = match &r.outcome {
            SaleOutcome::Confirmed { order, .. } | SaleOutcome::Compensating { order, .. } => order,
        };
        self.changed(&order.event_id).await;
        Ok(r)
    }
    async fn record_payment_failure(
        &self,
        payment_op_id: PaymentOpId,
        reason: &str,
    ) -> Result<Recorded<Order>, StoreError> {
        let r = self.inner.record_payment_failure(payment_op_id, reason).await?;
        self.changed(&r.outcome.event_id).await;
        Ok(r)
    }
    async fn record_payment_unknown(&self, payment_op_id: PaymentOpId, error: &str) -> Result<Order, StoreError> {
        // The seats stay reserved: no seat changes.
        self.inner.record_payment_unknown(payment_op_id, error).await
    }
    async fn release_unresolved_payment(&self, payment_op_id: PaymentOpId, reason: &str) -> Result<Order, StoreError> {
        let order = self.inner.release_unresolved_payment(payment_op_id, reason).await?;
        self.changed(&order.event_id).await;
        Ok(order)
    }
    async fn claim_outbox(&self, limit: u32, lease_ms: i64) -> Result<Vec<OutboxEvent>, StoreError> {
        self.inner.claim_outbox(limit, lease_ms).await
    }
    async fn complete_outbox(&self, event_id: &EventId, outbox_id: OutboxId) -> Result<(), StoreError> {
        self.inner.complete_outbox(event_id, outbox_id).await
    }
    async fn retry_outbox(
        &self,
        event_id: &EventId,
        outbox_id: OutboxId,
        error: &str,
        retry_after_ms: i64,
    ) -> Result<(), StoreError> {
        self.inner.retry_outbox(event_id, outbox_id, error, retry_after_ms).await
    }
    async fn start_compensation_attempt(
        &self,
        compensation_id: CompensationId,
        lease_ms: i64,
    ) -> Result<CompensationAttempt, StoreError> {
        self.inner.start_compensation_attempt(compensation_id, lease_ms).await
    }
    async fn finish_compensation_attempt(&self, req: &CompensationResult) -> Result<Compensation, StoreError> {
        self.inner.finish_compensation_attempt(req).await
    }
    async fn compensation(&self, compensation_id: CompensationId) -> Result<Compensation, StoreError> {
        self.inner.compensation(compensation_id).await
    }
    async fn seat_map(&self, event_id: &EventId) -> Result<Vec<Seat>, StoreError> {
        self.inner.seat_map(event_id).await
    }
    async fn seat_map_version(&self, event_id: &EventId) -> Result<SeatMapVersion, StoreError> {
        self.inner.seat_map_version(event_id).await
    }
    async fn seats_in_state(
        &self,
        event_id: &EventId,
        state: SeatState,
    ) -> Result<(SeatMapVersion, Vec<Seat>), StoreError> {
        self.inner.seats_in_state(event_id, state).await
    }
    async fn order(&self, order_id: OrderId) -> Result<Order, StoreError> {
        self.inner.order(order_id).await
    }
    async fn payment_op(&self, payment_op_id: PaymentOpId) -> Result<PaymentOp, StoreError> {
        self.inner.payment_op(payment_op_id).await
    }
    async fn compensations_for_order(&self, order_id: OrderId) -> Result<Vec<Compensation>, StoreError> {
        self.inner.compensations_for_order(order_id).await
    }
    async fn order_details(&self, order_id: OrderId) -> Result<OrderDetails, StoreError> {
        self.inner.order_details(order_id).await
    }
    async fn bookings(&self, event_id: &EventId) -> Result<Vec<Booking>, StoreError> {
        self.inner.bookings(event_id).await
    }
    async fn claim_reconcile(
        &self,
        limit: u32,
        backoff: ReconcileBackoff,
    ) -> Result<Vec<(Order, PaymentOp)>, StoreError> {
        self.inner.claim_reconcile(limit, backoff).await
    }
    async fn needs_resolution(&self) -> Result<Resolution, StoreError> {
        self.inner.needs_resolution().await
    }
    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        self.inner.snapshot().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::http::cache::{CachedSeatMap, MemCache};
    use crate::ids::SeededIds;

    /// Only four handlers invalidated the cache; sweeps, sales,
    /// declines and the reconciler's releases left a stale seat map for its
    /// whole TTL. Every seat-map change invalidates now, and only those.
    #[tokio::test]
    async fn every_seat_map_change_invalidates_and_nothing_else_does() {
        let clock = ManualClock::new(1_000_000);
        let cache = Arc::new(MemCache::new(8));
        let store =
            InvalidatingStore::new(Arc::new(MemStore::new(clock.clone(), Arc::new(SeededIds::new(3)))), cache.clone());
        let cached = || async {
            cache.put(&"e".into(), &CachedSeatMap { etag: "\"sm-1-1\"".into(), body: b"{}".to_vec() }).await;
        };
        let gone = || async { cache.get(&"e".into()).await.is_none() };
        let seats = vec![SeatId::from("a"), SeatId::from("b")];
        store.create_event(&CreateEvent { event_id: "e".into(), seat_ids: seats, price_cents: 1 }).await.unwrap();
        let hold = |seat: SeatId| AcquireHold {
            event_id: "e".into(),
            seat_ids: vec![seat],
            holder_id: "u".into(),
            ttl_ms: 1_000,
            max_held_seats: None,
        };
        cached().await;
        store.acquire_hold(&hold("a".into())).await.unwrap();
        assert!(gone().await, "a hold");
        cached().await;
        assert!(store.acquire_hold(&hold("a".into())).await.is_err());
        assert!(!gone().await, "a refused hold changed nothing");
        cached().await;
        clock.advance_ms(2_000);
        assert_eq!(store.sweep_expired_holds(10).await.unwrap().len(), 1);
        assert!(gone().await, "a sweep (background)");
        let grant = store.acquire_hold(&hold("b".into())).await.unwrap();
        cached().await;
        let begin = BeginPayment {
            event_id: "e".into(),
            holder_id: "u".into(),
            hold_token: grant.hold_token,
            seat_ids: vec!["b".into()],
            idempotency_key: "k".into(),
            payment_ttl_ms: 10_000,
        };
        let order = store.begin_payment(&begin).await.unwrap().order;
        assert!(gone().await, "a checkout");
        cached().await;
        store.record_payment_unknown(order.payment_op_id, "timeout").await.unwrap();
        assert!(!gone().await, "an unknown outcome changes no seat");
        clock.advance_ms(10_000);
        store.release_unresolved_payment(order.payment_op_id, "deadline passed").await.unwrap();
        assert!(gone().await, "the reconciler's release (background)");
        cached().await;
        let sale = PaymentSuccess { payment_op_id: order.payment_op_id, provider_payment_id: "p".into() };
        store.record_payment_success(&sale).await.unwrap();
        assert!(gone().await, "a late success (webhook)");
        cached().await;
        assert!(store.seat_map(&EventId::from("e")).await.is_ok());
        assert!(!gone().await, "a read changes nothing");
    }
}
