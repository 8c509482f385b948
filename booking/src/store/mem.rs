//! `MemStore`: the deterministic in-memory store the simulator runs against.
//! One mutex makes every operation one atomic transaction; BTreeMaps make
//! every iteration ordered. Time and ids come from injected sources.
//! Every operation checks everything before it writes anything, so a refused
//! operation changes nothing (no partial writes, no rollback needed), and
//! every seat, order, payment and compensation it writes is exactly the
//! after-image its state machine ([`super::machine`]) returned.

use super::decide::{
    check_checkout, check_hold_limit, check_holdable, check_whole_hold, grant_hold, order_refused, payment_refused,
    releasable,
};
use super::machine::order::OrderCause;
use super::machine::payment::{PaymentCause, reconcile_due};
use super::machine::seat::{SeatCause, counts_toward_hold_limit, expire_due};
use super::machine::{compensation, order as order_machine, payment, seat as seat_machine};
use super::observer::{Presented, SeatWriteCause, StoreObserver};
use super::rules::Rules;
use super::types::*;
use super::{ONE_BOOKING_BREACH, Store, StoreError};
use crate::clock::Clock;
use crate::fault::FaultSeam;
use crate::ids::IdSource;
use crate::model::*;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What an idempotency key committed to.
#[derive(Debug, Clone)]
struct IdemRecord {
    hold_token: HoldToken,
    seat_ids: Vec<SeatId>,
    order_id: OrderId,
}

#[derive(Default)]
struct Inner {
    events: BTreeMap<EventId, Event>,
    seats: BTreeMap<(EventId, SeatId), Seat>,
    orders: BTreeMap<(EventId, OrderId), Order>,
    order_event: BTreeMap<OrderId, EventId>,
    payment_ops: BTreeMap<(EventId, PaymentOpId), PaymentOp>,
    payment_op_event: BTreeMap<PaymentOpId, EventId>,
    bookings: BTreeMap<(EventId, SeatId, BookingId), Booking>,
    compensations: BTreeMap<(EventId, CompensationId), Compensation>,
    compensation_event: BTreeMap<CompensationId, EventId>,
    outbox: BTreeMap<(EventId, OutboxId), OutboxEvent>,
    idempotency: BTreeMap<(EventId, UserId, String), IdemRecord>,
    /// The observer, told of every write when its transaction ends.
    observer: Option<Arc<dyn StoreObserver>>,
    /// The running transaction's journal: before-images of what it touched.
    journal: Journal,
}

/// What the running transaction touched, for the observer.
#[derive(Default)]
struct Journal {
    cause: Option<SeatWriteCause>,
    presented: Presented,
    seats: BTreeMap<(EventId, SeatId), Seat>,
    orders: Vec<(Option<Order>, (EventId, OrderId))>,
    compensations: Vec<(Option<Compensation>, (EventId, CompensationId))>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("seats", &self.seats.len()).finish_non_exhaustive()
    }
}

/// The in-memory store. Cheap to clone (clones share state).
#[derive(Clone)]
pub struct MemStore {
    inner: Arc<Mutex<Inner>>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdSource>,
    /// The rules it applies: sound, unless a bug is planted through the fault seam.
    rules: Rules,
}

impl std::fmt::Debug for MemStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemStore").finish_non_exhaustive()
    }
}

impl MemStore {
    /// An empty store whose clock is `clock` and whose ids come from `ids`.
    pub fn new(clock: Arc<dyn Clock>, ids: Arc<dyn IdSource>) -> Self {
        Self { inner: Arc::new(Mutex::new(Inner::default())), clock, ids, rules: Rules::SOUND }
    }

    /// Applies the rules `faults` leaves standing: all of them, unless a bug
    /// is planted (`fault-injection` builds only; see [`Rules::of`]).
    pub fn with_faults(mut self, faults: &FaultSeam) -> Self {
        self.rules = Rules::of(faults);
        self
    }

    /// Reports every committed write to `observer`, inside the transaction,
    /// in commit order (seats by key, then orders, then compensations).
    pub fn with_observer(self, observer: Arc<dyn StoreObserver>) -> Self {
        self.inner.lock().expect("MemStore poisoned").observer = Some(observer);
        self
    }

    fn tx<T>(&self, f: impl FnOnce(&mut Inner, i64, &dyn IdSource) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut guard = self.inner.lock().expect("MemStore poisoned");
        let now_ms = self.clock.now_ms();
        let out = f(&mut guard, now_ms, self.ids.as_ref());
        let journal = std::mem::take(&mut guard.journal);
        if let Some(obs) = guard.observer.clone() {
            guard.report(obs.as_ref(), journal, now_ms);
        }
        out
    }
}

