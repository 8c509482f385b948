//! Payment outcomes, the reconciler's claims and the release of unresolved payments.
//!
//! - A payment operation is `pending`, then `unknown` (an answer lost) any
//!   number of times, then once `succeeded` or `failed`, for good. The same
//!   final outcome again changes nothing and answers the first (with
//!   `decided_now` false); the other one is `payment-conflict`.
//! - A success while the order owns its seats sells them: `sold`, one
//!   booking each, the order `confirmed`. A success after the order let its
//!   seats go (released, failed) is a charge without a ticket: the order
//!   `compensating`, a refund `requested` and due at once, and its dispatch
//!   event.
//! - A failure while the order owns its seats frees them and fails the
//!   order ("payment declined: <reason>"); otherwise the order stays as it is.
//! - An unknown outcome keeps the seats: a `pending` order becomes
//!   `reconciling`, any other stays.
//! - An unresolved payment's seats are released only once the order's
//!   payment deadline has come by the store's clock, and only while the
//!   order owns them; the decision is recorded with its reason.
//! - The reconciler claims orders that own their seats with an open
//!   outcome that needs a check (unknown, or pending past its deadline),
//!   whose next check has come; earliest deadline first, then by event and
//!   order. A claim counts a check and puts the next one `min(base << checks,
//!   cap)` later, but no later than the deadline while it is ahead.

use super::ids::Ids;
use super::{StoreModel, Writes};
use crate::model::validate;
use booking::model::{
    Booking, BookingId, Compensation, CompensationId, EventId, Order, OrderId, OrderStatus, OutboxEvent, OutboxId,
    OutboxKind, PaymentOp, PaymentOpId, PaymentStatus, SeatState,
};
use booking::store::{PaymentSuccess, ReconcileBackoff, Recorded, SaleOutcome, StoreError};

fn is_open(s: PaymentStatus) -> bool {
    matches!(s, PaymentStatus::Pending | PaymentStatus::Unknown)
}

impl StoreModel {
    /// The operation `id` and its order, or `unknown-payment-op`.
    fn op_and_order(&self, id: PaymentOpId) -> Result<(PaymentOp, Order), StoreError> {
        let op = self.op(id).ok_or(StoreError::UnknownPaymentOp(id))?.clone();
        let order = self.order(op.order_id).expect("an operation's order exists").clone();
        Ok((op, order))
    }

    fn put_op(&mut self, op: PaymentOp) {
        self.ops.insert((op.event_id.clone(), op.payment_op_id), op);
    }

    /// `record_payment_success` at `now_ms`.
    pub(crate) fn payment_success(
        &mut self,
        req: &PaymentSuccess,
        now_ms: i64,
        ids: &mut Ids,
        w: &mut Writes,
    ) -> Result<Recorded<SaleOutcome>, StoreError> {
        validate::provider_payment_id(&req.provider_payment_id)?;
        let (op, order) = self.op_and_order(req.payment_op_id)?;
        match op.status {
            PaymentStatus::Failed => return Err(StoreError::PaymentConflict(op.payment_op_id)),
            PaymentStatus::Succeeded => {
                let outcome = if order.status == OrderStatus::Confirmed {
                    SaleOutcome::Confirmed { bookings: self.bookings_of(&order), order }
                } else {
                    let compensation = self.compensations_of(order.order_id).into_iter().next().ok_or_else(|| {
                        StoreError::InvariantBreach("model: a charge without a ticket has no refund".into())
                    })?;
                    SaleOutcome::Compensating { order, compensation }
                };
                return Ok(Recorded { outcome, decided_now: false });
            }
            PaymentStatus::Pending | PaymentStatus::Unknown => {}
        }
        let op_after = PaymentOp {
            status: PaymentStatus::Succeeded,
            provider_payment_id: Some(req.provider_payment_id.clone()),
            updated_at_ms: now_ms,
            ..op.clone()
        };
        let outcome = if order.status.owns_seats() {
            let booking_ids: Vec<BookingId> = order.seat_ids.iter().map(|_| ids.next(self)).collect();
            self.put_op(op_after);
            self.sell(order, &op, booking_ids, now_ms, w)
        } else {
            let compensation_id: CompensationId = ids.next(self);
            self.put_op(op_after);
            self.late_charge(order, &op, compensation_id, now_ms, w)
        };
        Ok(Recorded { outcome, decided_now: true })
    }

