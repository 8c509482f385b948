//! The dispatcher: claims due outbox rows and carries each out with the
//! provider, outside any store transaction.
//!
//! A charge row lives until its payment operation has a final outcome
//! (succeeded or failed). While the order owns its seats the charge is sent
//! (same idempotency key) at most `max_charge_attempts` times; an unknown
//! answer marks the order `reconciling` and retries with backoff. Once the
//! order no longer owns its seats (released at its deadline) and the outcome
//! is still unknown, the payment is canceled at the provider: either it was
//! never charged (recorded failed) or it was (recorded success, which opens a
//! compensation). Rows are never dropped: every exit is `complete_outbox`
//! after a final outcome, or `retry_outbox` with the reason.
//!
//! A compensate row carries out one refund attempt per claim and lives until
//! its compensation is `succeeded` or `failed`. Each attempt is leased in the
//! store for `outbox_lease_ms`: an attempt whose dispatcher died is taken over
//! by the next claim once its lease lapses (the refund key makes the repeat
//! safe). An attempt whose answer is lost is recorded as an unknown outcome,
//! bounded by `max_compensation_unknown_attempts` rather than
//! `max_compensation_attempts`: it may have refunded, and the next attempt tells.

use super::Workflow;
use crate::fault::CommitPoint;
use crate::model::{
    Compensation, CompensationId, CompensationStatus, OutboxEvent, OutboxKind, PaymentOpId, PaymentStatus,
};
use crate::payment::provider::{CreatePayment, ProviderError, ProviderPayment, ProviderStatus, RefundStatus};
use crate::planted;
use crate::store::{
    CompensationOutcome, CompensationResult, PaymentSuccess, Recorded, SaleOutcome, StoreError, UNKNOWN_OUTCOME_PREFIX,
};
use serde::{Deserialize, Serialize};

/// Upper bound on any delay the workflow asks the store for: a day (the store's bound).
pub const MAX_DELAY_MS: i64 = 24 * 60 * 60 * 1000;

/// What one dispatch pass did, for metrics and tests. The payment outcome
/// counters (`confirmed`, `declined`, `compensations_opened`) count only
/// outcomes this pass decided in the store; an outcome some other path
/// (webhook, reconciler, another host) recorded first is not counted again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DispatchReport {
    /// Outbox rows claimed.
    pub claimed: u32,
    /// Charges that ended in a booking, decided by this pass.
    pub confirmed: u32,
    /// Charges the provider declined (or canceled), decided by this pass.
    pub declined: u32,
    /// Charges whose outcome stayed unknown this pass.
    pub unknown: u32,
    /// Charges that succeeded for an order without its seats, decided by this
    /// pass: compensation opened.
    pub compensations_opened: u32,
    /// Refund attempts that succeeded.
    pub refunds_succeeded: u32,
    /// Refund attempts that failed and will be retried.
    pub refunds_retrying: u32,
    /// Compensations that failed for good (operators must act).
    pub refunds_failed: u32,
    /// Refund attempts that took over an attempt whose lease expired (its dispatcher died).
    pub refunds_taken_over: u32,
    /// Rows left for a later pass because the store failed.
    pub errors: u32,
}

impl DispatchReport {
    /// Adds `other`'s counters (not `claimed`) to these.
    pub fn absorb(&mut self, other: &DispatchReport) {
        self.confirmed += other.confirmed;
        self.declined += other.declined;
        self.unknown += other.unknown;
        self.compensations_opened += other.compensations_opened;
        self.refunds_succeeded += other.refunds_succeeded;
        self.refunds_retrying += other.refunds_retrying;
        self.refunds_failed += other.refunds_failed;
        self.refunds_taken_over += other.refunds_taken_over;
        self.errors += other.errors;
    }
}

/// How a provider answer changed the payment.
pub(super) enum Applied {
    /// The operation has a final outcome.
    Final,
    /// Still undecided, with the reason.
    Pending(String),
}

