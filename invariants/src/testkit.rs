//! Test fixtures: a tiny, obviously-correct model of the store that keeps a
//! [`Snapshot`] and records the trace the simulator would record. Clean
//! fixtures come from it; violating fixtures tamper with its output.

use crate::Config;
use crate::trace::{
    Authority, ChangeCause, ClientOp, CompensationChange, OpResult, OrderChange, PaymentEvent, PhaseMark, SeatChange,
    Trace, TraceKind,
};
use booking::model::{
    Booking, BookingId, Compensation, CompensationId, CompensationKind, CompensationStatus, Event, HoldToken, Order,
    OrderId, OrderStatus, PaymentOp, PaymentOpId, PaymentStatus, Seat, SeatId, SeatState, Snapshot, UserId,
};
use uuid::Uuid;

/// Price of one seat in the fixtures.
pub const PRICE_CENTS: i64 = 1_000;

/// The fixture world: one event `ev`, a store clock, a trace.
#[derive(Clone)]
pub struct World {
    pub snap: Snapshot,
    pub trace: Trace,
    pub now_ms: i64,
    pub faults_end_ms: i64,
    next_id: u128,
    next_op: u64,
}

impl World {
    /// One event `ev` with `seats`, all available at version 0, at store time 1000.
    pub fn new(seats: &[impl Into<SeatId> + Clone]) -> Self {
        let mut snap = Snapshot::default();
        snap.events.push(Event { event_id: "ev".into(), price_cents: PRICE_CENTS, created_at_ms: 0 });
        for seat_id in seat_ids(seats) {
            snap.seats.push(Seat {
                event_id: "ev".into(),
                seat_id,
                state: SeatState::Available,
                version: 0,
                hold_token: None,
                holder_id: None,
                hold_expires_at_ms: None,
                order_id: None,
                booking_id: None,
            });
        }
        Self { snap, trace: Trace::new(100_000), now_ms: 1_000, faults_end_ms: 1_000, next_id: 1, next_op: 1 }
    }

    pub fn uuid(&mut self) -> Uuid {
        self.next_id += 1;
        Uuid::from_u128(self.next_id)
    }

    pub fn advance(&mut self, ms: i64) {
        self.now_ms += ms;
    }

    pub fn last_seq(&self) -> u64 {
        self.trace.events().last().expect("non-empty trace").seq
    }

    pub fn record(&mut self, kind: TraceKind) -> u64 {
        let at = self.now_ms;
        self.trace.record(at, kind).expect("fixture trace within limit")
    }

    pub fn config(&self) -> Config {
        Config::new(self.now_ms, self.faults_end_ms)
    }

    /// Marks the end of the fault phase now.
    pub fn end_faults(&mut self) {
        self.faults_end_ms = self.now_ms;
        let now = self.now_ms;
        self.record(TraceKind::Phase { phase: PhaseMark::FaultPhaseEnd, store_now_ms: now });
    }

    pub fn seat(&self, seat_id: impl Into<SeatId>) -> &Seat {
        let seat_id = seat_id.into();
        self.snap.seats.iter().find(|s| s.seat_id == seat_id).expect("fixture seat")
    }

    fn seat_mut(&mut self, seat_id: &SeatId) -> &mut Seat {
        self.snap.seats.iter_mut().find(|s| s.seat_id == *seat_id).expect("fixture seat")
    }

    pub fn order(&self, order_id: OrderId) -> &Order {
        self.snap.orders.iter().find(|o| o.order_id == order_id).expect("fixture order")
    }

    fn order_mut(&mut self, order_id: OrderId) -> &mut Order {
        self.snap.orders.iter_mut().find(|o| o.order_id == order_id).expect("fixture order")
    }

    /// Applies `f` to a seat and records the change; returns its seq.
    pub fn change_seat(
        &mut self,
        seat_id: impl Into<SeatId>,
        cause: ChangeCause,
        authority: Authority,
        f: impl FnOnce(&mut Seat),
    ) -> u64 {
        let (now, seat_id) = (self.now_ms, seat_id.into());
        let before = self.seat(&seat_id).clone();
        let seat = self.seat_mut(&seat_id);
        f(seat);
        seat.version += 1;
        let after = seat.clone();
        self.record(TraceKind::SeatChange(Box::new(SeatChange::new(cause, now, authority, &before, &after))))
    }

    fn op_id(&mut self) -> u64 {
        self.next_op += 1;
        self.next_op
    }

