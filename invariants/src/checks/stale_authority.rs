//! No stale authority: every ownership change in the trace was made with the
//! authority that was current, and unexpired by the store's clock, at that
//! moment. What "authority" means depends on the cause of the change:
//!
//! | cause | the write is justified when (by `before` and `store_now_ms`) |
//! | --- | --- |
//! | hold | seat available, or held with a deadline `<= store_now_ms` (takeover) |
//! | release | seat held; presented token and holder are the seat's |
//! | sweep | seat held with a deadline `<= store_now_ms` |
//! | checkout | seat held; presented token and holder are the seat's; deadline `> store_now_ms` |
//! | sale, payment declined | seat payment_pending for the presented order |
//! | unresolved released | as sale, and the presented payment deadline `<= store_now_ms` |

use super::index::seat_changes;
use crate::trace::{ChangeCause, SeatChange};
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::model::{SeatState, Snapshot};

/// Why `c` was not justified, or `None` when it was.
fn unjustified(c: &SeatChange) -> Option<String> {
    let b = &c.before;
    let a = &c.authority;
    let now = c.store_now_ms;
    let expired = b.hold_expires_at_ms.is_some_and(|t| t <= now);
    let token_matches = a.token.is_some() && a.token == b.hold_token;
    let holder_matches = a.holder.is_some() && a.holder == b.holder_id;
    let token_msg = || format!("presented token {:?} but the seat's token is {:?}", a.token, b.hold_token);
    match c.cause {
        ChangeCause::Hold => match b.state {
            SeatState::Available => None,
            SeatState::Held if expired => None,
            SeatState::Held => Some(format!(
                "took over a live hold (token {:?} expires at {:?}, store now {now})",
                b.hold_token, b.hold_expires_at_ms
            )),
            other => Some(format!("hold on a seat that is {other} for order {:?}", b.order_id)),
        },
        ChangeCause::Release | ChangeCause::Checkout if b.state != SeatState::Held => {
            Some(format!("{} of a seat that is {}", c.cause.as_str(), b.state))
        }
        ChangeCause::Release | ChangeCause::Checkout if !token_matches => Some(token_msg()),
        ChangeCause::Release | ChangeCause::Checkout if !holder_matches => {
            Some(format!("presented by {:?} but the seat's holder is {:?}", a.holder, b.holder_id))
        }
        ChangeCause::Release => None,
        ChangeCause::Checkout if b.hold_expires_at_ms.is_none() || expired => {
            Some(format!("checkout with a hold that expired at {:?} (store now {now})", b.hold_expires_at_ms))
        }
        ChangeCause::Checkout => None,
        ChangeCause::Sweep if b.state != SeatState::Held => Some(format!("sweep of a seat that is {}", b.state)),
        ChangeCause::Sweep if !expired => {
            Some(format!("swept a live hold (expires at {:?}, store now {now})", b.hold_expires_at_ms))
        }
        ChangeCause::Sweep => None,
        ChangeCause::Sale | ChangeCause::PaymentDeclined | ChangeCause::UnresolvedReleased
            if b.state != SeatState::PaymentPending =>
        {
            Some(format!("{} of a seat that is {}", c.cause.as_str(), b.state))
        }
        ChangeCause::Sale | ChangeCause::PaymentDeclined | ChangeCause::UnresolvedReleased
            if a.order_id.is_none() || a.order_id != b.order_id =>
        {
            Some(format!("presented order {:?} but the seat belongs to order {:?}", a.order_id, b.order_id))
        }
        ChangeCause::UnresolvedReleased if a.payment_deadline_at_ms.is_none_or(|d| d > now) => Some(format!(
            "released an unresolved payment before its deadline {:?} (store now {now})",
            a.payment_deadline_at_ms
        )),
        ChangeCause::Sale | ChangeCause::PaymentDeclined | ChangeCause::UnresolvedReleased => None,
    }
}

