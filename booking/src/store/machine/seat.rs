//! The seat's state machine: `available -> held -> payment_pending -> sold`,
//! with `held -> held` (an expired hold taken over), `held -> available`
//! (released, or expired and swept) and `payment_pending -> available` (the
//! payment declined, or unresolved past its deadline).
//!
//! [`next`] decides one seat's change; the stores decide which seats an
//! operation touches (a hold's selection, the sweeper's due set, an order's
//! seats) and write exactly what it returns.

use crate::model::{BookingId, HoldToken, OrderId, Seat, SeatState, UserId};
use crate::store::rules::Rules;

/// The transitions a seat may make, as a table: `(from, to)`.
/// `held -> held` is a takeover of an expired hold by a new token.
pub const TRANSITIONS: &[(SeatState, SeatState)] = &[
    (SeatState::Available, SeatState::Held),
    (SeatState::Held, SeatState::Held),
    (SeatState::Held, SeatState::Available),
    (SeatState::Held, SeatState::PaymentPending),
    (SeatState::PaymentPending, SeatState::Sold),
    (SeatState::PaymentPending, SeatState::Available),
];

/// Whether `from -> to` is in [`TRANSITIONS`].
pub fn transition_allowed(from: SeatState, to: SeatState) -> bool {
    TRANSITIONS.contains(&(from, to))
}

/// What moves a seat, with what its writer presents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeatCause<'a> {
    /// `acquire_hold`: a new hold with a fresh `token` for `holder` until `expires_at_ms`.
    Hold {
        /// The new hold's token (never issued before).
        token: HoldToken,
        /// Who holds.
        holder: &'a UserId,
        /// The new hold's deadline, by the store's clock.
        expires_at_ms: i64,
    },
    /// `release_hold`: the holder gives the hold back.
    Release {
        /// The presented token.
        token: HoldToken,
        /// The presented holder.
        holder: &'a UserId,
    },
    /// `sweep_expired_holds`: a hold past its deadline goes back.
    Expire,
    /// `begin_payment`: a live hold moves into payment for `order_id`.
    Checkout {
        /// The presented token.
        token: HoldToken,
        /// The presented holder.
        holder: &'a UserId,
        /// The new order.
        order_id: OrderId,
    },
    /// `record_payment_success` on an order that still owns the seat.
    Sell {
        /// The order whose payment succeeded.
        order_id: OrderId,
        /// The seat's new confirmed booking.
        booking_id: BookingId,
    },
    /// `record_payment_failure`, `release_unresolved_payment`: an order gives
    /// back a seat it still reserves.
    Free {
        /// The order giving the seat back.
        order_id: OrderId,
    },
}

/// Why a seat refuses a change. The stores turn these into [`StoreError`](crate::store::StoreError)s
/// (`decide` picks which, for a selection of several seats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SeatRefusal {
    /// A hold asked for a seat that is owned (held and unexpired, in payment, sold).
    #[error("the seat is owned")]
    Owned,
    /// The presented token is not the seat's; `state` is the seat's.
    #[error("the seat carries another token (it is {state})")]
    OtherToken {
        /// The seat's state.
        state: SeatState,
    },
    /// The token is the seat's but the holder is not.
    #[error("the seat is held by someone else")]
    OtherHolder,
    /// The seat is not `held` (already in payment, sold, or free).
    #[error("the seat is not held")]
    NotHeld,
    /// The hold's deadline has come by the store's clock.
    #[error("the hold expired at {expired_at_ms}")]
    Expired {
        /// When it expired.
        expired_at_ms: i64,
    },
    /// The sweeper found the seat not due (not held, or its deadline ahead).
    #[error("the seat is not due for expiry")]
    NotDue,
    /// The seat is not reserved (`payment_pending`) by the order.
    #[error("the seat is not reserved by the order")]
    NotReservedByOrder,
}

