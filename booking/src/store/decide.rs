//! The pure decisions both stores share: given the locked seat rows and the
//! store's clock, may this transition happen, and if not, which named error?
//! The conditional write that follows is still the guard; these functions only
//! pick the answer so that `MemStore` and `PgStore` give the same one.

use super::StoreError;
use super::rules::Rules;
use super::types::{
    CompensationAttempt, CompensationOutcome, CompensationResult, ExpiredAttempt, ReconcileBackoff,
    UNKNOWN_OUTCOME_PREFIX, bounded_text,
};
use crate::model::{
    Compensation, CompensationStatus, Order, OrderStatus, PaymentOp, PaymentStatus, Seat, SeatState, UserId,
};
use uuid::Uuid;

/// Whether a new hold may take `seat` at `now_ms`: available, or held past
/// its deadline (under `rules`; sound rules always ask for the deadline).
pub fn seat_holdable(seat: &Seat, now_ms: i64, rules: &Rules) -> bool {
    match seat.state {
        SeatState::Available => true,
        SeatState::Held => !rules.hold_deadline || seat.hold_expires_at_ms.is_some_and(|t| t <= now_ms),
        SeatState::PaymentPending | SeatState::Sold => false,
    }
}

/// Whether `seat` counts toward `holder`'s cap at `now_ms`: held by them and
/// not yet expired, or in payment for them.
pub fn counts_toward_hold_limit(seat: &Seat, holder: &str, now_ms: i64) -> bool {
    seat.holder_id.as_deref() == Some(holder)
        && match seat.state {
            SeatState::Held => seat.hold_expires_at_ms.is_some_and(|t| t > now_ms),
            SeatState::PaymentPending => true,
            SeatState::Available | SeatState::Sold => false,
        }
}

