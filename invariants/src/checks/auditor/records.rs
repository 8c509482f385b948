//! The auditor's store side: each store call replayed, its writes held to
//! the model's, its money to the ledger; the final records held to the model's.

use super::Auditor;
use crate::Subject;
use crate::model::http::ops::{Linked, state_index};
use crate::model::store::{StoreModel, Writes};
use crate::model::{Finding, shown};
use crate::store_call::StoreCall;
use crate::trace::{OpId, SeatImage, TraceKind};
use booking::model::{CompensationId, EventId, OrderId, OutboxEvent, OutboxId, SeatId, Snapshot};

/// A write as compared: the record's key and what changed.
type SeatWrite = (EventId, SeatId, SeatImage, SeatImage);
type OrderWrite = (OrderId, Option<booking::model::OrderStatus>, booking::model::OrderStatus);
type CompWrite =
    (CompensationId, Option<booking::model::CompensationStatus>, booking::model::CompensationStatus, i32, i64);

fn predicted(w: &Writes) -> (Vec<SeatWrite>, Vec<OrderWrite>, Vec<CompWrite>) {
    let mut seats: Vec<SeatWrite> =
        w.seats.iter().map(|(b, a)| (a.event_id.clone(), a.seat_id.clone(), b.into(), a.into())).collect();
    seats.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
    let mut orders: Vec<OrderWrite> = w.orders.iter().map(|(from, o)| (o.order_id, *from, o.status)).collect();
    orders.sort_by_key(|o| o.0);
    let mut comps: Vec<CompWrite> = w
        .compensations
        .iter()
        .map(|(b, c)| (c.compensation_id, b.as_ref().map(|b| b.status), c.status, c.attempts, c.next_attempt_at_ms))
        .collect();
    comps.sort_by_key(|c| c.0);
    (seats, orders, comps)
}

impl<'a> Auditor<'a> {
    fn observed(&self) -> (Vec<SeatWrite>, Vec<OrderWrite>, Vec<CompWrite>) {
        let (mut seats, mut orders, mut comps) = (Vec::new(), Vec::new(), Vec::new());
        for e in &self.writes {
            match &e.kind {
                TraceKind::SeatChange(c) => {
                    seats.push((c.event_id.clone(), c.seat_id.clone(), c.before.clone(), c.after.clone()))
                }
                TraceKind::OrderChange(o) => orders.push((o.order_id, o.from, o.to)),
                TraceKind::CompensationChange(c) => {
                    comps.push((c.compensation_id, c.from, c.to, c.attempts, c.next_attempt_at_ms))
                }
                _ => {}
            }
        }
        seats.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
        orders.sort_by_key(|o| o.0);
        comps.sort_by_key(|c| c.0);
        (seats, orders, comps)
    }

    /// A store call: replayed, its writes and money judged, linked to its request.
    pub(super) fn store_call(&mut self, seq: u64, op_id: Option<OpId>, now_ms: i64, call: &StoreCall) {
        let counts = self.counts(call);
        let replay = if self.store_down { outage(call) } else { self.store.replay(now_ms, call) };
        self.tally.store_call(call);
        if let (Some(op), StoreCall::AcquireHold { req, answer }) = (op_id, call) {
            let refused = answer.as_ref().is_err_and(|r| r.kind == booking::problem_kind::ProblemKind::SeatUnavailable);
            self.laws.hold_answered(op, &req.event_id, refused);
        }
        let seats = &self.store.seats;
        self.sell_out.store_call(seq, op_id, call, |event| {
            let mut of_event = seats
                .range((EventId::from(event), SeatId::default())..)
                .take_while(|((e, _), _)| e == event)
                .peekable();
            of_event.peek().is_some() && of_event.all(|(_, s)| s.state == booking::model::SeatState::Sold)
        });
        if let Some(f) = only_a_bug(call) {
            self.report(f, vec![seq]);
        }
        if let StoreCall::ReleaseUnresolved { payment_op_id, reason, answer: Ok(_) } = call
            && let Some(what) = self.reads.release(*payment_op_id, reason)
        {
            self.report(Finding::new(Subject::PaymentOp { payment_op_id: *payment_op_id }, what), vec![seq]);
        }
        let mut witnesses: Vec<u64> = self.writes.iter().map(|e| e.seq).collect();
        witnesses.push(seq);
        for f in replay.findings {
            self.report(f, witnesses.clone());
        }
        let (want, got) = (predicted(&replay.writes), self.observed());
        if want != got {
            let what = |w: &(Vec<SeatWrite>, Vec<OrderWrite>, Vec<CompWrite>)| {
                format!("{} seat, {} order, {} refund writes {}", w.0.len(), w.1.len(), w.2.len(), shown(w))
            };
            let f = Finding::new(
                Subject::Call { name: format!("{} writes", call.name()) },
                format!("{}: the model writes {}; the store wrote {}", call.name(), what(&want), what(&got)),
            );
            self.report(f, witnesses.clone());
        }
        self.writes.clear();
        if let Some(f) = self.ledger.as_ref().and_then(|l| l.judge(call)) {
            self.report(f, vec![seq]);
        }
        if let Some(op_id) = op_id {
            self.link(seq, op_id, now_ms, Linked { call: call.clone(), counts });
        }
    }

