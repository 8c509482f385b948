//! The waiting room's promises, judged from the trace's room events (what
//! the shared rooms did) and the clients' operations:
//! - `admission-required`: a hold or checkout granted on a waiting-room
//!   event was invoked after its user's admission, before the session
//!   ended and before it expired (a purchase's own retried checkout aside:
//!   it passes on the session its purchase ended, past the expiry too);
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

use crate::model::admission::{Asked, granted_tier};
use crate::model::queue::Join;
use crate::trace::{ClientOp, RoomEvent, TraceKind, WorldFact};
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::admission::room::{Policy, SessionEnd};
use booking::model::{EventId, SessionId, Snapshot, UserId};
use std::collections::{BTreeMap, BTreeSet};

/// A room as opened.
struct Room {
    policy: Policy,
    target: u32,
    opens_at_ms: i64,
    ttl_ms: i64,
    seed: String,
    drawn: bool,
    /// Joins in arrival order: (user, tier, drawn at opening?, seq).
    joins: Vec<(UserId, u8, bool, u64)>,
    /// Admissions in order: (user, seq).
    admitted: Vec<(UserId, u64)>,
}

/// One admission: the session, when (sim ms), the trace seq.
#[derive(Clone, Copy)]
struct Admission {
    session_id: SessionId,
    at_ms: i64,
    seq: u64,
}

/// Checks the four waiting-room invariants. Subjects: the room (target,
/// order) or the waiting user (admission, liveness). One violation per
/// subject and invariant: the first.
pub fn check_waiting_room(_snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let mut w = Walk::default();
    for e in trace {
        match &e.kind {
            TraceKind::World(fact) => w.world(fact),
            TraceKind::Room(r) => w.room_event(e, r),
            TraceKind::Invoke { op_id, client, op, .. } => w.invoke(e, *op_id, client, op),
            TraceKind::Ok { op_id, .. } => w.granted(e, *op_id),
            _ => {}
        }
    }
    w.finish()
}

/// A hold or checkout on a waiting-room event, as invoked.
#[derive(Clone, Copy)]
struct Invoked<'a> {
    event_id: &'a str,
    user: &'a str,
    is_checkout: bool,
    at_ms: i64,
    seq: u64,
}

/// The walk over one trace: what the rooms did so far, and what was found.
#[derive(Default)]
struct Walk<'a> {
    /// The tiers the world's credentials grant (absent: the public).
    credentials: BTreeMap<&'a str, u8>,
    /// The rooms the world asked for: (policy, target, opening, session lifetime).
    asked: BTreeMap<&'a str, Asked>,
    rooms: BTreeMap<&'a str, Room>,
    admissions: BTreeMap<(&'a str, &'a str), Admission>,
    ended: BTreeMap<SessionId, (SessionEnd, u64)>,
    told: BTreeSet<(&'a str, &'a str)>,
    /// Open sessions per event: (sim expiry, session), for the target check.
    open: BTreeMap<&'a str, BTreeSet<(i64, SessionId)>>,
    invokes: BTreeMap<u64, Invoked<'a>>,
    reported: BTreeSet<(Invariant, String)>,
    out: Vec<Violation>,
}

impl<'a> Walk<'a> {
    /// Reports the first violation per (invariant, subject).
    fn report(&mut self, inv: Invariant, subject: Subject, detail: String, witnesses: Vec<u64>) {
        if self.reported.insert((inv, subject.to_string())) {
            self.out.push(Violation::new(inv, subject, detail, witnesses));
        }
    }

    /// What the world made: the truth the rooms are held to.
    fn world(&mut self, fact: &'a WorldFact) {
        match fact {
            WorldFact::Credential { user, tier } => {
                self.credentials.insert(user, *tier);
            }
            WorldFact::RoomAsked { event_id, policy, target_active_sessions, opens_at_ms, session_ttl_ms } => {
                self.asked.insert(event_id, (*policy, *target_active_sessions, *opens_at_ms, *session_ttl_ms));
            }
            WorldFact::Prober { .. } | WorldFact::Misuse { .. } | WorldFact::WebhookRefused { .. } => {}
        }
    }