    /// A client invokes `op` and gets `result`: returns (invoke seq, answer seq).
    pub fn client(&mut self, client: impl Into<UserId>, op: ClientOp, result: Result<OpResult, &str>) -> (u64, u64) {
        let op_id = self.op_id();
        let i = self.record(TraceKind::Invoke { op_id, client: client.into(), op, host: None });
        let a = match result {
            Ok(result) => self.record(TraceKind::Ok { op_id, result, status: 0 }),
            Err(kind) => {
                let error_kind = booking::problem_kind::ProblemKind::parse(kind).expect("a problem kind");
                self.record(TraceKind::Fail { op_id, error_kind, status: 0, retry_after_s: None })
            }
        };
        (i, a)
    }

    /// `user` holds `seats` for `ttl_ms` (taking over expired holds). Panics if not holdable.
    pub fn hold(&mut self, user: impl Into<UserId>, seats: &[impl Into<SeatId> + Clone], ttl_ms: i64) -> HoldToken {
        self.hold_answered(user, seats, seats, ttl_ms).2
    }

    /// `user` asks for `asked`; the store holds `granted` under a new token
    /// for `ttl_ms` and answers with them (a correct store: `granted == asked`).
    /// Panics if a granted seat is not holdable. Returns (invoke seq, ok seq, token).
    pub fn hold_answered(
        &mut self,
        user: impl Into<UserId>,
        asked: &[impl Into<SeatId> + Clone],
        granted: &[impl Into<SeatId> + Clone],
        ttl_ms: i64,
    ) -> (u64, u64, HoldToken) {
        let (user, granted) = (user.into(), seat_ids(granted));
        let token = HoldToken::from(self.uuid());
        self.hold_with_token(&user, &granted, token, ttl_ms);
        let op = ClientOp::Hold { event_id: "ev".into(), seat_ids: seat_ids(asked), admission: None };
        let mut sorted = granted;
        sorted.sort();
        sorted.dedup();
        let res = OpResult::Held { hold_token: token, seat_ids: sorted, expires_at_ms: self.now_ms + ttl_ms };
        let (i, a) = self.client(user, op, Ok(res));
        (i, a, token)
    }

    /// The store's side of a hold: writes `seats` (cause hold) to `user` under
    /// `token` (possibly one issued before: a broken store) for `ttl_ms`; no
    /// client answer. Panics if a seat is not holdable. Returns the writes' seqs.
    pub fn hold_with_token(
        &mut self,
        user: impl Into<UserId>,
        seats: &[impl Into<SeatId> + Clone],
        token: HoldToken,
        ttl_ms: i64,
    ) -> Vec<u64> {
        let (now, user) = (self.now_ms, user.into());
        let mut seqs = Vec::new();
        for s in &seat_ids(seats) {
            let seat = self.seat(s);
            let holdable = seat.state == SeatState::Available
                || (seat.state == SeatState::Held && seat.hold_expires_at_ms.is_some_and(|t| t <= now));
            assert!(holdable, "fixture hold on an unholdable seat {s}");
            seqs.push(self.change_seat(s, ChangeCause::Hold, Authority::new_hold(&user), |seat| {
                seat.state = SeatState::Held;
                seat.hold_token = Some(token);
                seat.holder_id = Some(user.clone());
                seat.hold_expires_at_ms = Some(now + ttl_ms);
            }));
        }
        seqs
    }

    /// `user` asks for `seats` and is refused (contention).
    pub fn hold_refused(&mut self, user: impl Into<UserId>, seats: &[impl Into<SeatId> + Clone]) -> u64 {
        let op = ClientOp::Hold { event_id: "ev".into(), seat_ids: seat_ids(seats), admission: None };
        self.client(user, op, Err("seat-unavailable")).1
    }

    /// `user` releases its hold `token`.
    pub fn release(&mut self, user: impl Into<UserId>, token: HoldToken) {
        let user = user.into();
        let seats: Vec<SeatId> =
            self.snap.seats.iter().filter(|s| s.hold_token == Some(token)).map(|s| s.seat_id.clone()).collect();
        for s in &seats {
            self.change_seat(s, ChangeCause::Release, Authority::token(token, &user), clear_hold);
        }
        self.client(
            user,
            ClientOp::Release { event_id: "ev".into(), hold_token: token },
            Ok(OpResult::Released { seat_ids: seats }),
        );
    }

    /// The sweeper reclaims every expired hold.
    pub fn sweep(&mut self) -> Vec<u64> {
        let now = self.now_ms;
        let expired: Vec<SeatId> = self
            .snap
            .seats
            .iter()
            .filter(|s| s.state == SeatState::Held && s.hold_expires_at_ms.is_some_and(|t| t <= now))
            .map(|s| s.seat_id.clone())
            .collect();
        expired.iter().map(|s| self.change_seat(s, ChangeCause::Sweep, Authority::none(), clear_hold)).collect()
    }