/// Whether a new hold may take `seat` at `now_ms`: available, or held past
/// its deadline (under `rules`; sound rules always ask for the deadline).
pub fn holdable(seat: &Seat, now_ms: i64, rules: &Rules) -> bool {
    match seat.state {
        SeatState::Available => true,
        SeatState::Held => !rules.hold_deadline() || seat.hold_expires_at_ms.is_some_and(|t| t <= now_ms),
        SeatState::PaymentPending | SeatState::Sold => false,
    }
}

/// Whether `seat` counts toward `holder`'s cap at `now_ms`: held by them and
/// not yet expired, or in payment for them.
pub fn counts_toward_hold_limit(seat: &Seat, holder: &UserId, now_ms: i64) -> bool {
    seat.holder_id.as_ref() == Some(holder)
        && match seat.state {
            SeatState::Held => seat.hold_expires_at_ms.is_some_and(|t| t > now_ms),
            SeatState::PaymentPending => true,
            SeatState::Available | SeatState::Sold => false,
        }
}

/// Whether the sweeper may return `seat` at `now_ms`: held past its deadline
/// (under `rules`; a planted bug looks ahead, or takes seats in payment too).
pub fn expire_due(seat: &Seat, now_ms: i64, rules: &Rules) -> bool {
    let state_due =
        seat.state == SeatState::Held || (!rules.sweep_held_only() && seat.state == SeatState::PaymentPending);
    state_due && seat.hold_expires_at_ms.is_some_and(|t| t <= now_ms + rules.sweep_ahead_ms())
}

/// Checks the checkout condition on one seat, in the order the store reports
/// failures: token, holder, state, deadline (each skipped when `rules` has
/// it off: a planted bug).
fn checkout_guard(
    before: &Seat,
    token: HoldToken,
    holder: &UserId,
    now_ms: i64,
    rules: &Rules,
) -> Result<(), SeatRefusal> {
    if rules.checkout_token() && before.hold_token != Some(token) {
        return Err(SeatRefusal::OtherToken { state: before.state });
    }
    if rules.checkout_holder() && before.holder_id.as_ref() != Some(holder) {
        return Err(SeatRefusal::OtherHolder);
    }
    if rules.checkout_state() && before.state != SeatState::Held {
        return Err(SeatRefusal::NotHeld);
    }
    let expired_at_ms = before.hold_expires_at_ms.unwrap_or(i64::MIN);
    if rules.checkout_deadline() && expired_at_ms <= now_ms {
        return Err(SeatRefusal::Expired { expired_at_ms });
    }
    Ok(())
}

/// The seat after `cause` at store time `now_ms` under `rules`, or why it
/// refuses. Every change adds one to `version` and keeps the seat's identity.
///
/// # Panics
/// When the after-image breaks a field rule of its state (a bug here), or,
/// under sound rules, leaves [`TRANSITIONS`].
pub fn next(before: &Seat, cause: &SeatCause<'_>, now_ms: i64, rules: &Rules) -> Result<Seat, SeatRefusal> {
    let mut after = before.clone();
    match *cause {
        SeatCause::Hold { token, holder, expires_at_ms } => {
            if !holdable(before, now_ms, rules) {
                return Err(SeatRefusal::Owned);
            }
            hold(&mut after, token, holder, expires_at_ms, rules);
        }
        SeatCause::Release { token, holder } => {
            release_guard(before, token, holder)?;
            make_available(&mut after);
        }
        SeatCause::Expire => {
            if !expire_due(before, now_ms, rules) {
                return Err(SeatRefusal::NotDue);
            }
            make_available(&mut after);
        }
        SeatCause::Checkout { token, holder, order_id } => {
            checkout_guard(before, token, holder, now_ms, rules)?;
            check_out(&mut after, token, holder, order_id, now_ms, rules);
        }
        SeatCause::Sell { order_id, booking_id } => {
            reserved_by(before, order_id)?;
            after.state = SeatState::Sold;
            after.booking_id = Some(booking_id);
            after.hold_expires_at_ms = None;
        }
        SeatCause::Free { order_id } => {
            reserved_by(before, order_id)?;
            make_available(&mut after);
        }
    }
    after.version = before.version + 1;
    assert_eq!((&after.event_id, &after.seat_id), (&before.event_id, &before.seat_id), "a seat keeps its identity");
    assert!(fields_fit(&after), "seat {} after {cause:?} breaks its state's field rules: {after:?}", after.seat_id);
    assert!(
        *rules != Rules::SOUND || transition_allowed(before.state, after.state),
        "seat {}: {} -> {} by {cause:?} is not in the seat table",
        after.seat_id,
        before.state,
        after.state
    );
    Ok(after)
}

