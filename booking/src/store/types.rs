//! Requests and results of the [`Store`](super::Store) operations, with the
//! input validation both stores share (so they refuse exactly the same inputs).

use super::StoreError;
use crate::model::{
    Booking, Compensation, CompensationId, CompensationStatus, EventId, HoldToken, MAX_HOLD_TTL_MS,
    MAX_IDEMPOTENCY_KEY_LEN, MAX_PAYMENT_TTL_MS, MAX_SEATS_PER_EVENT, MAX_SEATS_PER_HOLD, Order, PaymentOpId, Seat,
    SeatId, SeatState, UserId, valid_id,
};
use serde::{Deserialize, Serialize};

/// Highest seat price, in cents (a million in the currency's main unit).
pub const MAX_PRICE_CENTS: i64 = 100_000_000;

/// Create an event with its seats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateEvent {
    /// The new event's id.
    pub event_id: EventId,
    /// Its seats; unique, 1..=[`MAX_SEATS_PER_EVENT`].
    pub seat_ids: Vec<SeatId>,
    /// Price of one seat in cents, >= 0.
    pub price_cents: i64,
}

/// Hold seats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcquireHold {
    /// The event.
    pub event_id: EventId,
    /// The selection: unique, 1..=[`MAX_SEATS_PER_HOLD`] (any order; locked sorted).
    pub seat_ids: Vec<SeatId>,
    /// Who holds.
    pub holder_id: UserId,
    /// How long, 1..=[`MAX_HOLD_TTL_MS`].
    pub ttl_ms: i64,
    /// At most this many seats of the event held by `holder_id` at once,
    /// counting this hold (held and unexpired, or in payment), 1..=[`MAX_SEATS_PER_EVENT`];
    /// `None`: no cap. Enforced in the hold's own transaction, so concurrent
    /// holds by one user cannot pass it together.
    pub max_held_seats: Option<u32>,
}

/// A seat of a granted hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldSeat {
    /// The seat.
    pub seat_id: SeatId,
    /// Its version after the hold.
    pub version: i64,
}

/// An expired hold that a new hold took over (an abandoned hold, reclaimed inline).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimedHold {
    /// The seat.
    pub seat_id: SeatId,
    /// When the old hold expired.
    pub expired_at_ms: i64,
}

/// A granted hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldGrant {
    /// The event.
    pub event_id: EventId,
    /// The holder.
    pub holder_id: UserId,
    /// The new token; every seat of the selection carries it.
    pub hold_token: HoldToken,
    /// The seats, sorted, with their new versions.
    pub seats: Vec<HeldSeat>,
    /// When the hold expires, by the store's clock.
    pub expires_at_ms: i64,
    /// The store's clock when the hold was granted.
    pub granted_at_ms: i64,
    /// Expired holds taken over by this one, sorted by seat.
    pub reclaimed: Vec<ReclaimedHold>,
}

/// Release a hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseHold {
    /// The event.
    pub event_id: EventId,
    /// The holder.
    pub holder_id: UserId,
    /// The hold's token.
    pub hold_token: HoldToken,
}

/// A hold the sweeper returned to `available`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpiredHold {
    /// The event.
    pub event_id: EventId,
    /// The seat.
    pub seat_id: SeatId,
    /// When it expired.
    pub expired_at_ms: i64,
    /// When the sweeper reclaimed it (store clock); minus `expired_at_ms` is the expiry lag.
    pub reclaimed_at_ms: i64,
}

/// Check out a hold: begin its payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeginPayment {
    /// The event.
    pub event_id: EventId,
    /// The buyer; must be the holder.
    pub holder_id: UserId,
    /// The hold's token; must be current.
    pub hold_token: HoldToken,
    /// The hold's seats; must be exactly the seats the token holds (a part of a hold is `InvalidInput`).
    pub seat_ids: Vec<SeatId>,
    /// The client's idempotency key (1..=[`MAX_IDEMPOTENCY_KEY_LEN`] printable ASCII), scoped to the holder.
    pub idempotency_key: String,
    /// How long the payment may stay unresolved before its seats may be released, 1..=[`MAX_PAYMENT_TTL_MS`].
    pub payment_ttl_ms: i64,
}