    fn room_event(&mut self, e: &'a TraceEvent, r: &'a RoomEvent) {
        match r {
            RoomEvent::Opened { event_id, policy, target_active_sessions, opens_at_ms, session_ttl_ms, seed } => {
                let said = (*policy, *target_active_sessions, *opens_at_ms, *session_ttl_ms);
                let asked = self.asked.get(event_id.as_str()).copied().unwrap_or(said);
                if asked != said {
                    let subject = Subject::Room { event_id: event_id.clone() };
                    let detail = format!("{event_id}'s room opened as {said:?}; the world asked for {asked:?}");
                    self.report(Invariant::AdmissionOrder, subject, detail, vec![e.seq]);
                }
                let (policy, target, opens_at_ms, ttl_ms) = asked;
                let room = Room {
                    policy,
                    target,
                    opens_at_ms,
                    ttl_ms,
                    seed: seed.clone(),
                    drawn: false,
                    joins: Vec::new(),
                    admitted: Vec::new(),
                };
                self.rooms.insert(event_id, room);
            }
            RoomEvent::Joined { event_id, user, tier, now_ms } => self.joined(e, event_id, user, *tier, *now_ms),
            RoomEvent::Pass { event_id, now_ms, .. } => {
                if let Some(room) = self.rooms.get_mut(event_id.as_str()) {
                    room.drawn |= *now_ms >= room.opens_at_ms;
                }
            }
            RoomEvent::Admitted { event_id, user, session_id, .. } => self.admitted(e, event_id, user, *session_id),
            RoomEvent::Ended { event_id, user, session_id, how } => {
                self.ended.entry(*session_id).or_insert((*how, e.seq));
                if let Some(expiry) = self.expiry_of(event_id, user) {
                    self.open.entry(event_id).or_default().remove(&(expiry, *session_id));
                }
            }
            // A purchase undone (its order failed): the session is open, and counted, again.
            RoomEvent::Reopened { event_id, user, session_id } => {
                self.ended.remove(session_id);
                if let Some(expiry) = self.expiry_of(event_id, user).filter(|expiry| *expiry > e.at_ms)
                    && let Some(sessions) = self.open.get_mut(event_id.as_str())
                {
                    sessions.insert((expiry, *session_id));
                }
            }
            RoomEvent::Told { event_id, user, .. } => {
                self.told.insert((event_id, user));
            }
            RoomEvent::SoldOut { .. } | RoomEvent::LawRan { .. } | RoomEvent::LawLearnt { .. } => {}
        }
    }

    /// When `user`'s admission to `event_id` expires (sim ms), if both are known.
    fn expiry_of(&self, event_id: &EventId, user: &UserId) -> Option<i64> {
        let a = self.admissions.get(&(event_id.as_str(), user.as_str()))?;
        Some(a.at_ms + self.rooms.get(event_id.as_str())?.ttl_ms)
    }

    /// `user` joined `event_id`'s room in `tier` (the service's word):
    /// lined up in the tier the world's credential grants, which the
    /// service's must be.
    fn joined(&mut self, e: &'a TraceEvent, event_id: &'a EventId, user: &'a UserId, tier: u8, now_ms: i64) {
        let Some(room) = self.rooms.get_mut(event_id.as_str()) else { return };
        let granted = granted_tier(room.policy, self.credentials.get(user.as_str()).copied());
        // A join at or after opening draws a lottery first, then lines up after it.
        room.drawn |= now_ms >= room.opens_at_ms;
        let drawn_at_opening = room.policy == Policy::Lottery && !room.drawn;
        room.joins.push((user.clone(), granted, drawn_at_opening, e.seq));
        if tier != granted {
            let subject = Subject::Room { event_id: event_id.clone() };
            let detail =
                format!("{user} joined {event_id}'s line in tier {tier}; the world's credential grants {granted}");
            self.report(Invariant::AdmissionOrder, subject, detail, vec![e.seq]);
        }
    }

    fn admitted(&mut self, e: &TraceEvent, event_id: &'a str, user: &'a str, session_id: SessionId) {
        let Some(room) = self.rooms.get_mut(event_id) else { return };
        room.admitted.push((UserId::from(user), e.seq));
        let (target, ttl_ms) = (room.target, room.ttl_ms);
        self.admissions.insert((event_id, user), Admission { session_id, at_ms: e.at_ms, seq: e.seq });
        let sessions = self.open.entry(event_id).or_default();
        while sessions.first().is_some_and(|(expiry, _)| *expiry <= e.at_ms) {
            sessions.pop_first();
        }
        sessions.insert((e.at_ms + ttl_ms, session_id));
        let n = sessions.len();
        if n > target as usize {
            let detail = format!("{n} sessions open at once after admitting {user}; the target is {target}");
            self.report(
                Invariant::SessionsWithinTarget,
                Subject::Room { event_id: EventId::from(event_id) },
                detail,
                vec![e.seq],
            );
        }
    }