/// `after` (a copy of a holdable seat) held under `token` by `holder` until
/// `expires_at_ms`; a takeover keeps the old token when a planted bug says so.
fn hold(after: &mut Seat, token: HoldToken, holder: &UserId, expires_at_ms: i64, rules: &Rules) {
    let takeover = after.state == SeatState::Held;
    after.state = SeatState::Held;
    if rules.hold_fresh_token() || !takeover {
        after.hold_token = Some(token);
    }
    after.holder_id = Some(holder.clone());
    after.hold_expires_at_ms = Some(expires_at_ms);
    after.order_id = None;
    after.booking_id = None;
}

/// Whether the presented `token` and `holder` may release `before`.
fn release_guard(before: &Seat, token: HoldToken, holder: &UserId) -> Result<(), SeatRefusal> {
    if before.hold_token != Some(token) {
        return Err(SeatRefusal::OtherToken { state: before.state });
    }
    if before.holder_id.as_ref() != Some(holder) {
        return Err(SeatRefusal::OtherHolder);
    }
    if before.state != SeatState::Held {
        return Err(SeatRefusal::NotHeld);
    }
    Ok(())
}

/// `after` (a copy of a seat the checkout guard passed) pending payment of `order_id`.
fn check_out(after: &mut Seat, token: HoldToken, holder: &UserId, order_id: OrderId, now_ms: i64, rules: &Rules) {
    after.state = SeatState::PaymentPending;
    after.order_id = Some(order_id);
    if !rules.checkout_state() {
        // The planted unconditional write names the presented hold as the
        // seat's; a seat that had no hold (available, sold) gets the
        // checkout's time as its deadline and loses its booking: the
        // columns a `payment_pending` seat must carry.
        after.hold_token = Some(token);
        after.holder_id = Some(holder.clone());
        after.hold_expires_at_ms.get_or_insert(now_ms);
        after.booking_id = None;
    }
}

/// `Ok` when `seat` is `payment_pending` for `order_id`.
fn reserved_by(seat: &Seat, order_id: OrderId) -> Result<(), SeatRefusal> {
    if seat.state == SeatState::PaymentPending && seat.order_id == Some(order_id) {
        Ok(())
    } else {
        Err(SeatRefusal::NotReservedByOrder)
    }
}

/// Clears every ownership column: the seat is `available`.
fn make_available(seat: &mut Seat) {
    seat.state = SeatState::Available;
    seat.hold_token = None;
    seat.holder_id = None;
    seat.hold_expires_at_ms = None;
    seat.order_id = None;
    seat.booking_id = None;
}

/// Whether `seat` carries exactly the columns its state requires (the
/// migration's CHECK constraints on `seats`).
pub fn fields_fit(seat: &Seat) -> bool {
    let (token, holder, deadline, order, booking) = (
        seat.hold_token.is_some(),
        seat.holder_id.is_some(),
        seat.hold_expires_at_ms.is_some(),
        seat.order_id.is_some(),
        seat.booking_id.is_some(),
    );
    seat.version >= 0
        && match seat.state {
            SeatState::Available => !token && !holder && !deadline && !order && !booking,
            SeatState::Held => token && holder && deadline && !order && !booking,
            SeatState::PaymentPending => token && holder && deadline && order && !booking,
            SeatState::Sold => holder && order && booking,
        }
}

#[cfg(test)]
mod tests;