/// The result of [`BeginPayment`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeginPaymentOutcome {
    /// The order, as it is now.
    pub order: Order,
    /// True when the idempotency key found an order committed earlier.
    pub replayed: bool,
}

/// The provider says a payment operation was charged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentSuccess {
    /// The operation.
    pub payment_op_id: PaymentOpId,
    /// The provider's payment id.
    pub provider_payment_id: String,
}

/// The result of [`PaymentSuccess`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaleOutcome {
    /// The seats were sold: one booking per seat.
    Confirmed {
        /// The order, now `confirmed`.
        order: Order,
        /// Its bookings, sorted by seat.
        bookings: Vec<Booking>,
    },
    /// The order no longer owned its seats: a compensation was opened.
    Compensating {
        /// The order, now `compensating`.
        order: Order,
        /// The compensation to carry out.
        compensation: Compensation,
    },
}

/// What recording a payment's final outcome (success or failure) returned,
/// and whether this call decided it.
///
/// `decided_now` is decided inside the same conditional write that records
/// the outcome: true for exactly one call per payment operation (the one that
/// moved it from `pending`/`unknown` to final), false for every idempotent
/// repeat, which returns the outcome as recorded first. Count decisions with
/// it; never with a read of the operation before the call (read-then-decide).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded<T> {
    /// What the store holds now: the first (and only) outcome.
    pub outcome: T,
    /// True when this call recorded the outcome; false for a repeat.
    pub decided_now: bool,
}

/// A compensation attempt that was started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompensationAttempt {
    /// The compensation, now `in_flight`: `attempts` counts this attempt (its
    /// number, to report with in [`CompensationOutcome`]) and
    /// `next_attempt_at_ms` is the end of its lease.
    pub compensation: Compensation,
    /// `Some` when this attempt took over an `in_flight` attempt whose lease
    /// had expired (its dispatcher never reported back); `None` when it started
    /// from `requested`.
    pub took_over: Option<ExpiredAttempt>,
}

/// An `in_flight` compensation attempt whose lease expired before its result
/// was recorded, taken over by a new attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpiredAttempt {
    /// The abandoned attempt's number.
    pub attempt: i32,
    /// When its lease expired, by the store's clock.
    pub lease_expired_at_ms: i64,
}

/// What one compensation attempt found out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompensationOutcome {
    /// The money went back. Applies whichever attempt (or webhook) reports it,
    /// while the compensation is not final.
    Succeeded,
    /// Definitely nothing went back through attempt `attempt` (the provider
    /// refused the refund, or the request never reached it).
    Failed {
        /// The attempt reported on (its `attempts` when it started).
        attempt: i32,
        /// The provider's error.
        error: String,
    },
    /// Attempt `attempt`'s answer was lost: the money may have gone back. The
    /// next attempt (same refund key) finds out. Recorded as
    /// `last_error = "outcome unknown: <error>"`.
    Unknown {
        /// The attempt reported on (its `attempts` when it started).
        attempt: i32,
        /// What went wrong talking to the provider.
        error: String,
    },
}

/// The prefix of a compensation's `last_error` recorded from a
/// [`CompensationOutcome::Unknown`]: a `failed` compensation whose last error
/// starts with it may have been refunded after all (ask the provider with its
/// refund key before giving money back by hand).
pub const UNKNOWN_OUTCOME_PREFIX: &str = "outcome unknown: ";

/// The result of one compensation attempt.
///
/// Fencing: a `Failed` or `Unknown` result for an attempt that is no longer
/// the compensation's current `in_flight` attempt (its lease expired and a
/// later attempt took over, or it was already recorded) is stale and changes
/// nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompensationResult {
    /// The compensation.
    pub compensation_id: CompensationId,
    /// What the attempt found out.
    pub outcome: CompensationOutcome,
    /// When not succeeded and attempts remain: the delay before the next attempt.
    pub retry_after_ms: i64,
    /// Attempts allowed in all for this outcome: a `Failed` or `Unknown`
    /// result with `attempts >= max_attempts` makes the compensation `failed`
    /// (callers give unknown outcomes a longer bound: they may have refunded).
    pub max_attempts: i32,
}

