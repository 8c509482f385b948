//! The payment operation's state machine: `pending` until the provider
//! answers; `unknown` when an answer was lost (neither success nor failure:
//! reconciliation asks again); `succeeded` or `failed` for good. A
//! reconciler's claim changes no status: it counts one more check and moves
//! the next one out by the backoff.

use crate::model::{Order, PaymentOp, PaymentOpId, PaymentStatus};
use crate::store::types::ReconcileBackoff;

/// The transitions a payment operation may make, as a table: `(from, to)`.
/// `pending -> pending` and `unknown -> unknown` are claims (and a repeated
/// unknown outcome).
pub const TRANSITIONS: &[(PaymentStatus, PaymentStatus)] = &[
    (PaymentStatus::Pending, PaymentStatus::Pending),
    (PaymentStatus::Pending, PaymentStatus::Unknown),
    (PaymentStatus::Pending, PaymentStatus::Succeeded),
    (PaymentStatus::Pending, PaymentStatus::Failed),
    (PaymentStatus::Unknown, PaymentStatus::Unknown),
    (PaymentStatus::Unknown, PaymentStatus::Succeeded),
    (PaymentStatus::Unknown, PaymentStatus::Failed),
];

/// Whether `from -> to` is in [`TRANSITIONS`].
pub fn transition_allowed(from: PaymentStatus, to: PaymentStatus) -> bool {
    TRANSITIONS.contains(&(from, to))
}

/// What moves a payment operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentCause<'a> {
    /// The provider charged it, under its payment id.
    Succeeded {
        /// The provider's payment id.
        provider_payment_id: &'a str,
    },
    /// The provider declined it, with a reason (bounded).
    Failed {
        /// The provider's reason.
        reason: &'a str,
    },
    /// The provider's answer was lost, with the error seen (bounded).
    Unknown {
        /// What was seen instead of an answer.
        error: &'a str,
    },
    /// A reconciler claims the payment of `order` to ask the provider.
    Claim {
        /// The payment's order.
        order: &'a Order,
        /// The reconciler's backoff.
        backoff: ReconcileBackoff,
    },
}

/// Why a payment operation refuses a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PaymentRefusal {
    /// A final outcome contradicting the one recorded.
    #[error("payment {0} already has the other final outcome")]
    Conflict(PaymentOpId),
    /// A claim of a payment that is not due ([`reconcile_due`]).
    #[error("payment {0} is not due for a check")]
    NotDue(PaymentOpId),
}

/// Whether a reconciler may claim payment operation `op` of `order` at
/// `now_ms`: the order still owns its seats with the outcome open, the payment
/// needs a provider check (its outcome is `unknown`, or its payment deadline
/// has come: a pending payment before its deadline is the dispatcher's), and
/// its backoff has passed (`next_check_at_ms <= now_ms`).
pub fn reconcile_due(order: &Order, op: &PaymentOp, now_ms: i64) -> bool {
    assert_eq!(order.payment_op_id, op.payment_op_id, "the order's own payment operation");
    let open = order.status.owns_seats() && is_open(op.status);
    let needs_check = op.status == PaymentStatus::Unknown || order.payment_deadline_at_ms <= now_ms;
    open && needs_check && op.next_check_at_ms <= now_ms
}

/// Whether the provider's answer is still to come (`pending`, `unknown`).
pub fn is_open(status: PaymentStatus) -> bool {
    matches!(status, PaymentStatus::Pending | PaymentStatus::Unknown)
}

/// The payment operation a checkout opens at `now_ms`: `pending`, due for a
/// check as soon as it needs one, never checked.
pub fn open(order: &Order, now_ms: i64) -> PaymentOp {
    PaymentOp {
        event_id: order.event_id.clone(),
        payment_op_id: order.payment_op_id,
        order_id: order.order_id,
        amount_cents: order.amount_cents,
        status: PaymentStatus::Pending,
        provider_payment_id: None,
        last_error: None,
        updated_at_ms: now_ms,
        next_check_at_ms: now_ms,
        checks: 0,
    }
}

