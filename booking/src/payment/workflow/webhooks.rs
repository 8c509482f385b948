//! Applying provider webhooks. The store's idempotency does the work: a
//! success recorded twice returns the first outcome; a success for an order
//! that no longer owns its seats opens a compensation (never a second ticket);
//! a contradicting outcome after the first is refused by the store and
//! reported as [`WebhookOutcome::Conflict`]. Hence duplicates and reordering
//! change nothing after the first event that decided the payment.
//!
//! The caller verifies the signature first ([`crate::payment::webhook::verify_and_parse`]).

use super::{Workflow, WorkflowError};
use crate::model::{CompensationId, CompensationStatus, PaymentOpId};
use crate::payment::webhook::{WebhookEvent, WebhookKind};
use crate::planted;
use crate::store::{CompensationOutcome, CompensationResult, PaymentSuccess, Recorded, SaleOutcome, StoreError};
use serde::{Deserialize, Serialize};

/// What a webhook changed. Every variant is a 2xx for the provider.
///
/// `decided_now` (the store's [`Recorded::decided_now`]) is true only when
/// this webhook recorded the payment's outcome; a duplicate, or a webhook
/// arriving after the dispatcher or the reconciler recorded it, has false.
/// Count payment outcomes with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum WebhookOutcome {
    /// The payment is (or already was) confirmed with bookings.
    Confirmed {
        /// True when this webhook confirmed it.
        decided_now: bool,
    },
    /// The payment succeeded without seats: a compensation is open (or was).
    Compensating {
        /// True when this webhook opened the compensation.
        decided_now: bool,
    },
    /// The payment is (or already was) recorded declined.
    Declined {
        /// True when this webhook recorded the decline.
        decided_now: bool,
    },
    /// The event contradicts the outcome recorded first; nothing changed.
    Conflict,
    /// A refund's success was recorded; the compensation's status after it
    /// (`Succeeded`, now or before; another status when it had already
    /// failed for good, which operators see).
    RefundRecorded {
        /// The compensation's status after the record.
        status: CompensationStatus,
    },
    /// Nothing to do (e.g. a failed refund attempt: the dispatcher tracks attempts).
    Ignored,
}

impl Workflow {
    /// Applies a verified webhook. Idempotent.
    /// Errors: `UnknownPayment` (no such payment operation), `MissingRefundKey`, `Store`.
    pub async fn handle_webhook(&self, event: &WebhookEvent) -> Result<WebhookOutcome, WorkflowError> {
        let unknown = |e: StoreError| match e {
            StoreError::UnknownPaymentOp(id) => WorkflowError::UnknownPayment(id),
            other => WorkflowError::Store(other),
        };
        // The planted bug: every refund.* callback matched as a success.
        let kind = match event.kind {
            WebhookKind::RefundFailed if planted!(self.faults, WebhookRefundFailedAsSucceeded) => {
                WebhookKind::RefundSucceeded
            }
            kind => kind,
        };
        match kind {
            WebhookKind::PaymentSucceeded => {
                let req = PaymentSuccess {
                    payment_op_id: PaymentOpId::from(event.payment_key),
                    provider_payment_id: event.provider_payment_id.clone(),
                };
                match self.store.record_payment_success(&req).await {
                    Ok(Recorded { outcome: SaleOutcome::Confirmed { .. }, decided_now }) => {
                        Ok(WebhookOutcome::Confirmed { decided_now })
                    }
                    Ok(Recorded { outcome: SaleOutcome::Compensating { .. }, decided_now }) => {
                        self.wake();
                        Ok(WebhookOutcome::Compensating { decided_now })
                    }
                    Err(StoreError::PaymentConflict(_)) => Ok(WebhookOutcome::Conflict),
                    Err(e) => Err(unknown(e)),
                }
            }
            WebhookKind::PaymentFailed => {
                let reason = event.failure_reason.as_deref().unwrap_or("declined (webhook)");
                match self.store.record_payment_failure(PaymentOpId::from(event.payment_key), reason).await {
                    Ok(Recorded { decided_now, .. }) => Ok(WebhookOutcome::Declined { decided_now }),
                    Err(StoreError::PaymentConflict(_)) => Ok(WebhookOutcome::Conflict),
                    Err(e) => Err(unknown(e)),
                }
            }
            WebhookKind::RefundSucceeded => {
                let compensation_id =
                    event.refund_key.map(CompensationId::from).ok_or(WorkflowError::MissingRefundKey)?;
                let done = self
                    .store
                    .finish_compensation_attempt(&CompensationResult {
                        compensation_id,
                        outcome: CompensationOutcome::Succeeded,
                        retry_after_ms: 0,
                        max_attempts: self.config.max_compensation_attempts,
                    })
                    .await?;
                if done.status != CompensationStatus::Succeeded {
                    // Already failed for good: operators see it; the provider's word is logged.
                    tracing::error!(%compensation_id, "refund succeeded at the provider after the compensation was marked failed");
                }
                Ok(WebhookOutcome::RefundRecorded { status: done.status })
            }
            WebhookKind::RefundFailed => Ok(WebhookOutcome::Ignored),
        }
    }
}