/// One order with what its buyer is shown of it, read in one snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderDetails {
    /// The order.
    pub order: Order,
    /// Its confirmed bookings, by (seat, booking id).
    pub bookings: Vec<Booking>,
    /// Its compensations, by id.
    pub compensations: Vec<Compensation>,
}

/// What operators must see.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    /// By (event, order id): orders charged without a ticket whose money is not
    /// back yet (`compensating`, `compensation_failed`), orders whose payment
    /// outcome is unknown (`reconciling`), and orders `released` at their
    /// deadline whose payment operation is still `pending` or `unknown`
    /// (possibly charged: the dispatcher is canceling them at the provider).
    pub orders: Vec<Order>,
    /// Compensations not yet `succeeded`, by (event, id).
    pub compensations: Vec<Compensation>,
}

/// The version of one event's seat map: its seat count and the sum of its
/// seats' versions. Every seat write bumps that seat's version by one and
/// versions never go down, so the sum grows with every change of the map and
/// two reads of one event with equal versions saw the same seats (the count
/// guards against seats being added; today an event's seats are fixed at
/// creation). Comparable only between reads of the same event.
///
/// Read cheaply with [`Store::seat_map_version`](super::Store::seat_map_version);
/// [`SeatMapVersion::of_seats`] computes the same value from a seat map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SeatMapVersion {
    /// How many seats the event has (1..=[`MAX_SEATS_PER_EVENT`]).
    pub seats: i64,
    /// The sum of their versions (>= 0).
    pub version_sum: i64,
}

impl SeatMapVersion {
    /// The version of the seat map `seats` (one event's seats, as
    /// [`Store::seat_map`](super::Store::seat_map) returns them).
    ///
    /// Panics if a version is negative, the event has more than
    /// [`MAX_SEATS_PER_EVENT`] seats, or the sum overflows `i64` (more than
    /// 2^63 seat writes): all break the store's invariants.
    pub fn of_seats<'a>(seats: impl IntoIterator<Item = &'a Seat>) -> Self {
        let mut v = Self { seats: 0, version_sum: 0 };
        for s in seats {
            assert!(s.version >= 0, "seat versions are never negative");
            v.seats += 1;
            v.version_sum =
                v.version_sum.checked_add(s.version).expect("the seat versions of one event sum to at most i64::MAX");
        }
        assert!(v.seats as usize <= MAX_SEATS_PER_EVENT, "an event has at most {MAX_SEATS_PER_EVENT} seats");
        v
    }

    /// The HTTP entity tag of a seat map at this version: a strong, quoted
    /// tag, `"sm-<seats>-<version_sum>"` (e.g. `"sm-100-4711"`).
    pub fn etag(&self) -> String {
        self.etag_for(None)
    }

    /// The entity tag of the view of this version that shows only the seats
    /// in `state` (`None`: every seat, as [`SeatMapVersion::etag`]). Views of
    /// one version differ, so their strong tags do; any seat change changes
    /// every view's tag (some needlessly: still a valid validator).
    pub fn etag_for(&self, state: Option<SeatState>) -> String {
        assert!(self.seats >= 0 && self.version_sum >= 0);
        match state {
            None => format!("\"sm-{}-{}\"", self.seats, self.version_sum),
            Some(state) => format!("\"sm-{}-{}-{}\"", self.seats, self.version_sum, state.as_str()),
        }
    }
}

/// Whether a compensation is still open for operators.
pub fn compensation_open(c: &Compensation) -> bool {
    c.status != CompensationStatus::Succeeded
}

fn check_id(what: &str, id: &str) -> Result<(), StoreError> {
    if valid_id(id) {
        Ok(())
    } else {
        Err(StoreError::InvalidInput(format!("{what} must be 1..=64 characters of [A-Za-z0-9_.-]")))
    }
}

