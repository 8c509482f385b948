//! The provider's HTTP wire format, shared by [`HttpProvider`](super::HttpProvider)
//! (the client) and the fake provider (the server), so they cannot drift.
//!
//! - `POST /v1/payments`, header [`IDEMPOTENCY_KEY_HEADER`], body [`CreatePaymentBody`]
//!   -> 200 [`PaymentRecord`]; a replay returns the first record; a replay with
//!   other parameters is a 409 problem.
//! - `GET /v1/payments/{idempotency_key}` -> 200 [`PaymentRecord`], 404 if never processed.
//! - `POST /v1/payments/{idempotency_key}/cancel` -> 200 [`PaymentRecord`] (final).
//! - `POST /v1/refunds`, header [`IDEMPOTENCY_KEY_HEADER`], body [`CreateRefundBody`]
//!   -> 200 [`RefundRecord`] (succeeded), 402 problem `refund-failed` (not
//!   recorded against the key: a retry tries again), 404 unknown payment,
//!   409 key reused or payment not charged.
//!
//! Errors are RFC 9457 problem+json ([`Problem`]).

use super::provider::{ProviderPayment, ProviderStatus};
use crate::model::OrderId;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The request header carrying the idempotency key.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// Body of `POST /v1/payments`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatePaymentBody {
    /// Amount in cents, >= 0.
    pub amount_cents: i64,
    /// The order paid for.
    pub order_id: OrderId,
}

/// The provider's record of a payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentRecord {
    /// Provider payment id (`pay_...`).
    pub id: String,
    /// The idempotency key it was created with.
    pub idempotency_key: Uuid,
    /// The order paid for (nil for a cancel tombstone).
    pub order_id: OrderId,
    /// Amount in cents.
    pub amount_cents: i64,
    /// `succeeded`, `failed` or `processing`.
    pub status: String,
    /// Why it failed (`card_declined`, `canceled`), for `failed`.
    pub failure_reason: Option<String>,
}

impl PaymentRecord {
    /// The record as the workflow sees it; `None` for an unknown status string.
    pub fn to_provider_payment(&self) -> Option<ProviderPayment> {
        let status = match self.status.as_str() {
            "succeeded" => ProviderStatus::Succeeded,
            "processing" => ProviderStatus::Processing,
            "failed" => {
                ProviderStatus::Failed { reason: self.failure_reason.clone().unwrap_or_else(|| "failed".into()) }
            }
            _ => return None,
        };
        Some(ProviderPayment { provider_payment_id: self.id.clone(), status })
    }
}

/// Body of `POST /v1/refunds`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateRefundBody {
    /// The idempotency key of the payment to refund.
    pub payment_key: Uuid,
    /// Amount in cents, 0 < amount <= the payment's amount.
    pub amount_cents: i64,
}

/// The provider's record of a succeeded refund.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundRecord {
    /// Provider refund id (`re_...`).
    pub id: String,
    /// The refund's idempotency key.
    pub idempotency_key: Uuid,
    /// The payment refunded.
    pub payment_key: Uuid,
    /// Amount in cents.
    pub amount_cents: i64,
    /// Always `succeeded` (a failed refund is a 402 problem).
    pub status: String,
}

/// An RFC 9457 problem document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// A stable URI-reference naming the error kind (e.g. `/problems/idempotency-key-reused`).
    #[serde(rename = "type")]
    pub type_: String,
    /// Short human summary of the kind.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// This occurrence's detail.
    pub detail: String,
}

/// The content type of [`Problem`] bodies.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";
