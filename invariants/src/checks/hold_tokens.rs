//! Fresh hold tokens: every hold grant carries a token never issued before,
//! so that a token names one grant and a stale holder can never present a
//! token that is current again. Judged on the store's writes and on the
//! answers clients got:
//!
//! - a write with cause `hold` whose new token equals the token the seat had
//!   before (a takeover that kept the previous holder's token);
//! - a write with cause `hold` whose token appeared in an earlier seat write
//!   that was not part of the same grant. One grant's writes share the cause
//!   `hold`, the store's clock and the holder, and no write of another cause
//!   with that token comes between them;
//! - two ok `held` answers to different operations naming the same token.

use crate::trace::{ChangeCause, ClientOp, OpId, OpResult, SeatChange};
use crate::{Config, Invariant, Subject, TraceEvent, TraceKind, Violation};
use booking::model::{EventId, HoldToken, Snapshot, UserId};
use std::collections::BTreeMap;

/// A token's first grant as the store wrote it.
struct Grant {
    /// The seq of the token's first appearance.
    first_seq: u64,
    store_now_ms: i64,
    holder: Option<UserId>,
    /// False once a write of another cause used the token: the grant is over.
    open: bool,
}

/// Checks [`Invariant::FreshHoldToken`]. Subject: the seat written (store
/// side) or the first seat of the second answer (client side). Witnesses:
/// the token's first appearance and its reuse.
pub fn check_hold_tokens(_snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let mut grants: BTreeMap<HoldToken, Grant> = BTreeMap::new();
    let mut hold_events: BTreeMap<OpId, EventId> = BTreeMap::new();
    let mut answered: BTreeMap<HoldToken, (OpId, u64)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in trace {
        match &e.kind {
            TraceKind::SeatChange(c) if c.cause == ChangeCause::Hold => {
                out.extend(judge_hold_write(&mut grants, e.seq, c))
            }
            TraceKind::SeatChange(c) => {
                for token in [c.before.hold_token, c.after.hold_token].into_iter().flatten() {
                    if let Some(g) = grants.get_mut(&token) {
                        g.open = false;
                    }
                }
                // A write of another cause may show a token no hold issued: it counts as issued.
                if let Some(token) = c.after.hold_token {
                    grants.entry(token).or_insert(Grant {
                        first_seq: e.seq,
                        store_now_ms: c.store_now_ms,
                        holder: c.after.holder_id.clone(),
                        open: false,
                    });
                }
            }
            TraceKind::Invoke { op_id, op: ClientOp::Hold { event_id, .. }, .. } => {
                hold_events.insert(*op_id, event_id.clone());
            }
            TraceKind::Ok { op_id, result: OpResult::Held { hold_token, seat_ids, .. }, .. } => {
                match answered.get(hold_token) {
                    None => {
                        answered.insert(*hold_token, (*op_id, e.seq));
                    }
                    Some((first_op, _)) if first_op == op_id => {}
                    Some((first_op, first_seq)) => {
                        let event_id = hold_events.get(op_id).cloned().unwrap_or_default();
                        let seat_id = seat_ids.first().cloned().unwrap_or_default();
                        out.push(Violation::new(
                            Invariant::FreshHoldToken,
                            Subject::seat(&event_id, &seat_id),
                            format!("holds {first_op} and {op_id} were both granted token {hold_token}"),
                            vec![*first_seq, e.seq],
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A hold's write `c` (trace seq `seq`): its token must be new, unless it
/// is the same grant writing its other seats (same moment, same holder).
fn judge_hold_write(grants: &mut BTreeMap<HoldToken, Grant>, seq: u64, c: &SeatChange) -> Option<Violation> {
    let token = c.after.hold_token?;
    let subject = Subject::seat(&c.event_id, &c.seat_id);
    if c.before.hold_token == Some(token) {
        let mut witnesses = vec![seq];
        witnesses.extend(grants.get(&token).map(|g| g.first_seq));
        let detail = format!("hold by {:?} kept the seat's previous token {token}", c.authority.holder);
        return Some(Violation::new(Invariant::FreshHoldToken, subject, detail, witnesses));
    }
    match grants.get(&token) {
        None => {
            let holder = c.authority.holder.clone();
            grants.insert(token, Grant { first_seq: seq, store_now_ms: c.store_now_ms, holder, open: true });
            None
        }
        Some(g) if g.open && g.store_now_ms == c.store_now_ms && g.holder == c.authority.holder => None,
        Some(g) => Some(Violation::new(
            Invariant::FreshHoldToken,
            subject,
            format!(
                "hold by {:?} at {} reissued token {token}, first issued at {} to {:?}",
                c.authority.holder, c.store_now_ms, g.store_now_ms, g.holder
            ),
            vec![g.first_seq, seq],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;

    /// Holds, a takeover of an expired hold, a release, a checkout and a sale.
    #[test]
    fn new_token_for_every_grant_is_clean() {
        let mut w = World::new(&["1A", "1B", "2A"]);
        let alice = w.hold("alice", &["1A", "1B"], 5_000);
        w.advance(6_000);
        let bob = w.hold("bob", &["1A"], 5_000);
        w.release("alice", alice);
        w.sweep();
        let carol = w.hold("carol", &["1B", "2A"], 5_000);
        let o = w.checkout("carol", carol, "k", 10_000);
        w.charge(o);
        let _ = bob;
        assert_eq!(check_hold_tokens(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    /// A takeover of an expired hold that kept the previous holder's token.
    #[test]
    fn takeover_keeping_the_token_is_reported() {
        let mut w = World::new(&["1A"]);
        let alice = w.hold("alice", &["1A"], 5_000);
        let first = w.last_change_of("1A");
        w.advance(6_000);
        let takeover = w.hold_with_token("bob", &["1A"], alice, 5_000)[0];
        let v = check_hold_tokens(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::FreshHoldToken);
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"1A".into()));
        assert_eq!(v[0].witnesses, vec![first, takeover]);
        assert_eq!(v[0].detail, format!("hold by Some(\"bob\") kept the seat's previous token {alice}"));
    }

    /// A token released and then issued again to a new grant on another seat.
    #[test]
    fn token_reissued_after_release_is_reported() {
        let mut w = World::new(&["1A", "1B"]);
        let alice = w.hold("alice", &["1A"], 5_000);
        let first = w.last_change_of("1A");
        w.release("alice", alice);
        let reuse = w.hold_with_token("alice", &["1B"], alice, 5_000)[0];
        let v = check_hold_tokens(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"1B".into()));
        assert_eq!(v[0].witnesses, vec![first, reuse]);
        assert!(v[0].detail.contains(&format!("reissued token {alice}")), "{}", v[0].detail);
    }

    /// The same token issued at two store times to two holders, then
    /// answered to both clients.
    #[test]
    fn token_shared_by_two_grants_is_reported_on_both_sides() {
        let mut w = World::new(&["1A", "1B"]);
        let (_, first_ok, alice) = w.hold_answered("alice", &["1A"], &["1A"], 5_000);
        let first = w.last_change_of("1A");
        w.advance(10);
        let reuse = w.hold_with_token("bob", &["1B"], alice, 5_000)[0];
        let op = ClientOp::Hold { event_id: "ev".into(), seat_ids: vec!["1B".into()], admission: None };
        let res = OpResult::Held { hold_token: alice, seat_ids: vec!["1B".into()], expires_at_ms: w.now_ms + 5_000 };
        let (_, second_ok) = w.client("bob", op, Ok(res));
        let v = check_hold_tokens(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().all(
            |v| v.invariant == Invariant::FreshHoldToken && v.subject == Subject::seat(&"ev".into(), &"1B".into())
        ));
        assert_eq!(v[0].witnesses, vec![first, reuse]);
        assert_eq!(v[1].witnesses, vec![first_ok, second_ok]);
        assert!(v[1].detail.ends_with(&format!("were both granted token {alice}")), "{}", v[1].detail);
    }
}
