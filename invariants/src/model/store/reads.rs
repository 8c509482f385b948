//! Reads: what each must show of the records at its moment.
//!
//! - A seat map is every seat of the event in seat order; its version is
//!   the seat count and the sum of their versions; a filtered map shows the
//!   seats in one state, with the whole map's version.
//! - An order's details: the order, its bookings by (seat, booking id), its
//!   compensations by id.
//! - The operators' list: every order charged without a ticket whose money
//!   is not back (`compensating`, `compensation_failed`), every order whose
//!   outcome is unknown (`reconciling`), every order released at its
//!   deadline whose payment is still open (possibly charged); and every
//!   compensation not `succeeded`; each by (event, id).

use super::StoreModel;
use crate::store_call::SeatsDigest;
use booking::model::{
    Booking, Compensation, CompensationStatus, EventId, Order, OrderId, OrderStatus, PaymentOp, PaymentOpId,
    PaymentStatus, Seat, SeatState,
};
use booking::store::{OrderDetails, Resolution, SeatMapVersion, StoreError};

impl StoreModel {
    fn known_event(&self, event_id: &EventId) -> Result<(), StoreError> {
        if self.prices.contains_key(event_id) { Ok(()) } else { Err(StoreError::UnknownEvent(EventId::from(event_id))) }
    }

    /// `seat_map`, as its digest.
    pub(crate) fn seat_map(&self, event_id: &EventId) -> Result<SeatsDigest, StoreError> {
        self.known_event(event_id)?;
        let seats: Vec<&Seat> = self.event_seats(event_id).collect();
        Ok(SeatsDigest::of(seats.iter().copied()))
    }

    /// The version of an event's map.
    pub(crate) fn seat_map_version(&self, event_id: &EventId) -> Result<SeatMapVersion, StoreError> {
        self.known_event(event_id)?;
        let mut v = SeatMapVersion { seats: 0, version_sum: 0 };
        for s in self.event_seats(event_id) {
            v.seats += 1;
            v.version_sum += s.version;
        }
        Ok(v)
    }

    /// `seats_in_state`: the version and the digest of the seats shown.
    pub(crate) fn seats_in_state(
        &self,
        event_id: &EventId,
        state: SeatState,
    ) -> Result<(SeatMapVersion, SeatsDigest), StoreError> {
        let version = self.seat_map_version(event_id)?;
        let shown: Vec<&Seat> = self.event_seats(event_id).filter(|s| s.state == state).collect();
        Ok((version, SeatsDigest::of(shown.iter().copied())))
    }

    /// `order`.
    pub(crate) fn read_order(&self, id: OrderId) -> Result<Order, StoreError> {
        self.order(id).cloned().ok_or(StoreError::UnknownOrder(id))
    }

    /// `payment_op`.
    pub(crate) fn read_op(&self, id: PaymentOpId) -> Result<PaymentOp, StoreError> {
        self.op(id).cloned().ok_or(StoreError::UnknownPaymentOp(id))
    }

    /// `order_details`.
    pub(crate) fn order_details(&self, id: OrderId) -> Result<OrderDetails, StoreError> {
        let order = self.read_order(id)?;
        Ok(OrderDetails { bookings: self.bookings_of(&order), compensations: self.compensations_of(id), order })
    }

    /// `bookings` of an event, by (seat, booking id).
    pub(crate) fn event_bookings(&self, event_id: &EventId) -> Vec<Booking> {
        self.bookings.values().filter(|b| b.event_id == *event_id).cloned().collect()
    }

    /// `needs_resolution`.
    pub(crate) fn needs_resolution(&self) -> Resolution {
        let open_payment = |o: &Order| {
            self.op(o.payment_op_id)
                .is_some_and(|op| matches!(op.status, PaymentStatus::Pending | PaymentStatus::Unknown))
        };
        let orders = self
            .orders
            .values()
            .filter(|o| match o.status {
                OrderStatus::Reconciling | OrderStatus::Compensating | OrderStatus::CompensationFailed => true,
                OrderStatus::Released => open_payment(o),
                _ => false,
            })
            .cloned()
            .collect();
        let compensations: Vec<Compensation> =
            self.compensations.values().filter(|c| c.status != CompensationStatus::Succeeded).cloned().collect();
        Resolution { orders, compensations }
    }
}
