//! Hold all or nothing: a multi-seat hold grants exactly the seats requested,
//! or none of them (a refusal). Judged twice for every client hold answered
//! `held`:
//!
//! - client side: the seats the answer names equal the seats the request
//!   asked for (compared as sets: sorted, duplicates removed);
//! - store side: the seats the store wrote with cause `hold` carrying the
//!   answer's new token and deadline equal the seats the request asked for.
//!
//! The store side is judged only when the client side agrees, so one wrong
//! grant is reported once.

use super::index::seat_changes;
use crate::trace::{ChangeCause, ClientOp, OpId, OpResult};
use crate::{Config, Invariant, Subject, TraceEvent, TraceKind, Violation};
use booking::model::{EventId, HoldToken, SeatId, Snapshot};
use std::collections::{BTreeMap, BTreeSet};

/// A hold request: its invoke seq, event and requested seats (as a set).
struct Request {
    invoke_seq: u64,
    event_id: EventId,
    seats: BTreeSet<SeatId>,
}

/// The first seat in `asked` but not in `got`, else the first in `got` but not in `asked`.
fn first_difference<'a>(asked: &'a BTreeSet<SeatId>, got: &'a BTreeSet<SeatId>) -> Option<(&'a SeatId, bool)> {
    asked.difference(got).next().map(|s| (s, true)).or_else(|| got.difference(asked).next().map(|s| (s, false)))
}

fn list(seats: &BTreeSet<SeatId>) -> String {
    let v: Vec<&str> = seats.iter().map(SeatId::as_str).collect();
    format!("[{}]", v.join(", "))
}

