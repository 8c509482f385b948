//! Orders and compensations move only along their own tables, written here
//! from the brief and independently of the booking code that makes the
//! moves: every record is created once in its first state, every change
//! starts where the previous one left it, and nothing leaves a final state.
//!
//! Orders: created `pending`; `pending -> reconciling` (answer lost);
//! `pending | reconciling -> confirmed` (charged and booked), `-> failed`
//! (declined), `-> released` (unresolved past the deadline, the decision
//! recorded); a charge that lands without a ticket (`released | failed ->
//! compensating`) ends `compensated` or `compensation_failed`, never hidden
//! as `failed`. `confirmed`, `compensated` and `compensation_failed` are final.
//!
//! Compensations: created `requested`; `requested -> in_flight` (an attempt
//! starts), `in_flight -> in_flight` (a takeover), `in_flight -> requested`
//! (the attempt failed; retry due), `requested | in_flight -> succeeded`
//! (the money went back; a provider's callback may say so between
//! attempts), `in_flight -> failed` (attempts exhausted). `succeeded` and
//! `failed` are final.

use crate::trace::TraceKind;
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::model::{CompensationId, CompensationStatus as C, OrderId, OrderStatus as O, Snapshot};
use std::collections::BTreeMap;
use std::fmt::Display;

/// The order transitions the brief allows: `(from, to)`.
pub const ORDER_TRANSITIONS: &[(O, O)] = &[
    (O::Pending, O::Reconciling),
    (O::Pending, O::Confirmed),
    (O::Pending, O::Failed),
    (O::Pending, O::Released),
    (O::Reconciling, O::Confirmed),
    (O::Reconciling, O::Failed),
    (O::Reconciling, O::Released),
    (O::Released, O::Compensating),
    (O::Failed, O::Compensating),
    (O::Compensating, O::Compensated),
    (O::Compensating, O::CompensationFailed),
];

/// The compensation transitions the brief allows: `(from, to)`.
pub const COMPENSATION_TRANSITIONS: &[(C, C)] = &[
    (C::Requested, C::InFlight),
    (C::InFlight, C::InFlight),
    (C::InFlight, C::Requested),
    (C::Requested, C::Succeeded),
    (C::InFlight, C::Succeeded),
    (C::InFlight, C::Failed),
];

/// One record's changes in trace order: (trace seq, from, to).
type Changes<I, S> = BTreeMap<I, Vec<(u64, Option<S>, S)>>;

