//! The store, as a specification: every `Store` call replayed in commit
//! order against the model's own records, each answer and each write
//! compared with what the store did. Ids the store draws (tokens, orders,
//! payment operations, bookings, compensations) are taken from its answers
//! and checked to be new; everything else the model decides itself.
//!
//! The rules, one file each: [`holds`] (holds, releases, the sweeper),
//! [`checkout`], [`payments`] (outcomes, the reconciler's claims, the
//! unresolved release), [`refunds`] (compensations and the outbox),
//! [`reads`].

mod checkout;
mod holds;
mod ids;
mod payments;
mod reads;
mod refunds;
mod replay;

pub use replay::Replay;

use booking::model::{
    Booking, BookingId, Compensation, CompensationId, EventId, HoldToken, Order, OrderId, OrderStatus, OutboxEvent,
    PaymentOp, PaymentOpId, Seat, SeatId, SeatState, UserId,
};
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

/// What an idempotency key committed to: the hold and seats it checked out, and the order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyRecord {
    pub token: HoldToken,
    pub seats: Vec<SeatId>,
    pub order_id: OrderId,
}

/// The model's records: what the store must hold.
#[derive(Debug, Default)]
pub struct StoreModel {
    pub(crate) prices: BTreeMap<EventId, i64>,
    pub(crate) seats: BTreeMap<(EventId, SeatId), Seat>,
    pub(crate) orders: BTreeMap<(EventId, OrderId), Order>,
    pub(crate) order_event: BTreeMap<OrderId, EventId>,
    pub(crate) ops: BTreeMap<(EventId, PaymentOpId), PaymentOp>,
    pub(crate) op_event: BTreeMap<PaymentOpId, EventId>,
    pub(crate) bookings: BTreeMap<(EventId, SeatId, BookingId), Booking>,
    pub(crate) compensations: BTreeMap<(EventId, CompensationId), Compensation>,
    pub(crate) comp_event: BTreeMap<CompensationId, EventId>,
    /// Dispatch events; an id is nil until a claim shows it.
    pub(crate) outbox: Vec<OutboxEvent>,
    pub(crate) keys: BTreeMap<(EventId, UserId, String), KeyRecord>,
    /// Every id the store handed out.
    pub(crate) issued: BTreeSet<Uuid>,
    /// Placeholder ids drawn where the store gave none.
    pub(crate) placeholders: u64,
}

/// What one call writes, as the model has it: compared with the writes the
/// store reported from inside its transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writes {
    /// Seats changed: (before, after), in (event, seat) order.
    pub seats: Vec<(Seat, Seat)>,
    /// Orders created (`None`) or moved: (status before, after).
    pub orders: Vec<(Option<OrderStatus>, Order)>,
    /// Compensations created (`None`) or changed: (before, after).
    pub compensations: Vec<(Option<Compensation>, Compensation)>,
}

impl StoreModel {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The seats of `event_id`, in seat order.
    pub(crate) fn event_seats<'a>(&'a self, event_id: &'a str) -> impl Iterator<Item = &'a Seat> + 'a {
        self.seats
            .range((EventId::from(event_id), SeatId::default())..)
            .take_while(move |(k, _)| k.0 == event_id)
            .map(|(_, s)| s)
    }

    /// Writes `after` over its seat, noting the write.
    pub(crate) fn put_seat(&mut self, after: Seat, w: &mut Writes) {
        let key = (after.event_id.clone(), after.seat_id.clone());
        let before = self.seats.insert(key, after.clone()).expect("the model writes existing seats");
        if before != after {
            w.seats.push((before, after));
        }
    }

    /// Writes `after` over its order (or creates it), noting the write when its status changes.
    pub(crate) fn put_order(&mut self, after: Order, w: &mut Writes) {
        let key = (after.event_id.clone(), after.order_id);
        self.order_event.insert(after.order_id, after.event_id.clone());
        let before = self.orders.insert(key, after.clone()).map(|o| o.status);
        if before != Some(after.status) {
            w.orders.push((before, after));
        }
    }

    /// Writes `after` over its compensation (or creates it), noting the write when it changes.
    pub(crate) fn put_compensation(&mut self, after: Compensation, w: &mut Writes) {
        let key = (after.event_id.clone(), after.compensation_id);
        self.comp_event.insert(after.compensation_id, after.event_id.clone());
        let before = self.compensations.insert(key, after.clone());
        if before.as_ref() != Some(&after) {
            w.compensations.push((before, after));
        }
    }

    /// The payment operation `id`, if the store has it.
    pub(crate) fn op(&self, id: PaymentOpId) -> Option<&PaymentOp> {
        let ev = self.op_event.get(&id)?;
        self.ops.get(&(ev.clone(), id))
    }

    /// The order `id`, if the store has it.
    pub(crate) fn order(&self, id: OrderId) -> Option<&Order> {
        let ev = self.order_event.get(&id)?;
        self.orders.get(&(ev.clone(), id))
    }

    /// The compensation `id`, if the store has it.
    pub(crate) fn compensation(&self, id: CompensationId) -> Option<&Compensation> {
        let ev = self.comp_event.get(&id)?;
        self.compensations.get(&(ev.clone(), id))
    }

    /// An order's bookings, by (seat, booking id).
    pub(crate) fn bookings_of(&self, order: &Order) -> Vec<Booking> {
        self.bookings.values().filter(|b| b.order_id == order.order_id).cloned().collect()
    }

    /// An order's compensations, by id.
    pub(crate) fn compensations_of(&self, order_id: OrderId) -> Vec<Compensation> {
        let mut out: Vec<Compensation> =
            self.compensations.values().filter(|c| c.order_id == order_id).cloned().collect();
        out.sort_by_key(|c| c.compensation_id);
        out
    }

    /// The seats `order` reserves, made available again.
    pub(crate) fn free_order_seats(&mut self, order: &Order, w: &mut Writes) {
        for seat_id in &order.seat_ids {
            let seat = &self.seats[&(order.event_id.clone(), seat_id.clone())];
            if seat.state == SeatState::PaymentPending && seat.order_id == Some(order.order_id) {
                let freed = available(seat);
                self.put_seat(freed, w);
            }
        }
    }
}

/// `seat` made available: nobody owns it; its version moves on.
pub(crate) fn available(seat: &Seat) -> Seat {
    Seat {
        state: SeatState::Available,
        version: seat.version + 1,
        hold_token: None,
        holder_id: None,
        hold_expires_at_ms: None,
        order_id: None,
        booking_id: None,
        ..seat.clone()
    }
}