/// Checks [`Invariant::HoldAllOrNothing`]. Subject: the first seat missing
/// from the grant (else the first extra one). Witnesses: the hold's invoke
/// and its ok answer, plus (store side) the write of an extra seat.
pub fn check_hold_selection(_snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    // Store side: seats written by cause `hold`, by (new token, deadline).
    let mut written: BTreeMap<(HoldToken, i64), BTreeMap<(EventId, SeatId), u64>> = BTreeMap::new();
    for changes in seat_changes(trace).values() {
        for (seq, c) in changes {
            if c.cause != ChangeCause::Hold {
                continue;
            }
            if let (Some(token), Some(deadline)) = (c.after.hold_token, c.after.hold_expires_at_ms) {
                written.entry((token, deadline)).or_default().entry(c.seat_key()).or_insert(*seq);
            }
        }
    }

    let mut requests: BTreeMap<OpId, Request> = BTreeMap::new();
    let mut out = Vec::new();
    for e in trace {
        match &e.kind {
            TraceKind::Invoke { op_id, op: ClientOp::Hold { event_id, seat_ids, .. }, .. } => {
                let seats = seat_ids.iter().cloned().collect();
                requests.insert(*op_id, Request { invoke_seq: e.seq, event_id: event_id.clone(), seats });
            }
            TraceKind::Ok { op_id, result: OpResult::Held { hold_token, seat_ids, expires_at_ms }, .. } => {
                let Some(req) = requests.get(op_id) else { continue };
                let granted: BTreeSet<SeatId> = seat_ids.iter().cloned().collect();
                if let Some((seat, missing)) = first_difference(&req.seats, &granted) {
                    let what = if missing { "missing" } else { "not asked for" };
                    out.push(Violation::new(
                        Invariant::HoldAllOrNothing,
                        Subject::seat(&req.event_id, seat),
                        format!(
                            "hold asked for {} and was granted {} (seat {seat} {what})",
                            list(&req.seats),
                            list(&granted)
                        ),
                        vec![req.invoke_seq, e.seq],
                    ));
                    continue;
                }
                let Some(by_seat) = written.get(&(*hold_token, *expires_at_ms)) else { continue };
                let stored: BTreeSet<SeatId> =
                    by_seat.keys().filter(|(ev, _)| *ev == req.event_id).map(|(_, s)| s.clone()).collect();
                if let Some((seat, missing)) = first_difference(&req.seats, &stored) {
                    let mut witnesses = vec![req.invoke_seq, e.seq];
                    let what = if missing {
                        "never written"
                    } else {
                        witnesses.extend(by_seat.get(&(req.event_id.clone(), seat.clone())));
                        "written but not asked for"
                    };
                    out.push(Violation::new(
                        Invariant::HoldAllOrNothing,
                        Subject::seat(&req.event_id, seat),
                        format!(
                            "hold asked for {} but the store held {} under token {hold_token} (seat {seat} {what})",
                            list(&req.seats),
                            list(&stored)
                        ),
                        witnesses,
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;
    use crate::trace::Authority;
    use booking::model::SeatState;

    #[test]
    fn holds_granted_as_asked_are_clean() {
        let mut w = World::new(&["1A", "1B", "2A", "2B"]);
        let t = w.hold("alice", &["1A", "1B"], 5_000);
        w.hold_refused("bob", &["1B", "2A"]);
        w.hold("carol", &["2B", "2A"], 5_000);
        let o = w.checkout("alice", t, "k", 10_000);
        w.charge(o);
        assert_eq!(check_hold_selection(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    /// The store grants part of a selection and says so.
    #[test]
    fn partial_grant_in_the_answer_is_reported() {
        let mut w = World::new(&["1A", "1B"]);
        let (invoke, ok, _) = w.hold_answered("alice", &["1A", "1B"], &["1A"], 5_000);
        let v = check_hold_selection(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::HoldAllOrNothing);
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"1B".into()));
        assert_eq!(v[0].witnesses, vec![invoke, ok]);
        assert_eq!(v[0].detail, "hold asked for [1A, 1B] and was granted [1A] (seat 1B missing)");
    }

    /// The answer names the selection, but the store held only part of it.
    #[test]
    fn partial_grant_in_the_store_is_reported() {
        let mut w = World::new(&["1A", "1B"]);
        let (invoke, ok, _) = w.hold_answered("alice", &["1A", "1B"], &["1A"], 5_000);
        // Tamper with the answer: it claims both seats.
        let (ok_pos, _) = w.trace.events().iter().enumerate().find(|(_, e)| e.seq == ok).unwrap();
        let mut events = w.trace.events().to_vec();
        if let TraceKind::Ok { result: OpResult::Held { seat_ids, .. }, .. } = &mut events[ok_pos].kind {
            seat_ids.push("1B".into());
        }
        let v = check_hold_selection(&w.snap, &events, &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"1B".into()));
        assert_eq!(v[0].witnesses, vec![invoke, ok]);
        assert!(v[0].detail.contains("the store held [1A]"), "{}", v[0].detail);
    }

    /// The store held a seat nobody asked for under the grant's token.
    #[test]
    fn extra_seat_held_by_the_store_is_reported() {
        let mut w = World::new(&["1A", "1B"]);
        let (token, expires) = (HoldToken::from(w.uuid()), w.now_ms + 5_000);
        let extra = w.change_seat("1B", ChangeCause::Hold, Authority::new_hold(&"alice".into()), |s| {
            s.state = SeatState::Held;
            s.hold_token = Some(token);
            s.holder_id = Some("alice".into());
            s.hold_expires_at_ms = Some(expires);
        });
        w.change_seat("1A", ChangeCause::Hold, Authority::new_hold(&"alice".into()), |s| {
            s.state = SeatState::Held;
            s.hold_token = Some(token);
            s.holder_id = Some("alice".into());
            s.hold_expires_at_ms = Some(expires);
        });
        let op = ClientOp::Hold { event_id: "ev".into(), seat_ids: vec!["1A".into()], admission: None };
        let res = OpResult::Held { hold_token: token, seat_ids: vec!["1A".into()], expires_at_ms: expires };
        let (invoke, ok) = w.client("alice", op, Ok(res));
        let v = check_hold_selection(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"1B".into()));
        assert_eq!(v[0].witnesses, vec![extra, invoke, ok]);
        assert!(v[0].detail.ends_with("(seat 1B written but not asked for)"), "{}", v[0].detail);
    }

    /// Duplicates and order in the request do not matter.
    #[test]
    fn requests_compare_as_sets() {
        let mut w = World::new(&["1A", "1B"]);
        w.hold_answered("alice", &["1B", "1A", "1B"], &["1A", "1B"], 5_000);
        assert_eq!(check_hold_selection(&w.snap, w.trace.events(), &w.config()), vec![]);
    }
}