/// Sorts `seat_ids`, refusing invalid, duplicate, empty or oversized lists.
fn sorted_unique(seat_ids: &[SeatId], max: usize) -> Result<Vec<SeatId>, StoreError> {
    if seat_ids.is_empty() {
        return Err(StoreError::InvalidInput("seat_ids must not be empty".into()));
    }
    if seat_ids.len() > max {
        return Err(StoreError::InvalidInput(format!("at most {max} seats")));
    }
    for s in seat_ids {
        check_id("seat_id", s)?;
    }
    let mut sorted = seat_ids.to_vec();
    sorted.sort();
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        return Err(StoreError::InvalidInput("seat_ids must be unique".into()));
    }
    Ok(sorted)
}

impl CreateEvent {
    /// Validates the request; returns the seats sorted.
    pub fn validate(&self) -> Result<Vec<SeatId>, StoreError> {
        check_id("event_id", &self.event_id)?;
        if self.price_cents < 0 || self.price_cents > MAX_PRICE_CENTS {
            return Err(StoreError::InvalidInput(format!("price_cents must be 0..={MAX_PRICE_CENTS}")));
        }
        sorted_unique(&self.seat_ids, MAX_SEATS_PER_EVENT)
    }
}

impl AcquireHold {
    /// Validates the request; returns the seats sorted.
    pub fn validate(&self) -> Result<Vec<SeatId>, StoreError> {
        check_id("event_id", &self.event_id)?;
        check_id("holder_id", &self.holder_id)?;
        if self.ttl_ms < 1 || self.ttl_ms > MAX_HOLD_TTL_MS {
            return Err(StoreError::InvalidInput(format!("ttl_ms must be 1..={MAX_HOLD_TTL_MS}")));
        }
        if self.max_held_seats.is_some_and(|n| n < 1 || n as usize > MAX_SEATS_PER_EVENT) {
            return Err(StoreError::InvalidInput(format!("max_held_seats must be 1..={MAX_SEATS_PER_EVENT}")));
        }
        sorted_unique(&self.seat_ids, MAX_SEATS_PER_HOLD)
    }
}

impl ReleaseHold {
    /// Validates the request.
    pub fn validate(&self) -> Result<(), StoreError> {
        check_id("event_id", &self.event_id)?;
        check_id("holder_id", &self.holder_id)
    }
}

impl BeginPayment {
    /// Validates the request; returns the seats sorted.
    pub fn validate(&self) -> Result<Vec<SeatId>, StoreError> {
        check_id("event_id", &self.event_id)?;
        check_id("holder_id", &self.holder_id)?;
        let k = &self.idempotency_key;
        if k.is_empty() || k.len() > MAX_IDEMPOTENCY_KEY_LEN || !k.bytes().all(|b| (0x21..0x7f).contains(&b)) {
            return Err(StoreError::InvalidInput(format!(
                "idempotency_key must be 1..={MAX_IDEMPOTENCY_KEY_LEN} printable ASCII characters"
            )));
        }
        if self.payment_ttl_ms < 1 || self.payment_ttl_ms > MAX_PAYMENT_TTL_MS {
            return Err(StoreError::InvalidInput(format!("payment_ttl_ms must be 1..={MAX_PAYMENT_TTL_MS}")));
        }
        sorted_unique(&self.seat_ids, MAX_SEATS_PER_HOLD)
    }
}

impl CompensationResult {
    /// Validates the request.
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.max_attempts < 1 || !(0..=MAX_RETRY_DELAY_MS).contains(&self.retry_after_ms) {
            return Err(StoreError::InvalidInput(format!(
                "max_attempts >= 1 and retry_after_ms 0..={MAX_RETRY_DELAY_MS}"
            )));
        }
        Ok(())
    }
}

/// Validates a compensation attempt's lease: 1..=[`MAX_RETRY_DELAY_MS`].
pub fn validate_attempt_lease_ms(attempt_lease_ms: i64) -> Result<(), StoreError> {
    if !(1..=MAX_RETRY_DELAY_MS).contains(&attempt_lease_ms) {
        return Err(StoreError::InvalidInput(format!("attempt_lease_ms must be 1..={MAX_RETRY_DELAY_MS}")));
    }
    Ok(())
}

