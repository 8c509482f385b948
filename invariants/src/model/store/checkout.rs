//! Checkout: a live hold moves to payment, in one step with its order, its
//! payment operation and its charge's dispatch event.
//!
//! - The idempotency key (scoped to the event and the holder) is looked at
//!   first: a key used for the same hold and seats answers the order it
//!   made (`replayed`), as it is now, whatever happened since; used for
//!   anything else, `idempotency-key-reused`.
//! - Then the seats named, in this precedence over all of them: a seat
//!   that does not exist (`unknown-seat`, the first); a seat carrying
//!   another token (`stale-token` when some such seat is owned by another
//!   hold or order, `hold-not-found` when they are all free); a seat held
//!   by another user (`not-holder`); a seat not held (`hold-not-found`); a
//!   deadline passed by the store's clock (`hold-expired`, naming the
//!   earliest deadline among the seats).
//! - A hold is paid whole: the seats must be every seat the token holds
//!   (`invalid-input` otherwise).
//! - The order is `pending`, priced at the event's price per seat, due by
//!   `now + payment_ttl_ms`; its payment operation `pending`, due a check
//!   at once; its charge due at once.

use super::ids::Ids;
use super::{KeyRecord, StoreModel, Writes};
use crate::model::validate;
use booking::model::{
    HoldToken, Order, OrderId, OrderStatus, OutboxEvent, OutboxId, OutboxKind, PaymentOp, PaymentOpId, PaymentStatus,
    Seat, SeatId, SeatState, UserId,
};
use booking::store::{BeginPayment, BeginPaymentOutcome, StoreError};

/// The first refusal of a checkout over `seats` (those named, all existing).
fn refusal(seats: &[&Seat], token: HoldToken, holder: &UserId, now_ms: i64) -> Option<StoreError> {
    let other_token: Vec<&&Seat> = seats.iter().filter(|s| s.hold_token != Some(token)).collect();
    if !other_token.is_empty() {
        let owned = other_token.iter().any(|s| s.state != SeatState::Available);
        return Some(if owned { StoreError::StaleToken } else { StoreError::HoldNotFound });
    }
    if seats.iter().any(|s| s.holder_id.as_deref() != Some(holder)) {
        return Some(StoreError::NotHolder);
    }
    if seats.iter().any(|s| s.state != SeatState::Held) {
        return Some(StoreError::HoldNotFound);
    }
    if seats.iter().any(|s| s.hold_expires_at_ms.is_none_or(|d| d <= now_ms)) {
        let expired_at_ms = seats.iter().filter_map(|s| s.hold_expires_at_ms).min().unwrap_or(i64::MIN);
        return Some(StoreError::HoldExpired { expired_at_ms });
    }
    None
}

impl StoreModel {
    /// `begin_payment` at `now_ms`.
    pub(crate) fn begin_payment(
        &mut self,
        req: &BeginPayment,
        now_ms: i64,
        ids: &mut Ids,
        w: &mut Writes,
    ) -> Result<BeginPaymentOutcome, StoreError> {
        validate::id("event_id", &req.event_id)?;
        validate::id("holder_id", &req.holder_id)?;
        validate::key(&req.idempotency_key)?;
        validate::payment_ttl(req.payment_ttl_ms)?;
        let named = validate::hold_seats(&req.seat_ids)?;
        let Some(&price) = self.prices.get(&req.event_id) else {
            return Err(StoreError::UnknownEvent(req.event_id.clone()));
        };
        let key = (req.event_id.clone(), req.holder_id.clone(), req.idempotency_key.clone());
        if let Some(rec) = self.keys.get(&key) {
            if rec.token != req.hold_token || rec.seats != named {
                return Err(StoreError::IdempotencyKeyReused);
            }
            let order = self.order(rec.order_id).expect("a key's order exists").clone();
            return Ok(BeginPaymentOutcome { order, replayed: true });
        }
        let seat_key = |s: &SeatId| (req.event_id.clone(), s.clone());
        if let Some(missing) = named.iter().find(|s| !self.seats.contains_key(&seat_key(s))) {
            return Err(StoreError::UnknownSeat { event_id: req.event_id.clone(), seat_id: missing.clone() });
        }
        let seats: Vec<&Seat> = named.iter().map(|s| &self.seats[&seat_key(s)]).collect();
        if let Some(e) = refusal(&seats, req.hold_token, &req.holder_id, now_ms) {
            return Err(e);
        }
        let held = self
            .event_seats(&req.event_id)
            .filter(|s| s.state == SeatState::Held && s.hold_token == Some(req.hold_token));
        if let Some(left_out) = held.map(|s| s.seat_id.clone()).find(|s| !named.contains(s)) {
            return Err(StoreError::InvalidInput(format!("model: the hold's seat {left_out} is not named")));
        }
        let (order_id, payment_op_id) = (ids.next(self), ids.next(self));
        let order = self.open_order(req, named, price, (order_id, payment_op_id), now_ms, w);
        Ok(BeginPaymentOutcome { order, replayed: false })
    }

    /// Writes a new order for `req`'s seats `named`: the seats to payment,
    /// the order, its payment operation, its charge's dispatch event and the key.
    fn open_order(
        &mut self,
        req: &BeginPayment,
        named: Vec<SeatId>,
        price: i64,
        (order_id, payment_op_id): (OrderId, PaymentOpId),
        now_ms: i64,
        w: &mut Writes,
    ) -> Order {
        for seat_id in &named {
            let before = self.seats[&(req.event_id.clone(), seat_id.clone())].clone();
            let after = Seat {
                state: SeatState::PaymentPending,
                version: before.version + 1,
                order_id: Some(order_id),
                ..before
            };
            self.put_seat(after, w);
        }
        let order = Order {
            event_id: req.event_id.clone(),
            order_id,
            holder_id: req.holder_id.clone(),
            hold_token: req.hold_token,
            seat_ids: named.clone(),
            amount_cents: price * named.len() as i64,
            status: OrderStatus::Pending,
            payment_op_id,
            payment_deadline_at_ms: now_ms + req.payment_ttl_ms,
            idempotency_key: req.idempotency_key.clone(),
            resolution_reason: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        };
        self.put_order(order.clone(), w);
        let op = PaymentOp {
            event_id: req.event_id.clone(),
            payment_op_id,
            order_id,
            amount_cents: order.amount_cents,
            status: PaymentStatus::Pending,
            provider_payment_id: None,
            last_error: None,
            updated_at_ms: now_ms,
            next_check_at_ms: now_ms,
            checks: 0,
        };
        self.op_event.insert(payment_op_id, req.event_id.clone());
        self.ops.insert((req.event_id.clone(), payment_op_id), op);
        self.outbox.push(OutboxEvent::pending(
            &req.event_id,
            OutboxId::nil(),
            OutboxKind::Charge,
            payment_op_id,
            now_ms,
        ));
        let key = (req.event_id.clone(), req.holder_id.clone(), req.idempotency_key.clone());
        self.keys.insert(key, KeyRecord { token: req.hold_token, seats: named, order_id });
        order
    }
}