    /// Sells `order`'s seats (it owns them): `sold`, one booking each, the order `confirmed`.
    fn sell(
        &mut self,
        order: Order,
        op: &PaymentOp,
        booking_ids: Vec<BookingId>,
        now_ms: i64,
        w: &mut Writes,
    ) -> SaleOutcome {
        let mut bookings = Vec::new();
        for (seat_id, booking_id) in order.seat_ids.iter().zip(booking_ids) {
            let before = self.seats[&(order.event_id.clone(), seat_id.clone())].clone();
            assert!(
                before.state == SeatState::PaymentPending && before.order_id == Some(order.order_id),
                "model: an open order owns its seats"
            );
            let after = booking::model::Seat {
                state: SeatState::Sold,
                version: before.version + 1,
                hold_expires_at_ms: None,
                booking_id: Some(booking_id),
                ..before
            };
            self.put_seat(after, w);
            let b = Booking {
                event_id: order.event_id.clone(),
                seat_id: seat_id.clone(),
                booking_id,
                order_id: order.order_id,
                payment_op_id: op.payment_op_id,
                holder_id: order.holder_id.clone(),
                created_at_ms: now_ms,
            };
            self.bookings.insert((b.event_id.clone(), b.seat_id.clone(), booking_id), b.clone());
            bookings.push(b);
        }
        let sold = Order { status: OrderStatus::Confirmed, updated_at_ms: now_ms, ..order };
        self.put_order(sold.clone(), w);
        SaleOutcome::Confirmed { order: sold, bookings }
    }

    /// A charge of an order that let its seats go: a refund, due at once, and its dispatch event.
    fn late_charge(
        &mut self,
        order: Order,
        op: &PaymentOp,
        compensation_id: CompensationId,
        now_ms: i64,
        w: &mut Writes,
    ) -> SaleOutcome {
        let compensation = Compensation::requested_refund(
            &order.event_id,
            compensation_id,
            order.order_id,
            op.payment_op_id,
            op.amount_cents,
            now_ms,
        );
        self.put_compensation(compensation.clone(), w);
        self.outbox.push(OutboxEvent::pending(
            &order.event_id,
            OutboxId::nil(),
            OutboxKind::Compensate,
            compensation_id,
            now_ms,
        ));
        let charged = Order { status: OrderStatus::Compensating, updated_at_ms: now_ms, ..order };
        self.put_order(charged.clone(), w);
        SaleOutcome::Compensating { order: charged, compensation }
    }

    /// `record_payment_failure` at `now_ms`.
    pub(crate) fn payment_failure(
        &mut self,
        id: PaymentOpId,
        reason: &str,
        now_ms: i64,
        w: &mut Writes,
    ) -> Result<Recorded<Order>, StoreError> {
        let reason = validate::stored_text(reason);
        let (op, order) = self.op_and_order(id)?;
        match op.status {
            PaymentStatus::Succeeded => return Err(StoreError::PaymentConflict(id)),
            PaymentStatus::Failed => return Ok(Recorded { outcome: order, decided_now: false }),
            PaymentStatus::Pending | PaymentStatus::Unknown => {}
        }
        self.put_op(PaymentOp {
            status: PaymentStatus::Failed,
            last_error: Some(reason.clone()),
            updated_at_ms: now_ms,
            ..op
        });
        if !order.status.owns_seats() {
            return Ok(Recorded { outcome: order, decided_now: true });
        }
        self.free_order_seats(&order, w);
        let failed = Order {
            status: OrderStatus::Failed,
            resolution_reason: Some(format!("payment declined: {reason}")),
            updated_at_ms: now_ms,
            ..order
        };
        self.put_order(failed.clone(), w);
        Ok(Recorded { outcome: failed, decided_now: true })
    }