impl Workflow {
    /// Claims up to `dispatch_batch` due outbox rows and handles them, up to
    /// `dispatch_concurrency` at once (each row is leased to this claim, and
    /// every store write is conditional, so rows handled at once cannot
    /// interfere). Rows whose handling hit a store error stay leased and come
    /// back after `outbox_lease_ms`. Errors only when the claim itself fails.
    pub async fn dispatch_once(&self) -> Result<DispatchReport, StoreError> {
        use futures::StreamExt;
        let rows = self.store.claim_outbox(self.config.dispatch_batch, self.config.outbox_lease_ms).await?;
        assert!(rows.len() <= self.config.dispatch_batch as usize, "the store honours the claim limit");
        if !rows.is_empty() {
            self.faults.after_commit(CommitPoint::OutboxClaim).await;
        }
        let mut report = DispatchReport { claimed: rows.len() as u32, ..DispatchReport::default() };
        let concurrency = self.config.dispatch_concurrency.max(1) as usize;
        let mut handled = futures::stream::iter(rows)
            .map(|row| async move {
                let mut one = DispatchReport::default();
                let r = match row.kind {
                    OutboxKind::Charge => self.dispatch_charge(&row, &mut one).await,
                    OutboxKind::Compensate => self.dispatch_compensation(&row, &mut one).await,
                };
                if let Err(e) = r {
                    one.errors += 1;
                    tracing::warn!(outbox_id = %row.outbox_id, error = %e, "dispatch left for retry after lease");
                }
                one
            })
            .buffer_unordered(concurrency);
        while let Some(one) = handled.next().await {
            report.absorb(&one);
        }
        Ok(report)
    }

    async fn retry_row(&self, row: &OutboxEvent, why: &str, after_ms: i64) -> Result<(), StoreError> {
        self.store.retry_outbox(&row.event_id, row.outbox_id, why, after_ms.clamp(0, MAX_DELAY_MS)).await
    }

    async fn dispatch_charge(&self, row: &OutboxEvent, report: &mut DispatchReport) -> Result<(), StoreError> {
        let op = self.store.payment_op(PaymentOpId::from(row.ref_id)).await?;
        if matches!(op.status, PaymentStatus::Succeeded | PaymentStatus::Failed) {
            return self.store.complete_outbox(&row.event_id, row.outbox_id).await;
        }
        let order = self.store.order(op.order_id).await?;
        let backoff_ms = self.config.retry_backoff_ms(row.attempts);
        if !order.status.owns_seats() {
            // Released with the outcome unknown: make sure it can never be charged.
            let answer = self.provider.cancel_payment(op.payment_op_id).await;
            return match answer {
                Ok(p) => match self.apply_payment(op.payment_op_id, &p, report).await? {
                    Applied::Final => self.store.complete_outbox(&row.event_id, row.outbox_id).await,
                    Applied::Pending(why) => self.retry_row(row, &why, backoff_ms).await,
                },
                Err(e) => {
                    report.unknown += 1;
                    self.retry_row(row, &format!("cancel after release: {e}"), backoff_ms).await
                }
            };
        }
        if row.attempts > self.config.max_charge_attempts {
            report.unknown += 1;
            let now_ms = self.store.now_ms().await?;
            let until_deadline_ms = order.payment_deadline_at_ms - now_ms;
            return self
                .retry_row(row, "charge attempts exhausted; awaiting reconciliation", until_deadline_ms.max(backoff_ms))
                .await;
        }
        let req =
            CreatePayment { idempotency_key: op.payment_op_id, amount_cents: op.amount_cents, order_id: op.order_id };
        let answer = match self.planted_charge_again(&req, self.provider.create_payment(&req).await).await {
            // A refusal of the request (e.g. the key is known with other
            // parameters) says nothing about an earlier request: look it up.
            Err(ProviderError::Refused { status, detail }) => match self.provider.fetch_payment(op.payment_op_id).await
            {
                Ok(Some(p)) => Ok(p),
                Ok(None) => Ok(ProviderPayment {
                    provider_payment_id: String::new(),
                    status: ProviderStatus::Failed { reason: format!("refused ({status}): {detail}") },
                }),
                Err(e) => Err(e),
            },
            other => other,
        };
        self.settle_charge(row, op.payment_op_id, answer, backoff_ms, report).await
    }