/// Checks that taking `taking` more seats leaves the holder, who has `held`
/// now, within `limit` (`None`: no cap). Under `rules` with the planted
/// `hold-limit-ignores-request` only the seats already held are compared
/// (`held >= limit`), so a holder below the cap takes a whole selection past it.
pub fn check_hold_limit(
    event_id: &str,
    held: usize,
    taking: usize,
    limit: Option<u32>,
    rules: &Rules,
) -> Result<(), StoreError> {
    let counted = if rules.hold_limit_counts_request { taking } else { taking.min(1) };
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
    event_id: &str,
    requested: &[String],
    locked: &[Seat],
    now_ms: i64,
    rules: &Rules,
) -> Result<Vec<String>, StoreError> {
    for want in requested {
        if !locked.iter().any(|s| &s.seat_id == want) {
            return Err(StoreError::UnknownSeat { event_id: event_id.into(), seat_id: want.clone() });
        }
    }
    let take: Vec<String> =
        locked.iter().filter(|s| seat_holdable(s, now_ms, rules)).map(|s| s.seat_id.clone()).collect();
    let partial_allowed = !rules.hold_all_or_nothing && !take.is_empty();
    if let Some(seat) = locked.iter().find(|s| !seat_holdable(s, now_ms, rules))
        && !partial_allowed
    {
        return Err(StoreError::SeatUnavailable { event_id: event_id.into(), seat_id: seat.seat_id.clone() });
    }
    Ok(take)
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
    event_id: &str,
    requested: &[String],
    locked: &[Seat],
    token: Uuid,
    holder: &UserId,
    now_ms: i64,
    rules: &Rules,
) -> Result<(), StoreError> {
    for want in requested {
        if !locked.iter().any(|s| &s.seat_id == want) {
            return Err(StoreError::UnknownSeat { event_id: event_id.into(), seat_id: want.clone() });
        }
    }
    if rules.checkout_token {
        let mut others = locked.iter().filter(|s| s.hold_token != Some(token)).peekable();
        if others.peek().is_some() {
            // Owned by another hold or order: stale. Merely free (the hold lapsed
            // and was swept, or was released): this token holds nothing.
            return Err(if others.any(|s| s.state != SeatState::Available) {
                StoreError::StaleToken
            } else {
                StoreError::HoldNotFound
            });
        }
    }
    if rules.checkout_holder && locked.iter().any(|s| s.holder_id.as_ref() != Some(holder)) {
        return Err(StoreError::NotHolder);
    }
    if rules.checkout_state && locked.iter().any(|s| s.state != SeatState::Held) {
        return Err(StoreError::HoldNotFound);
    }
    let expired_at_ms = locked.iter().filter_map(|s| s.hold_expires_at_ms).min().unwrap_or(i64::MIN);
    if rules.checkout_deadline && expired_at_ms <= now_ms {
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

/// Starts an attempt on compensation `c` at `now_ms`, leased for
/// `attempt_lease_ms`. Due when `requested` and its backoff has passed, or
/// when `in_flight` and the running attempt's lease has expired (a takeover:
/// its dispatcher never reported back). Either way `next_attempt_at_ms` is the
/// deadline, so one comparison decides. The new attempt is `in_flight`, counts
/// one more attempt, and is leased until `now_ms + attempt_lease_ms`.
/// Errors: `CompensationNotDue` (final, backing off, or leased to a live attempt).
/// Under `rules` with the planted `refund-takeover-ignores-lease`, an
/// `in_flight` attempt is taken over whatever its lease.
pub fn start_attempt(
    c: &Compensation,
    now_ms: i64,
    attempt_lease_ms: i64,
    rules: &Rules,
) -> Result<CompensationAttempt, StoreError> {
    let open = matches!(c.status, CompensationStatus::Requested | CompensationStatus::InFlight);
    let leased = rules.attempt_lease || c.status == CompensationStatus::Requested;
    if !open || (leased && c.next_attempt_at_ms > now_ms) {
        return Err(StoreError::CompensationNotDue(c.compensation_id));
    }
    let took_over = (c.status == CompensationStatus::InFlight)
        .then_some(ExpiredAttempt { attempt: c.attempts, lease_expired_at_ms: c.next_attempt_at_ms });
    let mut after = c.clone();
    after.status = CompensationStatus::InFlight;
    after.attempts += 1;
    after.next_attempt_at_ms = now_ms + attempt_lease_ms;
    after.updated_at_ms = now_ms;
    Ok(CompensationAttempt { compensation: after, took_over })
}

/// What recording `req` on compensation `c` at `now_ms` changes: `None` when
/// nothing (`c` is final, or the result is a stale `Failed`/`Unknown` of an
/// attempt that is not the current `in_flight` one); else the compensation
/// after and, when the order must move, the order's new status.
pub fn finish_attempt(
    c: &Compensation,
    req: &CompensationResult,
    now_ms: i64,
    rules: &Rules,
) -> Option<(Compensation, Option<OrderStatus>)> {
    if matches!(c.status, CompensationStatus::Succeeded | CompensationStatus::Failed) {
        return None;
    }
    let mut after = c.clone();
    after.updated_at_ms = now_ms;
    let (attempt, last_error) = match &req.outcome {
        CompensationOutcome::Succeeded => {
            after.status = CompensationStatus::Succeeded;
            return Some((after, Some(OrderStatus::Compensated)));
        }
        CompensationOutcome::Failed { attempt, error } => (*attempt, bounded_text(error)),
        CompensationOutcome::Unknown { attempt, error } => {
            (*attempt, bounded_text(&format!("{UNKNOWN_OUTCOME_PREFIX}{error}")))
        }
    };
    if c.status != CompensationStatus::InFlight || c.attempts != attempt {
        return None;
    }
    after.last_error = Some(last_error);
    if c.attempts >= req.max_attempts {
        after.status = CompensationStatus::Failed;
        let order_to = if rules.give_up_flags_order { OrderStatus::CompensationFailed } else { OrderStatus::Failed };
        Some((after, Some(order_to)))
    } else {
        after.status = CompensationStatus::Requested;
        after.next_attempt_at_ms = now_ms + req.retry_after_ms;
        Some((after, None))
    }
}

/// Whether recording the final outcome `outcome` (`Succeeded` or `Failed`) on
/// payment operation `op` decides it now: `Ok(true)` while `op` is `pending` or
/// `unknown` (the caller's conditional write records it); `Ok(false)` when
/// `op` already has that outcome (an idempotent repeat: nothing changes);
/// `PaymentConflict` when it has the other one.
pub fn record_final_outcome(op: &PaymentOp, outcome: PaymentStatus) -> Result<bool, StoreError> {
    assert!(
        matches!(outcome, PaymentStatus::Succeeded | PaymentStatus::Failed),
        "only a final outcome is recorded this way"
    );
    match op.status {
        PaymentStatus::Pending | PaymentStatus::Unknown => Ok(true),
        status if status == outcome => Ok(false),
        PaymentStatus::Succeeded | PaymentStatus::Failed => Err(StoreError::PaymentConflict(op.payment_op_id)),
    }
}

/// Whether a reconciler may claim payment operation `op` of `order` at
/// `now_ms`: the order still owns its seats with the outcome open, the payment
/// needs a provider check (its outcome is `unknown`, or its payment deadline
/// has come: a pending payment before its deadline is the dispatcher's), and
/// its backoff has passed (`next_check_at_ms <= now_ms`).
pub fn reconcile_due(order: &Order, op: &PaymentOp, now_ms: i64) -> bool {
    assert_eq!(order.payment_op_id, op.payment_op_id, "the order's own payment operation");
    let open = order.status.owns_seats() && matches!(op.status, PaymentStatus::Pending | PaymentStatus::Unknown);
    let needs_check = op.status == PaymentStatus::Unknown || order.payment_deadline_at_ms <= now_ms;
    open && needs_check && op.next_check_at_ms <= now_ms
}

/// `op` (of `order`, [`reconcile_due`] at `now_ms`) after a reconciler claimed
/// it at `now_ms`: one more check, and due again after its backoff step,
/// `now_ms + backoff.delay_ms(checks)`, but no later than the payment deadline
/// while that is still ahead (so the last check before release is never
/// delayed). The count saturates at `i32::MAX`. Nothing else changes.
pub fn claim_check(order: &Order, op: &PaymentOp, now_ms: i64, backoff: ReconcileBackoff) -> PaymentOp {
    assert!(reconcile_due(order, op, now_ms), "only a due payment is claimed");
    let mut next_check_at_ms = now_ms + backoff.delay_ms(op.checks);
    if now_ms < order.payment_deadline_at_ms {
        next_check_at_ms = next_check_at_ms.min(order.payment_deadline_at_ms);
    }
    let mut after = op.clone();
    after.next_check_at_ms = next_check_at_ms;
    after.checks = op.checks.saturating_add(1);
    assert!(after.next_check_at_ms > now_ms, "a claim always moves the payment's next check forward");
    after
}