    /// `user` checks out its hold `token` with `key`: order, payment op, seats pending.
    pub fn checkout(&mut self, user: impl Into<UserId>, token: HoldToken, key: &str, payment_ttl_ms: i64) -> OrderId {
        let (now, user) = (self.now_ms, user.into());
        let seats: Vec<SeatId> =
            self.snap.seats.iter().filter(|s| s.hold_token == Some(token)).map(|s| s.seat_id.clone()).collect();
        for s in &seats {
            let seat = self.seat(s);
            assert!(
                seat.state == SeatState::Held && seat.hold_expires_at_ms.is_some_and(|t| t > now),
                "fixture checkout of a dead hold"
            );
        }
        let order_id = OrderId::from(self.uuid());
        let payment_op_id = PaymentOpId::from(self.uuid());
        let order = Order {
            event_id: "ev".into(),
            order_id,
            holder_id: user.clone(),
            hold_token: token,
            seat_ids: seats.clone(),
            amount_cents: PRICE_CENTS * seats.len() as i64,
            status: OrderStatus::Pending,
            payment_op_id,
            payment_deadline_at_ms: now + payment_ttl_ms,
            idempotency_key: key.into(),
            resolution_reason: None,
            created_at_ms: now,
            updated_at_ms: now,
        };
        for s in &seats {
            self.change_seat(s, ChangeCause::Checkout, Authority::token(token, &user), |seat| {
                seat.state = SeatState::PaymentPending;
                seat.order_id = Some(order_id);
            });
        }
        self.record(TraceKind::OrderChange(OrderChange::new(None, &order, now)));
        self.snap.payment_ops.push(PaymentOp {
            event_id: "ev".into(),
            payment_op_id,
            order_id,
            amount_cents: order.amount_cents,
            status: PaymentStatus::Pending,
            provider_payment_id: None,
            last_error: None,
            updated_at_ms: now,
            next_check_at_ms: now,
            checks: 0,
        });
        self.snap.orders.push(order);
        self.answer_checkout(user, token, key, order_id, false);
        order_id
    }

    /// A checkout request (first or retry) answered with `order_id`; returns the answer's seq.
    pub fn answer_checkout(
        &mut self,
        user: impl Into<UserId>,
        token: HoldToken,
        key: &str,
        order_id: OrderId,
        replayed: bool,
    ) -> u64 {
        let seats = self.order_seats(order_id);
        let status = self.order(order_id).status;
        let op = ClientOp::Checkout {
            event_id: "ev".into(),
            hold_token: token,
            seat_ids: seats,
            idempotency_key: key.into(),
            admission: None,
        };
        self.client(user, op, Ok(OpResult::CheckedOut { order_id, status, booking_ids: vec![], replayed })).1
    }

    fn order_seats(&self, order_id: OrderId) -> Vec<SeatId> {
        self.snap.orders.iter().find(|o| o.order_id == order_id).map(|o| o.seat_ids.clone()).unwrap_or_default()
    }

    fn set_order_status(&mut self, order_id: OrderId, status: OrderStatus) -> u64 {
        let now = self.now_ms;
        let before = self.order(order_id).clone();
        let o = self.order_mut(order_id);
        o.status = status;
        o.updated_at_ms = now;
        let after = o.clone();
        self.record(TraceKind::OrderChange(OrderChange::new(Some(&before), &after, now)))
    }

    fn op_status(&mut self, order_id: OrderId, status: PaymentStatus) {
        let op_id = self.order(order_id).payment_op_id;
        let op = self.snap.payment_ops.iter_mut().find(|p| p.payment_op_id == op_id).expect("fixture op");
        op.status = status;
    }

