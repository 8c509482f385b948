//! The authoritative seat store: the [`Store`] trait, whose every write is one
//! short transaction making one conditional ownership change, and its two
//! implementations, [`MemStore`] (deterministic, simulation) and [`PgStore`]
//! (PostgreSQL, production). The differential test keeps them identical.

mod decide;
mod error;
pub mod machine;
mod mem;
mod observer;
pub mod outage;
mod pg;
mod rules;
mod types;

use crate::model::{
    Booking, Compensation, CompensationId, EventId, Order, OrderId, OutboxEvent, OutboxId, PaymentOp, PaymentOpId,
    Seat, SeatState, Snapshot,
};
pub use error::{ONE_BOOKING_BREACH, StoreError};
pub use mem::MemStore;
pub use observer::{Presented, SeatWriteCause, StoreObserver};
pub use pg::{PgClock, PgStore, circuit};
pub use rules::{PLANTED_SWEEP_AHEAD_MS, Rules};
pub use types::*;

use async_trait::async_trait;

/// The authoritative store. Every method is one short transaction; none is
/// held open across a caller's await on anything but the store itself.
///
/// Writes that change ownership are conditional on the current state, token,
/// holder and deadline, judged by the store's own clock. A write that does not
/// apply changes nothing and returns a named [`StoreError`].
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The store's clock, in ms since the Unix epoch: the time that decides expiry.
    async fn now_ms(&self) -> Result<i64, StoreError>;

    /// Creates an event with its seats, all `available`.
    /// Errors: `InvalidInput` (bad ids, no seats, duplicates, too many, negative price), `EventExists`.
    async fn create_event(&self, req: &CreateEvent) -> Result<(), StoreError>;

    /// Holds every seat of `req.seat_ids` for `req.holder_id` for `req.ttl_ms`,
    /// or none of them. Seats are locked in sorted order; expired holds are taken over.
    /// Errors: `InvalidInput`, `UnknownEvent`, `UnknownSeat`, `SeatUnavailable`.
    async fn acquire_hold(&self, req: &AcquireHold) -> Result<HoldGrant, StoreError>;

    /// Releases a hold by its holder. The token and holder must match a `held` seat set.
    /// Errors: `InvalidInput`, `UnknownEvent`, `HoldNotFound`, `NotHolder`.
    async fn release_hold(&self, req: &ReleaseHold) -> Result<Vec<SeatId>, StoreError>;

    /// Returns expired holds to `available` (at most `limit_seats` seats), oldest deadline first.
    async fn sweep_expired_holds(&self, limit_seats: u32) -> Result<Vec<ExpiredHold>, StoreError>;

    /// Moves a live hold to `payment_pending` and creates its order, payment
    /// operation and charge dispatch event, and records the idempotency key, in
    /// one transaction. A retry with the same key and the same hold returns the
    /// committed order (`replayed = true`) and writes nothing.
    /// Errors: `InvalidInput`, `UnknownEvent`, `HoldNotFound`, `StaleToken`,
    /// `NotHolder`, `HoldExpired`, `IdempotencyKeyReused`.
    async fn begin_payment(&self, req: &BeginPayment) -> Result<BeginPaymentOutcome, StoreError>;

    /// The provider says the operation was charged. While the order still owns
    /// its seats: sells them and creates one booking per seat. Otherwise: records
    /// the charge and opens a tracked compensation (never a second ticket).
    /// Idempotent: a repeat returns the first outcome with
    /// [`Recorded::decided_now`] false; only the call that recorded the
    /// success has it true (decided in the same conditional write).
    /// Errors: `UnknownPaymentOp`, `PaymentConflict` (it was recorded as declined).
    async fn record_payment_success(&self, req: &PaymentSuccess) -> Result<Recorded<SaleOutcome>, StoreError>;

    /// The provider declined the operation: releases the seats, order `failed`
    /// (an order that no longer owns its seats is returned unchanged).
    /// Idempotent for an already failed operation: a repeat returns the order
    /// with [`Recorded::decided_now`] false; only the call that recorded the
    /// failure has it true (decided in the same conditional write).
    /// Errors: `UnknownPaymentOp`, `PaymentConflict` (already charged).
    async fn record_payment_failure(
        &self,
        payment_op_id: PaymentOpId,
        reason: &str,
    ) -> Result<Recorded<Order>, StoreError>;

    /// The provider's answer was lost: order `reconciling`; the seats stay reserved.
    /// A no-op for an order that is already resolved.
    /// Errors: `UnknownPaymentOp`.
    async fn record_payment_unknown(&self, payment_op_id: PaymentOpId, error: &str) -> Result<Order, StoreError>;

    /// Releases the seats of an unresolved payment whose deadline has passed by
    /// the store's clock, recording the decision and `reason`.
    /// Errors: `UnknownPaymentOp`, `DeadlineNotPassed`, `OrderNotOpen`.
    async fn release_unresolved_payment(&self, payment_op_id: PaymentOpId, reason: &str) -> Result<Order, StoreError>;

    /// Claims up to `limit` due dispatch events, leasing each for `lease_ms`
    /// (a crashed dispatcher's claim comes back after the lease). Oldest first.
    async fn claim_outbox(&self, limit: u32, lease_ms: i64) -> Result<Vec<OutboxEvent>, StoreError>;

    /// Marks a dispatch event done. Idempotent.
    /// Errors: `UnknownOutboxEvent`.
    async fn complete_outbox(&self, event_id: &EventId, outbox_id: OutboxId) -> Result<(), StoreError>;

    /// Records a failed attempt on a dispatch event and makes it due again at
    /// `now + retry_after_ms`. Errors: `UnknownOutboxEvent`.
    async fn retry_outbox(
        &self,
        event_id: &EventId,
        outbox_id: OutboxId,
        error: &str,
        retry_after_ms: i64,
    ) -> Result<(), StoreError>;

    /// Starts an attempt on a due compensation: `in_flight`, attempts + 1, leased
    /// until `now + attempt_lease_ms` (held in `next_attempt_at_ms`). Due means
    /// `requested` with its backoff passed, or `in_flight` with its lease expired:
    /// the attempt's dispatcher never reported back, and this attempt takes it
    /// over (reported in [`CompensationAttempt::took_over`]; the refund key makes
    /// a repeat safe). The lease should exceed the provider call's timeout.
    /// Errors: `InvalidInput` (lease not 1..=[`MAX_RETRY_DELAY_MS`]),
    /// `UnknownCompensation`, `CompensationNotDue`.
    async fn start_compensation_attempt(
        &self,
        compensation_id: CompensationId,
        attempt_lease_ms: i64,
    ) -> Result<CompensationAttempt, StoreError>;

    /// Records an attempt's result. `Succeeded`: `succeeded` and the order
    /// `compensated`, whichever attempt (or webhook) reports it. `Failed` or
    /// `Unknown` for the current `in_flight` attempt: back to `requested` due at
    /// `now + retry_after_ms`, or `failed` (and the order `compensation_failed`)
    /// once `attempts >= max_attempts`; an unknown outcome's `last_error` starts
    /// with [`UNKNOWN_OUTCOME_PREFIX`]. A stale `Failed`/`Unknown` (another attempt
    /// took over, or it was recorded already) and anything on a final
    /// compensation change nothing and return the compensation as it is.
    /// Errors: `InvalidInput`, `UnknownCompensation`.
    async fn finish_compensation_attempt(&self, req: &CompensationResult) -> Result<Compensation, StoreError>;

    /// One compensation. Errors: `UnknownCompensation`.
    async fn compensation(&self, compensation_id: CompensationId) -> Result<Compensation, StoreError>;

    /// The seats of an event, sorted by seat id. Errors: `UnknownEvent`.
    async fn seat_map(&self, event_id: &EventId) -> Result<Vec<Seat>, StoreError>;

    /// The version of the event's seat map: what
    /// [`SeatMapVersion::of_seats`] gives for [`Store::seat_map`]'s seats at
    /// the same moment, read without transferring or copying any seat (one
    /// aggregate statement; no transaction held open). Cheap enough to answer
    /// every conditional read. Errors: `UnknownEvent`, exactly as `seat_map`.
    async fn seat_map_version(&self, event_id: &EventId) -> Result<SeatMapVersion, StoreError>;

    /// The event's seats in `state`, sorted by seat id, with the version of
    /// its whole map read at the same moment (a filtered view's entity tag is
    /// [`SeatMapVersion::etag_for`] that version). Only the matching seats are
    /// copied or transferred: a "find me a seat" poll of a sold-out event
    /// costs an aggregate and an empty read. Errors: `UnknownEvent`, exactly
    /// as `seat_map`.
    async fn seats_in_state(
        &self,
        event_id: &EventId,
        state: SeatState,
    ) -> Result<(SeatMapVersion, Vec<Seat>), StoreError>;

    /// One order. Errors: `UnknownOrder`.
    async fn order(&self, order_id: OrderId) -> Result<Order, StoreError>;

    /// One payment operation. Errors: `UnknownPaymentOp`.
    async fn payment_op(&self, payment_op_id: PaymentOpId) -> Result<PaymentOp, StoreError>;

    /// The compensations of an order, by id.
    async fn compensations_for_order(&self, order_id: OrderId) -> Result<Vec<Compensation>, StoreError>;

    /// One order with its confirmed bookings and its compensations, read in
    /// one snapshot: what a status poll shows, without reading the event's
    /// other bookings. `UnknownOrder` when there is none.
    async fn order_details(&self, order_id: OrderId) -> Result<OrderDetails, StoreError>;

    /// Every booking of an event, sorted by seat.
    async fn bookings(&self, event_id: &EventId) -> Result<Vec<Booking>, StoreError>;

    /// Claims up to `limit` payments due a provider check, for one reconciler,
    /// oldest payment deadline first, and returns each with its order and its
    /// payment operation as the claim left it. Due (the shared decision
    /// `reconcile_due`): the order owns its seats (`pending`,
    /// `reconciling`) with the outcome open; the outcome is `unknown` or the
    /// payment deadline has come (a `pending` payment before its deadline is
    /// the dispatcher's); and `next_check_at_ms <= now` (store clock).
    ///
    /// In the same write each claimed operation counts one more check and is
    /// due again at `now + min(backoff.base_ms << checks, backoff.cap_ms)`
    /// (`checks` before the claim), but no later than its payment deadline
    /// while that is still ahead. So across all reconcilers a payment is
    /// checked once per backoff step, and a claimer that dies leaves the
    /// payment due again at its next check. Payments another transaction has
    /// locked right now are skipped (due again next pass).
    /// Errors: `InvalidInput` (`backoff` not `1 <= base_ms <= cap_ms <=`
    /// [`MAX_RETRY_DELAY_MS`]).
    async fn claim_reconcile(
        &self,
        limit: u32,
        backoff: ReconcileBackoff,
    ) -> Result<Vec<(Order, PaymentOp)>, StoreError>;

    /// What operators must see, so that nothing charged is invisible: every
    /// order charged without a ticket whose compensation has not succeeded,
    /// every `reconciling` order, every `released` order whose payment
    /// operation is still `pending`/`unknown` (possibly charged), and every
    /// compensation not yet succeeded. Canonical order (see [`Resolution`]).
    async fn needs_resolution(&self) -> Result<Resolution, StoreError>;

    /// Everything, in canonical order. For checkers and tests; not for hot paths.
    async fn snapshot(&self) -> Result<Snapshot, StoreError>;
}

/// Convenience re-export of the seat id type for the trait's signatures.
pub use crate::model::SeatId;
