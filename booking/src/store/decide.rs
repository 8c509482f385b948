//! The pure decisions both stores share: given the locked seat rows and the
//! store's clock, may this transition happen, and if not, which named error?
//! The conditional write that follows is still the guard; these functions only
//! pick the answer so that `MemStore` and `PgStore` give the same one.

use super::StoreError;
use crate::model::{Seat, SeatState, UserId};
use uuid::Uuid;

/// Whether a new hold may take `seat` at `now_ms`: available, or held past its deadline.
pub fn seat_holdable(seat: &Seat, now_ms: i64) -> bool {
    match seat.state {
        SeatState::Available => true,
        SeatState::Held => seat.hold_expires_at_ms.is_some_and(|t| t <= now_ms),
        SeatState::PaymentPending | SeatState::Sold => false,
    }
}

/// Checks that every requested seat exists (`requested` sorted, `locked` the
/// rows found, sorted) and may be held; returns the first failure in seat order.
pub fn check_holdable(event_id: &str, requested: &[String], locked: &[Seat], now_ms: i64) -> Result<(), StoreError> {
    for want in requested {
        if !locked.iter().any(|s| &s.seat_id == want) {
            return Err(StoreError::UnknownSeat { event_id: event_id.into(), seat_id: want.clone() });
        }
    }
    for seat in locked {
        if !seat_holdable(seat, now_ms) {
            return Err(StoreError::SeatUnavailable { event_id: event_id.into(), seat_id: seat.seat_id.clone() });
        }
    }
    Ok(())
}

/// Checks that `token` is the current, unexpired hold of `holder` on every
/// seat of `locked` (sorted): the condition for checkout. Errors, in order of
/// precedence: `UnknownSeat`, `StaleToken`, `NotHolder`, `HoldNotFound` (already
/// checked out), `HoldExpired`.
pub fn check_checkout(
    event_id: &str,
    requested: &[String],
    locked: &[Seat],
    token: Uuid,
    holder: &UserId,
    now_ms: i64,
) -> Result<(), StoreError> {
    for want in requested {
        if !locked.iter().any(|s| &s.seat_id == want) {
            return Err(StoreError::UnknownSeat { event_id: event_id.into(), seat_id: want.clone() });
        }
    }
    if locked.iter().any(|s| s.hold_token != Some(token)) {
        return Err(StoreError::StaleToken);
    }
    if locked.iter().any(|s| s.holder_id.as_ref() != Some(holder)) {
        return Err(StoreError::NotHolder);
    }
    if locked.iter().any(|s| s.state != SeatState::Held) {
        return Err(StoreError::HoldNotFound);
    }
    let expired_at_ms = locked.iter().filter_map(|s| s.hold_expires_at_ms).min().unwrap_or(i64::MIN);
    if expired_at_ms <= now_ms {
        return Err(StoreError::HoldExpired { expired_at_ms });
    }
    Ok(())
}

/// Checks that a checkout names the whole hold: every seat still `held` under
/// the token (`held_with_token`, the event's seats carrying it in state `held`)
/// is among `requested` (sorted). Checked after [`check_checkout`] passed, so a
/// hold is paid all or nothing, as it was taken.
pub fn check_whole_hold(requested: &[String], held_with_token: &[String]) -> Result<(), StoreError> {
    match held_with_token.iter().find(|s| requested.binary_search(s).is_err()) {
        Some(missing) => {
            Err(StoreError::InvalidInput(format!("seat_ids must be every seat of the hold; {missing} is missing")))
        }
        None => Ok(()),
    }
}

/// Diagnoses a release that matched no `held` seat, from the seats carrying the token.
pub fn diagnose_release(with_token: &[Seat], holder: &UserId) -> StoreError {
    if with_token.is_empty() {
        StoreError::HoldNotFound
    } else if with_token.iter().any(|s| s.holder_id.as_ref() != Some(holder)) {
        StoreError::NotHolder
    } else {
        StoreError::HoldNotFound
    }
}
