//! No refund of a ticket: the payment of a confirmed booking is never given
//! back. A refund exists only for an order charged without a ticket (released
//! before its payment succeeded: a late success) or explicitly cancelled (the
//! model has no cancel path today). Judged on the final compensation records
//! and on the provider's ledger (`refunded` events): either one giving back
//! a payment operation that has a booking, or whose order is `confirmed`,
//! leaves a buyer with a ticket and their money.

use super::index::{compensation_changes, order_changes};
use crate::trace::PaymentEvent;
use crate::{Config, Invariant, Subject, TraceEvent, TraceKind, Violation};
use booking::model::{OrderId, OrderStatus, PaymentOpId, Snapshot};

/// Checks [`Invariant::NoRefundOfTicket`]. Subject: the compensation (final
/// records) or the payment operation (provider's ledger). Witnesses: the
/// compensation's creation or the refund, plus the order's change to
/// `confirmed` when the trace has it.
pub fn check_ticket_refunds(snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let comp_changes = compensation_changes(trace);
    let ord_changes = order_changes(trace);
    // The ticket a payment operation bought: (its order, why it counts as a ticket).
    let ticket = |op_id: PaymentOpId| -> Option<(OrderId, String)> {
        if let Some(b) = snap.bookings.iter().find(|b| b.payment_op_id == op_id) {
            return Some((b.order_id, format!("booking {} of seat {}/{}", b.booking_id, b.event_id, b.seat_id)));
        }
        let op = snap.payment_ops.iter().find(|p| p.payment_op_id == op_id);
        let order_id = op
            .map(|p| p.order_id)
            .or_else(|| snap.orders.iter().find(|o| o.payment_op_id == op_id).map(|o| o.order_id))?;
        let order = snap.orders.iter().find(|o| o.order_id == order_id)?;
        (order.status == OrderStatus::Confirmed).then(|| (order_id, format!("confirmed order {order_id}")))
    };
    let confirmed_seq = |order_id: OrderId| -> Option<u64> {
        ord_changes.get(&order_id)?.iter().find(|(_, c)| c.to == OrderStatus::Confirmed).map(|(seq, _)| *seq)
    };
    let mut out = Vec::new();

    for c in &snap.compensations {
        let Some((order_id, what)) = ticket(c.payment_op_id) else { continue };
        let mut witnesses: Vec<u64> =
            comp_changes.get(&c.compensation_id).and_then(|cs| cs.first()).map(|(seq, _)| *seq).into_iter().collect();
        witnesses.extend(confirmed_seq(order_id));
        out.push(Violation::new(
            Invariant::NoRefundOfTicket,
            Subject::Compensation { compensation_id: c.compensation_id },
            format!("{} compensation of payment {} that bought {what}", c.status, c.payment_op_id),
            witnesses,
        ));
    }

    for e in trace {
        let TraceKind::Payment(PaymentEvent::Refunded { compensation_id, payment_op_id, amount_cents }) = &e.kind
        else {
            continue;
        };
        let Some((order_id, what)) = ticket(*payment_op_id) else { continue };
        let mut witnesses = vec![e.seq];
        witnesses.extend(confirmed_seq(order_id));
        out.push(Violation::new(
            Invariant::NoRefundOfTicket,
            Subject::PaymentOp { payment_op_id: *payment_op_id },
            format!("refunded {amount_cents} cents (compensation {compensation_id}) of a payment that bought {what}"),
            witnesses,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;

    /// A sale, and a late success refunded: only the ticketless charge goes back.
    #[test]
    fn refund_of_a_late_success_only_is_clean() {
        let mut w = World::new(&["A", "B"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o1 = w.checkout("u1", t, "k", 10_000);
        w.charge(o1);
        let t = w.hold("u2", &["B"], 60_000);
        let o2 = w.checkout("u2", t, "k", 10_000);
        w.unknown(o2);
        w.advance(10_000);
        w.release_unresolved(o2);
        w.charge(o2);
        let comp = w.snap.compensations[0].compensation_id;
        w.refund(comp);
        assert_eq!(check_ticket_refunds(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    /// The confirmed booking's payment is refunded (a compensation
    /// opened for it and the provider gives the money back).
    #[test]
    fn refund_of_a_booked_payment_is_reported_in_records_and_ledger() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        w.charge(o);
        let confirmed = w.last_seq();
        let order = w.order(o).clone();
        let comp = w.open_compensation(&order);
        let created = w.last_seq();
        let refunded = w.refund(comp);
        let v = check_ticket_refunds(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().all(|v| v.invariant == Invariant::NoRefundOfTicket));
        assert_eq!(v[0].subject, Subject::Compensation { compensation_id: comp });
        assert_eq!(v[0].witnesses, vec![confirmed, created]);
        assert!(v[0].detail.starts_with("succeeded compensation of payment"), "{}", v[0].detail);
        assert_eq!(v[1].subject, Subject::PaymentOp { payment_op_id: order.payment_op_id });
        assert_eq!(v[1].witnesses, vec![confirmed, refunded]);
        assert!(v[1].detail.contains("that bought booking"), "{}", v[1].detail);
    }

    /// A confirmed order whose bookings are missing from the records still counts as a ticket.
    #[test]
    fn compensation_of_a_confirmed_order_is_reported() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        w.charge(o);
        let confirmed = w.last_seq();
        w.snap.bookings.clear();
        let order = w.order(o).clone();
        let comp = w.open_compensation(&order);
        let created = w.last_seq();
        let v = check_ticket_refunds(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, Subject::Compensation { compensation_id: comp });
        assert_eq!(v[0].witnesses, vec![confirmed, created]);
        assert!(v[0].detail.ends_with(&format!("that bought confirmed order {o}")), "{}", v[0].detail);
    }
}
