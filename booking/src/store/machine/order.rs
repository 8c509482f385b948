//! The order's state machine. An order is opened `pending` by a checkout and
//! owns its seats while `pending` or `reconciling`; it leaves them
//! `confirmed` (charged and booked), `failed` (declined) or `released`
//! (unresolved past its payment deadline, the reason recorded). A charge that
//! lands after the seats went back makes it `compensating`, and the refund
//! ends it `compensated` or, when giving the money back fails for good,
//! `compensation_failed` (never hidden as `failed`).

use crate::model::{Order, OrderId, OrderStatus, PaymentOpId, SeatId};
use crate::store::rules::Rules;
use crate::store::types::BeginPayment;

/// The transitions an order may make, as a table: `(from, to)`.
pub const TRANSITIONS: &[(OrderStatus, OrderStatus)] = &[
    (OrderStatus::Pending, OrderStatus::Reconciling),
    (OrderStatus::Pending, OrderStatus::Confirmed),
    (OrderStatus::Pending, OrderStatus::Failed),
    (OrderStatus::Pending, OrderStatus::Released),
    (OrderStatus::Reconciling, OrderStatus::Confirmed),
    (OrderStatus::Reconciling, OrderStatus::Failed),
    (OrderStatus::Reconciling, OrderStatus::Released),
    (OrderStatus::Released, OrderStatus::Compensating),
    (OrderStatus::Failed, OrderStatus::Compensating),
    (OrderStatus::Compensating, OrderStatus::Compensated),
    (OrderStatus::Compensating, OrderStatus::CompensationFailed),
];

/// Whether `from -> to` is in [`TRANSITIONS`].
pub fn transition_allowed(from: OrderStatus, to: OrderStatus) -> bool {
    TRANSITIONS.contains(&(from, to))
}

/// What moves an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderCause<'a> {
    /// The payment succeeded while the order owned its seats: they are sold.
    Sell,
    /// The payment succeeded after the seats went back: the money must go back.
    LateCharge,
    /// The provider declined, with its reason (bounded).
    Decline {
        /// The provider's reason.
        reason: &'a str,
    },
    /// The provider's answer was lost, with the error seen (bounded).
    Unknown {
        /// What was seen instead of an answer.
        error: &'a str,
    },
    /// The payment is still unresolved and its seats go back, with the reason (bounded).
    ReleaseUnresolved {
        /// Why (recorded on the order).
        reason: &'a str,
    },
    /// The refund of a late charge succeeded.
    Compensated,
    /// The refund of a late charge failed for good: operators must act.
    CompensationGaveUp,
}

/// Why an order refuses a change, or has nothing to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OrderRefusal {
    /// The cause needs an order that owns its seats (`pending`, `reconciling`).
    #[error("the order is {status}, no longer open")]
    NotOpen {
        /// Its status.
        status: OrderStatus,
    },
    /// An unresolved payment is released only once its deadline has passed.
    #[error("the payment deadline {deadline_at_ms} has not passed")]
    DeadlineNotPassed {
        /// The order's payment deadline.
        deadline_at_ms: i64,
    },
    /// The cause changes nothing on an order in this status (a repeated
    /// unknown outcome of a `reconciling` order, say).
    #[error("nothing to change on a {status} order")]
    NoChange {
        /// Its status.
        status: OrderStatus,
    },
    /// A late charge needs an order that released its seats (or was declined).
    #[error("a late charge of a {status} order")]
    NotReleased {
        /// Its status.
        status: OrderStatus,
    },
    /// A refund's end needs a `compensating` order.
    #[error("the order is {status}, not compensating")]
    NotCompensating {
        /// Its status.
        status: OrderStatus,
    },
}

/// The order a checkout opens at `now_ms`: `pending`, owning `sorted` (the
/// request's seats, sorted), for `amount_cents`, paid by `payment_op_id`,
/// unresolved no later than `now_ms + req.payment_ttl_ms`.
pub fn open(
    req: &BeginPayment,
    sorted: &[SeatId],
    order_id: OrderId,
    payment_op_id: PaymentOpId,
    amount_cents: i64,
    now_ms: i64,
) -> Order {
    let order = Order {
        event_id: req.event_id.clone(),
        order_id,
        holder_id: req.holder_id.clone(),
        hold_token: req.hold_token,
        seat_ids: sorted.to_vec(),
        amount_cents,
        status: OrderStatus::Pending,
        payment_op_id,
        payment_deadline_at_ms: now_ms + req.payment_ttl_ms,
        idempotency_key: req.idempotency_key.clone(),
        resolution_reason: None,
        created_at_ms: now_ms,
        updated_at_ms: now_ms,
    };
    assert!(fields_fit(&order), "a new order fits its status: {order:?}");
    order
}

