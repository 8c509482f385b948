//! The compensation's state machine: money to give back for a charge that
//! bought no ticket. Created `requested`; an attempt makes it `in_flight`
//! (leased: past the lease another dispatcher may take over, `in_flight ->
//! in_flight`); a failed or unknown attempt makes it `requested` again after
//! a backoff, or `failed` when the attempts are spent (final, and visible:
//! its order becomes `compensation_failed`); `succeeded` when the money went
//! back (a provider's callback may say so between attempts).

use super::order::OrderCause;
use crate::model::{Compensation, CompensationStatus};
use crate::store::error::StoreError;
use crate::store::rules::Rules;
use crate::store::types::{
    CompensationAttempt, CompensationOutcome, CompensationResult, ExpiredAttempt, UNKNOWN_OUTCOME_PREFIX, bounded_text,
};

/// The transitions a compensation may make, as a table: `(from, to)`.
pub const TRANSITIONS: &[(CompensationStatus, CompensationStatus)] = &[
    (CompensationStatus::Requested, CompensationStatus::InFlight),
    (CompensationStatus::InFlight, CompensationStatus::InFlight),
    (CompensationStatus::InFlight, CompensationStatus::Requested),
    (CompensationStatus::Requested, CompensationStatus::Succeeded),
    (CompensationStatus::InFlight, CompensationStatus::Succeeded),
    (CompensationStatus::InFlight, CompensationStatus::Failed),
];

/// Whether `from -> to` is in [`TRANSITIONS`].
pub fn transition_allowed(from: CompensationStatus, to: CompensationStatus) -> bool {
    TRANSITIONS.contains(&(from, to))
}

/// Whether `status` is final (`succeeded`, `failed`).
pub fn is_final(status: CompensationStatus) -> bool {
    matches!(status, CompensationStatus::Succeeded | CompensationStatus::Failed)
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
    let leased = rules.attempt_lease() || c.status == CompensationStatus::Requested;
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
    assert_moved(c, &after);
    Ok(CompensationAttempt { compensation: after, took_over })
}

/// What recording `req` on compensation `c` at `now_ms` changes: `None` when
/// nothing (`c` is final, or the result is a stale `Failed`/`Unknown` of an
/// attempt that is not the current `in_flight` one); else the compensation
/// after and, when its order must move, what moves it.
pub fn finish_attempt(
    c: &Compensation,
    req: &CompensationResult,
    now_ms: i64,
) -> Option<(Compensation, Option<OrderCause<'static>>)> {
    if is_final(c.status) {
        return None;
    }
    let mut after = c.clone();
    after.updated_at_ms = now_ms;
    let (attempt, last_error) = match &req.outcome {
        CompensationOutcome::Succeeded => {
            after.status = CompensationStatus::Succeeded;
            assert_moved(c, &after);
            return Some((after, Some(OrderCause::Compensated)));
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
    let order_cause = if c.attempts >= req.max_attempts {
        after.status = CompensationStatus::Failed;
        Some(OrderCause::CompensationGaveUp)
    } else {
        after.status = CompensationStatus::Requested;
        after.next_attempt_at_ms = now_ms + req.retry_after_ms;
        None
    };
    assert_moved(c, &after);
    Some((after, order_cause))
}

/// Asserts that `before -> after` is in [`TRANSITIONS`] and `after` fits its status.
fn assert_moved(before: &Compensation, after: &Compensation) {
    assert!(
        transition_allowed(before.status, after.status),
        "compensation {}: {} -> {} is not in the compensation table",
        after.compensation_id,
        before.status,
        after.status
    );
    assert!(fields_fit(after), "compensation {} breaks its status's field rules: {after:?}", after.compensation_id);
    assert_eq!(
        (before.order_id, before.payment_op_id, before.kind, before.amount_cents),
        (after.order_id, after.payment_op_id, after.kind, after.amount_cents),
        "a compensation keeps what it gives back"
    );
}

/// Whether `c` carries what its status requires: an attempt counted while
/// `in_flight`, and the last error once `failed`; nothing negative.
pub fn fields_fit(c: &Compensation) -> bool {
    let status_ok = match c.status {
        CompensationStatus::Requested | CompensationStatus::Succeeded => true,
        CompensationStatus::InFlight => c.attempts >= 1,
        CompensationStatus::Failed => c.attempts >= 1 && c.last_error.is_some(),
    };
    status_ok && c.attempts >= 0 && c.amount_cents >= 0
}

#[cfg(test)]
mod tests;
