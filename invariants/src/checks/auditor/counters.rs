//! The auditor's counter side: the service's counters (what `GET /metrics`
//! rendered, [`ServiceCounters`]) predicted from the store's answers. Each
//! counted outcome is one the store decided: a hold granted, a contention
//! refusal, a seat reclaimed (with its lag), an order created or replayed, a
//! payment outcome recorded by the call that decided it (`decided_now`), an
//! unresolved payment released, an admission made, a refund attempt's
//! recorded result (succeeded, retrying, failed for good), an attempt that
//! took over an expired one. The workflow's store errors are bounded by the
//! store's refusals.
//!
//! A counter may fall short of its prediction when work was cut between the
//! store's answer and the count (a crash after commit, a request whose
//! client hung up, a pass still running when the run ended); it may never
//! exceed it. In a run without faults, without unanswered requests, that
//! settled quiescent, every counter equals its prediction.

use crate::service_counters::ServiceCounters;
use crate::store_call::StoreCall;
use crate::trace::TraceKind;
use booking::model::CompensationStatus;
use booking::store::SaleOutcome;

/// The counters the store's answers predict, so far.
#[derive(Debug, Default)]
pub(super) struct Tally {
    want: ServiceCounters,
    /// Whether anything could have cut work between an answer and its count.
    disturbed: bool,
    /// Store calls refused (the most store errors the workflow can count).
    refused: u64,
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
            _ => refunds(w, call),
        }
        self.refused += u64::from(call.refusal().is_some());
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
        if got.workflow_store_errors > self.refused {
            out.push((
                "workflow_store_errors",
                format!(
                    "the service counted {} store errors, the store refused only {} calls",
                    got.workflow_store_errors, self.refused
                ),
            ));
        }
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

/// Counts what a compensation call's answer makes the dispatcher count: a
/// recorded refund result by the compensation's status after it, an attempt
/// that took over an expired one, and a compensation read (the dispatcher's,
/// after the store said no attempt was due) that found it failed for good.
fn refunds(w: &mut ServiceCounters, call: &StoreCall) {
    match call {
        StoreCall::FinishCompensation { answer: Ok(c), .. } => match c.status {
            CompensationStatus::Succeeded => w.refunds_succeeded += 1,
            CompensationStatus::Failed => w.refunds_failed += 1,
            CompensationStatus::Requested | CompensationStatus::InFlight => w.refunds_retrying += 1,
        },
        StoreCall::StartCompensation { answer: Ok(a), .. } => w.refunds_taken_over += u64::from(a.took_over.is_some()),
        StoreCall::Compensation { answer: Ok(c), .. } => {
            w.refunds_failed += u64::from(c.status == CompensationStatus::Failed)
        }
        _ => {}
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
        TraceKind::Fault { kind, .. } => kind.may_cut_work(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::FaultEvent;
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

    fn compensation(status: CompensationStatus) -> booking::model::Compensation {
        booking::model::Compensation {
            event_id: "ev".into(),
            compensation_id: booking::model::CompensationId::nil(),
            order_id: booking::model::OrderId::nil(),
            payment_op_id: booking::model::PaymentOpId::nil(),
            kind: booking::model::CompensationKind::Refund,
            amount_cents: 100,
            status,
            attempts: 1,
            last_error: None,
            next_attempt_at_ms: 0,
            created_at_ms: 0,
            updated_at_ms: 0,
        }
    }

    #[test]
    fn refunds_count_by_the_status_each_record_left_and_store_errors_by_the_refusals() {
        let mut t = Tally::default();
        let id = booking::model::CompensationId::nil();
        let finish = |status| StoreCall::FinishCompensation {
            req: booking::store::CompensationResult {
                compensation_id: id,
                outcome: booking::store::CompensationOutcome::Succeeded,
                retry_after_ms: 0,
                max_attempts: 3,
            },
            answer: Ok(compensation(status)),
        };
        for status in [CompensationStatus::InFlight, CompensationStatus::Succeeded, CompensationStatus::Failed] {
            t.store_call(&finish(status));
        }
        t.store_call(&StoreCall::Compensation {
            compensation_id: id,
            answer: Ok(compensation(CompensationStatus::Failed)),
        });
        t.store_call(&StoreCall::NowMs {
            answer: Err(crate::store_call::Refusal::from(&booking::store::StoreError::Backend("down".into()))),
        });
        let want = ServiceCounters {
            refunds_retrying: 1,
            refunds_succeeded: 1,
            refunds_failed: 2,
            workflow_store_errors: 1,
            settled: true,
            ..Default::default()
        };
        assert_eq!(t.judge(&want), vec![]);
        let over = t.judge(&ServiceCounters { workflow_store_errors: u64::from(u32::MAX), ..want });
        assert_eq!(over.len(), 1, "{over:?}");
        assert_eq!(over[0].0, "workflow_store_errors");
    }

    #[test]
    fn work_is_cut_only_by_crashes_partitions_delays_pauses_outages_and_hang_ups() {
        let fault = |kind| TraceKind::Fault { kind, detail: String::new() };
        assert!(may_cut_work(&fault(FaultEvent::CrashAfterCommit)));
        assert!(may_cut_work(&fault(FaultEvent::ClientPaused)));
        assert!(!may_cut_work(&fault(FaultEvent::CallbackDuplicated)));
        assert!(!may_cut_work(&fault(FaultEvent::ClockSkewed)));
    }
}