    /// The provider charges the order's operation; the store sells (order
    /// still owns its seats) or opens a compensation. Returns the Charged seq.
    pub fn charge(&mut self, order_id: OrderId) -> u64 {
        let order = self.order(order_id).clone();
        let charged = self.record(TraceKind::Payment(PaymentEvent::Charged {
            payment_op_id: order.payment_op_id,
            amount_cents: order.amount_cents,
            provider_payment_id: format!("pp-{}", order.payment_op_id.as_uuid().as_u128()),
        }));
        self.op_status(order_id, PaymentStatus::Succeeded);
        if order.status.owns_seats() {
            for s in &order.seat_ids {
                let booking_id = BookingId::from(self.uuid());
                let now = self.now_ms;
                self.snap.bookings.push(Booking {
                    event_id: "ev".into(),
                    seat_id: s.clone(),
                    booking_id,
                    order_id,
                    payment_op_id: order.payment_op_id,
                    holder_id: order.holder_id.clone(),
                    created_at_ms: now,
                });
                self.change_seat(s, ChangeCause::Sale, Authority::order(&order), |seat| {
                    seat.state = SeatState::Sold;
                    seat.booking_id = Some(booking_id);
                    seat.hold_expires_at_ms = None;
                });
            }
            self.set_order_status(order_id, OrderStatus::Confirmed);
        } else {
            self.open_compensation(&order);
            self.set_order_status(order_id, OrderStatus::Compensating);
        }
        charged
    }

    /// Opens a compensation for a charged order; returns its id.
    pub fn open_compensation(&mut self, order: &Order) -> CompensationId {
        let now = self.now_ms;
        let c = Compensation {
            event_id: "ev".into(),
            compensation_id: CompensationId::from(self.uuid()),
            order_id: order.order_id,
            payment_op_id: order.payment_op_id,
            kind: CompensationKind::Refund,
            amount_cents: order.amount_cents,
            status: CompensationStatus::Requested,
            attempts: 0,
            last_error: None,
            next_attempt_at_ms: now,
            created_at_ms: now,
            updated_at_ms: now,
        };
        self.record(TraceKind::CompensationChange(CompensationChange::new(None, &c, now)));
        let id = c.compensation_id;
        self.snap.compensations.push(c);
        id
    }

    /// The provider declines: seats back to available, order failed.
    pub fn decline(&mut self, order_id: OrderId) {
        let order = self.order(order_id).clone();
        self.record(TraceKind::Payment(PaymentEvent::Declined { payment_op_id: order.payment_op_id }));
        self.op_status(order_id, PaymentStatus::Failed);
        for s in &order.seat_ids {
            self.change_seat(s, ChangeCause::PaymentDeclined, Authority::order(&order), clear_hold);
        }
        self.set_order_status(order_id, OrderStatus::Failed);
    }

    /// The payment's answer was lost: order reconciling.
    pub fn unknown(&mut self, order_id: OrderId) {
        let op = self.order(order_id).payment_op_id;
        self.record(TraceKind::Payment(PaymentEvent::Unknown { payment_op_id: op, reason: "timeout".into() }));
        self.op_status(order_id, PaymentStatus::Unknown);
        self.set_order_status(order_id, OrderStatus::Reconciling);
    }

    /// The unresolved payment's seats are released after its deadline.
    pub fn release_unresolved(&mut self, order_id: OrderId) {
        let order = self.order(order_id).clone();
        for s in &order.seat_ids {
            self.change_seat(s, ChangeCause::UnresolvedReleased, Authority::order(&order), clear_hold);
        }
        self.order_mut(order_id).resolution_reason = Some("payment unresolved past its deadline".into());
        self.set_order_status(order_id, OrderStatus::Released);
    }

    /// `user` holds `seat` and checks out; the payment's outcome turns unknown,
    /// the order is released at its deadline, and then the charge succeeds
    /// (a late success): a compensation is opened and the order is
    /// compensating. Returns (order, compensation).
    pub fn late_success_after_release(
        &mut self,
        user: impl Into<UserId>,
        seat: impl Into<SeatId>,
    ) -> (OrderId, CompensationId) {
        let (user, seat) = (user.into(), seat.into());
        let t = self.hold(&user, &[seat], 60_000);
        let o = self.checkout(user, t, "k", 10_000);
        self.unknown(o);
        self.advance(10_000);
        self.release_unresolved(o);
        self.charge(o);
        let comp = self.snap.compensations.iter().find(|c| c.order_id == o).expect("a compensation").compensation_id;
        (o, comp)
    }

    /// The provider refunds a compensation; it succeeds and the order is compensated.
    /// Returns the Refunded seq.
    pub fn refund(&mut self, compensation_id: CompensationId) -> u64 {
        let c = self.compensation(compensation_id).clone();
        let seq = self.record(TraceKind::Payment(PaymentEvent::Refunded {
            compensation_id,
            payment_op_id: c.payment_op_id,
            amount_cents: c.amount_cents,
        }));
        self.succeed_compensation_without_refund(compensation_id);
        seq
    }

