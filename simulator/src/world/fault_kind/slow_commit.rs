//! `faults.slow_commit`'s part in a world: slow disk commits. During the
//! fault phase a store write waits `delay_ms` before it reaches the store
//! (queued behind a slow disk) with the scenario's probability, drawn per
//! write from a stream of its own. It lands at the store's time after the
//! wait (a hold may have expired meanwhile); a client that gives up
//! meanwhile does not know whether it will land, and its retry may overtake
//! it; a handler dropped meanwhile (its client hung up, its host crashed)
//! never writes.

use super::Strike;
use crate::world::config::{WorldConfig, host_seed};
use crate::world::recorder::Recorder;
use async_trait::async_trait;
use booking::model::{
    Booking, Compensation, CompensationId, EventId, Order, OrderId, OutboxEvent, OutboxId, PaymentOp, PaymentOpId,
    Seat, SeatId, SeatState, Snapshot,
};
use booking::store::*;
use invariants::trace::FaultEvent;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `faults.slow_commit`: wraps the shared store.
impl Strike for scenarios::SlowCommit {
    fn store(cfg: &WorldConfig, seed: u64, store: Arc<dyn Store>, recorder: &Recorder) -> Arc<dyn Store> {
        match &cfg.faults.slow_commit {
            Some(slow) => Arc::new(SlowCommitStore {
                inner: store,
                probability: slow.probability,
                delay_ms: u64::try_from(slow.delay_ms).expect("validated delay"),
                fault_ms: cfg.fault_ms,
                rng: Mutex::new(ChaCha8Rng::seed_from_u64(host_seed(seed, "slow_commit"))),
                recorder: recorder.clone(),
            }),
            None => store,
        }
    }

    fn describe(faults: &scenarios::Faults) -> Option<String> {
        let s = faults.slow_commit.as_ref()?;
        Some(format!("slow commit (per store write, its own stream): p={} waits {} ms", s.probability, s.delay_ms))
    }
}

/// A store whose writes may wait before they commit, within the fault phase.
struct SlowCommitStore {
    inner: Arc<dyn Store>,
    /// Per write, in `0.0..=1.0`.
    probability: f64,
    /// How late, ms.
    delay_ms: u64,
    /// The fault phase's end, simulated ms since the world started.
    fault_ms: u64,
    /// The kind's own stream: one draw per write in the fault phase.
    rng: Mutex<ChaCha8Rng>,
    recorder: Recorder,
}

impl SlowCommitStore {
    /// Runs `write` at once, or `delay_ms` later when the draw says so.
    /// Outside a simulated host (the world's own calls) and after the fault
    /// phase, at once.
    async fn slowly<T>(&self, call: &'static str, write: impl Future<Output = T>) -> T {
        if let Some(elapsed) = turmoil::sim_elapsed()
            && elapsed < Duration::from_millis(self.fault_ms)
            && self.rng.lock().expect("one world, one thread").random_bool(self.probability)
        {
            self.recorder.fault(FaultEvent::CommitSlowed, format!("{call} waits {} ms to commit", self.delay_ms));
            tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        }
        write.await
    }
}