    /// `record_payment_unknown` at `now_ms`.
    pub(crate) fn payment_unknown(
        &mut self,
        id: PaymentOpId,
        error: &str,
        now_ms: i64,
        w: &mut Writes,
    ) -> Result<Order, StoreError> {
        let error = validate::stored_text(error);
        let (op, order) = self.op_and_order(id)?;
        if !is_open(op.status) {
            return Ok(order);
        }
        self.put_op(PaymentOp { status: PaymentStatus::Unknown, last_error: Some(error), updated_at_ms: now_ms, ..op });
        if order.status != OrderStatus::Pending {
            return Ok(order);
        }
        let reconciling = Order { status: OrderStatus::Reconciling, updated_at_ms: now_ms, ..order };
        self.put_order(reconciling.clone(), w);
        Ok(reconciling)
    }

    /// `release_unresolved_payment` at `now_ms`.
    pub(crate) fn release_unresolved(
        &mut self,
        id: PaymentOpId,
        reason: &str,
        now_ms: i64,
        w: &mut Writes,
    ) -> Result<Order, StoreError> {
        let reason = validate::stored_text(reason);
        let (_, order) = self.op_and_order(id)?;
        if !order.status.owns_seats() {
            return Err(StoreError::OrderNotOpen(order.order_id));
        }
        if now_ms < order.payment_deadline_at_ms {
            return Err(StoreError::DeadlineNotPassed { deadline_at_ms: order.payment_deadline_at_ms });
        }
        self.free_order_seats(&order, w);
        let released =
            Order { status: OrderStatus::Released, resolution_reason: Some(reason), updated_at_ms: now_ms, ..order };
        self.put_order(released.clone(), w);
        Ok(released)
    }

    /// `claim_reconcile` at `now_ms`.
    pub(crate) fn claim_reconcile(
        &mut self,
        limit: u32,
        backoff: ReconcileBackoff,
        now_ms: i64,
    ) -> Result<Vec<(Order, PaymentOp)>, StoreError> {
        if !(1 <= backoff.base_ms
            && backoff.base_ms <= backoff.cap_ms
            && backoff.cap_ms <= booking::store::MAX_RETRY_DELAY_MS)
        {
            return Err(StoreError::InvalidInput("model: backoff".into()));
        }
        let mut due: Vec<(i64, EventId, OrderId)> = Vec::new();
        for order in self.orders.values().filter(|o| o.status.owns_seats()) {
            let op = self.op(order.payment_op_id).expect("an order's operation exists");
            let needs_check = op.status == PaymentStatus::Unknown || order.payment_deadline_at_ms <= now_ms;
            if is_open(op.status) && needs_check && op.next_check_at_ms <= now_ms {
                due.push((order.payment_deadline_at_ms, order.event_id.clone(), order.order_id));
            }
        }
        due.sort();
        due.truncate(limit as usize);
        let mut out = Vec::new();
        for (_, event_id, order_id) in due {
            let order = self.orders[&(event_id, order_id)].clone();
            let op = self.op(order.payment_op_id).expect("exists").clone();
            let step = (backoff.base_ms << op.checks.clamp(0, 30)).min(backoff.cap_ms);
            let mut next = now_ms + step;
            if now_ms < order.payment_deadline_at_ms {
                next = next.min(order.payment_deadline_at_ms);
            }
            let claimed = PaymentOp { next_check_at_ms: next, checks: op.checks.saturating_add(1), ..op };
            self.put_op(claimed.clone());
            out.push((order, claimed));
        }
        Ok(out)
    }
}
