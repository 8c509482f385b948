//! A seat's version rises by exactly one on every change and never goes back
//! (each change starts from the version the previous one left; the final
//! record is not older than the last change), and a seat's state moves only
//! along [`SEAT_TRANSITIONS`], written here from the brief and independently
//! of the booking code's own table (`booking::store::machine::seat`), so the
//! checker shares nothing with the code it checks.
//!
//! Seats: `available -> held` (a hold), `held -> held` (an expired hold
//! taken over), `held -> available` (released, or expired and swept), `held
//! -> payment_pending` (checkout), `payment_pending -> sold` (paid),
//! `payment_pending -> available` (declined, or unresolved past the payment
//! deadline). `sold` is final.

use super::index::seat_changes;
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::model::{SeatState as S, Snapshot};

/// The seat transitions the brief allows: `(from, to)`.
pub const SEAT_TRANSITIONS: &[(S, S)] = &[
    (S::Available, S::Held),
    (S::Held, S::Held),
    (S::Held, S::Available),
    (S::Held, S::PaymentPending),
    (S::PaymentPending, S::Sold),
    (S::PaymentPending, S::Available),
];

fn seat_transition_allowed(from: S, to: S) -> bool {
    SEAT_TRANSITIONS.contains(&(from, to))
}

/// Checks [`Invariant::VersionMonotonic`] and [`Invariant::AllowedTransition`].
pub fn check_transitions(snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let mut out = Vec::new();
    for ((event_id, seat_id), changes) in seat_changes(trace) {
        let subject = || Subject::seat(&event_id, &seat_id);
        let mut prev: Option<(u64, i64)> = None;
        for (seq, c) in &changes {
            if !seat_transition_allowed(c.from(), c.to()) {
                out.push(Violation::new(
                    Invariant::AllowedTransition,
                    subject(),
                    format!("{} -> {} by {} is not an allowed transition", c.from(), c.to(), c.cause.as_str()),
                    vec![*seq],
                ));
            }
            if c.after.version != c.before.version + 1 {
                out.push(Violation::new(
                    Invariant::VersionMonotonic,
                    subject(),
                    format!("version {} -> {}: a change must add exactly one", c.before.version, c.after.version),
                    vec![*seq],
                ));
            }
            if let Some((prev_seq, prev_version)) = prev {
                if c.before.version < prev_version {
                    out.push(Violation::new(
                        Invariant::VersionMonotonic,
                        subject(),
                        format!(
                            "change started from version {} after version {prev_version} was written",
                            c.before.version
                        ),
                        vec![prev_seq, *seq],
                    ));
                } else if c.before.version > prev_version {
                    out.push(Violation::new(
                        Invariant::VersionMonotonic,
                        subject(),
                        format!(
                            "change started from version {} but the last recorded change left {prev_version}: a change is missing from the trace",
                            c.before.version
                        ),
                        vec![prev_seq, *seq],
                    ));
                }
            }
            prev = Some((*seq, c.after.version));
        }
        if let (Some((last_seq, last_version)), Some(seat)) =
            (prev, snap.seats.iter().find(|s| s.event_id == event_id && s.seat_id == seat_id))
            && seat.version < last_version
        {
            out.push(Violation::new(
                Invariant::VersionMonotonic,
                subject(),
                format!("final record has version {} but version {last_version} was written", seat.version),
                vec![last_seq],
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{World, clear_hold};
    use crate::trace::{Authority, ChangeCause};
    use booking::model::SeatState;

    #[test]
    fn a_full_life_is_clean() {
        let mut w = World::new(&["A", "B"]);
        let t = w.hold("u1", &["A", "B"], 5_000);
        w.advance(5_000);
        let t2 = w.hold("u2", &["A", "B"], 5_000);
        let o = w.checkout("u2", t2, "k", 10_000);
        w.charge(o);
        let _ = t;
        assert_eq!(check_transitions(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    #[test]
    fn sold_back_to_available_is_reported() {
        let mut w = World::new(&["A"]);
        let t = w.hold("u1", &["A"], 5_000);
        let o = w.checkout("u1", t, "k", 10_000);
        w.charge(o);
        let bad = w.change_seat("A", ChangeCause::Sweep, Authority::none(), clear_hold);
        let v = check_transitions(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::AllowedTransition);
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"A".into()));
        assert_eq!(v[0].witnesses, vec![bad]);
        assert_eq!(v[0].detail, "sold -> available by sweep is not an allowed transition");
    }

    #[test]
    fn version_going_back_is_reported() {
        let mut w = World::new(&["A"]);
        let stale_read = w.seat("A").clone();
        let t = w.hold("u1", &["A"], 5_000);
        let hold = w.last_change_of("A");
        // A lost update: the checkout writes from a read made before the hold.
        let mut written = stale_read.clone();
        written.state = SeatState::PaymentPending;
        written.version += 1;
        let c = crate::trace::SeatChange::new(
            ChangeCause::Checkout,
            w.now_ms,
            Authority::token(t, &"u1".into()),
            &stale_read,
            &written,
        );
        let lost = w.record(crate::TraceKind::SeatChange(Box::new(c)));
        let v = check_transitions(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 2, "{v:?}");
        // The stale read also makes the write available -> payment_pending.
        assert_eq!((v[0].invariant, v[0].witnesses.clone()), (Invariant::AllowedTransition, vec![lost]));
        assert_eq!(v[1].invariant, Invariant::VersionMonotonic);
        assert_eq!(v[1].subject, Subject::seat(&"ev".into(), &"A".into()));
        assert_eq!(v[1].witnesses, vec![hold, lost]);
        assert_eq!(v[1].detail, "change started from version 0 after version 1 was written");
    }

    #[test]
    fn final_record_older_than_trace_is_reported() {
        let mut w = World::new(&["A"]);
        w.hold("u1", &["A"], 5_000);
        let hold = w.last_change_of("A");
        w.snap.seats[0].version = 0;
        let v = check_transitions(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::VersionMonotonic);
        assert_eq!(v[0].witnesses, vec![hold]);
    }
}
