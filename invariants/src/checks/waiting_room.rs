//! The waiting room's promises, judged from the trace's room events (what
//! the shared rooms did) and the clients' operations:
//! - `admission-required`: a hold or checkout granted on a waiting-room
//!   event was invoked after its user's admission, before the session
//!   ended (a purchase's own retried checkout aside) and before it expired;
//! - `sessions-within-target`: sessions open at once (admitted, not ended,
//!   not expired) never exceed the room's target;
//! - `admission-order`: the admissions, in order, are a prefix of the order
//!   the policy dictates: arrival order; the lottery's draw, recomputed from
//!   its seed over the joiners before the draw, then arrival order; tiers
//!   (0 first), arrival order within a tier;
//! - `queue-liveness`: every user who joined was told they were admitted,
//!   or that the event sold out, by the end of the run.
//!
//! Times: a session's expiry is judged in simulated time as its admission's
//! `at_ms` plus the room's session lifetime (the service clock's expiry
//! falls at the same moment: the pass admits at its own `now`).

use crate::model::queue::Join;
use crate::trace::{ClientOp, RoomEvent, TraceKind};
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::admission::room::{Policy, SessionEnd};
use booking::model::Snapshot;
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

/// A room as opened.
struct Room {
    policy: Policy,
    target: u32,
    opens_at_ms: i64,
    ttl_ms: i64,
    seed: String,
    drawn: bool,
    /// Joins in arrival order: (user, tier, drawn at opening?, seq).
    joins: Vec<(String, u8, bool, u64)>,
    /// Admissions in order: (user, seq).
    admitted: Vec<(String, u64)>,
}

/// One admission: the session, when (sim ms), the trace seq.
#[derive(Clone, Copy)]
struct Admission {
    session_id: Uuid,
    at_ms: i64,
    seq: u64,
}

