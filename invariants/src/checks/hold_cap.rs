//! The per-user cap: no user ever has more seats of one event than the cap
//! the service ran with ([`Config::max_held_seats_per_user`]), counting the
//! seats held under an unexpired deadline and the seats in payment, exactly
//! as the store counts them when it decides a hold. Judged on the store's
//! writes, in trace order: after every write with cause `hold`, the new
//! holder's seats of that event are counted at the write's store clock.

use crate::trace::{ChangeCause, SeatImage};
use crate::{Config, Invariant, Subject, TraceEvent, TraceKind, Violation};
use booking::model::{EventId, SeatId, SeatState, Snapshot, UserId};
use std::collections::{BTreeMap, BTreeSet};

/// Whether `seat` counts toward its holder's cap at `now_ms`.
fn counts(seat: &SeatImage, now_ms: i64) -> bool {
    match seat.state {
        SeatState::Held => seat.hold_expires_at_ms.is_some_and(|t| t > now_ms),
        SeatState::PaymentPending => true,
        SeatState::Available | SeatState::Sold => false,
    }
}

/// Checks [`Invariant::HoldCap`]; nothing to check without a cap. Subject:
/// the seat whose hold took its holder past the cap (reported once per
/// holder and event). Witnesses: the latest write of every counted seat.
pub fn check_hold_cap(_snap: &Snapshot, trace: &[TraceEvent], cfg: &Config) -> Vec<Violation> {
    let Some(cap) = cfg.max_held_seats_per_user else { return Vec::new() };
    // Each seat's latest image and the seq that wrote it; each (event, holder)'s seats.
    let mut latest: BTreeMap<(EventId, SeatId), (u64, &SeatImage)> = BTreeMap::new();
    let mut owned: BTreeMap<(EventId, UserId), BTreeSet<SeatId>> = BTreeMap::new();
    let mut reported: BTreeSet<(EventId, UserId)> = BTreeSet::new();
    let mut out = Vec::new();
    for e in trace {
        let TraceKind::SeatChange(c) = &e.kind else { continue };
        if let Some(before) = &c.before.holder_id
            && let Some(seats) = owned.get_mut(&(c.event_id.clone(), before.clone()))
        {
            seats.remove(&c.seat_id);
        }
        if let Some(after) = &c.after.holder_id {
            owned.entry((c.event_id.clone(), after.clone())).or_default().insert(c.seat_id.clone());
        }
        latest.insert(c.seat_key(), (e.seq, &c.after));
        if c.cause != ChangeCause::Hold {
            continue;
        }
        let Some(holder) = &c.after.holder_id else { continue };
        let key = (c.event_id.clone(), holder.clone());
        let Some(seats) = owned.get(&key) else { continue };
        let counted: Vec<(&SeatId, u64)> = seats
            .iter()
            .filter_map(|s| {
                let (seq, img) = latest.get(&(c.event_id.clone(), s.clone()))?;
                (img.holder_id.as_ref() == Some(holder) && counts(img, c.store_now_ms)).then_some((s, *seq))
            })
            .collect();
        if counted.len() > cap as usize && reported.insert(key) {
            let names: Vec<&str> = counted.iter().map(|(s, _)| s.as_str()).collect();
            out.push(Violation::new(
                Invariant::HoldCap,
                Subject::seat(&c.event_id, &c.seat_id),
                format!(
                    "{holder} had {} seats held or in payment at {} (cap {cap}): [{}]",
                    counted.len(),
                    c.store_now_ms,
                    names.join(", ")
                ),
                counted.iter().map(|(_, seq)| *seq).collect(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;

    #[test]
    fn holds_within_the_cap_are_clean_and_expired_ones_stop_counting() {
        let mut w = World::new(&["1A", "1B", "1C", "1D"]);
        w.hold("alice", &["1A", "1B"], 1_000);
        w.advance(1_000); // both expired: they no longer count
        w.hold("alice", &["1C", "1D"], 5_000);
        let cfg = w.config().with_hold_cap(Some(2));
        assert_eq!(check_hold_cap(&w.snap, w.trace.events(), &cfg), vec![]);
    }

    #[test]
    fn a_hold_past_the_cap_is_reported_once_with_every_counted_seat() {
        let mut w = World::new(&["1A", "1B", "1C", "1D"]);
        let t = w.hold("alice", &["1A"], 5_000);
        w.checkout("alice", t, "k", 10_000); // in payment: still counts
        w.hold("alice", &["1B", "1C"], 5_000);
        w.hold("alice", &["1D"], 5_000);
        let cfg = w.config().with_hold_cap(Some(2));
        let v = check_hold_cap(&w.snap, w.trace.events(), &cfg);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::HoldCap);
        // One grant's seats are written one by one: 1C is the third seat counted.
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"1C".into()));
        assert_eq!(v[0].witnesses.len(), 3, "the seats counted when 1C was written: {v:?}");
        assert!(v[0].detail.starts_with("alice had 3 seats held or in payment"), "{}", v[0].detail);
        // Without a cap there is nothing to judge.
        assert_eq!(check_hold_cap(&w.snap, w.trace.events(), &w.config()), vec![]);
    }
}