impl PaymentSuccess {
    /// Validates the request: the provider's payment id is 1..=128 bytes and
    /// holds no NUL (which no SQL text column can store).
    pub fn validate(&self) -> Result<(), StoreError> {
        let p = &self.provider_payment_id;
        if p.is_empty() || p.len() > 128 || p.contains('\0') {
            return Err(StoreError::InvalidInput("provider_payment_id must be 1..=128 characters".into()));
        }
        Ok(())
    }
}

/// Upper bound on an outbox lease and on any retry delay: a day. Keeps
/// `now + delay` far from overflow and every wait bounded.
pub const MAX_RETRY_DELAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Validates an outbox lease: 1..=[`MAX_RETRY_DELAY_MS`].
pub fn validate_lease_ms(lease_ms: i64) -> Result<(), StoreError> {
    if !(1..=MAX_RETRY_DELAY_MS).contains(&lease_ms) {
        return Err(StoreError::InvalidInput(format!("lease_ms must be 1..={MAX_RETRY_DELAY_MS}")));
    }
    Ok(())
}

/// Validates a retry delay: 0..=[`MAX_RETRY_DELAY_MS`].
pub fn validate_retry_after_ms(retry_after_ms: i64) -> Result<(), StoreError> {
    if !(0..=MAX_RETRY_DELAY_MS).contains(&retry_after_ms) {
        return Err(StoreError::InvalidInput(format!("retry_after_ms must be 0..={MAX_RETRY_DELAY_MS}")));
    }
    Ok(())
}

/// The reconciler's backoff between two provider checks of one payment (see
/// [`Store::claim_reconcile`](super::Store::claim_reconcile)): after its
/// `checks`-th claim (0-based) a payment is due again `min(base_ms << checks,
/// cap_ms)` later, but never later than its payment deadline while that is
/// still ahead.
///
/// Preconditions (checked by [`ReconcileBackoff::validate`]):
/// `1 <= base_ms <= cap_ms <= MAX_RETRY_DELAY_MS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconcileBackoff {
    /// The delay after the first claim.
    pub base_ms: i64,
    /// Upper bound on any delay.
    pub cap_ms: i64,
}

/// Doublings after which a reconcile backoff stops growing: `base_ms << 30`
/// exceeds any valid cap (`MAX_RETRY_DELAY_MS < 2^27`) and cannot overflow.
pub const RECONCILE_BACKOFF_MAX_SHIFT: i32 = 30;

impl ReconcileBackoff {
    /// Validates the preconditions.
    pub fn validate(&self) -> Result<(), StoreError> {
        if !(1 <= self.base_ms && self.base_ms <= self.cap_ms && self.cap_ms <= MAX_RETRY_DELAY_MS) {
            return Err(StoreError::InvalidInput(format!(
                "reconcile backoff must be 1 <= base_ms <= cap_ms <= {MAX_RETRY_DELAY_MS}"
            )));
        }
        Ok(())
    }

    /// The delay after a payment's `checks`-th claim (0-based; negative counts
    /// as 0): `min(base_ms << checks, cap_ms)`. Requires a valid backoff.
    pub fn delay_ms(&self, checks: i32) -> i64 {
        assert!(self.validate().is_ok(), "a valid backoff: {self:?}");
        let shift = checks.clamp(0, RECONCILE_BACKOFF_MAX_SHIFT) as u32;
        (self.base_ms << shift).min(self.cap_ms)
    }
}

/// Upper bound on a stored error or reason text, in characters.
pub const MAX_TEXT_CHARS: usize = 500;

/// Error and reason texts are stored bounded (at most [`MAX_TEXT_CHARS`]
/// characters) and without NUL characters (which SQL text cannot hold), so
/// both stores record exactly the same text.
pub fn bounded_text(s: &str) -> String {
    s.chars().filter(|&c| c != '\0').take(MAX_TEXT_CHARS).collect()
}