    /// Records what the provider answered to a charge of `payment_op_id`
    /// and completes or reschedules its outbox `row` (after `backoff_ms`).
    async fn settle_charge(
        &self,
        row: &OutboxEvent,
        payment_op_id: PaymentOpId,
        answer: Result<ProviderPayment, ProviderError>,
        backoff_ms: i64,
        report: &mut DispatchReport,
    ) -> Result<(), StoreError> {
        match answer {
            Ok(p) => match self.apply_payment(payment_op_id, &p, report).await? {
                Applied::Final => self.store.complete_outbox(&row.event_id, row.outbox_id).await,
                Applied::Pending(why) => self.retry_row(row, &why, backoff_ms).await,
            },
            Err(e) if self.planted_decline(&e) => {
                self.store.record_payment_failure(payment_op_id, &format!("provider error: {e}")).await?;
                self.faults.after_commit(CommitPoint::PaymentOutcome).await;
                report.declined += 1;
                self.store.complete_outbox(&row.event_id, row.outbox_id).await
            }
            Err(ProviderError::Unreachable(e)) => {
                // Never sent: nothing happened at the provider; the order stays as it is.
                self.retry_row(row, &format!("provider unreachable: {e}"), backoff_ms).await
            }
            Err(e) => {
                report.unknown += 1;
                let why = e.to_string();
                self.store.record_payment_unknown(payment_op_id, &why).await?;
                self.faults.after_commit(CommitPoint::PaymentOutcome).await;
                self.retry_row(row, &why, backoff_ms).await
            }
        }
    }

    /// Whether a planted bug takes the charge's error `e` for a decline:
    /// `dispatch-unknown-as-declined` a lost answer, `unreachable-charge-declined`
    /// a charge never sent.
    fn planted_decline(&self, e: &ProviderError) -> bool {
        match e {
            ProviderError::Unreachable(_) => planted!(self.faults, UnreachableChargeDeclined),
            _ => planted!(self.faults, DispatchUnknownAsDeclined),
        }
    }

    /// The planted bug `charge-new-key-per-retry`: a charge whose answer was
    /// lost is tried again at once under a fresh key ("a new attempt"), and
    /// that answer stands for both. Without the plant, `answer` as it is.
    async fn planted_charge_again(
        &self,
        req: &CreatePayment,
        answer: Result<ProviderPayment, ProviderError>,
    ) -> Result<ProviderPayment, ProviderError> {
        if !planted!(self.faults, ChargeNewKeyPerRetry) || !matches!(answer, Err(ProviderError::Unknown(_))) {
            return answer;
        }
        let fresh = PaymentOpId::from_u128(req.idempotency_key.as_uuid().as_u128() ^ 1);
        self.provider.create_payment(&CreatePayment { idempotency_key: fresh, ..req.clone() }).await
    }