/// Checks [`Invariant::NoStaleAuthority`] over every seat change of the trace.
/// Witnesses: the offending change, and the earlier change that made the
/// seat's current owner (when the trace has it).
pub fn check_stale_authority(_snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let mut out = Vec::new();
    for changes in seat_changes(trace).values() {
        for (i, (seq, c)) in changes.iter().enumerate() {
            let Some(detail) = unjustified(c) else { continue };
            let mut witnesses = vec![*seq];
            if let Some((owner_seq, _)) = changes[..i].iter().rev().find(|(_, p)| {
                p.after.hold_token.is_some()
                    && p.after.hold_token == c.before.hold_token
                    && p.after.order_id == c.before.order_id
            }) {
                witnesses.push(*owner_seq);
            }
            out.push(Violation::new(
                Invariant::NoStaleAuthority,
                Subject::seat(&c.event_id, &c.seat_id),
                detail,
                witnesses,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;
    use crate::trace::Authority;

    /// The brief's story, done right: Alice's hold expires, Bob takes the seat,
    /// Alice's old checkout is refused (nothing recorded), Bob checks out.
    #[test]
    fn alice_refused_bob_buys_is_clean() {
        let mut w = World::new(&["1A"]);
        let alice = w.hold("alice", &["1A"], 5_000);
        w.advance(6_000);
        let bob = w.hold("bob", &["1A"], 5_000);
        let old = crate::trace::ClientOp::Checkout {
            event_id: "ev".into(),
            hold_token: alice,
            seat_ids: vec!["1A".into()],
            idempotency_key: "ka".into(),
            admission: None,
        };
        w.client("alice", old, Err("stale-token"));
        let o = w.checkout("bob", bob, "kb", 60_000);
        w.charge(o);
        assert_eq!(check_stale_authority(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    #[test]
    fn release_sweep_decline_and_unresolved_release_are_clean() {
        let mut w = World::new(&["A", "B", "C", "D"]);
        let t = w.hold("u1", &["A"], 5_000);
        w.release("u1", t);
        w.hold("u2", &["B"], 5_000);
        let t3 = w.hold("u3", &["C"], 60_000);
        let o3 = w.checkout("u3", t3, "k3", 10_000);
        w.decline(o3);
        let t4 = w.hold("u4", &["D"], 60_000);
        let o4 = w.checkout("u4", t4, "k4", 10_000);
        w.unknown(o4);
        w.advance(10_000);
        w.sweep();
        w.release_unresolved(o4);
        assert_eq!(check_stale_authority(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    /// The brief's story, broken: Alice's stale token checks out Bob's seat.
    #[test]
    fn stale_checkout_over_bobs_hold_is_reported() {
        let mut w = World::new(&["1A"]);
        let alice = w.hold("alice", &["1A"], 5_000);
        w.advance(6_000);
        w.hold("bob", &["1A"], 5_000);
        let bob_hold = w.last_change_of("1A");
        let stale = w.change_seat("1A", ChangeCause::Checkout, Authority::token(alice, &"alice".into()), |s| {
            s.state = SeatState::PaymentPending;
            s.hold_token = Some(alice);
            s.holder_id = Some("alice".into());
        });
        let v = check_stale_authority(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::NoStaleAuthority);
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"1A".into()));
        assert_eq!(v[0].witnesses, vec![bob_hold, stale]);
        assert!(v[0].detail.contains(&format!("presented token Some({alice})")), "{}", v[0].detail);
    }

    #[test]
    fn checkout_with_expired_current_token_is_reported() {
        let mut w = World::new(&["1A"]);
        let alice = w.hold("alice", &["1A"], 5_000);
        let hold = w.last_change_of("1A");
        w.advance(5_000);
        let late = w.change_seat("1A", ChangeCause::Checkout, Authority::token(alice, &"alice".into()), |s| {
            s.state = SeatState::PaymentPending;
        });
        let v = check_stale_authority(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"1A".into()));
        assert_eq!(v[0].witnesses, vec![hold, late]);
        assert!(v[0].detail.contains("expired at Some(6000) (store now 6000)"), "{}", v[0].detail);
    }

    #[test]
    fn takeover_of_live_hold_and_early_unresolved_release_are_reported() {
        let mut w = World::new(&["A", "B"]);
        w.hold("alice", &["A"], 5_000);
        let bad_hold = w.change_seat("A", ChangeCause::Hold, Authority::new_hold(&"bob".into()), |s| {
            s.holder_id = Some("bob".into());
        });
        let t = w.hold("carol", &["B"], 5_000);
        let o = w.checkout("carol", t, "k", 60_000);
        let order = w.order(o).clone();
        let early =
            w.change_seat("B", ChangeCause::UnresolvedReleased, Authority::order(&order), crate::testkit::clear_hold);
        let v = check_stale_authority(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(
            (v[0].subject.clone(), v[0].witnesses.contains(&bad_hold)),
            (Subject::seat(&"ev".into(), &"A".into()), true)
        );
        assert!(v[0].detail.starts_with("took over a live hold"), "{}", v[0].detail);
        assert_eq!(
            (v[1].subject.clone(), v[1].witnesses.contains(&early)),
            (Subject::seat(&"ev".into(), &"B".into()), true)
        );
        assert!(v[1].detail.starts_with("released an unresolved payment before its deadline"), "{}", v[1].detail);
    }
}