/// The payment operation after `cause` at store time `now_ms`: `Ok(None)`
/// when the cause changes nothing (the same final outcome again, or an
/// unknown outcome of a decided payment: idempotent repeats), `Err` when it
/// contradicts what is recorded or claims a payment not due.
///
/// A claim is due again after its backoff step, `now_ms +
/// backoff.delay_ms(checks)`, but no later than the payment deadline while
/// that is ahead (so the last check before release is never delayed); the
/// count saturates at `i32::MAX`. An outcome sets `updated_at_ms`; a claim
/// does not.
///
/// # Panics
/// When the after-image breaks a field rule of its status, or leaves [`TRANSITIONS`].
pub fn next(before: &PaymentOp, cause: &PaymentCause<'_>, now_ms: i64) -> Result<Option<PaymentOp>, PaymentRefusal> {
    let mut after = before.clone();
    match *cause {
        PaymentCause::Succeeded { provider_payment_id } => {
            if !final_outcome_due(before, PaymentStatus::Succeeded)? {
                return Ok(None);
            }
            after.status = PaymentStatus::Succeeded;
            after.provider_payment_id = Some(provider_payment_id.to_string());
            after.updated_at_ms = now_ms;
        }
        PaymentCause::Failed { reason } => {
            if !final_outcome_due(before, PaymentStatus::Failed)? {
                return Ok(None);
            }
            after.status = PaymentStatus::Failed;
            after.last_error = Some(reason.to_string());
            after.updated_at_ms = now_ms;
        }
        PaymentCause::Unknown { error } => {
            if !is_open(before.status) {
                return Ok(None);
            }
            after.status = PaymentStatus::Unknown;
            after.last_error = Some(error.to_string());
            after.updated_at_ms = now_ms;
        }
        PaymentCause::Claim { order, backoff } => {
            if !reconcile_due(order, before, now_ms) {
                return Err(PaymentRefusal::NotDue(before.payment_op_id));
            }
            let mut next_check_at_ms = now_ms + backoff.delay_ms(before.checks);
            if now_ms < order.payment_deadline_at_ms {
                next_check_at_ms = next_check_at_ms.min(order.payment_deadline_at_ms);
            }
            after.next_check_at_ms = next_check_at_ms;
            after.checks = before.checks.saturating_add(1);
            assert!(after.next_check_at_ms > now_ms, "a claim always moves the payment's next check forward");
        }
    }
    assert!(
        fields_fit(&after),
        "payment {} after {cause:?} breaks its status's field rules: {after:?}",
        after.payment_op_id
    );
    assert!(
        transition_allowed(before.status, after.status),
        "payment {}: {} -> {} by {cause:?} is not in the payment table",
        after.payment_op_id,
        before.status,
        after.status
    );
    Ok(Some(after))
}

/// Whether recording the final `outcome` on `op` decides it now: `Ok(true)`
/// while `op` is open; `Ok(false)` when `op` already has that outcome (an
/// idempotent repeat); `Conflict` when it has the other one.
pub fn final_outcome_due(op: &PaymentOp, outcome: PaymentStatus) -> Result<bool, PaymentRefusal> {
    assert!(
        matches!(outcome, PaymentStatus::Succeeded | PaymentStatus::Failed),
        "only a final outcome is recorded this way"
    );
    match op.status {
        PaymentStatus::Pending | PaymentStatus::Unknown => Ok(true),
        status if status == outcome => Ok(false),
        PaymentStatus::Succeeded | PaymentStatus::Failed => Err(PaymentRefusal::Conflict(op.payment_op_id)),
    }
}

/// Whether `op` carries what its status requires: a provider payment id once
/// `succeeded`, the last error once `failed` or `unknown`; counts and amounts
/// not negative.
pub fn fields_fit(op: &PaymentOp) -> bool {
    let status_ok = match op.status {
        PaymentStatus::Pending => true,
        PaymentStatus::Unknown | PaymentStatus::Failed => op.last_error.is_some(),
        PaymentStatus::Succeeded => op.provider_payment_id.is_some(),
    };
    status_ok && op.checks >= 0 && op.amount_cents >= 0
}

#[cfg(test)]
mod tests;