/// Checks the four waiting-room invariants. Subjects: the room (target,
/// order) or the waiting user (admission, liveness). One violation per
/// subject and invariant: the first.
pub fn check_waiting_room(_snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let mut rooms: BTreeMap<&str, Room> = BTreeMap::new();
    let mut admissions: BTreeMap<(&str, &str), Admission> = BTreeMap::new();
    let mut ended: BTreeMap<Uuid, (SessionEnd, u64)> = BTreeMap::new();
    let mut told: BTreeSet<(&str, &str)> = BTreeSet::new();
    // Open sessions per event: (sim expiry, session) -> (), for the target check.
    let mut open: BTreeMap<&str, BTreeSet<(i64, Uuid)>> = BTreeMap::new();
    let mut invokes: BTreeMap<u64, (&str, &str, bool, i64, u64)> = BTreeMap::new();
    let mut reported: BTreeSet<(Invariant, String)> = BTreeSet::new();
    let mut out = Vec::new();
    let mut report = |out: &mut Vec<Violation>, inv: Invariant, subject: Subject, detail: String, w: Vec<u64>| {
        if reported.insert((inv, subject.to_string())) {
            out.push(Violation::new(inv, subject, detail, w));
        }
    };
    for e in trace {
        match &e.kind {
            TraceKind::Room(RoomEvent::Opened {
                event_id,
                policy,
                target_active_sessions,
                opens_at_ms,
                session_ttl_ms,
                seed,
            }) => {
                rooms.insert(
                    event_id,
                    Room {
                        policy: *policy,
                        target: *target_active_sessions,
                        opens_at_ms: *opens_at_ms,
                        ttl_ms: *session_ttl_ms,
                        seed: seed.clone(),
                        drawn: false,
                        joins: Vec::new(),
                        admitted: Vec::new(),
                    },
                );
            }
            TraceKind::Room(RoomEvent::Joined { event_id, user, tier, now_ms }) => {
                if let Some(room) = rooms.get_mut(event_id.as_str()) {
                    // A join at or after opening draws a lottery first, then lines up after it.
                    room.drawn |= *now_ms >= room.opens_at_ms;
                    let drawn_at_opening = room.policy == Policy::Lottery && !room.drawn;
                    room.joins.push((user.clone(), *tier, drawn_at_opening, e.seq));
                }
            }
            TraceKind::Room(RoomEvent::Pass { event_id, now_ms, .. }) => {
                if let Some(room) = rooms.get_mut(event_id.as_str()) {
                    room.drawn |= *now_ms >= room.opens_at_ms;
                }
            }
            TraceKind::Room(RoomEvent::Admitted { event_id, user, session_id, .. }) => {
                let Some(room) = rooms.get_mut(event_id.as_str()) else { continue };
                room.admitted.push((user.clone(), e.seq));
                admissions.insert((event_id, user), Admission { session_id: *session_id, at_ms: e.at_ms, seq: e.seq });
                let sessions = open.entry(event_id).or_default();
                while sessions.first().is_some_and(|(expiry, _)| *expiry <= e.at_ms) {
                    sessions.pop_first();
                }
                sessions.insert((e.at_ms + room.ttl_ms, *session_id));
                if sessions.len() > room.target as usize {
                    report(
                        &mut out,
                        Invariant::SessionsWithinTarget,
                        Subject::Room { event_id: event_id.clone() },
                        format!(
                            "{} sessions open at once after admitting {user}; the target is {}",
                            sessions.len(),
                            room.target
                        ),
                        vec![e.seq],
                    );
                }
            }
            TraceKind::Room(RoomEvent::Ended { event_id, user, session_id, how }) => {
                ended.entry(*session_id).or_insert((*how, e.seq));
                if let (Some(sessions), Some(a)) =
                    (open.get_mut(event_id.as_str()), admissions.get(&(event_id.as_str(), user.as_str())))
                    && let Some(room) = rooms.get(event_id.as_str())
                {
                    sessions.remove(&(a.at_ms + room.ttl_ms, *session_id));
                }
            }
            // A purchase undone (its order failed): the session is open, and counted, again.
            TraceKind::Room(RoomEvent::Reopened { event_id, user, session_id }) => {
                ended.remove(session_id);
                if let (Some(sessions), Some(a)) =
                    (open.get_mut(event_id.as_str()), admissions.get(&(event_id.as_str(), user.as_str())))
                    && let Some(room) = rooms.get(event_id.as_str())
                    && a.at_ms + room.ttl_ms > e.at_ms
                {
                    sessions.insert((a.at_ms + room.ttl_ms, *session_id));
                }
            }
            TraceKind::Room(RoomEvent::Told { event_id, user, .. }) => {
                told.insert((event_id, user));
            }
            TraceKind::Room(RoomEvent::SoldOut { .. }) => {}
            TraceKind::Invoke { op_id, client, op, .. } => {
                let (event_id, is_checkout) = match op {
                    ClientOp::Hold { event_id, .. } => (event_id, false),
                    ClientOp::Checkout { event_id, .. } => (event_id, true),
                    _ => continue,
                };
                if rooms.contains_key(event_id.as_str()) {
                    invokes.insert(*op_id, (event_id, client, is_checkout, e.at_ms, e.seq));
                }
            }
            TraceKind::Ok { op_id, .. } => {
                let Some(&(event_id, user, is_checkout, invoked_ms, invoked_seq)) = invokes.get(op_id) else {
                    continue;
                };
                let room = &rooms[event_id];
                let subject = Subject::Waiting { event_id: event_id.to_string(), user: user.to_string() };
                let what = if is_checkout { "checkout" } else { "hold" };
                let Some(a) = admissions.get(&(event_id, user)).filter(|a| a.seq < invoked_seq) else {
                    let detail = format!("a {what} was granted to {user}, who had not been admitted");
                    report(&mut out, Invariant::AdmissionRequired, subject, detail, vec![invoked_seq, e.seq]);
                    continue;
                };
                if invoked_ms >= a.at_ms + room.ttl_ms {
                    let detail = format!("a {what} invoked after {user}'s admission expired was granted");
                    report(&mut out, Invariant::AdmissionRequired, subject, detail, vec![a.seq, invoked_seq, e.seq]);
                    continue;
                }
                if let Some(&(how, end_seq)) = ended.get(&a.session_id)
                    && end_seq < invoked_seq
                    && !(is_checkout && matches!(how, SessionEnd::Purchased { .. }))
                {
                    let detail = format!("a {what} invoked after {user}'s session ended ({how:?}) was granted");
                    report(&mut out, Invariant::AdmissionRequired, subject, detail, vec![end_seq, invoked_seq, e.seq]);
                }
            }
            _ => {}
        }
    }
    for (event_id, room) in &rooms {
        let expected = policy_order(room);
        for (i, (user, seq)) in room.admitted.iter().enumerate() {
            if expected.get(i) != Some(user) {
                let want = expected.get(i).map_or("nobody", String::as_str);
                report(
                    &mut out,
                    Invariant::AdmissionOrder,
                    Subject::Room { event_id: event_id.to_string() },
                    format!(
                        "admission #{} went to {user}; the {:?} policy's order has {want} there",
                        i + 1,
                        room.policy
                    ),
                    vec![*seq],
                );
                break;
            }
        }
        for (user, _, _, seq) in &room.joins {
            if !told.contains(&(event_id, user.as_str())) {
                report(
                    &mut out,
                    Invariant::QueueLiveness,
                    Subject::Waiting { event_id: event_id.to_string(), user: user.clone() },
                    format!("{user} joined and was never told they were admitted or that the event sold out"),
                    vec![*seq],
                );
            }
        }
    }
    out
}