    /// Records a definite provider record of a payment. `Final` when the
    /// operation now has a final outcome in the store. Counts the outcome in
    /// `report` only when this call decided it ([`Recorded::decided_now`]).
    pub(super) async fn apply_payment(
        &self,
        payment_op_id: PaymentOpId,
        p: &ProviderPayment,
        report: &mut DispatchReport,
    ) -> Result<Applied, StoreError> {
        match &p.status {
            ProviderStatus::Succeeded => {
                let req = PaymentSuccess { payment_op_id, provider_payment_id: p.provider_payment_id.clone() };
                let recorded = self.store.record_payment_success(&req).await;
                if recorded.is_ok() {
                    self.faults.after_commit(CommitPoint::PaymentOutcome).await;
                }
                match recorded {
                    Ok(Recorded { decided_now: false, .. }) => {}
                    Ok(Recorded { outcome: SaleOutcome::Confirmed { .. }, .. }) => report.confirmed += 1,
                    Ok(Recorded { outcome: SaleOutcome::Compensating { .. }, .. }) => report.compensations_opened += 1,
                    Err(StoreError::PaymentConflict(id)) => {
                        tracing::error!(payment_op_id = %id, "provider says succeeded, store recorded failed");
                    }
                    Err(e) => return Err(e),
                }
                Ok(Applied::Final)
            }
            ProviderStatus::Failed { reason } => {
                let recorded = self.store.record_payment_failure(payment_op_id, reason).await;
                if recorded.is_ok() {
                    self.faults.after_commit(CommitPoint::PaymentOutcome).await;
                }
                match recorded {
                    Ok(Recorded { decided_now, .. }) => report.declined += u32::from(decided_now),
                    Err(StoreError::PaymentConflict(id)) => {
                        tracing::error!(payment_op_id = %id, "provider says failed, store recorded succeeded");
                    }
                    Err(e) => return Err(e),
                }
                Ok(Applied::Final)
            }
            ProviderStatus::Processing => {
                report.unknown += 1;
                let why = super::said::PROCESSING;
                self.store.record_payment_unknown(payment_op_id, why).await?;
                self.faults.after_commit(CommitPoint::PaymentOutcome).await;
                Ok(Applied::Pending(why.into()))
            }
        }
    }

    async fn dispatch_compensation(&self, row: &OutboxEvent, report: &mut DispatchReport) -> Result<(), StoreError> {
        let attempt = match self
            .store
            .start_compensation_attempt(CompensationId::from(row.ref_id), self.config.outbox_lease_ms)
            .await
        {
            Ok(a) => a,
            Err(StoreError::CompensationNotDue(id)) => return self.compensation_not_due(row, id, report).await,
            Err(e) => return Err(e),
        };
        self.faults.after_commit(CommitPoint::CompensationStart).await;
        if let Some(old) = attempt.took_over {
            report.refunds_taken_over += 1;
            tracing::warn!(
                compensation_id = %attempt.compensation.compensation_id,
                abandoned_attempt = old.attempt,
                lease_expired_at_ms = old.lease_expired_at_ms,
                "taking over a refund attempt whose dispatcher never reported back"
            );
        }
        let comp = attempt.compensation;
        let outcome = self.refund_once(&comp).await;
        let max_attempts = match outcome {
            CompensationOutcome::Unknown { .. } => self.config.max_compensation_unknown_attempts,
            CompensationOutcome::Succeeded | CompensationOutcome::Failed { .. } => {
                self.config.max_compensation_attempts
            }
        };
        let retry_after_ms = self.config.compensation_backoff_ms(comp.attempts);
        let done = self
            .store
            .finish_compensation_attempt(&CompensationResult {
                compensation_id: comp.compensation_id,
                outcome,
                retry_after_ms,
                max_attempts,
            })
            .await?;
        self.faults.after_commit(CommitPoint::CompensationFinish).await;
        self.after_attempt(row, &done, retry_after_ms, report).await
    }

    /// The outbox row of a compensation that is not due: done with when the
    /// compensation is settled, else back when it is due (backing off, or
    /// leased to a live attempt elsewhere).
    async fn compensation_not_due(
        &self,
        row: &OutboxEvent,
        id: CompensationId,
        report: &mut DispatchReport,
    ) -> Result<(), StoreError> {
        let c = self.store.compensation(id).await?;
        match c.status {
            CompensationStatus::Succeeded => self.store.complete_outbox(&row.event_id, row.outbox_id).await,
            CompensationStatus::Failed => {
                report.refunds_failed += 1;
                self.store.complete_outbox(&row.event_id, row.outbox_id).await
            }
            CompensationStatus::Requested | CompensationStatus::InFlight => {
                let now_ms = self.store.now_ms().await?;
                self.retry_row(row, "compensation not due yet", c.next_attempt_at_ms - now_ms).await
            }
        }
    }

