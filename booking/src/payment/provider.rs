//! The payment provider as the workflow sees it: four idempotent calls and an
//! error type that keeps "we do not know" apart from "it was refused".
//!
//! Idempotency keys: a charge is keyed by its `payment_op_id`, a refund by its
//! `compensation_id`. Repeating a call with the same key never charges or
//! refunds twice; it returns the provider's record of the first call.

use crate::model::{CompensationId, OrderId, PaymentOpId};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Where the provider says a payment is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ProviderStatus {
    /// Charged.
    Succeeded,
    /// Declined (or canceled before it was charged): nothing charged, ever.
    Failed {
        /// The provider's reason (e.g. `card_declined`, `canceled`).
        reason: String,
    },
    /// Accepted, outcome not decided yet: ask again later (or wait for a webhook).
    Processing,
}

/// The provider's record of a payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderPayment {
    /// The provider's id for the payment (1..=128 characters).
    pub provider_payment_id: String,
    /// Its status.
    #[serde(flatten)]
    pub status: ProviderStatus,
}

/// Where the provider says a refund is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RefundStatus {
    /// The money went back.
    Succeeded,
    /// The refund was refused; a retry with the same key may succeed.
    Failed {
        /// The provider's reason.
        reason: String,
    },
}

/// Why a provider call has no definite answer, or was refused.
///
/// `Unknown` is an outcome, not a failure: the call may or may not have been
/// processed. Only `Refused` says the provider did not act on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// Timeout, connection reset after the request was sent, a 5xx, or an
    /// unreadable answer: the provider may have processed the request.
    #[error("outcome unknown: {0}")]
    Unknown(String),
    /// The request could not reach the provider at all (connect refused,
    /// DNS): it was certainly not processed. Safe to retry; never a decline.
    #[error("provider unreachable: {0}")]
    Unreachable(String),
    /// A definite 4xx refusal of the request itself (bad parameters,
    /// idempotency key reused with different parameters). Not a decline of
    /// the card: the payment did not happen through this request.
    #[error("refused by provider ({status}): {detail}")]
    Refused {
        /// The HTTP status (or 400 for a local refusal).
        status: u16,
        /// The provider's problem detail.
        detail: String,
    },
}

/// Create a payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatePayment {
    /// The idempotency key: the store's `payment_op_id`.
    pub idempotency_key: PaymentOpId,
    /// Amount in cents (>= 0).
    pub amount_cents: i64,
    /// The order it pays for.
    pub order_id: OrderId,
}

/// A payment provider. Every method is idempotent by its key and may be
/// called concurrently from several hosts.
#[async_trait]
pub trait PaymentProvider: Send + Sync + 'static {
    /// Creates (or replays) the payment keyed by `req.idempotency_key`.
    /// `Ok` carries the provider's current record: `Succeeded`, `Failed` (a
    /// decline: nothing charged) or `Processing` (decided later).
    async fn create_payment(&self, req: &CreatePayment) -> Result<ProviderPayment, ProviderError>;

    /// The provider's record of the payment created with `idempotency_key`;
    /// `Ok(None)` when the provider has never processed such a request (it
    /// may still be in flight).
    async fn fetch_payment(&self, idempotency_key: PaymentOpId) -> Result<Option<ProviderPayment>, ProviderError>;

    /// Cancels the payment keyed by `idempotency_key` so that it can never be
    /// charged: a request never seen is tombstoned (a later create with that
    /// key answers `Failed { reason: "canceled" }`), a processing payment is
    /// canceled. Returns the final record: `Failed` (nothing charged) or
    /// `Succeeded` (it was charged before the cancel: refund it).
    async fn cancel_payment(&self, idempotency_key: PaymentOpId) -> Result<ProviderPayment, ProviderError>;

    /// Gives back `amount_cents` of the payment keyed by `payment_key`, as the
    /// refund keyed by `refund_key` (the compensation id). Idempotent by `refund_key`:
    /// a repeat after success answers `Succeeded` again without moving money.
    async fn refund(
        &self,
        refund_key: CompensationId,
        payment_key: PaymentOpId,
        amount_cents: i64,
    ) -> Result<RefundStatus, ProviderError>;
}

/// A provider for a service that takes no payments (a router under test, a
/// benchmark): every call fails [`ProviderError::Unreachable`], which says
/// the request was certainly not processed, so nothing is ever charged or
/// taken for a decline through it.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnreachableProvider;

impl UnreachableProvider {
    fn refuse<T>() -> Result<T, ProviderError> {
        Err(ProviderError::Unreachable("no payment provider is wired to this service".into()))
    }
}

#[async_trait]
impl PaymentProvider for UnreachableProvider {
    async fn create_payment(&self, _: &CreatePayment) -> Result<ProviderPayment, ProviderError> {
        Self::refuse()
    }
    async fn fetch_payment(&self, _: PaymentOpId) -> Result<Option<ProviderPayment>, ProviderError> {
        Self::refuse()
    }
    async fn cancel_payment(&self, _: PaymentOpId) -> Result<ProviderPayment, ProviderError> {
        Self::refuse()
    }
    async fn refund(&self, _: CompensationId, _: PaymentOpId, _: i64) -> Result<RefundStatus, ProviderError> {
        Self::refuse()
    }
}
