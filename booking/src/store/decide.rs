//! The decisions over a selection of seats both stores share: given the
//! locked seat rows and the store's clock, may this operation happen, and if
//! not, which named error? Each seat's own answer comes from its state
//! machine ([`seat::next`](super::machine::seat::next)); these functions
//! combine the answers (a hold is all or nothing, a checkout's error is the
//! first in precedence over all its seats), so `MemStore` and `PgStore` give
//! the same one. The machine's after-images are what the stores then write.

use super::StoreError;
use super::machine::order::OrderRefusal;
use super::machine::payment::PaymentRefusal;
use super::machine::seat::{self, SeatCause, SeatRefusal};
use super::rules::Rules;
use super::{AcquireHold, HeldSeat, HoldGrant, ReclaimedHold};
use crate::model::{EventId, HoldToken, OrderId, Seat, SeatId, SeatState, UserId};

/// Checks that taking `taking` more seats leaves the holder, who has `held`
/// now, within `limit` (`None`: no cap). Under `rules` with the planted
/// `hold-limit-ignores-request` only the seats already held are compared
/// (`held >= limit`), so a holder below the cap takes a whole selection past it.
pub fn check_hold_limit(
    event_id: &EventId,
    held: usize,
    taking: usize,
    limit: Option<u32>,
    rules: &Rules,
) -> Result<(), StoreError> {
    let counted = if rules.hold_limit_counts_request() { taking } else { taking.min(1) };
    match limit {
        Some(limit) if held + counted > limit as usize => Err(StoreError::HoldLimit {
            event_id: event_id.into(),
            limit,
            held: u32::try_from(held).unwrap_or(u32::MAX),
            requested: u32::try_from(taking).unwrap_or(u32::MAX),
        }),
        _ => Ok(()),
    }
}

/// Checks that every requested seat exists (`requested` sorted, `locked` the
/// rows found, sorted) and may be held, and returns the seats to take, sorted:
/// all of them (sound rules: a selection is all or nothing), else the first
/// failure in seat order.
pub fn check_holdable(
    event_id: &EventId,
    requested: &[SeatId],
    locked: &[Seat],
    now_ms: i64,
    rules: &Rules,
) -> Result<Vec<SeatId>, StoreError> {
    for want in requested {
        if !locked.iter().any(|s| &s.seat_id == want) {
            return Err(StoreError::UnknownSeat { event_id: event_id.into(), seat_id: want.clone() });
        }
    }
    let take: Vec<SeatId> =
        locked.iter().filter(|s| seat::holdable(s, now_ms, rules)).map(|s| s.seat_id.clone()).collect();
    let partial_allowed = !rules.hold_all_or_nothing() && !take.is_empty();
    if let Some(seat) = locked.iter().find(|s| !seat::holdable(s, now_ms, rules))
        && !partial_allowed
    {
        return Err(StoreError::SeatUnavailable { event_id: event_id.into(), seat_id: seat.seat_id.clone() });
    }
    Ok(take)
}

/// The hold `req` grants once [`check_holdable`] (and the cap) allowed it:
/// `take` (`check_holdable`'s answer) out of `locked` (the locked rows,
/// sorted), under `hold_token`, at `now_ms`. Returns the grant and the seat
/// machine's after-images of the taken seats, sorted: what the store writes.
/// An `Err` names a seat the machine refuses although `check_holdable`
/// passed it, or a held seat without a deadline: a bug, never an answer.
pub fn grant_hold(
    req: &AcquireHold,
    locked: &[Seat],
    take: &[SeatId],
    hold_token: HoldToken,
    now_ms: i64,
    rules: &Rules,
) -> Result<(HoldGrant, Vec<Seat>), String> {
    let expires_at_ms = now_ms + req.ttl_ms;
    let cause = SeatCause::Hold { token: hold_token, holder: &req.holder_id, expires_at_ms };
    let mut after = Vec::with_capacity(take.len());
    let mut reclaimed = Vec::new();
    for old in locked.iter().filter(|s| take.contains(&s.seat_id)) {
        if old.state == SeatState::Held {
            let expired_at_ms =
                old.hold_expires_at_ms.ok_or_else(|| format!("held seat {} has no deadline", old.seat_id))?;
            reclaimed.push(ReclaimedHold { seat_id: old.seat_id.clone(), expired_at_ms });
        }
        after.push(
            seat::next(old, &cause, now_ms, rules)
                .map_err(|e| format!("check_holdable passed seat {} its machine refuses: {e}", old.seat_id))?,
        );
    }
    let grant = HoldGrant {
        event_id: req.event_id.clone(),
        holder_id: req.holder_id.clone(),
        hold_token,
        seats: after.iter().map(|s| HeldSeat { seat_id: s.seat_id.clone(), version: s.version }).collect(),
        expires_at_ms,
        granted_at_ms: now_ms,
        reclaimed,
    };
    Ok((grant, after))
}