    /// The event's seats by state before `call`, for the seat-map reads.
    fn counts(&self, call: &StoreCall) -> [u32; 4] {
        let mut counts = [0; 4];
        if let StoreCall::SeatMap { event_id, .. } | StoreCall::SeatsInState { event_id, .. } = call {
            for s in self.store.event_seats(event_id) {
                counts[state_index(s.state)] += 1;
            }
        }
        counts
    }
}

/// A store refusal only a bug in the service provokes ([`crate::answers::ONLY_A_BUG`]).
fn only_a_bug(call: &StoreCall) -> Option<Finding> {
    let kind = call.refusal().map(|r| r.kind).filter(|k| crate::answers::ONLY_A_BUG.contains(k))?;
    let why = crate::answers::unprovoked_reason(kind).unwrap_or("only a bug asks it");
    Some(Finding::new(
        Subject::Call { name: call.name().into() },
        format!("{}: the store refused it as {kind}, which a sound service never provokes: {why}", call.name()),
    ))
}

/// A call during a store outage: it must fail as an outage does, writing nothing.
fn outage(call: &StoreCall) -> crate::model::store::Replay {
    let mut r = crate::model::store::Replay::default();
    if call.refusal().is_none_or(|e| e.kind != booking::problem_kind::ProblemKind::Backend) {
        let what = call.refusal().map_or("ok".to_string(), |e| e.kind.to_string());
        r.findings.push(Finding::new(
            Subject::Call { name: call.name().into() },
            format!("{}: answered {what} while the store was unreachable (expected backend)", call.name()),
        ));
    }
    r
}

/// The store's final records against the model's.
pub(super) fn compare_final(model: &StoreModel, snap: &Snapshot) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut differ = |what: &str, subject: Subject, want: String, got: String| {
        out.push(Finding::new(subject, format!("final {what}: the model has {want}, the store has {got}")));
    };
    let seats: Vec<_> = model.seats.values().cloned().collect();
    for (i, (m, s)) in seats.iter().zip(&snap.seats).enumerate() {
        if m != s {
            differ("seat", Subject::seat(&s.event_id, &s.seat_id), shown(m), shown(s));
            let _ = i;
        }
    }
    if seats.len() != snap.seats.len() {
        differ(
            "seats",
            Subject::Call { name: "snapshot".into() },
            seats.len().to_string(),
            snap.seats.len().to_string(),
        );
    }
    let orders: Vec<_> = model.orders.values().cloned().collect();
    if orders != snap.orders {
        let (m, s) = first_difference(&orders, &snap.orders);
        let subject =
            s.or(m).map_or(Subject::Call { name: "orders".into() }, |o| Subject::Order { order_id: o.order_id });
        differ("order", subject, shown(&m), shown(&s));
    }
    let ops: Vec<_> = model.ops.values().cloned().collect();
    if ops != snap.payment_ops {
        let (m, s) = first_difference(&ops, &snap.payment_ops);
        let subject = s.or(m).map_or(Subject::Call { name: "payment_ops".into() }, |o| Subject::PaymentOp {
            payment_op_id: o.payment_op_id,
        });
        differ("payment operation", subject, shown(&m), shown(&s));
    }
    let bookings: Vec<_> = model.bookings.values().cloned().collect();
    if bookings != snap.bookings {
        let (m, s) = first_difference(&bookings, &snap.bookings);
        differ("booking", Subject::Call { name: "bookings".into() }, shown(&m), shown(&s));
    }
    let comps: Vec<_> = model.compensations.values().cloned().collect();
    if comps != snap.compensations {
        let (m, s) = first_difference(&comps, &snap.compensations);
        let subject = s.or(m).map_or(Subject::Call { name: "compensations".into() }, |c| Subject::Compensation {
            compensation_id: c.compensation_id,
        });
        differ("compensation", subject, shown(&m), shown(&s));
    }
    let key = |o: &OutboxEvent| (o.kind, o.ref_id);
    let mut outbox_m: Vec<OutboxEvent> = model.outbox.clone();
    let mut outbox_s: Vec<OutboxEvent> = snap.outbox.clone();
    outbox_m.sort_by_key(key);
    outbox_s.sort_by_key(key);
    for o in outbox_m.iter_mut().zip(&outbox_s).filter(|(m, _)| m.outbox_id == OutboxId::nil()) {
        o.0.outbox_id = o.1.outbox_id;
    }
    if outbox_m != outbox_s {
        let (m, s) = first_difference(&outbox_m, &outbox_s);
        differ("dispatch event", Subject::Call { name: "outbox".into() }, shown(&m), shown(&s));
    }
    out
}

/// The first pair that differs between two lists (`None` past a list's end).
fn first_difference<'x, T: PartialEq>(a: &'x [T], b: &'x [T]) -> (Option<&'x T>, Option<&'x T>) {
    let n = a.len().max(b.len());
    (0..n).map(|i| (a.get(i), b.get(i))).find(|(x, y)| x != y).unwrap_or((None, None))
}