/// Checks [`Invariant::OrderTransition`] and [`Invariant::CompensationTransition`].
pub fn check_record_transitions(_snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let mut orders: Changes<OrderId, O> = BTreeMap::new();
    let mut compensations: Changes<CompensationId, C> = BTreeMap::new();
    for e in trace {
        match &e.kind {
            TraceKind::OrderChange(c) => orders.entry(c.order_id).or_default().push((e.seq, c.from, c.to)),
            TraceKind::CompensationChange(c) => {
                compensations.entry(c.compensation_id).or_default().push((e.seq, c.from, c.to))
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let order = Table { invariant: Invariant::OrderTransition, first: O::Pending, allowed: ORDER_TRANSITIONS };
    for (id, changes) in &orders {
        out.extend(order.judge(changes, || Subject::Order { order_id: *id }));
    }
    let comp =
        Table { invariant: Invariant::CompensationTransition, first: C::Requested, allowed: COMPENSATION_TRANSITIONS };
    for (id, changes) in &compensations {
        out.extend(comp.judge(changes, || Subject::Compensation { compensation_id: *id }));
    }
    out
}

/// A record kind's transition table.
struct Table<S: 'static> {
    invariant: Invariant,
    /// The state a record is created in.
    first: S,
    allowed: &'static [(S, S)],
}

impl<S: Copy + PartialEq + Display> Table<S> {
    /// The violations in one record's `changes` (trace order).
    fn judge(&self, changes: &[(u64, Option<S>, S)], subject: impl Fn() -> Subject) -> Vec<Violation> {
        let mut out = Vec::new();
        let mut last: Option<(u64, S)> = None;
        for &(seq, from, to) in changes {
            let broken = |what: String, witnesses: Vec<u64>| Violation::new(self.invariant, subject(), what, witnesses);
            match (from, last) {
                (None, None) if to != self.first => {
                    out.push(broken(format!("created {to}, not {}", self.first), vec![seq]))
                }
                (None, None) => {}
                (None, Some((prev, _))) => out.push(broken(format!("created again as {to}"), vec![prev, seq])),
                (Some(f), None) => out.push(broken(format!("{f} -> {to} with no creation before it"), vec![seq])),
                (Some(f), Some((prev, was))) if f != was => out.push(broken(
                    format!("{f} -> {to} starts from {f}, but the last change left {was}: a change is missing"),
                    vec![prev, seq],
                )),
                (Some(f), Some(_)) if !self.allowed.contains(&(f, to)) => {
                    out.push(broken(format!("{f} -> {to} is not an allowed transition"), vec![seq]))
                }
                (Some(_), Some(_)) => {}
            }
            last = Some((seq, to));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge<S: Copy + PartialEq + Display>(t: &Table<S>, changes: &[(Option<S>, S)]) -> Vec<String> {
        let changes: Vec<(u64, Option<S>, S)> =
            changes.iter().enumerate().map(|(i, (f, to))| (i as u64, *f, *to)).collect();
        t.judge(&changes, || Subject::Order { order_id: OrderId::nil() }).into_iter().map(|v| v.detail).collect()
    }

    fn orders() -> Table<O> {
        Table { invariant: Invariant::OrderTransition, first: O::Pending, allowed: ORDER_TRANSITIONS }
    }

    fn compensations() -> Table<C> {
        Table { invariant: Invariant::CompensationTransition, first: C::Requested, allowed: COMPENSATION_TRANSITIONS }
    }

    #[test]
    fn every_order_row_allowed_and_refused() {
        for &from in O::ALL {
            for &to in O::ALL {
                let path: Vec<(Option<O>, O)> = match from {
                    O::Pending => vec![(None, O::Pending), (Some(O::Pending), to)],
                    _ => {
                        // Reach `from` along allowed moves first.
                        let to_from: Vec<O> = match from {
                            O::Reconciling => vec![O::Reconciling],
                            O::Confirmed => vec![O::Confirmed],
                            O::Failed => vec![O::Failed],
                            O::Released => vec![O::Released],
                            O::Compensating => vec![O::Released, O::Compensating],
                            O::Compensated => vec![O::Released, O::Compensating, O::Compensated],
                            O::CompensationFailed => vec![O::Released, O::Compensating, O::CompensationFailed],
                            O::Pending => unreachable!(),
                        };
                        let mut p = vec![(None, O::Pending)];
                        let mut at = O::Pending;
                        for s in to_from {
                            p.push((Some(at), s));
                            at = s;
                        }
                        p.push((Some(from), to));
                        p
                    }
                };
                let found = judge(&orders(), &path);
                if ORDER_TRANSITIONS.contains(&(from, to)) {
                    assert!(found.is_empty(), "{from} -> {to}: {found:?}");
                } else {
                    assert_eq!(found, [format!("{from} -> {to} is not an allowed transition")], "{from} -> {to}");
                }
            }
        }
    }

    #[test]
    fn every_compensation_row_allowed_and_refused() {
        for &from in C::ALL {
            for &to in C::ALL {
                let mut path = vec![(None, C::Requested)];
                match from {
                    C::Requested => {}
                    C::InFlight => path.push((Some(C::Requested), C::InFlight)),
                    C::Succeeded => path.push((Some(C::Requested), C::Succeeded)),
                    C::Failed => path.extend([(Some(C::Requested), C::InFlight), (Some(C::InFlight), C::Failed)]),
                }
                path.push((Some(from), to));
                let found = judge(&compensations(), &path);
                if COMPENSATION_TRANSITIONS.contains(&(from, to)) {
                    assert!(found.is_empty(), "{from} -> {to}: {found:?}");
                } else {
                    assert_eq!(found, [format!("{from} -> {to} is not an allowed transition")], "{from} -> {to}");
                }
            }
        }
    }

    #[test]
    fn a_record_is_created_once_in_its_first_state_and_no_change_is_missing() {
        assert_eq!(judge(&orders(), &[(None, O::Confirmed)]), ["created confirmed, not pending"]);
        assert_eq!(judge(&orders(), &[(None, O::Pending), (None, O::Pending)]), ["created again as pending"]);
        assert_eq!(
            judge(&orders(), &[(Some(O::Pending), O::Confirmed)]),
            ["pending -> confirmed with no creation before it"]
        );
        assert_eq!(
            judge(&orders(), &[(None, O::Pending), (Some(O::Reconciling), O::Confirmed)]),
            ["reconciling -> confirmed starts from reconciling, but the last change left pending: a change is missing"]
        );
        // The give-up that hides its order as a plain failure.
        let hidden = [(None, O::Pending), (Some(O::Pending), O::Released), (Some(O::Released), O::Compensating)];
        let mut gave_up = hidden.to_vec();
        gave_up.push((Some(O::Compensating), O::Failed));
        assert_eq!(judge(&orders(), &gave_up), ["compensating -> failed is not an allowed transition"]);
    }
}