    fn invoke(&mut self, e: &TraceEvent, op_id: u64, client: &'a str, op: &'a ClientOp) {
        let (event_id, is_checkout) = match op {
            ClientOp::Hold { event_id, .. } => (event_id, false),
            ClientOp::Checkout { event_id, .. } => (event_id, true),
            _ => return,
        };
        if self.rooms.contains_key(event_id.as_str()) {
            let invoked = Invoked { event_id, user: client, is_checkout, at_ms: e.at_ms, seq: e.seq };
            self.invokes.insert(op_id, invoked);
        }
    }

    /// A hold or checkout on a room's event was granted: it needs an open, unexpired admission.
    fn granted(&mut self, e: &TraceEvent, op_id: u64) {
        let Some(&Invoked { event_id, user, is_checkout, at_ms, seq }) = self.invokes.get(&op_id) else { return };
        let ttl_ms = self.rooms[event_id].ttl_ms;
        let subject = Subject::Waiting { event_id: EventId::from(event_id), user: UserId::from(user) };
        let what = if is_checkout { "checkout" } else { "hold" };
        let Some(a) = self.admissions.get(&(event_id, user)).filter(|a| a.seq < seq).copied() else {
            let detail = format!("a {what} was granted to {user}, who had not been admitted");
            return self.report(Invariant::AdmissionRequired, subject, detail, vec![seq, e.seq]);
        };
        // A purchase's own retried checkout passes on its ended session, past the expiry too.
        let purchase_retry = is_checkout
            && self
                .ended
                .get(&a.session_id)
                .is_some_and(|&(how, end_seq)| end_seq < seq && matches!(how, SessionEnd::Purchased { .. }));
        if at_ms >= a.at_ms + ttl_ms && !purchase_retry {
            let detail = format!("a {what} invoked after {user}'s admission expired was granted");
            return self.report(Invariant::AdmissionRequired, subject, detail, vec![a.seq, seq, e.seq]);
        }
        if let Some(&(how, end_seq)) = self.ended.get(&a.session_id)
            && end_seq < seq
            && !purchase_retry
        {
            let detail = format!("a {what} invoked after {user}'s session ended ({how:?}) was granted");
            self.report(Invariant::AdmissionRequired, subject, detail, vec![end_seq, seq, e.seq]);
        }
    }

    /// The order and liveness findings, once the whole trace was read.
    fn finish(mut self) -> Vec<Violation> {
        let rooms = std::mem::take(&mut self.rooms);
        for (event_id, room) in &rooms {
            let expected = policy_order(room);
            let first_wrong = room.admitted.iter().enumerate().find(|(i, (user, _))| expected.get(*i) != Some(user));
            if let Some((i, (user, seq))) = first_wrong {
                let want = expected.get(i).map_or("nobody", UserId::as_str);
                let detail = format!(
                    "admission #{} went to {user}; the {:?} policy's order has {want} there",
                    i + 1,
                    room.policy
                );
                self.report(
                    Invariant::AdmissionOrder,
                    Subject::Room { event_id: EventId::from(*event_id) },
                    detail,
                    vec![*seq],
                );
            }
            for (user, _, _, seq) in &room.joins {
                if !self.told.contains(&(event_id, user.as_str())) {
                    let subject = Subject::Waiting { event_id: EventId::from(*event_id), user: user.clone() };
                    let detail =
                        format!("{user} joined and was never told they were admitted or that the event sold out");
                    self.report(Invariant::QueueLiveness, subject, detail, vec![*seq]);
                }
            }
        }
        self.out
    }
}