/// The reason recorded on an order declined for `reason`.
pub fn decline_reason(reason: &str) -> String {
    format!("payment declined: {reason}")
}

/// The reason recorded on an order released at once for an unknown outcome
/// (only a planted bug does that): `error`, prefixed, bounded.
pub fn unknown_release_reason(error: &str) -> String {
    crate::store::types::bounded_text(&format!("payment outcome unknown: {error}"))
}

/// The order after `cause` at store time `now_ms` under `rules`, or why not.
/// Every change sets `updated_at_ms` to `now_ms` and nothing but the status
/// and the resolution reason.
///
/// # Panics
/// When the after-image breaks a field rule of its status, or, under sound
/// rules, leaves [`TRANSITIONS`].
pub fn next(before: &Order, cause: &OrderCause<'_>, now_ms: i64, rules: &Rules) -> Result<Order, OrderRefusal> {
    let status = before.status;
    let open = status.owns_seats();
    let mut after = before.clone();
    match *cause {
        OrderCause::Sell => {
            if !open {
                return Err(OrderRefusal::NotOpen { status });
            }
            after.status = OrderStatus::Confirmed;
        }
        OrderCause::LateCharge => {
            // A planted bug takes a repeated success of a confirmed order for a late one.
            let repeat = !rules.repeat_success_idempotent() && status == OrderStatus::Confirmed;
            if !matches!(status, OrderStatus::Released | OrderStatus::Failed) && !repeat {
                return Err(OrderRefusal::NotReleased { status });
            }
            after.status = OrderStatus::Compensating;
        }
        OrderCause::Decline { reason } => {
            if !open {
                return Err(OrderRefusal::NotOpen { status });
            }
            after.status = OrderStatus::Failed;
            after.resolution_reason = Some(decline_reason(reason));
        }
        OrderCause::Unknown { error } => {
            if !rules.unknown_keeps_seats() && open {
                // The planted bug: an unknown outcome taken for a failure.
                after.status = OrderStatus::Released;
                after.resolution_reason = Some(unknown_release_reason(error));
            } else if status == OrderStatus::Pending {
                after.status = OrderStatus::Reconciling;
            } else {
                return Err(OrderRefusal::NoChange { status });
            }
        }
        OrderCause::ReleaseUnresolved { reason } => {
            if !open {
                return Err(OrderRefusal::NotOpen { status });
            }
            if rules.release_waits_for_deadline() && now_ms < before.payment_deadline_at_ms {
                return Err(OrderRefusal::DeadlineNotPassed { deadline_at_ms: before.payment_deadline_at_ms });
            }
            after.status = OrderStatus::Released;
            after.resolution_reason = Some(reason.to_string());
        }
        OrderCause::Compensated | OrderCause::CompensationGaveUp => {
            if status != OrderStatus::Compensating {
                return Err(OrderRefusal::NotCompensating { status });
            }
            after.status = match cause {
                OrderCause::Compensated => OrderStatus::Compensated,
                _ if rules.give_up_flags_order() => OrderStatus::CompensationFailed,
                _ => OrderStatus::Failed, // the planted bug: a charge hidden as a plain failure
            };
        }
    }
    after.updated_at_ms = now_ms;
    assert!(fields_fit(&after), "order {} after {cause:?} breaks its status's field rules: {after:?}", after.order_id);
    assert!(
        *rules != Rules::SOUND || transition_allowed(status, after.status),
        "order {}: {status} -> {} by {cause:?} is not in the order table",
        after.order_id,
        after.status
    );
    Ok(after)
}

/// Whether `order` carries what its status requires (the migration's CHECKs,
/// and the resolution reason: recorded exactly when an order gave its seats
/// back without a sale).
pub fn fields_fit(order: &Order) -> bool {
    let sorted = order.seat_ids.windows(2).all(|w| w[0] < w[1]);
    let reason_ok = match order.status {
        OrderStatus::Pending | OrderStatus::Reconciling | OrderStatus::Confirmed => order.resolution_reason.is_none(),
        OrderStatus::Failed | OrderStatus::Released => order.resolution_reason.is_some(),
        OrderStatus::Compensating | OrderStatus::Compensated | OrderStatus::CompensationFailed => true,
    };
    !order.seat_ids.is_empty() && sorted && order.amount_cents >= 0 && reason_ok
}

#[cfg(test)]
mod tests;
