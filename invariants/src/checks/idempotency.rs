//! Idempotent retries: all answers to one idempotency key (scoped, as the
//! store scopes it, to event and holder) name the same order and, when they
//! carry bookings, the same bookings; once an answer committed an order, a
//! later answer to a retry (the same key for the same hold and seats) is
//! that order or a transient error (an explicit unresolved status), never a
//! definitive refusal (the key used for another request is refused, as it
//! must be); the final records hold at
//! most one order per key; and money is taken at most once per key and at
//! most once per payment operation.

use super::index::charges;
use crate::trace::{ClientOp, OpId, OpResult};
use crate::{Config, Invariant, Subject, TraceEvent, TraceKind, Violation};
use booking::model::{BookingId, EventId, HoldToken, OrderId, PaymentOpId, SeatId, Snapshot, UserId};
use booking::problem_kind::ProblemKind;
use std::collections::{BTreeMap, BTreeSet};

type Key = (EventId, UserId, String);

/// What a checkout under a key asked for: the hold and its seats, sorted.
type Request = (HoldToken, Vec<SeatId>);

/// One answer to a checkout: (seq, order and bookings) or (seq, error kind), with the request answered.
enum Answer {
    Ok { seq: u64, order_id: OrderId, booking_ids: Vec<BookingId>, req: Request },
    Fail { seq: u64, error_kind: ProblemKind, req: Request },
}

fn subject(k: &Key) -> Subject {
    Subject::IdempotencyKey { event_id: k.0.clone(), holder_id: k.1.clone(), key: k.2.clone() }
}

/// Checks [`Invariant::IdempotentRetry`].
pub fn check_idempotency(snap: &Snapshot, trace: &[TraceEvent], cfg: &Config) -> Vec<Violation> {
    let answers = answers_by_key(trace);
    let mut orders_of: BTreeMap<Key, BTreeSet<OrderId>> = BTreeMap::new();
    for o in &snap.orders {
        orders_of
            .entry((o.event_id.clone(), o.holder_id.clone(), o.idempotency_key.clone()))
            .or_default()
            .insert(o.order_id);
    }
    let mut keys: BTreeSet<Key> = answers.keys().cloned().collect();
    keys.extend(orders_of.keys().cloned());
    let charges = charges(trace);
    let mut out = Vec::new();
    for k in &keys {
        let first_ok = judge_answers(k, answers.get(k).map(Vec::as_slice).unwrap_or_default(), cfg, &mut out);
        let stored = orders_of.get(k).cloned().unwrap_or_default();
        if stored.len() > 1 {
            let witnesses = first_ok.iter().filter(|(_, o)| stored.contains(o)).map(|(s, _)| *s).take(2).collect();
            let ids: Vec<String> = stored.iter().map(OrderId::to_string).collect();
            let detail = format!("the store holds {} orders for one key: {}", stored.len(), ids.join(", "));
            out.push(Violation::new(Invariant::IdempotentRetry, subject(k), detail, witnesses));
        }
        // Money taken at most once per key.
        let mut orders: BTreeSet<OrderId> = stored;
        orders.extend(first_ok.iter().map(|(_, o)| *o));
        let ops: BTreeSet<PaymentOpId> =
            snap.orders.iter().filter(|o| orders.contains(&o.order_id)).map(|o| o.payment_op_id).collect();
        let mut key_charges: Vec<u64> =
            ops.iter().filter_map(|op| charges.get(op).and_then(|c| c.first()).map(|(s, _)| *s)).collect();
        key_charges.sort_unstable();
        if key_charges.len() > 1 {
            let detail = format!("{} payment operations of one key were charged", key_charges.len());
            out.push(Violation::new(
                Invariant::IdempotentRetry,
                subject(k),
                detail,
                key_charges.into_iter().take(2).collect(),
            ));
        }
    }
    // Money taken at most once per payment operation.
    for (op_id, cs) in &charges {
        if cs.len() > 1 {
            let subject = Subject::PaymentOp { payment_op_id: *op_id };
            out.push(Violation::new(
                Invariant::IdempotentRetry,
                subject,
                format!("charged {} times", cs.len()),
                vec![cs[0].0, cs[1].0],
            ));
        }
    }
    out
}

/// Every answer to a checkout, by its key, in trace order.
fn answers_by_key(trace: &[TraceEvent]) -> BTreeMap<Key, Vec<Answer>> {
    let mut key_of: BTreeMap<OpId, (Key, Request)> = BTreeMap::new();
    let mut answers: BTreeMap<Key, Vec<Answer>> = BTreeMap::new();
    for e in trace {
        match &e.kind {
            TraceKind::Invoke {
                op_id,
                client,
                op: ClientOp::Checkout { event_id, idempotency_key, hold_token, seat_ids, .. },
                ..
            } => {
                let mut seats = seat_ids.clone();
                seats.sort();
                let key = (event_id.clone(), client.clone(), idempotency_key.clone());
                key_of.insert(*op_id, (key, (*hold_token, seats)));
            }
            TraceKind::Ok { op_id, result: OpResult::CheckedOut { order_id, booking_ids, .. }, .. } => {
                if let Some((k, req)) = key_of.get(op_id) {
                    let (order_id, booking_ids, req) = (*order_id, booking_ids.clone(), req.clone());
                    answers.entry(k.clone()).or_default().push(Answer::Ok { seq: e.seq, order_id, booking_ids, req });
                }
            }
            TraceKind::Fail { op_id, error_kind, .. } => {
                if let Some((k, req)) = key_of.get(op_id) {
                    let a = Answer::Fail { seq: e.seq, error_kind: *error_kind, req: req.clone() };
                    answers.entry(k.clone()).or_default().push(a);
                }
            }
            _ => {}
        }
    }
    answers
}