    /// One refund call for `comp`'s current attempt, under the
    /// compensation's own key, and what it came to.
    async fn refund_once(&self, comp: &Compensation) -> CompensationOutcome {
        let n = comp.attempts;
        let definite_failure = |error: String| CompensationOutcome::Failed { attempt: n, error };
        let previous_unknown = comp.last_error.as_deref().is_some_and(|e| e.starts_with(UNKNOWN_OUTCOME_PREFIX));
        let refund_key = if planted!(self.faults, RefundNewKeyPerRetry) && previous_unknown {
            // The planted bug: after an unknown outcome, "start a fresh refund" under a new key.
            CompensationId::from_u128(comp.compensation_id.as_uuid().as_u128() ^ u128::from(n as u32))
        } else {
            comp.compensation_id
        };
        match self.provider.refund(refund_key, comp.payment_op_id, comp.amount_cents).await {
            Ok(RefundStatus::Succeeded) => CompensationOutcome::Succeeded,
            Ok(RefundStatus::Failed { reason }) => definite_failure(format!("refund failed: {reason}")),
            Err(ProviderError::Unknown(e)) => CompensationOutcome::Unknown { attempt: n, error: e },
            // Refused or unreachable: nothing happened at the provider through this attempt.
            Err(e) => definite_failure(e.to_string()),
        }
    }

    /// The outbox row after an attempt was recorded: done with once the
    /// compensation is settled, else retried after the backoff.
    async fn after_attempt(
        &self,
        row: &OutboxEvent,
        done: &Compensation,
        retry_after_ms: i64,
        report: &mut DispatchReport,
    ) -> Result<(), StoreError> {
        match done.status {
            CompensationStatus::Succeeded => {
                report.refunds_succeeded += 1;
                self.store.complete_outbox(&row.event_id, row.outbox_id).await
            }
            CompensationStatus::Failed => {
                report.refunds_failed += 1;
                tracing::error!(
                    compensation_id = %done.compensation_id,
                    last_error = done.last_error.as_deref().unwrap_or(""),
                    "compensation failed for good"
                );
                self.store.complete_outbox(&row.event_id, row.outbox_id).await
            }
            // Retrying; or this attempt's result was stale (another attempt took
            // over) and that attempt's dispatcher carries on.
            CompensationStatus::Requested | CompensationStatus::InFlight => {
                report.refunds_retrying += 1;
                let why = done.last_error.clone().unwrap_or_else(|| "refund retry".into());
                self.retry_row(row, &why, retry_after_ms).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DispatchReport;

    /// Every counter but `claimed` adds up; `claimed` stays the pass's own.
    #[test]
    fn absorb_adds_every_outcome_counter() {
        let one = DispatchReport {
            claimed: 7,
            confirmed: 1,
            declined: 2,
            unknown: 3,
            compensations_opened: 4,
            refunds_succeeded: 5,
            refunds_retrying: 6,
            refunds_failed: 7,
            refunds_taken_over: 8,
            errors: 9,
        };
        let mut total = DispatchReport { claimed: 1, ..DispatchReport::default() };
        total.absorb(&one);
        total.absorb(&one);
        let want = DispatchReport {
            claimed: 1,
            confirmed: 2,
            declined: 4,
            unknown: 6,
            compensations_opened: 8,
            refunds_succeeded: 10,
            refunds_retrying: 12,
            refunds_failed: 14,
            refunds_taken_over: 16,
            errors: 18,
        };
        assert_eq!(total, want);
    }
}
