//! holdfast's invariant checkers: pure functions over the store's final
//! records ([`booking::model::Snapshot`]) and the run's [`trace`], reporting
//! every broken promise as a [`Violation`] that names the invariant, the
//! record, and the trace events that witness it. Plus per-run [`metrics`].
//!
//! Entry points: [`check_all`], [`metrics::Metrics::compute`], [`hash::trace_hash`].

#![warn(missing_docs)]

pub mod answers;
pub mod checks;
pub mod config;
pub mod hash;
pub mod metrics;
pub mod model;
pub mod path;
pub mod paths;
mod rare_paths;
pub mod room_metrics;
pub mod service_counters;
pub mod store_call;
pub mod trace;
pub mod violation;

#[cfg(test)]
mod testkit;

pub use config::Config;
pub use hash::{to_hex, trace_hash};
pub use metrics::{Classification, Metrics};
pub use trace::{TraceEvent, TraceKind};
pub use violation::{Invariant, Subject, Violation};

use booking::model::Snapshot;

/// Runs every checker of [`checks::CHECKERS`] the config names (all by
/// default: [`Config::checkers`]) and returns all violations, sorted by
/// (invariant, subject, witnesses, detail) and deduplicated.
pub fn check_all(snap: &Snapshot, trace: &[TraceEvent], cfg: &Config) -> Vec<Violation> {
    let mut out: Vec<Violation> = checks::CHECKERS
        .iter()
        .filter(|(name, _)| cfg.runs(name))
        .flat_map(|(_, check)| check(snap, trace, cfg))
        .collect();
    out.sort_by(|a, b| {
        (a.invariant, &a.subject, &a.witnesses, &a.detail).cmp(&(b.invariant, &b.subject, &b.witnesses, &b.detail))
    });
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;
    use crate::trace::{Authority, ChangeCause, FaultEvent, PaymentEvent, TraceError, from_json_lines, to_json_lines};
    use booking::model::SeatState;

    /// A run with a late success refunded, a sweep and the brief's story told right.
    fn clean_world() -> World {
        let mut w = World::new(&["1A", "1B", "2A"]);
        let alice = w.hold("alice", &["1A"], 5_000);
        w.record(TraceKind::Fault { kind: FaultEvent::ClientPaused, detail: "alice 8000 ms".into() });
        w.advance(6_000);
        w.sweep();
        let bob = w.hold("bob", &["1A", "1B"], 5_000);
        let _ = alice;
        let o = w.checkout("bob", bob, "kb", 10_000);
        w.charge(o);
        let t = w.hold("carol", &["2A"], 5_000);
        let o2 = w.checkout("carol", t, "kc", 1_000);
        w.unknown(o2);
        w.advance(1_000);
        w.release_unresolved(o2);
        w.charge(o2);
        let comp = w.snap.compensations[0].compensation_id;
        w.refund(comp);
        w.end_faults();
        w.advance(30_000);
        w
    }

    #[test]
    fn clean_run_passes_every_checker() {
        let w = clean_world();
        assert_eq!(check_all(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    #[test]
    fn check_all_reports_sorted_violations_from_several_checkers() {
        let mut w = clean_world();
        // Bob's old token checks out the free seat 2A; a broken store resells 1A.
        let bob_token = w.snap.orders[0].hold_token;
        w.change_seat("2A", ChangeCause::Checkout, Authority::token(bob_token, &"bob".into()), |s| {
            s.state = SeatState::PaymentPending;
        });
        w.force_resell("1A", "dave");
        let v = check_all(&w.snap, w.trace.events(), &w.config());
        let got: Vec<(Invariant, Subject)> = v.iter().map(|v| (v.invariant, v.subject.clone())).collect();
        let seat = Subject::seat;
        assert_eq!(
            got,
            vec![
                (Invariant::OneBookingPerSeat, seat(&"ev".into(), &"1A".into())),
                (Invariant::NoStaleAuthority, seat(&"ev".into(), &"1A".into())),
                (Invariant::NoStaleAuthority, seat(&"ev".into(), &"2A".into())),
                (Invariant::AllowedTransition, seat(&"ev".into(), &"1A".into())),
                (Invariant::AllowedTransition, seat(&"ev".into(), &"2A".into())),
            ]
        );
        assert_eq!(
            v[2].to_string(),
            format!(
                "no-stale-authority seat ev/2A: checkout of a seat that is available (witnesses: seq {})",
                v[2].witnesses[0]
            )
        );
    }

    #[test]
    fn trace_round_trips_through_json_lines() {
        let mut w = clean_world();
        let op = w.snap.payment_ops[0].payment_op_id;
        w.record(TraceKind::Payment(PaymentEvent::CallbackDelivered {
            payment_op_id: op,
            status: booking::model::PaymentStatus::Succeeded,
            duplicate: true,
            late: false,
        }));
        w.record(TraceKind::Unknown { op_id: 99, reason: "timeout".into() });
        let text = to_json_lines(w.trace.events());
        assert_eq!(from_json_lines(&text).unwrap(), w.trace.events());
        assert_eq!(trace_hash(&from_json_lines(&text).unwrap()), trace_hash(w.trace.events()));
        let first = text.lines().next().unwrap();
        assert!(first.starts_with(r#"{"seq":0,"at_ms":1000,"kind":{"type":"seat_change","#), "{first}");
        let skipped: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
        assert_eq!(from_json_lines(&skipped), Err(TraceError::Sequence { line: 1, expected: 0, found: 1 }));
        assert!(matches!(from_json_lines("{nope"), Err(TraceError::Parse { line: 1, .. })));
    }

    #[test]
    fn config_comes_from_phase_markers() {
        let mut w = clean_world();
        assert_eq!(Config::from_phases(w.trace.events()), None);
        let now = w.now_ms;
        w.record(TraceKind::Phase { phase: trace::PhaseMark::SettleEnd, store_now_ms: now });
        assert_eq!(Config::from_phases(w.trace.events()), Some(w.config()));
    }

    #[test]
    fn full_trace_refuses_events() {
        let mut t = trace::Trace::new(1);
        assert_eq!(t.record(0, TraceKind::Unknown { op_id: 1, reason: "x".into() }), Ok(0));
        assert_eq!(
            t.record(0, TraceKind::Unknown { op_id: 1, reason: "x".into() }),
            Err(TraceError::Full { limit: 1 })
        );
    }

    #[test]
    fn invariant_names_are_stable_and_round_trip() {
        for i in Invariant::ALL {
            assert_eq!(Invariant::parse(i.as_str()), Some(*i));
            assert_eq!(serde_json::to_string(i).unwrap(), format!("\"{}\"", i.as_str()));
        }
        assert_eq!(Invariant::parse("nope"), None);
    }
}
