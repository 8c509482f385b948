//! The reconciler: for open payments whose outcome is unknown, asks the
//! provider (`fetch_payment`) until it is known; at the payment deadline (by
//! the store's clock) asks one last time and, if still unresolved, releases
//! the seats with the reason recorded.
//!
//! "Not found" is not a failure: the create request may still be in flight.
//! It only counts at the deadline, as "unresolved"; the dispatcher then
//! cancels the payment at the provider so that a late arrival cannot charge
//! silently (or, if it did, opens a compensation).

use super::Workflow;
use super::dispatch::{Applied, DispatchReport};
use crate::model::PaymentStatus;
use crate::payment::provider::ProviderStatus;
use crate::store::StoreError;
use serde::{Deserialize, Serialize};

/// What one reconcile pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconcileReport {
    /// Open payments looked at.
    pub examined: u32,
    /// Provider asked.
    pub fetched: u32,
    /// Resolved as charged (booking, or compensation if the seats were gone).
    pub succeeded: u32,
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
    /// One pass over at most `reconcile_batch` open payments, oldest deadline first.
    /// Pending payments before their deadline are the dispatcher's and are skipped.
    /// Errors only when listing open payments fails.
    pub async fn reconcile_once(&self) -> Result<ReconcileReport, StoreError> {
        let open = self.store.open_payments(self.config.reconcile_batch).await?;
        let mut report = ReconcileReport { examined: open.len() as u32, ..ReconcileReport::default() };
        for (order, op) in open {
            let now_ms = match self.store.now_ms().await {
                Ok(t) => t,
                Err(e) => {
                    report.errors += 1;
                    tracing::warn!(error = %e, "reconcile: store clock unavailable");
                    continue;
                }
            };
            let past_deadline = now_ms >= order.payment_deadline_at_ms;
            if op.status == PaymentStatus::Pending && !past_deadline {
                continue;
            }
            report.fetched += 1;
            let unresolved_why = match self.provider.fetch_payment(op.payment_op_id).await {
                Ok(Some(p)) if p.status != ProviderStatus::Processing => {
                    let mut d = DispatchReport::default();
                    match self.apply_payment(op.payment_op_id, &p, &mut d).await {
                        Ok(Applied::Final) => {
                            report.succeeded += d.confirmed + d.compensations_opened;
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
                Ok(Some(_)) => "provider: payment still processing".to_string(),
                Ok(None) => "provider has no record of the payment".to_string(),
                Err(e) => format!("provider status unknown: {e}"),
            };
            if !past_deadline {
                report.still_unknown += 1;
                continue;
            }
            let reason = format!("payment unresolved at its deadline ({unresolved_why}); seats released");
            match self.store.release_unresolved_payment(op.payment_op_id, &reason).await {
                Ok(_) => report.released += 1,
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
