//! At most one confirmed booking per (event, seat); every sold seat has
//! exactly one booking, tied to a succeeded payment of the order that owns it;
//! every booking belongs to a seat sold to it; a seat claimed by two live
//! orders (confirmed, or still paying) is a double sale, found in the final
//! records alone.

use super::index::seat_changes;
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::model::{Booking, EventId, Order, OrderStatus, PaymentStatus, Seat, SeatId, SeatState, Snapshot};
use std::collections::{BTreeMap, BTreeSet};

/// Checks [`Invariant::OneBookingPerSeat`] (final bookings and sales in the
/// trace) and [`Invariant::SoldSeatPaid`].
pub fn check_bookings(snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let changes = seat_changes(trace);
    let sales_of = |key: &(EventId, SeatId)| -> Vec<u64> {
        changes
            .get(key)
            .map(|cs| cs.iter().filter(|(_, c)| c.to() == SeatState::Sold).map(|(s, _)| *s).collect())
            .unwrap_or_default()
    };
    let mut by_seat: BTreeMap<(EventId, SeatId), Vec<&Booking>> = BTreeMap::new();
    for b in &snap.bookings {
        by_seat.entry((b.event_id.clone(), b.seat_id.clone())).or_default().push(b);
    }
    let mut out = Vec::new();

    // One booking per seat: in the final records, or sold twice in the trace
    // (a sale the final records no longer show still sold a ticket).
    let mut seats: BTreeSet<(EventId, SeatId)> = by_seat.keys().cloned().collect();
    seats.extend(changes.keys().cloned());
    let mut sold_twice = BTreeSet::new();
    for key in &seats {
        let bookings = by_seat.get(key).map(Vec::as_slice).unwrap_or_default();
        let sales = sales_of(key);
        if bookings.len() > 1 || sales.len() > 1 {
            sold_twice.insert(key.clone());
            let ids: Vec<String> = bookings.iter().map(|b| b.booking_id.to_string()).collect();
            out.push(Violation::new(
                Invariant::OneBookingPerSeat,
                Subject::seat(&key.0, &key.1),
                format!("{} bookings [{}] and {} sales in the trace", bookings.len(), ids.join(", "), sales.len()),
                sales.into_iter().take(2).collect(),
            ));
        }
    }

    out.extend(double_sales(snap, &sold_twice, &sales_of));

    // Every sold seat: exactly its booking, paid by a succeeded operation of its order.
    for seat in &snap.seats {
        let key = (seat.event_id.clone(), seat.seat_id.clone());
        let bookings = by_seat.get(&key).map(Vec::as_slice).unwrap_or_default();
        if let Some(detail) = unpaid(snap, seat, bookings) {
            let last_sale: Vec<u64> = sales_of(&key).into_iter().last().into_iter().collect();
            let subject = Subject::seat(&seat.event_id, &seat.seat_id);
            out.push(Violation::new(Invariant::SoldSeatPaid, subject, detail, last_sale));
        }
    }
    // Bookings on seats that do not exist.
    for (key, bookings) in &by_seat {
        if !snap.seats.iter().any(|s| s.event_id == key.0 && s.seat_id == key.1) {
            out.push(Violation::new(
                Invariant::SoldSeatPaid,
                Subject::seat(&key.0, &key.1),
                format!("booking {} on an unknown seat", bookings[0].booking_id),
                vec![],
            ));
        }
    }
    out
}

/// Double sales the final records show by themselves (chaos mode has no
/// trace): one seat claimed by two live orders (sold to one, or in payment
/// for one). The index allows one booking, but both buyers paid or will.
/// Seats in `already` were reported from the trace.
fn double_sales(
    snap: &Snapshot,
    already: &BTreeSet<(EventId, SeatId)>,
    sales_of: &dyn Fn(&(EventId, SeatId)) -> Vec<u64>,
) -> Vec<Violation> {
    let mut live: BTreeMap<(EventId, SeatId), Vec<&Order>> = BTreeMap::new();
    for o in snap.orders.iter().filter(|o| o.status.owns_seats() || o.status == OrderStatus::Confirmed) {
        for s in &o.seat_ids {
            live.entry((o.event_id.clone(), s.clone())).or_default().push(o);
        }
    }
    let mut out = Vec::new();
    for (key, orders) in live.iter().filter(|(k, os)| os.len() > 1 && !already.contains(*k)) {
        let claims: Vec<String> =
            orders.iter().map(|o| format!("{} ({}, {})", o.order_id, o.status, o.holder_id)).collect();
        out.push(Violation::new(
            Invariant::OneBookingPerSeat,
            Subject::seat(&key.0, &key.1),
            format!("double sale: claimed by {} live orders: {}", orders.len(), claims.join(", ")),
            sales_of(key).into_iter().take(2).collect(),
        ));
    }
    out
}

