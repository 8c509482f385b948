//! The reconciler: asks the provider (`fetch_payment`) about open payments
//! whose outcome is unknown until it is known; at the payment deadline (by
//! the store's clock) asks one last time and, if still unresolved, releases
//! the seats with the reason recorded.
//!
//! Which payments to ask about is the store's decision, shared by every
//! replica: each pass claims the due ones ([`Store::claim_reconcile`]), and the
//! claim itself moves each to its next check, `reconcile_backoff_base_ms`
//! doubling up to `reconcile_backoff_cap_ms` but never past the deadline while
//! that is ahead. So a payment is fetched once per backoff step in all, not
//! once per pass per replica, and the check at the deadline is never late. A
//! replica that dies holding a claim leaves the payment due again at its next
//! check (at most the cap later).
//!
//! "Not found" is not a failure: the create request may still be in flight.
//! It only counts at the deadline, as "unresolved"; the dispatcher then
//! cancels the payment at the provider so that a late arrival cannot charge
//! silently (or, if it did, opens a compensation).
//!
//! [`Store::claim_reconcile`]: crate::store::Store::claim_reconcile

use super::Workflow;
use super::dispatch::{Applied, DispatchReport};
use super::said;
use crate::fault::CommitPoint;
use crate::model::PaymentStatus;
use crate::payment::provider::ProviderStatus;
use crate::planted;
use crate::store::StoreError;
use serde::{Deserialize, Serialize};

/// What one reconcile pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconcileReport {
    /// Due payments claimed (each is fetched once).
    pub examined: u32,
    /// Provider asked.
    pub fetched: u32,
    /// Resolved as charged and booked.
    pub succeeded: u32,
    /// Resolved as charged after the seats were gone: compensation opened.
    pub compensations_opened: u32,
    /// Resolved as declined.
    pub failed: u32,
    /// Released unresolved at their deadline.
    pub released: u32,
    /// Still unknown after this pass.
    pub still_unknown: u32,
    /// Payments skipped because the store failed on them.
    pub errors: u32,
}

impl Workflow {
    /// One pass: claims at most `reconcile_batch` due payments (oldest
    /// deadline first; see [`Store::claim_reconcile`](crate::store::Store::claim_reconcile))
    /// and asks the provider about each once. Pending payments before their
    /// deadline are the dispatcher's and are never claimed. A payment whose
    /// handling fails (store error) is due again at its next check.
    /// Errors only when the claim fails.
    pub async fn reconcile_once(&self) -> Result<ReconcileReport, StoreError> {
        let claimed = self.store.claim_reconcile(self.config.reconcile_batch, self.config.reconcile_backoff()).await?;
        let mut report = ReconcileReport { examined: claimed.len() as u32, ..ReconcileReport::default() };
        for (order, op) in claimed {
            let now_ms = match self.store.now_ms().await {
                Ok(t) => t,
                Err(e) => {
                    report.errors += 1;
                    tracing::warn!(error = %e, "reconcile: store clock unavailable");
                    continue;
                }
            };
            let past_deadline = now_ms >= order.payment_deadline_at_ms;
            // Claimed at or after its deadline, unless the store's clock went back since.
            if op.status == PaymentStatus::Pending && !past_deadline {
                continue;
            }
            report.fetched += 1;
            let unresolved_why = match self.provider.fetch_payment(op.payment_op_id).await {
                Ok(Some(p)) if p.status != ProviderStatus::Processing => {
                    let mut d = DispatchReport::default();
                    match self.apply_payment(op.payment_op_id, &p, &mut d).await {
                        Ok(Applied::Final) => {
                            report.succeeded += d.confirmed;
                            report.compensations_opened += d.compensations_opened;
                            report.failed += d.declined;
                            continue;
                        }
                        Ok(Applied::Pending(why)) => why,
                        Err(e) => {
                            report.errors += 1;
                            tracing::warn!(payment_op_id = %op.payment_op_id, error = %e, "reconcile: store refused");
                            continue;
                        }
                    }
                }
                Ok(Some(_)) => said::STILL_PROCESSING.to_string(),
                Ok(None) => said::NO_RECORD.to_string(),
                Err(e) => format!("provider status unknown: {e}"),
            };
            // The planted bug: a provider without a final answer taken as no payment.
            let early = planted!(self.faults, ReconcileReleasesEarly);
            if !past_deadline && !early {
                report.still_unknown += 1;
                continue;
            }
            let reason = format!("payment unresolved at its deadline ({unresolved_why}); seats released");
            match self.store.release_unresolved_payment(op.payment_op_id, &reason).await {
                Ok(_) => {
                    self.faults.after_commit(CommitPoint::UnresolvedRelease).await;
                    report.released += 1
                }
                // Resolved meanwhile (webhook, another host): nothing to release.
                Err(StoreError::OrderNotOpen(_)) => {}
                Err(e) => {
                    report.errors += 1;
                    tracing::warn!(payment_op_id = %op.payment_op_id, error = %e, "reconcile: release refused");
                }
            }
        }
        Ok(report)
    }
}