/// Judges one key's answers (one order, the same bookings, no definitive
/// refusal of a retry once an order was answered); returns the first ok
/// answer naming each order, in trace order: (seq, order).
fn judge_answers(k: &Key, answers: &[Answer], cfg: &Config, out: &mut Vec<Violation>) -> Vec<(u64, OrderId)> {
    let mut first_ok: Vec<(u64, OrderId)> = Vec::new();
    let mut committed: Option<&Request> = None;
    let mut first_bookings: Option<(u64, &Vec<BookingId>)> = None;
    for a in answers {
        match a {
            Answer::Ok { seq, order_id, booking_ids, req } => {
                if !first_ok.iter().any(|(_, o)| o == order_id) {
                    first_ok.push((*seq, *order_id));
                }
                committed.get_or_insert(req);
                if booking_ids.is_empty() {
                    continue;
                }
                match first_bookings {
                    None => first_bookings = Some((*seq, booking_ids)),
                    Some((s0, b0)) if b0 != booking_ids => out.push(Violation::new(
                        Invariant::IdempotentRetry,
                        subject(k),
                        format!("answered bookings {b0:?} then {booking_ids:?}"),
                        vec![s0, *seq],
                    )),
                    Some(_) => {}
                }
            }
            Answer::Fail { seq, error_kind, req } => {
                if let Some((ok_seq, order_id)) = first_ok.first()
                    && committed == Some(req)
                    && !cfg.is_transient(*error_kind)
                {
                    let detail = format!("answered order {order_id}, then a retry failed with {error_kind}");
                    out.push(Violation::new(Invariant::IdempotentRetry, subject(k), detail, vec![*ok_seq, *seq]));
                }
            }
        }
    }
    if first_ok.len() > 1 {
        let detail = format!("answered two orders {} and {}", first_ok[0].1, first_ok[1].1);
        out.push(Violation::new(Invariant::IdempotentRetry, subject(k), detail, vec![first_ok[0].0, first_ok[1].0]));
    }
    first_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;
    use crate::trace::PaymentEvent;

    fn key(k: &str) -> Subject {
        Subject::IdempotencyKey { event_id: "ev".into(), holder_id: "u1".into(), key: k.into() }
    }

    /// Crash after commit: the first answer is lost, the retry is a replay of the same order.
    #[test]
    fn retry_answered_with_the_same_order_is_clean() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        w.answer_checkout("u1", t, "k", o, true);
        w.charge(o);
        w.answer_checkout("u1", t, "k", o, true);
        let mut cfg = w.config();
        cfg.transient_error_kinds = vec![ProblemKind::Backend];
        let op = ClientOp::Checkout {
            event_id: "ev".into(),
            hold_token: t,
            seat_ids: vec!["A".into()],
            idempotency_key: "k".into(),
            admission: None,
        };
        w.client("u1", op, Err("backend"));
        assert_eq!(check_idempotency(&w.snap, w.trace.events(), &cfg), vec![]);
    }

    #[test]
    fn two_orders_for_one_key_are_reported() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o1 = w.checkout("u1", t, "k", 10_000);
        let first = w.last_seq();
        // A store that forgot the key makes a second order on retry.
        let mut o2 = w.order(o1).clone();
        o2.order_id = OrderId::from(w.uuid());
        o2.payment_op_id = PaymentOpId::from(w.uuid());
        let o2_id = o2.order_id;
        w.snap.orders.push(o2);
        let second = w.answer_checkout("u1", t, "k", o2_id, false);
        let v = check_idempotency(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().all(|v| v.invariant == Invariant::IdempotentRetry && v.subject == key("k")));
        assert_eq!(v[0].detail, format!("answered two orders {o1} and {o2_id}"));
        assert_eq!(v[0].witnesses, vec![first, second]);
        assert!(v[1].detail.starts_with("the store holds 2 orders for one key"), "{}", v[1].detail);
        assert_eq!(v[1].witnesses, vec![first, second]);
    }

    #[test]
    fn definitive_failure_after_commit_is_reported() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        let ok = w.last_seq();
        let op = ClientOp::Checkout {
            event_id: "ev".into(),
            hold_token: t,
            seat_ids: vec!["A".into()],
            idempotency_key: "k".into(),
            admission: None,
        };
        let (_, fail) = w.client("u1", op, Err("hold-not-found"));
        let v = check_idempotency(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, key("k"));
        assert_eq!(v[0].witnesses, vec![ok, fail]);
        assert_eq!(v[0].detail, format!("answered order {o}, then a retry failed with hold-not-found"));
    }

    #[test]
    fn one_operation_charged_twice_is_reported() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        let first = w.charge(o);
        let op = w.order(o).payment_op_id;
        let second = w.record(crate::TraceKind::Payment(PaymentEvent::Charged {
            payment_op_id: op,
            amount_cents: 1_000,
            provider_payment_id: "again".into(),
        }));
        let v = check_idempotency(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, Subject::PaymentOp { payment_op_id: op });
        assert_eq!(v[0].witnesses, vec![first, second]);
        assert_eq!(v[0].detail, "charged 2 times");
    }
}
