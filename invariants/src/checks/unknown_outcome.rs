//! Unknown keeps seats: an unknown payment outcome keeps its seats reserved
//! until the payment deadline. The brief: "If the payment outcome is unknown,
//! keep the seat reserved under the defined pending policy while
//! reconciliation runs. Do not immediately release the seat and assume the
//! payment failed." A decline is the only early release, and a declined
//! payment is never charged. Violations:
//!
//! - an order moved to `released` by the store's clock before its payment deadline;
//! - an order `released` in the final records without a recorded reason
//!   (the decision to release must say why);
//! - a seat freed (`payment_pending` for an order, then `available`) before
//!   that order's payment deadline although the provider's ledger shows the
//!   order's payment charged: the store assumed a failure that was not one.

use super::index::{charges, order_changes};
use crate::trace::OrderChange;
use crate::{Config, Invariant, Subject, TraceEvent, TraceKind, Violation};
use booking::model::{OrderId, OrderStatus, PaymentOpId, SeatState, Snapshot};
use std::collections::BTreeMap;

/// Checks [`Invariant::UnknownKeepsSeats`]. Subject: the order (release
/// decisions) or the seat (early frees). Witnesses: the order's change to
/// `released`; for an early free, the seat's write and the charge.
pub fn check_unknown_outcome(snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let ord_changes = order_changes(trace);
    let mut out = Vec::new();

    // Release decisions in the trace.
    for changes in ord_changes.values() {
        for (seq, c) in changes {
            if c.to == OrderStatus::Released && c.store_now_ms < c.payment_deadline_at_ms {
                out.push(Violation::new(
                    Invariant::UnknownKeepsSeats,
                    Subject::Order { order_id: c.order_id },
                    format!("released at {} before its payment deadline {}", c.store_now_ms, c.payment_deadline_at_ms),
                    vec![*seq],
                ));
            }
        }
    }

    // Release decisions in the final records.
    let released_seq = |order_id: OrderId| -> Vec<u64> {
        ord_changes
            .get(&order_id)
            .and_then(|cs| cs.iter().rev().find(|(_, c)| c.to == OrderStatus::Released))
            .map(|(seq, _)| vec![*seq])
            .unwrap_or_default()
    };
    for o in &snap.orders {
        if o.status == OrderStatus::Released && o.resolution_reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            out.push(Violation::new(
                Invariant::UnknownKeepsSeats,
                Subject::Order { order_id: o.order_id },
                "released without a recorded reason",
                released_seq(o.order_id),
            ));
        }
    }

    out.extend(seats_freed_early(snap, trace, &ord_changes));
    out
}

/// Seats freed before their order's payment deadline although the payment
/// was charged. Deadline and payment operation from the final records, else
/// from the order's changes.
fn seats_freed_early(
    snap: &Snapshot,
    trace: &[TraceEvent],
    ord_changes: &BTreeMap<OrderId, Vec<(u64, &OrderChange)>>,
) -> Vec<Violation> {
    let charges = charges(trace);
    let mut orders: BTreeMap<OrderId, (i64, PaymentOpId)> = ord_changes
        .iter()
        .filter_map(|(id, cs)| cs.last().map(|(_, c)| (*id, (c.payment_deadline_at_ms, c.payment_op_id))))
        .collect();
    orders.extend(snap.orders.iter().map(|o| (o.order_id, (o.payment_deadline_at_ms, o.payment_op_id))));
    let mut out = Vec::new();
    for e in trace {
        let TraceKind::SeatChange(c) = &e.kind else { continue };
        if c.before.state != SeatState::PaymentPending || c.after.state != SeatState::Available {
            continue;
        }
        let Some(order_id) = c.before.order_id else { continue };
        let Some((deadline, op_id)) = orders.get(&order_id) else { continue };
        if c.store_now_ms >= *deadline {
            continue;
        }
        let Some((charged_seq, _)) = charges.get(op_id).and_then(|cs| cs.first()) else { continue };
        out.push(Violation::new(
            Invariant::UnknownKeepsSeats,
            Subject::seat(&c.event_id, &c.seat_id),
            format!(
                "{} freed the seat of order {order_id} at {} before its payment deadline {deadline}, \
                 but its payment {op_id} was charged",
                c.cause.as_str(),
                c.store_now_ms
            ),
            vec![e.seq, *charged_seq],
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{World, clear_hold};
    use crate::trace::{Authority, ChangeCause, PaymentEvent};

    /// An unknown outcome kept until its deadline and then released (and
    /// charged late, refunded), a decline freeing its seat early, a sale.
    #[test]
    fn pending_policy_kept_is_clean() {
        let mut w = World::new(&["A", "B", "C"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o1 = w.checkout("u1", t, "k", 10_000);
        w.unknown(o1);
        w.advance(10_000);
        w.release_unresolved(o1);
        w.charge(o1);
        let comp = w.snap.compensations[0].compensation_id;
        w.refund(comp);
        let t = w.hold("u2", &["B"], 60_000);
        let o2 = w.checkout("u2", t, "k", 10_000);
        w.decline(o2);
        let t = w.hold("u3", &["C"], 60_000);
        let o3 = w.checkout("u3", t, "k", 10_000);
        w.charge(o3);
        assert_eq!(check_unknown_outcome(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    /// The store gives up on an unknown payment before its deadline.
    #[test]
    fn release_before_the_deadline_is_reported() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        w.unknown(o);
        w.advance(5_000);
        w.release_unresolved(o);
        let released = w.last_seq();
        let v = check_unknown_outcome(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::UnknownKeepsSeats);
        assert_eq!(v[0].subject, Subject::Order { order_id: o });
        assert_eq!(v[0].witnesses, vec![released]);
        assert_eq!(v[0].detail, "released at 6000 before its payment deadline 11000");
    }

    /// A release whose reason was not recorded.
    #[test]
    fn release_without_reason_is_reported() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        w.unknown(o);
        w.advance(10_000);
        w.release_unresolved(o);
        let released = w.last_seq();
        w.set_resolution_reason(o, Some(" "));
        let v = check_unknown_outcome(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, Subject::Order { order_id: o });
        assert_eq!(v[0].witnesses, vec![released]);
        assert_eq!(v[0].detail, "released without a recorded reason");
    }

    /// The provider charged, the answer was lost, and the store treated the
    /// payment as declined: the seat is freed before the deadline.
    #[test]
    fn charged_payment_freed_early_is_reported() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        let order = w.order(o).clone();
        let charged = w.charge_without_store(&order);
        w.record(TraceKind::Payment(PaymentEvent::Unknown {
            payment_op_id: order.payment_op_id,
            reason: "timeout".into(),
        }));
        w.advance(1_000);
        let freed = w.change_seat("A", ChangeCause::PaymentDeclined, Authority::order(&order), clear_hold);
        let v = check_unknown_outcome(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"A".into()));
        assert_eq!(v[0].witnesses, vec![charged, freed]);
        assert!(v[0].detail.starts_with("payment_declined freed the seat of order"), "{}", v[0].detail);
        assert!(v[0].detail.ends_with(&format!("but its payment {} was charged", order.payment_op_id)));
    }
}