/// What is wrong with `seat`'s booking (`bookings`: those on the seat), if
/// anything: a sold seat has exactly its booking, of its order, paid by a
/// succeeded operation of that order; a seat not sold has none.
fn unpaid(snap: &Snapshot, seat: &Seat, bookings: &[&Booking]) -> Option<String> {
    if seat.state != SeatState::Sold {
        return bookings.first().map(|b| format!("booking {} on a seat that is {}", b.booking_id, seat.state));
    }
    let Some(b) = bookings.iter().find(|b| Some(b.booking_id) == seat.booking_id) else {
        return Some(format!("sold with booking_id {:?} but no such booking", seat.booking_id));
    };
    if Some(b.order_id) != seat.order_id {
        return Some(format!(
            "booking {} is for order {}, the seat's order is {:?}",
            b.booking_id, b.order_id, seat.order_id
        ));
    }
    match snap.payment_ops.iter().find(|op| op.payment_op_id == b.payment_op_id) {
        None => Some(format!("booking {} names unknown payment op {}", b.booking_id, b.payment_op_id)),
        Some(op) if op.order_id != b.order_id => Some(format!(
            "booking {} is paid by op {} of another order {}",
            b.booking_id, op.payment_op_id, op.order_id
        )),
        Some(op) if op.status != PaymentStatus::Succeeded => {
            Some(format!("booking {} is paid by op {} whose status is {}", b.booking_id, op.payment_op_id, op.status))
        }
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;

    #[test]
    fn clean_sale_has_no_violation() {
        let mut w = World::new(&["A1", "A2"]);
        let t = w.hold("alice", &["A1", "A2"], 5_000);
        let o = w.checkout("alice", t, "k1", 60_000);
        w.charge(o);
        assert_eq!(check_bookings(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    #[test]
    fn two_bookings_on_one_seat_are_reported_with_both_sales() {
        let mut w = World::new(&["A1"]);
        let t = w.hold("alice", &["A1"], 5_000);
        let o = w.checkout("alice", t, "k1", 60_000);
        w.charge(o);
        let first_sale = w.last_change_of("A1");
        // A broken store sells the sold seat again to bob.
        let second_sale = w.force_resell("A1", "bob");
        let v = check_bookings(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::OneBookingPerSeat);
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"A1".into()));
        assert_eq!(v[0].witnesses, vec![first_sale, second_sale]);
    }

    #[test]
    fn sold_seat_with_unpaid_booking_is_reported() {
        let mut w = World::new(&["A1"]);
        let t = w.hold("alice", &["A1"], 5_000);
        let o = w.checkout("alice", t, "k1", 60_000);
        w.charge(o);
        let sale = w.last_change_of("A1");
        w.snap.payment_ops[0].status = PaymentStatus::Unknown;
        let v = check_bookings(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::SoldSeatPaid);
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"A1".into()));
        assert_eq!(v[0].witnesses, vec![sale]);
        assert!(v[0].detail.contains("status is unknown"), "{}", v[0].detail);
    }

    #[test]
    fn seat_claimed_by_two_live_orders_is_a_double_sale() {
        let mut w = World::new(&["A1"]);
        let t = w.hold("alice", &["A1"], 5_000);
        let o = w.checkout("alice", t, "k1", 60_000);
        w.charge(o);
        let sale = w.last_change_of("A1");
        let alice = w.snap.orders[0].order_id;
        // A broken checkout gave the sold seat to bob's payment too; only the
        // final records are given (as chaos mode reads them from PostgreSQL).
        let bob_id = booking::model::OrderId::from_u128(7);
        let mut bob = w.snap.orders[0].clone();
        bob.order_id = bob_id;
        bob.holder_id = "bob".into();
        bob.status = OrderStatus::Pending;
        w.snap.orders.push(bob);
        let v = check_bookings(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::OneBookingPerSeat);
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"A1".into()));
        assert_eq!(v[0].witnesses, vec![sale]);
        let want =
            format!("double sale: claimed by 2 live orders: {alice} (confirmed, alice), {bob_id} (pending, bob)");
        assert_eq!(v[0].detail, want);
        let v = check_bookings(&w.snap, &[], &w.config());
        assert_eq!(v.len(), 1, "found without a trace: {v:?}");
        assert_eq!(v[0].detail, want);
        // Once bob's order is released, one live order is left: no double sale.
        w.snap.orders[1].status = OrderStatus::Released;
        assert_eq!(check_bookings(&w.snap, &[], &w.config()), vec![]);
    }

    #[test]
    fn booking_on_available_seat_is_reported() {
        let mut w = World::new(&["A1", "A2"]);
        let t = w.hold("alice", &["A1"], 5_000);
        let o = w.checkout("alice", t, "k1", 60_000);
        w.charge(o);
        let mut stray = w.snap.bookings[0].clone();
        stray.seat_id = "A2".into();
        w.snap.bookings.push(stray);
        let v = check_bookings(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::SoldSeatPaid);
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"A2".into()));
        assert_eq!(v[0].witnesses, Vec::<u64>::new());
    }
}