    /// The store records a compensation succeeded and its order compensated,
    /// whether or not the provider refunded anything (a broken store, unless
    /// a refund came first). Returns the compensation change's seq.
    pub fn succeed_compensation_without_refund(&mut self, compensation_id: CompensationId) -> u64 {
        let now = self.now_ms;
        let c = self.compensation(compensation_id).clone();
        let cm =
            self.snap.compensations.iter_mut().find(|c| c.compensation_id == compensation_id).expect("fixture comp");
        cm.status = CompensationStatus::Succeeded;
        cm.attempts += 1;
        cm.updated_at_ms = now;
        let after = cm.clone();
        let seq = self.record(TraceKind::CompensationChange(CompensationChange::new(Some(&c), &after, now)));
        self.set_order_status(c.order_id, OrderStatus::Compensated);
        seq
    }

    /// A compensation of the final records.
    pub fn compensation(&self, compensation_id: CompensationId) -> &Compensation {
        self.snap.compensations.iter().find(|c| c.compensation_id == compensation_id).expect("fixture comp")
    }

    /// A broken store's record: sets an order's resolution reason (no trace event).
    pub fn set_resolution_reason(&mut self, order_id: OrderId, reason: Option<&str>) {
        self.order_mut(order_id).resolution_reason = reason.map(str::to_owned);
    }

    /// A broken store sells an already sold seat again to `user` (new order,
    /// succeeded op, second booking). Returns the sale's seq.
    pub fn force_resell(&mut self, seat_id: impl Into<SeatId>, user: impl Into<UserId>) -> u64 {
        let (now, seat_id, user) = (self.now_ms, seat_id.into(), user.into());
        let (order_id, op_id, booking_id, token) = (
            OrderId::from(self.uuid()),
            PaymentOpId::from(self.uuid()),
            BookingId::from(self.uuid()),
            HoldToken::from(self.uuid()),
        );
        let order = Order {
            event_id: "ev".into(),
            order_id,
            holder_id: user.clone(),
            hold_token: token,
            seat_ids: vec![seat_id.clone()],
            amount_cents: PRICE_CENTS,
            status: OrderStatus::Confirmed,
            payment_op_id: op_id,
            payment_deadline_at_ms: now + 60_000,
            idempotency_key: "forced".into(),
            resolution_reason: None,
            created_at_ms: now,
            updated_at_ms: now,
        };
        self.snap.payment_ops.push(PaymentOp {
            event_id: "ev".into(),
            payment_op_id: op_id,
            order_id,
            amount_cents: PRICE_CENTS,
            status: PaymentStatus::Succeeded,
            provider_payment_id: None,
            last_error: None,
            updated_at_ms: now,
            next_check_at_ms: now,
            checks: 0,
        });
        self.snap.bookings.push(Booking {
            event_id: "ev".into(),
            seat_id: seat_id.clone(),
            booking_id,
            order_id,
            payment_op_id: op_id,
            holder_id: user.clone(),
            created_at_ms: now,
        });
        let seq = self.change_seat(seat_id, ChangeCause::Sale, Authority::order(&order), |seat| {
            seat.holder_id = Some(user);
            seat.hold_token = Some(token);
            seat.order_id = Some(order_id);
            seat.booking_id = Some(booking_id);
        });
        self.snap.orders.push(order);
        seq
    }
}

/// The seat ids `seats` name.
fn seat_ids(seats: &[impl Into<SeatId> + Clone]) -> Vec<SeatId> {
    seats.iter().cloned().map(Into::into).collect()
}

/// Clears a seat's ownership: back to available.
pub fn clear_hold(seat: &mut Seat) {
    seat.state = SeatState::Available;
    seat.hold_token = None;
    seat.holder_id = None;
    seat.hold_expires_at_ms = None;
    seat.order_id = None;
    seat.booking_id = None;
}

impl World {
    /// The provider charges the order's operation and the store never hears of it.
    pub fn charge_without_store(&mut self, order: &Order) -> u64 {
        self.record(TraceKind::Payment(PaymentEvent::Charged {
            payment_op_id: order.payment_op_id,
            amount_cents: order.amount_cents,
            provider_payment_id: format!("pp-{}", order.payment_op_id.as_uuid().as_u128()),
        }))
    }
}

impl World {
    /// The seq of the last recorded change of `seat_id`.
    pub fn last_change_of(&self, seat_id: impl Into<SeatId>) -> u64 {
        let seat_id = seat_id.into();
        self.trace
            .events()
            .iter()
            .rev()
            .find(|e| matches!(&e.kind, TraceKind::SeatChange(c) if c.seat_id == seat_id))
            .expect("fixture seat changed")
            .seq
    }
}
