//! Liveness after faults stop, judged at the final store time: no seat held
//! past its deadline plus the sweep bound, no payment unresolved past its
//! deadline plus the reconciliation bound, and every compensation finished
//! (succeeded) or flagged (failed) within its bound. Deadlines that fell
//! during the fault phase count from the end of faults.

use super::index::{compensation_changes, order_changes, seat_changes};
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::model::{CompensationStatus, SeatState, Snapshot};

/// Checks [`Invariant::HoldReclaimed`], [`Invariant::PaymentResolved`] and
/// [`Invariant::CompensationSettled`].
pub fn check_liveness(snap: &Snapshot, trace: &[TraceEvent], cfg: &Config) -> Vec<Violation> {
    let now = cfg.final_store_now_ms;
    let due = |deadline: i64, bound: i64| deadline.max(cfg.faults_end_ms).saturating_add(bound);
    let seats = seat_changes(trace);
    let orders = order_changes(trace);
    let comps = compensation_changes(trace);
    let mut out = Vec::new();

    for s in snap.seats.iter().filter(|s| s.state == SeatState::Held) {
        let deadline = s.hold_expires_at_ms.unwrap_or(i64::MIN);
        if now > due(deadline, cfg.sweep_bound_ms) {
            let key = (s.event_id.clone(), s.seat_id.clone());
            let witnesses = seats
                .get(&key)
                .and_then(|cs| cs.iter().rev().find(|(_, c)| c.to() == SeatState::Held))
                .map(|(seq, _)| vec![*seq])
                .unwrap_or_default();
            out.push(Violation::new(
                Invariant::HoldReclaimed,
                Subject::seat(&s.event_id, &s.seat_id),
                format!(
                    "held past its deadline {deadline} by {} ms at store time {now} (bound {} ms)",
                    now - deadline,
                    cfg.sweep_bound_ms
                ),
                witnesses,
            ));
        }
    }
    for o in snap.orders.iter().filter(|o| o.status.owns_seats()) {
        if now > due(o.payment_deadline_at_ms, cfg.reconcile_bound_ms) {
            let witnesses =
                orders.get(&o.order_id).and_then(|cs| cs.first()).map(|(seq, _)| vec![*seq]).unwrap_or_default();
            out.push(Violation::new(
                Invariant::PaymentResolved,
                Subject::Order { order_id: o.order_id },
                format!(
                    "{} past its payment deadline {} by {} ms at store time {now} (bound {} ms)",
                    o.status,
                    o.payment_deadline_at_ms,
                    now - o.payment_deadline_at_ms,
                    cfg.reconcile_bound_ms
                ),
                witnesses,
            ));
        }
    }
    for c in &snap.compensations {
        let settled = matches!(c.status, CompensationStatus::Succeeded | CompensationStatus::Failed);
        if !settled && now > due(c.created_at_ms, cfg.compensation_bound_ms) {
            let witnesses =
                comps.get(&c.compensation_id).and_then(|cs| cs.first()).map(|(seq, _)| vec![*seq]).unwrap_or_default();
            out.push(Violation::new(
                Invariant::CompensationSettled,
                Subject::Compensation { compensation_id: c.compensation_id },
                format!(
                    "{} after {} attempt(s), {} ms after it was opened (bound {} ms)",
                    c.status,
                    c.attempts,
                    now - c.created_at_ms,
                    cfg.compensation_bound_ms
                ),
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

    #[test]
    fn settled_run_is_clean() {
        let mut w = World::new(&["A", "B", "C"]);
        w.hold("u1", &["A"], 5_000);
        let t = w.hold("u2", &["B"], 5_000);
        let o = w.checkout("u2", t, "k", 10_000);
        w.unknown(o);
        let t = w.hold("u3", &["C"], 5_000);
        let o3 = w.checkout("u3", t, "k", 10_000);
        w.advance(20_000);
        w.end_faults();
        w.sweep();
        w.release_unresolved(o);
        w.release_unresolved(o3);
        w.charge(o3);
        let comp = w.snap.compensations[0].compensation_id;
        w.refund(comp);
        w.advance(100_000);
        assert_eq!(check_liveness(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    #[test]
    fn deadlines_in_the_fault_phase_count_from_its_end() {
        let mut w = World::new(&["A"]);
        w.hold("u1", &["A"], 5_000);
        w.advance(60_000);
        w.end_faults();
        w.advance(4_000); // within the 5 s sweep bound after faults ended
        assert_eq!(check_liveness(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    /// A stalled sweeper: the hold is never reclaimed.
    #[test]
    fn hold_never_reclaimed_is_reported() {
        let mut w = World::new(&["A"]);
        w.hold("u1", &["A"], 5_000);
        let hold = w.last_change_of("A");
        w.end_faults();
        w.advance(5_000 + 5_001);
        let v = check_liveness(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::HoldReclaimed);
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"A".into()));
        assert_eq!(v[0].witnesses, vec![hold]);
        assert_eq!(v[0].detail, "held past its deadline 6000 by 5001 ms at store time 11001 (bound 5000 ms)");
    }

    #[test]
    fn unreconciled_payment_and_open_compensation_are_reported() {
        let mut w = World::new(&["A", "B"]);
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        let created =
            w.trace.events().iter().rev().find(|e| matches!(e.kind, crate::TraceKind::OrderChange(_))).unwrap().seq;
        w.unknown(o);
        let t2 = w.hold("u2", &["B"], 60_000);
        let o2 = w.checkout("u2", t2, "k", 1_000);
        w.advance(1_000);
        w.release_unresolved(o2);
        w.charge(o2);
        let comp = w.snap.compensations[0].compensation_id;
        let opened = w
            .trace
            .events()
            .iter()
            .rev()
            .find(|e| matches!(e.kind, crate::TraceKind::CompensationChange(_)))
            .unwrap()
            .seq;
        w.end_faults();
        w.advance(61_000);
        let v = check_liveness(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::PaymentResolved);
        assert_eq!(v[0].subject, Subject::Order { order_id: o });
        assert_eq!(v[0].witnesses, vec![created]);
        assert_eq!(v[1].invariant, Invariant::CompensationSettled);
        assert_eq!(v[1].subject, Subject::Compensation { compensation_id: comp });
        assert_eq!(v[1].witnesses, vec![opened]);
        assert_eq!(v[1].detail, "requested after 0 attempt(s), 61000 ms after it was opened (bound 60000 ms)");
    }
}
