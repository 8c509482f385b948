//! What each client request must be answered: the service's rules before
//! the store (credentials, validation, the per-user rate limit, the waiting
//! room's gate), the store calls the request must make, and the answer those
//! calls' answers make. The store's answers are taken as the store gave them
//! (whether they were right is the store model's question).
//!
//! [`status_of`] is the API's table of problem kinds and statuses (the
//! OpenAPI document's); [`ops`] judges the typed operations (hold, release,
//! checkout, order status, seat map).

pub mod conditional;
pub mod integer;
pub mod ops;
pub mod rate;
pub mod routes;
pub mod seat_ranges;
pub mod surface;

use booking::problem_kind::ProblemKind;

/// The HTTP status the API answers a problem of `kind` with.
pub fn status_of(kind: ProblemKind) -> u16 {
    use ProblemKind as K;
    match kind {
        K::InvalidInput | K::BadRequest | K::IdempotencyKeyRequired | K::BadWebhook => 400,
        K::Unauthorized | K::BadWebhookSignature => 401,
        K::Forbidden | K::NotHolder => 403,
        K::AdmissionRequired
        | K::AdmissionMalformed
        | K::AdmissionForged
        | K::AdmissionOtherEvent
        | K::AdmissionOtherUser
        | K::AdmissionExpired
        | K::AdmissionSessionEnded => 403,
        K::UnknownEvent
        | K::UnknownSeat
        | K::UnknownOrder
        | K::UnknownPaymentOp
        | K::UnknownOutboxEvent
        | K::UnknownCompensation
        | K::HoldNotFound
        | K::NotFound
        | K::NoWaitingRoom
        | K::NotALottery => 404,
        K::MethodNotAllowed => 405,
        K::EventExists
        | K::SeatUnavailable
        | K::HoldLimit
        | K::StaleToken
        | K::PaymentConflict
        | K::DeadlineNotPassed
        | K::OrderNotOpen
        | K::CompensationNotDue
        | K::WaitingRoomConflict
        | K::SoldOut => 409,
        K::HoldExpired => 410,
        K::PayloadTooLarge => 413,
        K::UnsupportedMediaType => 415,
        K::IdempotencyKeyReused => 422,
        K::RateLimited | K::QueueFull => 429,
        K::InvariantBreach | K::Internal => 500,
        K::Backend | K::Unavailable => 503,
        K::NotAProblem => 0,
    }
}

/// One acceptable answer: a status and a problem kind (refusals) or the
/// answer's recorded result (successes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// A refusal.
    Refused(u16, ProblemKind),
    /// A success.
    Answered(u16, crate::trace::OpResult),
}

impl Expected {
    /// A refusal of `kind`, with its status.
    pub fn refused(kind: ProblemKind) -> Self {
        Expected::Refused(status_of(kind), kind)
    }
}