impl Inner {
    /// Sets what the running operation is and what its writer presented.
    fn begin(&mut self, cause: SeatWriteCause, presented: Presented) {
        self.journal.cause = Some(cause);
        self.journal.presented = presented;
    }

    /// Refuses the sale of `order`'s seats unless the order owns every one
    /// (`payment_pending` under its id) and none has a confirmed booking: the
    /// checks PgStore's sale makes with its row count and with the
    /// `bookings_one_confirmed_per_seat` index, in its words.
    fn check_sale(&self, order: &Order) -> Result<(), StoreError> {
        let owned = order
            .seat_ids
            .iter()
            .filter(|s| {
                self.seats.get(&(order.event_id.clone(), (*s).clone())).is_some_and(|seat| {
                    seat.state == SeatState::PaymentPending && seat.order_id == Some(order.order_id)
                })
            })
            .count();
        if owned != order.seat_ids.len() {
            let what = format!("an open order owns its seats: sold {owned} of {}", order.seat_ids.len());
            tracing::error!("invariant violated: {what}");
            return Err(StoreError::InvariantBreach(what));
        }
        for seat_id in &order.seat_ids {
            let lo = (order.event_id.clone(), seat_id.clone(), BookingId::nil());
            if let Some(((_, s, _), b)) = self.bookings.range(lo..).next()
                && s == seat_id
                && b.event_id == order.event_id
            {
                tracing::error!(seat = %seat_id, booking = %b.booking_id, order = %b.order_id, "invariant violated: {ONE_BOOKING_BREACH}");
                return Err(StoreError::InvariantBreach(ONE_BOOKING_BREACH.into()));
            }
        }
        Ok(())
    }

    /// Writes a seat's after-image (the seat exists).
    fn put_seat(&mut self, after: Seat) {
        let key = (after.event_id.clone(), after.seat_id.clone());
        let slot = self.seats.get_mut(&key).expect("a written seat exists");
        if self.observer.is_some() {
            self.journal.seats.entry(key).or_insert_with(|| slot.clone());
        }
        *slot = after;
    }

    /// Moves `order`'s seats by `cause` (seats whose machine refuses stay as they are).
    fn move_order_seats(&mut self, order: &Order, cause: SeatCause<'_>, now_ms: i64, rules: &Rules) {
        for seat_id in &order.seat_ids {
            let before = &self.seats[&(order.event_id.clone(), seat_id.clone())];
            if let Ok(after) = seat_machine::next(before, &cause, now_ms, rules) {
                self.put_seat(after);
            }
        }
    }

    fn put_compensation(&mut self, c: Compensation) {
        let key = (c.event_id.clone(), c.compensation_id);
        let before = self.compensations.insert(key.clone(), c);
        if self.observer.is_some() {
            self.journal.compensations.push((before, key));
        }
    }

