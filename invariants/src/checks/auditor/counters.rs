//! The auditor's counter side: the service's counters (what `GET /metrics`
//! rendered, [`ServiceCounters`]) predicted from the store's answers. Each
//! counted outcome is one the store decided: a hold granted, a contention
//! refusal, a seat reclaimed (with its lag), an order created or replayed, a
//! payment outcome recorded by the call that decided it (`decided_now`), an
//! unresolved payment released, an admission made.
//!
//! A counter may fall short of its prediction when work was cut between the
//! store's answer and the count (a crash after commit, a request whose
//! client hung up, a pass still running when the run ended); it may never
//! exceed it. In a run without faults, without unanswered requests, that
//! settled quiescent, every counter equals its prediction.

use crate::service_counters::ServiceCounters;
use crate::store_call::StoreCall;
use crate::trace::{FaultKind, TraceKind};
use booking::store::SaleOutcome;

/// The counters the store's answers predict, so far.
#[derive(Debug, Default)]
pub(super) struct Tally {
    want: ServiceCounters,
    /// Whether anything could have cut work between an answer and its count.
    disturbed: bool,
}

impl Tally {
    /// Counts what `call`'s answer makes the service count.
    pub(super) fn store_call(&mut self, call: &StoreCall) {
        let w = &mut self.want;
        match call {
            StoreCall::AcquireHold { answer: Ok(grant), .. } => {
                w.holds_acquired += 1;
                for r in &grant.reclaimed {
                    reclaimed(w, grant.granted_at_ms - r.expired_at_ms);
                }
            }
            StoreCall::AcquireHold { answer: Err(r), .. } => {
                w.holds_refused_contention += u64::from(r.kind == booking::problem_kind::ProblemKind::SeatUnavailable)
            }
            StoreCall::Sweep { answer: Ok(swept), .. } => {
                for h in swept {
                    reclaimed(w, h.reclaimed_at_ms - h.expired_at_ms);
                }
            }
            StoreCall::BeginPayment { answer: Ok(o), .. } if o.replayed => w.checkouts_replayed += 1,
            StoreCall::BeginPayment { answer: Ok(_), .. } => w.checkouts_created += 1,
            StoreCall::PaymentSuccess { answer: Ok(r), .. } if r.decided_now => match r.outcome {
                SaleOutcome::Confirmed { .. } => w.payments_succeeded += 1,
                SaleOutcome::Compensating { .. } => w.payments_late_success += 1,
            },
            StoreCall::PaymentFailure { answer: Ok(r), .. } => w.payments_failed += u64::from(r.decided_now),
            StoreCall::ReleaseUnresolved { answer: Ok(_), .. } => w.payments_released += 1,
            _ => {}
        }
    }

    /// Counts an admission the waiting room made.
    pub(super) fn admitted(&mut self) {
        self.want.admissions += 1;
    }

    /// Notes that work may have been cut from here on (a fault, an unanswered request).
    pub(super) fn disturb(&mut self) {
        self.disturbed = true;
    }

    /// Each counter of `got` that disagrees with the prediction: its name, and how.
    pub(super) fn judge(&self, got: &ServiceCounters) -> Vec<(&'static str, String)> {
        let exact = !self.disturbed && got.settled;
        let mut out = Vec::new();
        for ((name, want), (_, got)) in self.want.named().into_iter().zip(got.named()) {
            if got > want {
                out.push((name, format!("the service counted {got}, the store decided only {want}")));
            } else if exact && got < want {
                out.push((
                    name,
                    format!("the service counted {got}, the store decided {want}, in an undisturbed run that settled"),
                ));
            }
        }
        out
    }
}

/// One seat reclaimed `lag_ms` after its hold's deadline (a negative lag counts as 0).
fn reclaimed(w: &mut ServiceCounters, lag_ms: i64) {
    w.holds_expired_unused += 1;
    w.expiry_lag_ms_sum += u64::try_from(lag_ms.max(0)).unwrap_or(0);
}

/// Whether `kind` may cut work between a store's answer and its count: a
/// request nobody answered (its client hung up), or a fault that crashes,
/// partitions, delays or pauses, or takes a store down.
pub(super) fn may_cut_work(kind: &TraceKind) -> bool {
    match kind {
        TraceKind::Unknown { .. } => true,
        TraceKind::Fault { kind, .. } => matches!(
            kind,
            FaultKind::CrashAfterCommit
                | FaultKind::HostRestarted
                | FaultKind::PartitionStarted
                | FaultKind::LinkLatency
                | FaultKind::ClientPaused
                | FaultKind::StoreDown
                | FaultKind::RoomsDown
                | FaultKind::RoomsLost
        ),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use booking::store::ExpiredHold;

    fn sweep(lags_ms: &[i64]) -> StoreCall {
        let swept = lags_ms
            .iter()
            .map(|lag| ExpiredHold {
                event_id: "ev".into(),
                seat_id: "1A".into(),
                expired_at_ms: 1_000,
                reclaimed_at_ms: 1_000 + lag,
            })
            .collect();
        StoreCall::Sweep { limit_seats: 10, answer: Ok(swept) }
    }

    fn counted(seats: u64, lag_ms: u64, settled: bool) -> ServiceCounters {
        ServiceCounters { holds_expired_unused: seats, expiry_lag_ms_sum: lag_ms, settled, ..Default::default() }
    }

    #[test]
    fn a_counter_never_exceeds_what_the_store_decided_and_meets_it_in_a_quiet_settled_run() {
        let mut t = Tally::default();
        t.store_call(&sweep(&[40, 60]));
        assert_eq!(t.judge(&counted(2, 100, true)), vec![]);
        let short = t.judge(&counted(1, 40, true));
        assert_eq!(short.len(), 2, "{short:?}");
        assert_eq!(short[0].0, "holds_expired_unused");
        assert!(short[0].1.starts_with("the service counted 1, the store decided 2"), "{short:?}");
        assert_eq!(t.judge(&counted(1, 40, false)), vec![], "not settled: short is allowed");
        let over = t.judge(&counted(3, 100, false));
        assert_eq!(over, vec![("holds_expired_unused", "the service counted 3, the store decided only 2".to_string())]);
        t.disturb();
        assert_eq!(t.judge(&counted(0, 0, true)), vec![], "a crash may cut counts");
    }

    #[test]
    fn work_is_cut_only_by_crashes_partitions_delays_pauses_outages_and_hang_ups() {
        let fault = |kind| TraceKind::Fault { kind, detail: String::new() };
        assert!(may_cut_work(&fault(FaultKind::CrashAfterCommit)));
        assert!(may_cut_work(&fault(FaultKind::ClientPaused)));
        assert!(!may_cut_work(&fault(FaultKind::CallbackDuplicated)));
        assert!(!may_cut_work(&fault(FaultKind::ClockSkewed)));
    }
}