/// Checks that `token` is the current, unexpired hold of `holder` on every
/// seat of `locked` (sorted): the condition for checkout. Errors, in order of
/// precedence: `UnknownSeat`, `StaleToken` (a seat carries another token and
/// someone owns it) or `HoldNotFound` (the seats are free: the hold lapsed and
/// was swept, or was released), `NotHolder`, `HoldNotFound` (already checked
/// out), `HoldExpired`. Under `rules` with a comparison switched off
/// (a planted bug) that comparison is skipped; without `checkout_state` no
/// seat is refused for its state, not even one in payment or sold.
pub fn check_checkout(
    event_id: &EventId,
    requested: &[SeatId],
    locked: &[Seat],
    token: HoldToken,
    holder: &UserId,
    now_ms: i64,
    rules: &Rules,
) -> Result<(), StoreError> {
    for want in requested {
        if !locked.iter().any(|s| &s.seat_id == want) {
            return Err(StoreError::UnknownSeat { event_id: event_id.into(), seat_id: want.clone() });
        }
    }
    let order_id = OrderId::nil(); // the seats' answers do not depend on the order to be
    let cause = SeatCause::Checkout { token, holder, order_id };
    let refusals: Vec<SeatRefusal> = locked.iter().filter_map(|s| seat::next(s, &cause, now_ms, rules).err()).collect();
    let any = |f: fn(&SeatRefusal) -> bool| refusals.iter().any(f);
    if any(|r| matches!(r, SeatRefusal::OtherToken { .. })) {
        // Owned by another hold or order: stale. Merely free (the hold lapsed
        // and was swept, or was released): this token holds nothing.
        return Err(if any(|r| matches!(r, SeatRefusal::OtherToken { state } if *state != SeatState::Available)) {
            StoreError::StaleToken
        } else {
            StoreError::HoldNotFound
        });
    }
    if any(|r| *r == SeatRefusal::OtherHolder) {
        return Err(StoreError::NotHolder);
    }
    if any(|r| *r == SeatRefusal::NotHeld) {
        return Err(StoreError::HoldNotFound);
    }
    if any(|r| matches!(r, SeatRefusal::Expired { .. })) {
        let expired_at_ms = locked.iter().filter_map(|s| s.hold_expires_at_ms).min().unwrap_or(i64::MIN);
        return Err(StoreError::HoldExpired { expired_at_ms });
    }
    assert!(refusals.is_empty(), "every checkout refusal is answered: {refusals:?}");
    Ok(())
}

/// Checks that a checkout names the whole hold: every seat still `held` under
/// the token (`held_with_token`, the event's seats carrying it in state `held`)
/// is among `requested` (sorted). Checked after [`check_checkout`] passed, so a
/// hold is paid all or nothing, as it was taken.
pub fn check_whole_hold(requested: &[SeatId], held_with_token: &[SeatId]) -> Result<(), StoreError> {
    match held_with_token.iter().find(|s| requested.binary_search(s).is_err()) {
        Some(missing) => {
            Err(StoreError::InvalidInput(format!("seat_ids must be every seat of the hold; {missing} is missing")))
        }
        None => Ok(()),
    }
}

/// The seats of `with_token` (the event's seats carrying `token`) that the
/// release by `holder` frees, with their after-images; when none, the error:
/// `HoldNotFound` (no seat carries the token, or none is still held), or
/// `NotHolder` (a seat carrying it belongs to someone else).
pub fn releasable(
    with_token: &[Seat],
    token: HoldToken,
    holder: &UserId,
    now_ms: i64,
) -> Result<Vec<Seat>, StoreError> {
    let cause = SeatCause::Release { token, holder };
    let after: Vec<Seat> =
        with_token.iter().filter_map(|s| seat::next(s, &cause, now_ms, &Rules::SOUND).ok()).collect();
    if !after.is_empty() {
        Ok(after)
    } else if with_token.iter().any(|s| s.holder_id.as_ref() != Some(holder)) {
        Err(StoreError::NotHolder)
    } else {
        Err(StoreError::HoldNotFound)
    }
}

/// The store's error for an order machine's refusal.
pub fn order_refused(order_id: OrderId, r: OrderRefusal) -> StoreError {
    match r {
        OrderRefusal::NotOpen { .. } => StoreError::OrderNotOpen(order_id),
        OrderRefusal::DeadlineNotPassed { deadline_at_ms } => StoreError::DeadlineNotPassed { deadline_at_ms },
        OrderRefusal::NoChange { .. } | OrderRefusal::NotReleased { .. } | OrderRefusal::NotCompensating { .. } => {
            StoreError::InvariantBreach(format!("order {order_id}: {r}"))
        }
    }
}

/// The store's error for a payment machine's refusal.
pub fn payment_refused(r: PaymentRefusal) -> StoreError {
    match r {
        PaymentRefusal::Conflict(id) => StoreError::PaymentConflict(id),
        PaymentRefusal::NotDue(id) => StoreError::InvariantBreach(format!("payment {id} claimed when not due")),
    }
}

#[cfg(test)]
mod tests;
