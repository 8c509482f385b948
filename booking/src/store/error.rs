//! The named errors of the store.

use crate::model::{CompensationId, EventId, OrderId, OutboxId, PaymentOpId, SeatId};
use crate::problem_kind::ProblemKind;

/// The [`StoreError::InvariantBreach`] of a sale the one-confirmed-booking-
/// per-seat rule refused (PostgreSQL's `bookings_one_confirmed_per_seat`
/// index, MemStore's twin check): only a bug above the store can cause it.
pub const ONE_BOOKING_BREACH: &str =
    "a second confirmed booking for one seat was refused by bookings_one_confirmed_per_seat";

/// Why a store operation did not apply. Every variant but `Backend` and
/// `InvariantBreach` is the caller's to handle (a 4xx); `Backend` is the
/// store failing (a 503, retryable); `InvariantBreach` is a bug (a 500, not
/// retryable, logged loudly).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The request is malformed (bad id, empty or oversized selection, bad TTL, ...).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// No such event.
    #[error("unknown event {0}")]
    UnknownEvent(EventId),
    /// The event already exists.
    #[error("event {0} already exists")]
    EventExists(EventId),
    /// A requested seat does not exist in the event.
    #[error("unknown seat {seat_id} in event {event_id}")]
    UnknownSeat {
        /// The event.
        event_id: EventId,
        /// The first (in sorted order) unknown seat.
        seat_id: SeatId,
    },
    /// A requested seat is owned by someone else (held, pending or sold).
    #[error("seat {seat_id} of event {event_id} is not available")]
    SeatUnavailable {
        /// The event.
        event_id: EventId,
        /// The first (in sorted order) unavailable seat.
        seat_id: SeatId,
    },
    /// The hold would leave its holder with more seats of the event at once
    /// (held and unexpired, or in payment) than the cap allows.
    #[error(
        "holder already has {held} seats of event {event_id} held or in payment; at most {limit} at once (this hold asks for {requested})"
    )]
    HoldLimit {
        /// The event.
        event_id: EventId,
        /// The cap.
        limit: u32,
        /// Seats the holder has now.
        held: u32,
        /// Seats this hold would add.
        requested: u32,
    },
    /// No seat carries this hold token (never issued, released, or already checked out).
    #[error("no hold with this token")]
    HoldNotFound,
    /// The token was once valid for these seats but another token owns them now.
    #[error("stale hold token: the seats are owned by another hold")]
    StaleToken,
    /// The token is current but belongs to another user.
    #[error("the hold belongs to another user")]
    NotHolder,
    /// The hold's deadline has passed by the store's clock.
    #[error("the hold expired at {expired_at_ms}")]
    HoldExpired {
        /// When it expired.
        expired_at_ms: i64,
    },
    /// The idempotency key was used before with a different request.
    #[error("idempotency key reused with a different request")]
    IdempotencyKeyReused,
    /// No such order.
    #[error("unknown order {0}")]
    UnknownOrder(OrderId),
    /// No such payment operation.
    #[error("unknown payment operation {0}")]
    UnknownPaymentOp(PaymentOpId),
    /// The provider's outcomes for an operation contradict each other.
    #[error("payment operation {0} already has a contradicting outcome")]
    PaymentConflict(PaymentOpId),
    /// The payment deadline has not passed yet.
    #[error("payment deadline not passed (at {deadline_at_ms})")]
    DeadlineNotPassed {
        /// The deadline.
        deadline_at_ms: i64,
    },
    /// The order no longer owns seats (already resolved).
    #[error("order {0} is already resolved")]
    OrderNotOpen(OrderId),
    /// No such dispatch event.
    #[error("unknown outbox event {0}")]
    UnknownOutboxEvent(OutboxId),
    /// No such compensation.
    #[error("unknown compensation {0}")]
    UnknownCompensation(CompensationId),
    /// The compensation is not `requested` or not due yet.
    #[error("compensation {0} is not due")]
    CompensationNotDue(CompensationId),
    /// The backing store failed (connection, deadlock retries exhausted, ...).
    #[error("store backend error: {0}")]
    Backend(String),
    /// A store invariant refused the write, or a record broke one (the
    /// one-confirmed-booking index fired, an open order does not own its
    /// seats, a row holds an unknown state): a bug above the store, not an
    /// outage. Nothing was written.
    #[error("invariant violated: {0}")]
    InvariantBreach(String),
}

impl StoreError {
    /// A stable machine name, used as the problem `type` on HTTP and in traces.
    pub fn kind(&self) -> ProblemKind {
        match self {
            StoreError::InvalidInput(_) => ProblemKind::InvalidInput,
            StoreError::UnknownEvent(_) => ProblemKind::UnknownEvent,
            StoreError::EventExists(_) => ProblemKind::EventExists,
            StoreError::UnknownSeat { .. } => ProblemKind::UnknownSeat,
            StoreError::SeatUnavailable { .. } => ProblemKind::SeatUnavailable,
            StoreError::HoldLimit { .. } => ProblemKind::HoldLimit,
            StoreError::HoldNotFound => ProblemKind::HoldNotFound,
            StoreError::StaleToken => ProblemKind::StaleToken,
            StoreError::NotHolder => ProblemKind::NotHolder,
            StoreError::HoldExpired { .. } => ProblemKind::HoldExpired,
            StoreError::IdempotencyKeyReused => ProblemKind::IdempotencyKeyReused,
            StoreError::UnknownOrder(_) => ProblemKind::UnknownOrder,
            StoreError::UnknownPaymentOp(_) => ProblemKind::UnknownPaymentOp,
            StoreError::PaymentConflict(_) => ProblemKind::PaymentConflict,
            StoreError::DeadlineNotPassed { .. } => ProblemKind::DeadlineNotPassed,
            StoreError::OrderNotOpen(_) => ProblemKind::OrderNotOpen,
            StoreError::UnknownOutboxEvent(_) => ProblemKind::UnknownOutboxEvent,
            StoreError::UnknownCompensation(_) => ProblemKind::UnknownCompensation,
            StoreError::CompensationNotDue(_) => ProblemKind::CompensationNotDue,
            StoreError::Backend(_) => ProblemKind::Backend,
            StoreError::InvariantBreach(_) => ProblemKind::InvariantBreach,
        }
    }
}