    /// Tells `obs` of every change the journal recorded (no-ops skipped).
    fn report(&self, obs: &dyn StoreObserver, journal: Journal, now_ms: i64) {
        let cause = journal.cause.unwrap_or(SeatWriteCause::Hold);
        for (key, before) in &journal.seats {
            let after = &self.seats[key];
            if after != before {
                obs.seat_written(cause, now_ms, &journal.presented, before, after);
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (before, key) in &journal.orders {
            if !seen.insert(key.clone()) {
                continue;
            }
            let after = &self.orders[key];
            if before.as_ref().is_none_or(|b| b.status != after.status) {
                obs.order_written(before.as_ref(), after, now_ms);
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (before, key) in &journal.compensations {
            if !seen.insert(key.clone()) {
                continue;
            }
            let after = &self.compensations[key];
            if before.as_ref() != Some(after) {
                obs.compensation_written(before.as_ref(), after, now_ms);
            }
        }
    }

    fn event(&self, event_id: &EventId) -> Result<&Event, StoreError> {
        self.events.get(event_id).ok_or_else(|| StoreError::UnknownEvent(event_id.clone()))
    }

    /// The seats of one event, sorted by seat id.
    fn event_seats<'a>(&'a self, event_id: &'a EventId) -> impl Iterator<Item = &'a Seat> + 'a {
        self.seats
            .range((event_id.clone(), SeatId::default())..)
            .take_while(move |((ev, _), _)| ev == event_id)
            .map(|(_, s)| s)
    }

    /// The version of an existing event's seat map. Errors: `UnknownEvent`.
    fn seat_map_version(&self, event_id: &EventId) -> Result<SeatMapVersion, StoreError> {
        self.event(event_id)?;
        let v = SeatMapVersion::of_seats(self.event_seats(event_id));
        assert!(v.seats >= 1, "an event has seats");
        Ok(v)
    }

    fn locked_seats(&self, event_id: &EventId, sorted: &[SeatId]) -> Vec<Seat> {
        sorted.iter().filter_map(|s| self.seats.get(&(event_id.clone(), s.clone())).cloned()).collect()
    }

    fn payment_op_key(&self, payment_op_id: PaymentOpId) -> Result<(EventId, PaymentOpId), StoreError> {
        let ev = self.payment_op_event.get(&payment_op_id).ok_or(StoreError::UnknownPaymentOp(payment_op_id))?;
        Ok((ev.clone(), payment_op_id))
    }

    fn compensation_key(&self, compensation_id: CompensationId) -> Result<(EventId, CompensationId), StoreError> {
        let ev =
            self.compensation_event.get(&compensation_id).ok_or(StoreError::UnknownCompensation(compensation_id))?;
        Ok((ev.clone(), compensation_id))
    }

    fn order_of_op(&self, op: &PaymentOp) -> Order {
        self.orders[&(op.event_id.clone(), op.order_id)].clone()
    }

    fn put_order(&mut self, order: Order) {
        let key = (order.event_id.clone(), order.order_id);
        let before = self.orders.insert(key.clone(), order);
        if self.observer.is_some() {
            self.journal.orders.push((before, key));
        }
    }

    fn put_op(&mut self, op: PaymentOp) {
        self.payment_ops.insert((op.event_id.clone(), op.payment_op_id), op);
    }

    /// What an earlier success recorded for `order`: its bookings, or the
    /// compensation of a charge that came too late.
    fn recorded_sale(&self, order: Order) -> SaleOutcome {
        if order.status == OrderStatus::Confirmed {
            let bookings = self.bookings_of_order(&order);
            return SaleOutcome::Confirmed { order, bookings };
        }
        let compensation = self
            .compensations_of_order(order.order_id)
            .into_iter()
            .next()
            .expect("charged order without a ticket has a compensation");
        SaleOutcome::Compensating { order, compensation }
    }

    /// A success for an order that still owns its seats (checked by
    /// [`Inner::check_sale`]): every seat sold, a booking per seat, the
    /// order confirmed.
    fn sell_order(
        &mut self,
        order: &Order,
        op: &PaymentOp,
        booking_ids: &[BookingId],
        now_ms: i64,
        rules: &Rules,
    ) -> Result<SaleOutcome, StoreError> {
        let sold = order_machine::next(order, &OrderCause::Sell, now_ms, rules)
            .map_err(|r| order_refused(order.order_id, r))?;
        let mut bookings = Vec::with_capacity(order.seat_ids.len());
        for (seat_id, &booking_id) in order.seat_ids.iter().zip(booking_ids) {
            let before = &self.seats[&(order.event_id.clone(), seat_id.clone())];
            let cause = SeatCause::Sell { order_id: order.order_id, booking_id };
            let after =
                seat_machine::next(before, &cause, now_ms, rules).expect("check_sale: an open order owns its seats");
            self.put_seat(after);
            let booking = Booking {
                event_id: order.event_id.clone(),
                seat_id: seat_id.clone(),
                booking_id,
                order_id: order.order_id,
                payment_op_id: op.payment_op_id,
                holder_id: order.holder_id.clone(),
                created_at_ms: now_ms,
            };
            self.bookings.insert((order.event_id.clone(), seat_id.clone(), booking_id), booking.clone());
            bookings.push(booking);
        }
        self.put_order(sold.clone());
        Ok(SaleOutcome::Confirmed { order: sold, bookings })
    }

    /// A success for an order that no longer owns its seats: a refund to
    /// start (a compensation and its outbox row), the order marked late-charged.
    fn refund_late_charge(
        &mut self,
        order: &Order,
        op: &PaymentOp,
        now_ms: i64,
        ids: &dyn IdSource,
        rules: &Rules,
    ) -> Result<SaleOutcome, StoreError> {
        let charged = order_machine::next(order, &OrderCause::LateCharge, now_ms, rules)
            .map_err(|r| order_refused(order.order_id, r))?;
        let compensation_id = CompensationId::from(ids.next_uuid());
        let outbox_id = OutboxId::from(ids.next_uuid());
        let compensation = Compensation::requested_refund(
            &order.event_id,
            compensation_id,
            order.order_id,
            op.payment_op_id,
            op.amount_cents,
            now_ms,
        );
        self.put_compensation(compensation.clone());
        self.compensation_event.insert(compensation_id, order.event_id.clone());
        self.outbox.insert(
            (order.event_id.clone(), outbox_id),
            OutboxEvent::pending(&order.event_id, outbox_id, OutboxKind::Compensate, compensation_id, now_ms),
        );
        self.put_order(charged.clone());
        Ok(SaleOutcome::Compensating { order: charged, compensation })
    }

    fn bookings_of_order(&self, order: &Order) -> Vec<Booking> {
        self.bookings
            .range((order.event_id.clone(), SeatId::default(), BookingId::nil())..)
            .take_while(|((ev, _, _), _)| ev == &order.event_id)
            .map(|(_, b)| b)
            .filter(|b| b.order_id == order.order_id)
            .cloned()
            .collect()
    }

    fn compensations_of_order(&self, order_id: OrderId) -> Vec<Compensation> {
        self.compensations.values().filter(|c| c.order_id == order_id).cloned().collect()
    }
}

#[async_trait]
impl Store for MemStore {
    async fn now_ms(&self) -> Result<i64, StoreError> {
        Ok(self.clock.now_ms())
    }

    async fn create_event(&self, req: &CreateEvent) -> Result<(), StoreError> {
        let sorted = req.validate()?;
        self.tx(|db, now_ms, _| {
            if db.events.contains_key(&req.event_id) {
                return Err(StoreError::EventExists(req.event_id.clone()));
            }
            db.events.insert(
                req.event_id.clone(),
                Event { event_id: req.event_id.clone(), price_cents: req.price_cents, created_at_ms: now_ms },
            );
            for seat_id in sorted {
                db.seats.insert(
                    (req.event_id.clone(), seat_id.clone()),
                    Seat {
                        event_id: req.event_id.clone(),
                        seat_id,
                        state: SeatState::Available,
                        version: 0,
                        hold_token: None,
                        holder_id: None,
                        hold_expires_at_ms: None,
                        order_id: None,
                        booking_id: None,
                    },
                );
            }
            Ok(())
        })
    }

    async fn acquire_hold(&self, req: &AcquireHold) -> Result<HoldGrant, StoreError> {
        let sorted = req.validate()?;
        let rules = self.rules;
        self.tx(|db, now_ms, ids| {
            db.begin(SeatWriteCause::Hold, Presented { holder: Some(req.holder_id.clone()), ..Presented::default() });
            db.event(&req.event_id)?;
            let locked = db.locked_seats(&req.event_id, &sorted);
            let take = check_holdable(&req.event_id, &sorted, &locked, now_ms, &rules)?;
            if req.max_held_seats.is_some() {
                let held = db
                    .event_seats(&req.event_id)
                    .filter(|s| counts_toward_hold_limit(s, &req.holder_id, now_ms))
                    .count();
                check_hold_limit(&req.event_id, held, take.len(), req.max_held_seats, &rules)?;
            }
            let hold_token = HoldToken::from(ids.next_uuid());
            let (grant, after) =
                grant_hold(req, &locked, &take, hold_token, now_ms, &rules).map_err(StoreError::InvariantBreach)?;
            for seat in after {
                db.put_seat(seat);
            }
            Ok(grant)
        })
    }

    async fn release_hold(&self, req: &ReleaseHold) -> Result<Vec<SeatId>, StoreError> {
        req.validate()?;
        self.tx(|db, now_ms, _| {
            db.begin(
                SeatWriteCause::Release,
                Presented { token: Some(req.hold_token), holder: Some(req.holder_id.clone()), order: None },
            );
            db.event(&req.event_id)?;
            let with_token: Vec<Seat> = db
                .seats
                .range((req.event_id.clone(), SeatId::default())..)
                .take_while(|((ev, _), _)| ev == &req.event_id)
                .map(|(_, s)| s)
                .filter(|s| s.hold_token == Some(req.hold_token))
                .cloned()
                .collect();
            let freed = releasable(&with_token, req.hold_token, &req.holder_id, now_ms)?;
            let released = freed.iter().map(|s| s.seat_id.clone()).collect();
            for after in freed {
                db.put_seat(after);
            }
            Ok(released)
        })
    }

    async fn sweep_expired_holds(&self, limit_seats: u32) -> Result<Vec<ExpiredHold>, StoreError> {
        let rules = self.rules;
        self.tx(|db, now_ms, _| {
            db.begin(SeatWriteCause::Sweep, Presented::default());
            let mut due: Vec<(i64, EventId, SeatId)> = db
                .seats
                .values()
                .filter(|s| expire_due(s, now_ms, &rules))
                .map(|s| (s.hold_expires_at_ms.expect("held"), s.event_id.clone(), s.seat_id.clone()))
                .collect();
            due.sort();
            due.truncate(limit_seats as usize);
            let mut out = Vec::with_capacity(due.len());
            for (expired_at_ms, event_id, seat_id) in due {
                let before = &db.seats[&(event_id.clone(), seat_id.clone())];
                db.put_seat(seat_machine::next(before, &SeatCause::Expire, now_ms, &rules).expect("due"));
                out.push(ExpiredHold { event_id, seat_id, expired_at_ms, reclaimed_at_ms: now_ms });
            }
            Ok(out)
        })
    }

    async fn begin_payment(&self, req: &BeginPayment) -> Result<BeginPaymentOutcome, StoreError> {
        let sorted = req.validate()?;
        let rules = self.rules;
        self.tx(|db, now_ms, ids| {
            db.begin(
                SeatWriteCause::Checkout,
                Presented { token: Some(req.hold_token), holder: Some(req.holder_id.clone()), order: None },
            );
            let price_cents = db.event(&req.event_id)?.price_cents;
            let key = (req.event_id.clone(), req.holder_id.clone(), req.idempotency_key.clone());
            let replay = |db: &Inner| -> Option<Result<BeginPaymentOutcome, StoreError>> {
                let rec = db.idempotency.get(&key)?;
                if rec.hold_token != req.hold_token || rec.seat_ids != sorted {
                    return Some(Err(StoreError::IdempotencyKeyReused));
                }
                let order = db.orders[&(req.event_id.clone(), rec.order_id)].clone();
                Some(Ok(BeginPaymentOutcome { order, replayed: true }))
            };
            if rules.idempotency_first()
                && let Some(answer) = replay(db)
            {
                return answer;
            }
            let locked = db.locked_seats(&req.event_id, &sorted);
            check_checkout(&req.event_id, &sorted, &locked, req.hold_token, &req.holder_id, now_ms, &rules)?;
            if let Some(answer) = replay(db) {
                return answer; // only reached when a bug checks the hold first
            }
            if rules.checkout_whole_hold() {
                let held_with_token: Vec<SeatId> = db
                    .event_seats(&req.event_id)
                    .filter(|s| s.state == SeatState::Held && s.hold_token == Some(req.hold_token))
                    .map(|s| s.seat_id.clone())
                    .collect();
                check_whole_hold(&sorted, &held_with_token)?;
            }
            let order_id = OrderId::from(ids.next_uuid());
            let payment_op_id = PaymentOpId::from(ids.next_uuid());
            let outbox_id = OutboxId::from(ids.next_uuid());
            let amount_cents = price_cents * sorted.len() as i64;
            let cause = SeatCause::Checkout { token: req.hold_token, holder: &req.holder_id, order_id };
            for before in &locked {
                db.put_seat(seat_machine::next(before, &cause, now_ms, &rules).expect("check_checkout: checkable"));
            }
            let order = order_machine::open(req, &sorted, order_id, payment_op_id, amount_cents, now_ms);
            db.put_order(order.clone());
            db.order_event.insert(order_id, req.event_id.clone());
            db.put_op(payment::open(&order, now_ms));
            db.payment_op_event.insert(payment_op_id, req.event_id.clone());
            db.outbox.insert(
                (req.event_id.clone(), outbox_id),
                OutboxEvent::pending(&req.event_id, outbox_id, OutboxKind::Charge, payment_op_id, now_ms),
            );
            db.idempotency.insert(key, IdemRecord { hold_token: req.hold_token, seat_ids: sorted, order_id });
            Ok(BeginPaymentOutcome { order, replayed: false })
        })
    }

    async fn record_payment_success(&self, req: &PaymentSuccess) -> Result<Recorded<SaleOutcome>, StoreError> {
        req.validate()?;
        let rules = self.rules;
        self.tx(|db, now_ms, ids| {
            let key = db.payment_op_key(req.payment_op_id)?;
            let op = db.payment_ops[&key].clone();
            let order = db.order_of_op(&op);
            db.begin(SeatWriteCause::Sale, Presented::by_order(&order));
            let cause = PaymentCause::Succeeded { provider_payment_id: &req.provider_payment_id };
            let op_after = payment::next(&op, &cause, now_ms).map_err(payment_refused)?;
            // A planted bug takes a repeated success of a confirmed order for a late one.
            let repeat_refund =
                op_after.is_none() && !rules.repeat_success_idempotent() && order.status == OrderStatus::Confirmed;
            if op_after.is_none() && !repeat_refund {
                return Ok(Recorded { outcome: db.recorded_sale(order), decided_now: false });
            }
            // The booking ids are drawn first, as PgStore draws them before its
            // sale can be refused (so both stores consume the same ids).
            let booking_ids: Vec<BookingId> = if order.status.owns_seats() {
                let drawn = order.seat_ids.iter().map(|_| BookingId::from(ids.next_uuid())).collect();
                // What PgStore's conditional sale and its one-booking index refuse
                // (reachable only through a bug above the store): refused before
                // anything is written, with PgStore's words.
                db.check_sale(&order)?;
                drawn
            } else {
                Vec::new()
            };
            if let Some(op_after) = op_after {
                db.put_op(op_after);
            }
            let outcome = if order.status.owns_seats() {
                db.sell_order(&order, &op, &booking_ids, now_ms, &rules)?
            } else {
                db.refund_late_charge(&order, &op, now_ms, ids, &rules)?
            };
            Ok(Recorded { outcome, decided_now: true })
        })
    }

    async fn record_payment_failure(
        &self,
        payment_op_id: PaymentOpId,
        reason: &str,
    ) -> Result<Recorded<Order>, StoreError> {
        let reason = bounded_text(reason);
        let rules = self.rules;
        self.tx(|db, now_ms, _| {
            let key = db.payment_op_key(payment_op_id)?;
            let op = db.payment_ops[&key].clone();
            let order = db.order_of_op(&op);
            db.begin(SeatWriteCause::PaymentDeclined, Presented::by_order(&order));
            let cause = PaymentCause::Failed { reason: &reason };
            let Some(op_after) = payment::next(&op, &cause, now_ms).map_err(payment_refused)? else {
                return Ok(Recorded { outcome: order, decided_now: false });
            };
            db.put_op(op_after);
            if !order.status.owns_seats() {
                return Ok(Recorded { outcome: order, decided_now: true });
            }
            let declined = order_machine::next(&order, &OrderCause::Decline { reason: &reason }, now_ms, &rules)
                .map_err(|r| order_refused(order.order_id, r))?;
            db.move_order_seats(&order, SeatCause::Free { order_id: order.order_id }, now_ms, &rules);
            db.put_order(declined.clone());
            Ok(Recorded { outcome: declined, decided_now: true })
        })
    }

    async fn record_payment_unknown(&self, payment_op_id: PaymentOpId, error: &str) -> Result<Order, StoreError> {
        let error = bounded_text(error);
        let rules = self.rules;
        self.tx(|db, now_ms, _| {
            let key = db.payment_op_key(payment_op_id)?;
            let op = db.payment_ops[&key].clone();
            let order = db.order_of_op(&op);
            db.begin(SeatWriteCause::PaymentDeclined, Presented::by_order(&order));
            let Some(op_after) =
                payment::next(&op, &PaymentCause::Unknown { error: &error }, now_ms).map_err(payment_refused)?
            else {
                return Ok(order);
            };
            db.put_op(op_after);
            let after = match order_machine::next(&order, &OrderCause::Unknown { error: &error }, now_ms, &rules) {
                Ok(after) => after,
                Err(_) => return Ok(order), // nothing to change on this order
            };
            if !after.status.owns_seats() {
                // The planted bug: an unknown outcome taken for a failure.
                db.move_order_seats(&order, SeatCause::Free { order_id: order.order_id }, now_ms, &rules);
            }
            db.put_order(after.clone());
            Ok(after)
        })
    }

    async fn release_unresolved_payment(&self, payment_op_id: PaymentOpId, reason: &str) -> Result<Order, StoreError> {
        let reason = bounded_text(reason);
        let rules = self.rules;
        self.tx(|db, now_ms, _| {
            let key = db.payment_op_key(payment_op_id)?;
            let op = db.payment_ops[&key].clone();
            let order = db.order_of_op(&op);
            db.begin(SeatWriteCause::UnresolvedReleased, Presented::by_order(&order));
            let released =
                order_machine::next(&order, &OrderCause::ReleaseUnresolved { reason: &reason }, now_ms, &rules)
                    .map_err(|r| order_refused(order.order_id, r))?;
            db.move_order_seats(&order, SeatCause::Free { order_id: order.order_id }, now_ms, &rules);
            db.put_order(released.clone());
            Ok(released)
        })
    }

    async fn claim_outbox(&self, limit: u32, lease_ms: i64) -> Result<Vec<OutboxEvent>, StoreError> {
        validate_lease_ms(lease_ms)?;
        self.tx(|db, now_ms, _| {
            let mut due: Vec<(i64, i64, EventId, OutboxId)> = db
                .outbox
                .values()
                .filter(|o| o.status == OutboxStatus::Pending && o.available_at_ms <= now_ms)
                .map(|o| (o.available_at_ms, o.created_at_ms, o.event_id.clone(), o.outbox_id))
                .collect();
            due.sort();
            due.truncate(limit as usize);
            let mut out = Vec::with_capacity(due.len());
            for (_, _, event_id, outbox_id) in due {
                let o = db.outbox.get_mut(&(event_id, outbox_id)).expect("exists");
                o.attempts += 1;
                o.available_at_ms = now_ms + lease_ms;
                out.push(o.clone());
            }
            Ok(out)
        })
    }

    async fn complete_outbox(&self, event_id: &EventId, outbox_id: OutboxId) -> Result<(), StoreError> {
        self.tx(|db, _, _| {
            let o =
                db.outbox.get_mut(&(event_id.clone(), outbox_id)).ok_or(StoreError::UnknownOutboxEvent(outbox_id))?;
            o.status = OutboxStatus::Done;
            Ok(())
        })
    }

    async fn retry_outbox(
        &self,
        event_id: &EventId,
        outbox_id: OutboxId,
        error: &str,
        retry_after_ms: i64,
    ) -> Result<(), StoreError> {
        validate_retry_after_ms(retry_after_ms)?;
        let error = bounded_text(error);
        self.tx(|db, now_ms, _| {
            let o =
                db.outbox.get_mut(&(event_id.clone(), outbox_id)).ok_or(StoreError::UnknownOutboxEvent(outbox_id))?;
            if o.status == OutboxStatus::Pending {
                o.last_error = Some(error);
                o.available_at_ms = now_ms + retry_after_ms;
            }
            Ok(())
        })
    }

    async fn start_compensation_attempt(
        &self,
        compensation_id: CompensationId,
        attempt_lease_ms: i64,
    ) -> Result<CompensationAttempt, StoreError> {
        validate_attempt_lease_ms(attempt_lease_ms)?;
        let rules = self.rules;
        self.tx(|db, now_ms, _| {
            let key = db.compensation_key(compensation_id)?;
            let attempt = compensation::start_attempt(&db.compensations[&key], now_ms, attempt_lease_ms, &rules)?;
            db.put_compensation(attempt.compensation.clone());
            Ok(attempt)
        })
    }

    async fn finish_compensation_attempt(&self, req: &CompensationResult) -> Result<Compensation, StoreError> {
        req.validate()?;
        let rules = self.rules;
        self.tx(|db, now_ms, _| {
            let key = db.compensation_key(req.compensation_id)?;
            let before = db.compensations[&key].clone();
            let Some((after, order_cause)) = compensation::finish_attempt(&before, req, now_ms) else {
                return Ok(before);
            };
            if let Some(cause) = order_cause {
                let order = &db.orders[&(key.0.clone(), after.order_id)];
                let moved =
                    order_machine::next(order, &cause, now_ms, &rules).map_err(|r| order_refused(order.order_id, r))?;
                db.put_order(moved);
            }
            db.put_compensation(after.clone());
            Ok(after)
        })
    }

    async fn compensation(&self, compensation_id: CompensationId) -> Result<Compensation, StoreError> {
        self.tx(|db, _, _| {
            let key = db.compensation_key(compensation_id)?;
            Ok(db.compensations[&key].clone())
        })
    }

    async fn seat_map(&self, event_id: &EventId) -> Result<Vec<Seat>, StoreError> {
        self.tx(|db, _, _| {
            db.event(event_id)?;
            let mut seats = Vec::with_capacity(db.event_seats(event_id).count());
            seats.extend(db.event_seats(event_id).cloned());
            Ok(seats)
        })
    }

    async fn seat_map_version(&self, event_id: &EventId) -> Result<SeatMapVersion, StoreError> {
        self.tx(|db, _, _| db.seat_map_version(event_id))
    }

    async fn seats_in_state(
        &self,
        event_id: &EventId,
        state: SeatState,
    ) -> Result<(SeatMapVersion, Vec<Seat>), StoreError> {
        self.tx(|db, _, _| {
            let v = db.seat_map_version(event_id)?;
            Ok((v, db.event_seats(event_id).filter(|s| s.state == state).cloned().collect()))
        })
    }

    async fn order(&self, order_id: OrderId) -> Result<Order, StoreError> {
        self.tx(|db, _, _| {
            let ev = db.order_event.get(&order_id).ok_or(StoreError::UnknownOrder(order_id))?;
            Ok(db.orders[&(ev.clone(), order_id)].clone())
        })
    }

    async fn payment_op(&self, payment_op_id: PaymentOpId) -> Result<PaymentOp, StoreError> {
        self.tx(|db, _, _| {
            let key = db.payment_op_key(payment_op_id)?;
            Ok(db.payment_ops[&key].clone())
        })
    }

    async fn compensations_for_order(&self, order_id: OrderId) -> Result<Vec<Compensation>, StoreError> {
        self.tx(|db, _, _| Ok(db.compensations_of_order(order_id)))
    }

    async fn order_details(&self, order_id: OrderId) -> Result<OrderDetails, StoreError> {
        self.tx(|db, _, _| {
            let ev = db.order_event.get(&order_id).ok_or(StoreError::UnknownOrder(order_id))?;
            let order = db.orders[&(ev.clone(), order_id)].clone();
            Ok(OrderDetails {
                bookings: db.bookings_of_order(&order),
                compensations: db.compensations_of_order(order_id),
                order,
            })
        })
    }

    async fn bookings(&self, event_id: &EventId) -> Result<Vec<Booking>, StoreError> {
        self.tx(|db, _, _| {
            Ok(db
                .bookings
                .range((event_id.clone(), SeatId::default(), BookingId::nil())..)
                .take_while(|((ev, _, _), _)| ev == event_id)
                .map(|(_, b)| b.clone())
                .collect())
        })
    }

    async fn claim_reconcile(
        &self,
        limit: u32,
        backoff: ReconcileBackoff,
    ) -> Result<Vec<(Order, PaymentOp)>, StoreError> {
        backoff.validate()?;
        self.tx(|db, now_ms, _| {
            let mut due: Vec<(i64, EventId, OrderId)> = db
                .orders
                .values()
                .filter(|o| o.status.owns_seats())
                .filter(|o| reconcile_due(o, &db.payment_ops[&(o.event_id.clone(), o.payment_op_id)], now_ms))
                .map(|o| (o.payment_deadline_at_ms, o.event_id.clone(), o.order_id))
                .collect();
            due.sort();
            due.truncate(limit as usize);
            let mut out = Vec::with_capacity(due.len());
            for (_, event_id, order_id) in due {
                let order = db.orders[&(event_id.clone(), order_id)].clone();
                let cause = PaymentCause::Claim { order: &order, backoff };
                let claimed = payment::next(&db.payment_ops[&(event_id, order.payment_op_id)], &cause, now_ms)
                    .map_err(payment_refused)?
                    .expect("a due claim changes the payment");
                db.put_op(claimed.clone());
                out.push((order, claimed));
            }
            Ok(out)
        })
    }

    async fn needs_resolution(&self) -> Result<Resolution, StoreError> {
        self.tx(|db, _, _| {
            let payment_open = |o: &Order| {
                let op = &db.payment_ops[&(o.event_id.clone(), o.payment_op_id)];
                matches!(op.status, PaymentStatus::Pending | PaymentStatus::Unknown)
            };
            Ok(Resolution {
                orders: db
                    .orders
                    .values()
                    .filter(|o| match o.status {
                        OrderStatus::Reconciling | OrderStatus::Compensating | OrderStatus::CompensationFailed => true,
                        OrderStatus::Released => payment_open(o),
                        OrderStatus::Pending
                        | OrderStatus::Confirmed
                        | OrderStatus::Failed
                        | OrderStatus::Compensated => false,
                    })
                    .cloned()
                    .collect(),
                compensations: db.compensations.values().filter(|c| compensation_open(c)).cloned().collect(),
            })
        })
    }

    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        self.tx(|db, _, _| {
            Ok(Snapshot {
                events: db.events.values().cloned().collect(),
                seats: db.seats.values().cloned().collect(),
                orders: db.orders.values().cloned().collect(),
                payment_ops: db.payment_ops.values().cloned().collect(),
                bookings: db.bookings.values().cloned().collect(),
                compensations: db.compensations.values().cloned().collect(),
                outbox: db.outbox.values().cloned().collect(),
            })
        })
    }
}
