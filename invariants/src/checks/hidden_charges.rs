//! No hidden charged orders: every charge (a `charged` event at the provider,
//! or a payment operation the store records as succeeded) is a booking, a
//! compensation record, or an order still open for reconciliation
//! (`pending`/`reconciling`, whose lateness the liveness check judges); and
//! every compensation not yet succeeded is in the operators' list: its order
//! is `compensating`, `compensation_failed` or `reconciling`. When the trace
//! carries the operators' list as the store served it at the end
//! ([`TraceKind::OperatorList`](crate::TraceKind::OperatorList)), every such
//! compensation and its order must be on it too.

use super::index::{charges, compensation_changes, order_changes};
use crate::{Config, Invariant, Subject, TraceEvent, TraceKind, Violation};
use booking::model::{CompensationStatus, OrderStatus, PaymentOpId, PaymentStatus, Snapshot};
use std::collections::BTreeSet;

/// Checks [`Invariant::NoHiddenCharge`] and [`Invariant::CompensationVisible`].
pub fn check_hidden_charges(snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let charges = charges(trace);
    let mut charged: BTreeSet<PaymentOpId> = charges.keys().copied().collect();
    charged
        .extend(snap.payment_ops.iter().filter(|op| op.status == PaymentStatus::Succeeded).map(|op| op.payment_op_id));
    let mut out = Vec::new();
    for op_id in charged {
        let booked = snap.bookings.iter().any(|b| b.payment_op_id == op_id);
        let compensated = snap.compensations.iter().any(|c| c.payment_op_id == op_id);
        let op = snap.payment_ops.iter().find(|op| op.payment_op_id == op_id);
        let order = op.and_then(|op| snap.orders.iter().find(|o| o.order_id == op.order_id));
        let open = order.is_some_and(|o| o.status.owns_seats());
        if booked || compensated || open {
            continue;
        }
        let detail = match (op, order) {
            (None, _) => "charged, but the store has no such payment operation".to_string(),
            (Some(op), None) => format!("charged, but the store has no order {}", op.order_id),
            (Some(_), Some(o)) => {
                format!("charged, but order {} is {} with no booking and no compensation", o.order_id, o.status)
            }
        };
        let witnesses = charges.get(&op_id).and_then(|c| c.first()).map(|(seq, _)| vec![*seq]).unwrap_or_default();
        out.push(Violation::new(
            Invariant::NoHiddenCharge,
            Subject::PaymentOp { payment_op_id: op_id },
            detail,
            witnesses,
        ));
    }
    out.extend(check_compensations_visible(snap, trace));
    out
}

