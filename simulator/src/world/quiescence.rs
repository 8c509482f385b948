//! When the settle phase may end early: the system has nothing left to do.
//! A run's settle phase lasts at most the scenario's `settle_ms`; once faults
//! are over it ends as soon as the world is quiescent — every user finished,
//! every crashed host back, the provider holds no delayed delivery or late
//! charge, and the store has no live hold, no unresolved payment, no open
//! compensation and no pending dispatch. From such a state nothing can
//! change without a new request, so the liveness checks at the end are
//! decided already, and a stuck system (a hold never reclaimed, a payment
//! never resolved) still runs the whole settle phase and is caught.

use booking::model::{CompensationStatus, OrderStatus, OutboxStatus, SeatState, Snapshot};

/// How often the world checks for quiescence during the settle phase, ms of simulated time.
pub const CHECK_INTERVAL_MS: u64 = 1_000;

/// Why the store is not yet quiescent, or `None` when it is.
pub fn store_busy(snap: &Snapshot) -> Option<&'static str> {
    if snap.seats.iter().any(|s| matches!(s.state, SeatState::Held | SeatState::PaymentPending)) {
        return Some("a seat is held or payment-pending");
    }
    if snap.orders.iter().any(|o| o.status.owns_seats() || o.status == OrderStatus::Compensating) {
        return Some("an order is unresolved or compensating");
    }
    if snap
        .compensations
        .iter()
        .any(|c| !matches!(c.status, CompensationStatus::Succeeded | CompensationStatus::Failed))
    {
        return Some("a compensation is open");
    }
    if snap.outbox.iter().any(|e| e.status == OutboxStatus::Pending) {
        return Some("a dispatch event is pending");
    }
    None
}

/// Whether the world outside the store is quiescent: `clients_done` (every
/// virtual user finished), `hosts_down` crashed hosts awaiting restart, and
/// `provider_pending` delayed provider tasks (webhook copies, late charges).
pub fn world_idle(clients_done: bool, hosts_down: usize, provider_pending: usize) -> bool {
    clients_done && hosts_down == 0 && provider_pending == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use booking::model::Seat;

    fn seat(state: SeatState) -> Seat {
        Seat {
            event_id: "ev0".into(),
            seat_id: "s1".into(),
            state,
            version: 1,
            hold_token: None,
            holder_id: None,
            hold_expires_at_ms: None,
            order_id: None,
            booking_id: None,
        }
    }

    fn snap(seats: Vec<Seat>) -> Snapshot {
        Snapshot {
            events: vec![],
            seats,
            orders: vec![],
            payment_ops: vec![],
            bookings: vec![],
            compensations: vec![],
            outbox: vec![],
        }
    }

    #[test]
    fn live_holds_and_pending_payments_are_busy() {
        assert!(store_busy(&snap(vec![seat(SeatState::Held)])).is_some());
        assert!(store_busy(&snap(vec![seat(SeatState::PaymentPending)])).is_some());
        assert_eq!(store_busy(&snap(vec![seat(SeatState::Available), seat(SeatState::Sold)])), None);
    }

    #[test]
    fn open_compensations_and_pending_dispatches_are_busy() {
        use booking::model::{Compensation, OutboxEvent, OutboxKind};
        let ev = booking::model::EventId::from("ev0");
        let id = |n: u128| uuid::Uuid::from_u128(n);
        let mut s = snap(vec![seat(SeatState::Sold)]);
        s.compensations.push(Compensation::requested_refund(&ev, id(1).into(), id(2).into(), id(3).into(), 5_000, 0));
        assert_eq!(store_busy(&s), Some("a compensation is open"));
        s.compensations[0].status = CompensationStatus::Failed;
        assert_eq!(store_busy(&s), None, "a failed compensation is flagged for operators: settled");
        s.outbox.push(OutboxEvent::pending(&ev, id(4).into(), OutboxKind::Charge, id(5), 0));
        assert_eq!(store_busy(&s), Some("a dispatch event is pending"));
        s.outbox[0].status = OutboxStatus::Done;
        assert_eq!(store_busy(&s), None);
    }

    #[test]
    fn the_world_outside_the_store_must_be_idle_too() {
        assert!(world_idle(true, 0, 0));
        assert!(!world_idle(false, 0, 0));
        assert!(!world_idle(true, 1, 0));
        assert!(!world_idle(true, 0, 1));
    }
}
