//! Refund attempts start only when due. A compensation runs one refund
//! attempt at a time: `requested` waits for its backoff, and an `in_flight`
//! attempt is leased to the dispatcher running it, so another may take it
//! over only once the lease has expired (its dispatcher died). Judged on the
//! store's compensation writes, in trace order: every write that starts an
//! attempt (into `in_flight`, one more attempt) must come at or after the
//! previous write's `next_attempt_at_ms` (the backoff's end or the lease's
//! expiry), and must lease the new attempt past its own store clock.

use super::index::compensation_changes;
use crate::trace::CompensationChange;
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::model::{CompensationStatus, Snapshot};

/// Checks [`Invariant::RefundAttemptDue`]. Subject: the compensation.
/// Witnesses: the write that made the attempt due (or leased it) and the
/// write that started it. One violation per compensation: the first.
pub fn check_refund_attempts(_snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let mut out = Vec::new();
    for (id, changes) in compensation_changes(trace) {
        let mut prev: Option<(u64, &CompensationChange)> = None;
        for &(seq, c) in &changes {
            let starts = c.to == CompensationStatus::InFlight && prev.is_some_and(|(_, p)| c.attempts > p.attempts);
            if let (true, Some((pseq, p))) = (starts, prev) {
                let detail = if c.store_now_ms < p.next_attempt_at_ms {
                    let what =
                        if p.to == CompensationStatus::InFlight { "took over attempt" } else { "started attempt" };
                    Some(format!(
                        "{what} {} at {} while {} until {}",
                        c.attempts,
                        c.store_now_ms,
                        if p.to == CompensationStatus::InFlight { "attempt was leased" } else { "backing off" },
                        p.next_attempt_at_ms
                    ))
                } else if c.next_attempt_at_ms <= c.store_now_ms {
                    Some(format!(
                        "attempt {} started at {} with its lease already expired at {}",
                        c.attempts, c.store_now_ms, c.next_attempt_at_ms
                    ))
                } else {
                    None
                };
                if let Some(detail) = detail {
                    out.push(Violation::new(
                        Invariant::RefundAttemptDue,
                        Subject::Compensation { compensation_id: id },
                        detail,
                        vec![pseq, seq],
                    ));
                    break;
                }
            }
            prev = Some((seq, c));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TraceKind;
    use crate::testkit::World;
    use booking::model::{CompensationId, OrderId, PaymentOpId};

    /// Records a compensation write of `id` (attempts, status, next attempt) at `now_ms`.
    fn write(
        w: &mut World,
        id: CompensationId,
        from: Option<CompensationStatus>,
        to: CompensationStatus,
        attempts: i32,
        next_attempt_at_ms: i64,
    ) -> u64 {
        let now = w.now_ms;
        let c = CompensationChange {
            compensation_id: id,
            order_id: OrderId::nil(),
            payment_op_id: PaymentOpId::nil(),
            from,
            to,
            attempts,
            next_attempt_at_ms,
            store_now_ms: now,
        };
        w.record(TraceKind::CompensationChange(c))
    }

    use CompensationStatus::{InFlight, Requested, Succeeded};

    #[test]
    fn attempts_started_when_due_are_clean() {
        let mut w = World::new(&["1A"]);
        let id = CompensationId::from(w.uuid());
        let t0 = w.now_ms;
        write(&mut w, id, None, Requested, 0, t0);
        write(&mut w, id, Some(Requested), InFlight, 1, t0 + 1_000); // leased 1 s
        w.advance(200);
        write(&mut w, id, Some(InFlight), Requested, 1, t0 + 700); // failed: back off to +700
        w.advance(500);
        write(&mut w, id, Some(Requested), InFlight, 2, t0 + 1_700);
        w.advance(1_000); // the lease expired: a takeover is due
        write(&mut w, id, Some(InFlight), InFlight, 3, t0 + 2_700);
        write(&mut w, id, Some(InFlight), Succeeded, 3, t0 + 2_700);
        assert_eq!(check_refund_attempts(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    #[test]
    fn a_takeover_of_a_live_lease_is_reported() {
        let mut w = World::new(&["1A"]);
        let id = CompensationId::from(w.uuid());
        let t0 = w.now_ms;
        write(&mut w, id, None, Requested, 0, t0);
        let leased = write(&mut w, id, Some(Requested), InFlight, 1, t0 + 1_000);
        w.advance(100);
        let took = write(&mut w, id, Some(InFlight), InFlight, 2, t0 + 1_100);
        let v = check_refund_attempts(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::RefundAttemptDue);
        assert_eq!(v[0].witnesses, vec![leased, took]);
        assert!(v[0].detail.starts_with("took over attempt 2"), "{}", v[0].detail);
    }

    #[test]
    fn an_early_retry_and_an_expired_lease_are_reported() {
        let mut w = World::new(&["1A"]);
        let early = CompensationId::from(w.uuid());
        let t0 = w.now_ms;
        write(&mut w, early, None, Requested, 0, t0 + 5_000); // backing off until +5 s
        write(&mut w, early, Some(Requested), InFlight, 1, t0 + 1_000);
        let stale = CompensationId::from(w.uuid());
        write(&mut w, stale, None, Requested, 0, t0);
        write(&mut w, stale, Some(Requested), InFlight, 1, t0 - 1); // leased into the past
        let v = check_refund_attempts(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 2, "{v:?}");
        let details: Vec<&str> = v.iter().map(|x| x.detail.as_str()).collect();
        assert!(details.iter().any(|d| d.starts_with("started attempt 1") && d.contains("backing off")), "{details:?}");
        assert!(details.iter().any(|d| d.contains("lease already expired")), "{details:?}");
    }
}