/// [`Invariant::CompensationVisible`]: every compensation not yet refunded
/// is on the operators' list (its order compensating, failed or
/// reconciling), and on the list the store served at the end, if recorded.
fn check_compensations_visible(snap: &Snapshot, trace: &[TraceEvent]) -> Vec<Violation> {
    let mut out = Vec::new();
    let comp_changes = compensation_changes(trace);
    let ord_changes = order_changes(trace);
    // The operators' list as served at the end, when the run recorded it.
    let served = trace.iter().rev().find_map(|e| match &e.kind {
        TraceKind::OperatorList { order_ids, compensation_ids } => Some((e.seq, order_ids, compensation_ids)),
        _ => None,
    });
    for c in &snap.compensations {
        if c.status == CompensationStatus::Succeeded {
            continue;
        }
        let order = snap.orders.iter().find(|o| o.order_id == c.order_id);
        let listed = order.is_some_and(|o| {
            matches!(o.status, OrderStatus::Compensating | OrderStatus::CompensationFailed | OrderStatus::Reconciling)
        });
        let missing_from_served = served.and_then(|(seq, orders, comps)| {
            if !comps.contains(&c.compensation_id) {
                Some((seq, "the compensation"))
            } else if !orders.contains(&c.order_id) {
                Some((seq, "its order"))
            } else {
                None
            }
        });
        let detail = match order {
            None => format!("{} compensation of unknown order {}", c.status, c.order_id),
            Some(o) if !listed => format!(
                "{} compensation, but order {} is {}: not in the operators' list",
                c.status, o.order_id, o.status
            ),
            Some(o) => {
                let Some((_, what)) = missing_from_served else { continue };
                format!(
                    "{} compensation of {} order {}: {what} is missing from the operators' list the store served",
                    c.status, o.status, o.order_id
                )
            }
        };
        let mut witnesses = Vec::new();
        if let Some((seq, _)) = comp_changes.get(&c.compensation_id).and_then(|cs| cs.first()) {
            witnesses.push(*seq);
        }
        if let Some((seq, _)) = ord_changes.get(&c.order_id).and_then(|cs| cs.last()) {
            witnesses.push(*seq);
        }
        if let Some((seq, _)) = missing_from_served {
            witnesses.push(seq);
        }
        out.push(Violation::new(
            Invariant::CompensationVisible,
            Subject::Compensation { compensation_id: c.compensation_id },
            detail,
            witnesses,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TraceKind;
    use crate::testkit::World;
    use crate::trace::PaymentEvent;

    /// Sold, declined, late success compensated, late success compensating,
    /// and a charge still reconciling: all visible.
    #[test]
    fn every_kind_of_charge_accounted_for_is_clean() {
        let mut w = World::new(&["A", "B", "C", "D", "E"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o1 = w.checkout("u1", t, "k", 10_000);
        w.charge(o1);
        let t = w.hold("u2", &["B"], 60_000);
        let o2 = w.checkout("u2", t, "k", 10_000);
        w.decline(o2);
        let t = w.hold("u3", &["C"], 60_000);
        let o3 = w.checkout("u3", t, "k", 10_000);
        let t = w.hold("u4", &["D"], 60_000);
        let o4 = w.checkout("u4", t, "k", 10_000);
        let t = w.hold("u5", &["E"], 60_000);
        let o5 = w.checkout("u5", t, "k", 10_000);
        w.unknown(o3);
        w.unknown(o4);
        w.unknown(o5);
        w.advance(10_000);
        w.release_unresolved(o3);
        w.release_unresolved(o4);
        w.charge(o3);
        let comp = w.snap.compensations[0].compensation_id;
        w.refund(comp);
        w.charge(o4);
        w.record(TraceKind::Payment(PaymentEvent::Charged {
            payment_op_id: w.order(o5).payment_op_id,
            amount_cents: 1_000,
            provider_payment_id: "p5".into(),
        }));
        assert_eq!(check_hidden_charges(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    /// A late success silently dropped: charged, order released, no compensation.
    #[test]
    fn charge_after_release_without_compensation_is_reported() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        w.advance(10_000);
        w.release_unresolved(o);
        let op = w.order(o).payment_op_id;
        let charged = w.record(TraceKind::Payment(PaymentEvent::Charged {
            payment_op_id: op,
            amount_cents: 1_000,
            provider_payment_id: "p".into(),
        }));
        let v = check_hidden_charges(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::NoHiddenCharge);
        assert_eq!(v[0].subject, Subject::PaymentOp { payment_op_id: op });
        assert_eq!(v[0].witnesses, vec![charged]);
        assert_eq!(v[0].detail, format!("charged, but order {o} is released with no booking and no compensation"));
    }

    /// A compensation requested while its order says `released`: operators never see it.
    #[test]
    fn open_compensation_of_unlisted_order_is_reported() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        w.advance(10_000);
        w.release_unresolved(o);
        let order_released = w.last_seq();
        let order = w.order(o).clone();
        w.charge_without_store(&order);
        let comp = w.open_compensation(&order);
        let created = w.last_seq();
        let v = check_hidden_charges(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::CompensationVisible);
        assert_eq!(v[0].subject, Subject::Compensation { compensation_id: comp });
        assert_eq!(v[0].witnesses, vec![order_released, created]);
    }

    /// The store's own list for operators, as served at the end, must carry
    /// every open compensation and its order.
    #[test]
    fn an_open_compensation_missing_from_the_served_list_is_reported() {
        let mut w = World::new(&["A"]);
        let (o, comp) = w.late_success_after_release("u1", "A");
        let mut listed = w.clone();
        listed.record(TraceKind::OperatorList { order_ids: vec![o], compensation_ids: vec![comp] });
        assert_eq!(check_hidden_charges(&listed.snap, listed.trace.events(), &listed.config()), vec![]);

        let served = w.record(TraceKind::OperatorList { order_ids: vec![o], compensation_ids: vec![] });
        let v = check_hidden_charges(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::CompensationVisible);
        assert!(v[0].witnesses.contains(&served), "{v:?}");
        assert!(
            v[0].detail.ends_with("the compensation is missing from the operators' list the store served"),
            "{}",
            v[0].detail
        );
    }
}