/// The order the room's policy admits its joiners in (the model's statement of the rule).
fn policy_order(room: &Room) -> Vec<String> {
    let joins: Vec<Join> = room
        .joins
        .iter()
        .map(|(user, tier, before_draw, _)| Join { user: user.clone(), tier: *tier, before_draw: *before_draw })
        .collect();
    crate::model::queue::policy_order(room.policy, &room.seed, &joins)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;

    const TTL_MS: i64 = 10_000;

    fn opened(w: &mut World, policy: Policy, target: u32) {
        w.record(TraceKind::Room(RoomEvent::Opened {
            event_id: "ev".into(),
            policy,
            target_active_sessions: target,
            opens_at_ms: 1_000,
            session_ttl_ms: TTL_MS,
            seed: hex::encode([9u8; 32]),
        }));
    }

    fn joined(w: &mut World, user: &str, tier: u8, now_ms: i64) {
        w.record(TraceKind::Room(RoomEvent::Joined { event_id: "ev".into(), user: user.into(), tier, now_ms }));
    }

    fn admitted(w: &mut World, user: &str) -> Uuid {
        let session_id = Uuid::from_u128(user.bytes().map(u128::from).sum());
        w.record(TraceKind::Room(RoomEvent::Admitted {
            event_id: "ev".into(),
            user: user.into(),
            session_id,
            expires_at_ms: 0,
        }));
        w.record(TraceKind::Room(RoomEvent::Told { event_id: "ev".into(), user: user.into(), admitted: true }));
        session_id
    }

    fn kinds(w: &World) -> Vec<Invariant> {
        check_waiting_room(&w.snap, w.trace.events(), &w.config()).into_iter().map(|v| v.invariant).collect()
    }

    #[test]
    fn an_orderly_room_passes() {
        let mut w = World::new(&["1A", "1B"]);
        opened(&mut w, Policy::Fifo, 2);
        joined(&mut w, "ann", 0, 0);
        joined(&mut w, "bob", 0, 0);
        admitted(&mut w, "ann");
        w.hold("ann", &["1A"], 5_000);
        admitted(&mut w, "bob");
        w.hold("bob", &["1B"], 5_000);
        assert_eq!(kinds(&w), vec![]);
    }

    #[test]
    fn a_hold_without_admission_a_room_overfilled_and_the_wrong_order_are_caught() {
        let mut w = World::new(&["1A", "1B"]);
        opened(&mut w, Policy::Fifo, 1);
        joined(&mut w, "ann", 0, 0);
        joined(&mut w, "bob", 0, 0);
        w.hold("cat", &["1A"], 5_000);
        admitted(&mut w, "bob");
        admitted(&mut w, "ann");
        let mut found = kinds(&w);
        found.sort_by_key(|i| i.as_str());
        assert_eq!(
            found,
            vec![Invariant::AdmissionOrder, Invariant::AdmissionRequired, Invariant::SessionsWithinTarget]
        );
    }

    #[test]
    fn holds_after_a_session_ended_or_expired_are_caught_and_waiters_must_be_told() {
        let mut w = World::new(&["1A", "1B"]);
        opened(&mut w, Policy::Fifo, 5);
        joined(&mut w, "ann", 0, 0);
        joined(&mut w, "bob", 0, 0);
        joined(&mut w, "cat", 0, 0);
        let s = admitted(&mut w, "ann");
        w.record(TraceKind::Room(RoomEvent::Ended {
            event_id: "ev".into(),
            user: "ann".into(),
            session_id: s,
            how: SessionEnd::Purchased { order_id: Uuid::from_u128(1), key_id: Uuid::from_u128(2) },
        }));
        w.hold("ann", &["1A"], 5_000);
        admitted(&mut w, "bob");
        w.advance(TTL_MS);
        w.hold("bob", &["1B"], 5_000);
        let v = check_waiting_room(&w.snap, w.trace.events(), &w.config());
        let details: Vec<_> = v.iter().map(|v| (v.invariant, v.detail.clone())).collect();
        assert_eq!(v.len(), 3, "{details:?}");
        assert!(details.iter().any(|(i, d)| *i == Invariant::AdmissionRequired && d.contains("ended")));
        assert!(details.iter().any(|(i, d)| *i == Invariant::AdmissionRequired && d.contains("expired")));
        assert!(details.iter().any(|(i, d)| *i == Invariant::QueueLiveness && d.contains("cat")));
    }

    #[test]
    fn lottery_and_priority_orders_are_recomputed() {
        let users = ["u1", "u2", "u3", "u4"];
        let mut w = World::new(&["1A"]);
        opened(&mut w, Policy::Lottery, 10);
        for u in users {
            joined(&mut w, u, 0, 0);
        }
        joined(&mut w, "late", 0, 2_000);
        // The production draw agrees with the checker's own.
        let drawn = booking::admission::queue::lottery_order(&[9u8; 32], &users.map(String::from));
        assert_eq!(drawn, crate::model::queue::drawn_order(&[9u8; 32], &users.map(String::from)));
        for u in &drawn {
            admitted(&mut w, u);
        }
        admitted(&mut w, "late");
        assert_eq!(kinds(&w), vec![]);
        let mut w = World::new(&["1A"]);
        opened(&mut w, Policy::Lottery, 10);
        for u in users {
            joined(&mut w, u, 0, 0);
        }
        for u in users {
            admitted(&mut w, u);
        }
        assert_eq!(kinds(&w), vec![Invariant::AdmissionOrder], "arrival order is not the draw");
        let mut w = World::new(&["1A"]);
        opened(&mut w, Policy::Priority, 10);
        joined(&mut w, "public", 7, 0);
        joined(&mut w, "member", 0, 0);
        admitted(&mut w, "member");
        admitted(&mut w, "public");
        assert_eq!(kinds(&w), vec![]);
    }
}