#[async_trait]
impl Store for SlowCommitStore {
    async fn now_ms(&self) -> Result<i64, StoreError> {
        self.inner.now_ms().await
    }
    async fn create_event(&self, req: &CreateEvent) -> Result<(), StoreError> {
        self.slowly("create_event", self.inner.create_event(req)).await
    }
    async fn acquire_hold(&self, req: &AcquireHold) -> Result<HoldGrant, StoreError> {
        self.slowly("acquire_hold", self.inner.acquire_hold(req)).await
    }
    async fn release_hold(&self, req: &ReleaseHold) -> Result<Vec<SeatId>, StoreError> {
        self.slowly("release_hold", self.inner.release_hold(req)).await
    }
    async fn sweep_expired_holds(&self, limit_seats: u32) -> Result<Vec<ExpiredHold>, StoreError> {
        self.slowly("sweep_expired_holds", self.inner.sweep_expired_holds(limit_seats)).await
    }
    async fn begin_payment(&self, req: &BeginPayment) -> Result<BeginPaymentOutcome, StoreError> {
        self.slowly("begin_payment", self.inner.begin_payment(req)).await
    }
    async fn record_payment_success(&self, req: &PaymentSuccess) -> Result<Recorded<SaleOutcome>, StoreError> {
        self.slowly("record_payment_success", self.inner.record_payment_success(req)).await
    }
    async fn record_payment_failure(&self, id: PaymentOpId, reason: &str) -> Result<Recorded<Order>, StoreError> {
        self.slowly("record_payment_failure", self.inner.record_payment_failure(id, reason)).await
    }
    async fn record_payment_unknown(&self, id: PaymentOpId, error: &str) -> Result<Order, StoreError> {
        self.slowly("record_payment_unknown", self.inner.record_payment_unknown(id, error)).await
    }
    async fn release_unresolved_payment(&self, id: PaymentOpId, reason: &str) -> Result<Order, StoreError> {
        self.slowly("release_unresolved_payment", self.inner.release_unresolved_payment(id, reason)).await
    }
    async fn claim_outbox(&self, limit: u32, lease_ms: i64) -> Result<Vec<OutboxEvent>, StoreError> {
        self.slowly("claim_outbox", self.inner.claim_outbox(limit, lease_ms)).await
    }
    async fn complete_outbox(&self, event_id: &EventId, outbox_id: OutboxId) -> Result<(), StoreError> {
        self.slowly("complete_outbox", self.inner.complete_outbox(event_id, outbox_id)).await
    }
    async fn retry_outbox(
        &self,
        event_id: &EventId,
        id: OutboxId,
        error: &str,
        after_ms: i64,
    ) -> Result<(), StoreError> {
        self.slowly("retry_outbox", self.inner.retry_outbox(event_id, id, error, after_ms)).await
    }
    async fn start_compensation_attempt(
        &self,
        id: CompensationId,
        lease_ms: i64,
    ) -> Result<CompensationAttempt, StoreError> {
        self.slowly("start_compensation_attempt", self.inner.start_compensation_attempt(id, lease_ms)).await
    }
    async fn finish_compensation_attempt(&self, req: &CompensationResult) -> Result<Compensation, StoreError> {
        self.slowly("finish_compensation_attempt", self.inner.finish_compensation_attempt(req)).await
    }
    async fn compensation(&self, id: CompensationId) -> Result<Compensation, StoreError> {
        self.inner.compensation(id).await
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
    async fn order(&self, id: OrderId) -> Result<Order, StoreError> {
        self.inner.order(id).await
    }
    async fn payment_op(&self, id: PaymentOpId) -> Result<PaymentOp, StoreError> {
        self.inner.payment_op(id).await
    }
    async fn compensations_for_order(&self, id: OrderId) -> Result<Vec<Compensation>, StoreError> {
        self.inner.compensations_for_order(id).await
    }
    async fn order_details(&self, id: OrderId) -> Result<OrderDetails, StoreError> {
        self.inner.order_details(id).await
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
    /// Never down: the checkers' own read.
    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        self.inner.snapshot().await
    }
}

#[cfg(test)]
mod tests {
    use crate::world::plan;
    use invariants::trace::{FaultEvent, TraceKind};
    use scenarios::SlowCommit;

    /// Runs library scenario `onsale-rush`'s seed 0 with slow commits at
    /// `probability`, each `delay_ms` late: the run's slowed commits and unknown outcomes.
    fn run(probability: f64, delay_ms: i64) -> (usize, usize) {
        let mut cfg = plan::find("onsale-rush").expect("library scenario").world_for(0);
        cfg.faults.slow_commit = Some(SlowCommit { probability, delay_ms });
        let out = crate::world::run(&cfg, 0);
        drop(std::panic::take_hook());
        assert!(out.error.is_none(), "ran: {:?}", out.error);
        assert!(out.violations.is_empty(), "every invariant holds: {:?}", out.violations);
        let count = |f: fn(&TraceKind) -> bool| out.trace.iter().filter(|e| f(&e.kind)).count();
        let slowed = count(|k| matches!(k, TraceKind::Fault { kind: FaultEvent::CommitSlowed, .. }));
        (slowed, count(|k| matches!(k, TraceKind::Unknown { .. })))
    }

    #[test]
    fn slow_commits_leave_clients_unknown_outcomes_and_every_invariant_holds() {
        let (slowed, unknown) = run(0.3, 5_000);
        assert!(slowed > 0, "commits were slowed");
        assert!(unknown > 0, "a client gave up waiting on a slowed commit");
        assert_eq!(run(0.0, 5_000).0, 0, "no commit is slowed at probability 0");
    }
}