/// The order the room's policy admits its joiners in (the model's statement of the rule).
fn policy_order(room: &Room) -> Vec<UserId> {
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
    use booking::admission::waiting_room::PUBLIC_TIER;
    use booking::model::OrderId;

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

    fn joined(w: &mut World, user: &UserId, tier: u8, now_ms: i64) {
        w.record(TraceKind::Room(RoomEvent::Joined { event_id: "ev".into(), user: user.clone(), tier, now_ms }));
    }

    fn admitted(w: &mut World, user: &UserId) -> SessionId {
        let session_id = SessionId::from_u128(user.bytes().map(u128::from).sum());
        w.record(TraceKind::Room(RoomEvent::Admitted {
            event_id: "ev".into(),
            user: user.clone(),
            session_id,
            expires_at_ms: 0,
        }));
        w.record(TraceKind::Room(RoomEvent::Told { event_id: "ev".into(), user: user.clone(), admitted: true }));
        session_id
    }

    fn kinds(w: &World) -> Vec<Invariant> {
        check_waiting_room(&w.snap, w.trace.events(), &w.config()).into_iter().map(|v| v.invariant).collect()
    }

    #[test]
    fn an_orderly_room_passes() {
        let mut w = World::new(&["1A", "1B"]);
        opened(&mut w, Policy::Fifo, 2);
        joined(&mut w, &"ann".into(), 0, 0);
        joined(&mut w, &"bob".into(), 0, 0);
        admitted(&mut w, &"ann".into());
        w.hold("ann", &["1A"], 5_000);
        admitted(&mut w, &"bob".into());
        w.hold("bob", &["1B"], 5_000);
        assert_eq!(kinds(&w), vec![]);
    }

    #[test]
    fn a_hold_without_admission_a_room_overfilled_and_the_wrong_order_are_caught() {
        let mut w = World::new(&["1A", "1B"]);
        opened(&mut w, Policy::Fifo, 1);
        joined(&mut w, &"ann".into(), 0, 0);
        joined(&mut w, &"bob".into(), 0, 0);
        w.hold("cat", &["1A"], 5_000);
        admitted(&mut w, &"bob".into());
        admitted(&mut w, &"ann".into());
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
        joined(&mut w, &"ann".into(), 0, 0);
        joined(&mut w, &"bob".into(), 0, 0);
        joined(&mut w, &"cat".into(), 0, 0);
        let s = admitted(&mut w, &"ann".into());
        w.record(TraceKind::Room(RoomEvent::Ended {
            event_id: "ev".into(),
            user: "ann".into(),
            session_id: s,
            how: SessionEnd::Purchased { order_id: OrderId::from_u128(1), key_id: uuid::Uuid::from_u128(2) },
        }));
        w.hold("ann", &["1A"], 5_000);
        admitted(&mut w, &"bob".into());
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
            joined(&mut w, &u.into(), 0, 0);
        }
        joined(&mut w, &"late".into(), 0, 2_000);
        // The production draw agrees with the checker's own.
        let drawn = booking::admission::queue::lottery_order(&[9u8; 32], &users.map(UserId::from));
        assert_eq!(drawn, crate::model::queue::drawn_order(&[9u8; 32], &users.map(UserId::from)));
        for u in &drawn {
            admitted(&mut w, u);
        }
        admitted(&mut w, &"late".into());
        assert_eq!(kinds(&w), vec![]);
        let mut w = World::new(&["1A"]);
        opened(&mut w, Policy::Lottery, 10);
        for u in users {
            joined(&mut w, &u.into(), 0, 0);
        }
        for u in users {
            admitted(&mut w, &u.into());
        }
        assert_eq!(kinds(&w), vec![Invariant::AdmissionOrder], "arrival order is not the draw");
        let member = |w: &mut World| {
            let fact = WorldFact::Credential { user: "member".into(), tier: 0 };
            w.record(TraceKind::World(fact));
        };
        let mut w = World::new(&["1A"]);
        member(&mut w);
        opened(&mut w, Policy::Priority, 10);
        joined(&mut w, &"public".into(), PUBLIC_TIER, 0);
        joined(&mut w, &"member".into(), 0, 0);
        admitted(&mut w, &"member".into());
        admitted(&mut w, &"public".into());
        assert_eq!(kinds(&w), vec![]);
        // The service lines the member up as the public and admits in that
        // order: consistent with its own word, wrong by the world's credential.
        let mut w = World::new(&["1A"]);
        member(&mut w);
        opened(&mut w, Policy::Priority, 10);
        joined(&mut w, &"public".into(), PUBLIC_TIER, 0);
        joined(&mut w, &"member".into(), PUBLIC_TIER, 0);
        admitted(&mut w, &"public".into());
        admitted(&mut w, &"member".into());
        assert_eq!(kinds(&w), vec![Invariant::AdmissionOrder], "the tier is the credential's");
        // A tier the service grants with no credential behind it.
        let mut w = World::new(&["1A"]);
        opened(&mut w, Policy::Priority, 10);
        joined(&mut w, &"public".into(), PUBLIC_TIER, 0);
        joined(&mut w, &"member".into(), 0, 0);
        admitted(&mut w, &"member".into());
        admitted(&mut w, &"public".into());
        assert_eq!(kinds(&w), vec![Invariant::AdmissionOrder], "no credential, no tier");
    }
}
