//! Provider webhooks: the payload and its HMAC-SHA256 signature.
//!
//! The provider POSTs the JSON body of a [`WebhookEvent`] with two headers:
//! [`TIMESTAMP_HEADER`] (ms since the Unix epoch, by the provider's clock) and
//! [`SIGNATURE_HEADER`] (`v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>`).
//! The receiver verifies the raw body before parsing it ([`verify`]), refusing
//! timestamps outside a tolerance window (replays of old captures) and
//! comparing the MAC in constant time.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

/// Header carrying the signing timestamp (ms since the Unix epoch).
pub const TIMESTAMP_HEADER: &str = "x-provider-timestamp";
/// Header carrying the signature, `v1=<64 hex digits>`.
pub const SIGNATURE_HEADER: &str = "x-provider-signature";
/// A sensible tolerance between the signer's and the verifier's clocks: 5 minutes.
pub const DEFAULT_TOLERANCE_MS: i64 = 5 * 60 * 1000;
/// Upper bound on a webhook body a receiver should accept.
pub const MAX_WEBHOOK_BYTES: usize = 16 * 1024;

/// What happened at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebhookKind {
    /// A payment was charged.
    PaymentSucceeded,
    /// A payment was declined or canceled: nothing charged.
    PaymentFailed,
    /// A refund went through.
    RefundSucceeded,
    /// A refund attempt failed.
    RefundFailed,
}

/// A webhook's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEvent {
    /// The provider's unique event id (`evt_...`); a duplicate delivery repeats it.
    pub provider_event_id: String,
    /// The provider's sequence number for events, increasing in creation order
    /// (deliveries may still arrive reordered).
    pub sequence: u64,
    /// What happened.
    pub kind: WebhookKind,
    /// The payment's idempotency key: the store's `payment_op_id`.
    pub payment_key: Uuid,
    /// The provider's payment id.
    pub provider_payment_id: String,
    /// For refund events: the refund's idempotency key (the compensation id).
    pub refund_key: Option<Uuid>,
    /// For failures: the provider's reason.
    pub failure_reason: Option<String>,
    /// When the provider created the event (its clock, ms since the Unix epoch).
    pub created_at_ms: i64,
}

/// Why a webhook was refused. Each is a 4xx for the sender.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// A signature header is missing.
    #[error("missing header {0}")]
    MissingHeader(&'static str),
    /// The timestamp header is not an integer.
    #[error("malformed timestamp header")]
    BadTimestamp,
    /// The timestamp is outside the tolerance window.
    #[error("timestamp {timestamp_ms} outside tolerance of {tolerance_ms} ms around {now_ms}")]
    StaleTimestamp {
        /// The signed timestamp.
        timestamp_ms: i64,
        /// The verifier's clock.
        now_ms: i64,
        /// The window.
        tolerance_ms: i64,
    },
    /// The signature header is not `v1=<hex>`.
    #[error("malformed signature header")]
    BadSignatureFormat,
    /// The MAC does not match.
    #[error("signature mismatch")]
    SignatureMismatch,
    /// The body is larger than [`MAX_WEBHOOK_BYTES`].
    #[error("webhook body too large")]
    TooLarge,
    /// The verified body is not a [`WebhookEvent`].
    #[error("malformed webhook body: {0}")]
    BadBody(String),
}

fn mac(secret: &[u8], timestamp_ms: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut m = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    m.update(timestamp_ms.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    m
}

/// The [`SIGNATURE_HEADER`] value for `body` signed at `timestamp_ms` with `secret`.
pub fn sign(secret: &[u8], timestamp_ms: i64, body: &[u8]) -> String {
    format!("v1={}", hex::encode(mac(secret, timestamp_ms, body).finalize().into_bytes()))
}

/// Verifies the raw `body` against the header values (`None` when absent),
/// with the verifier's clock `now_ms` and a window of `tolerance_ms` either side.
/// The MAC comparison is constant-time.
pub fn verify(
    secret: &[u8],
    timestamp_header: Option<&str>,
    signature_header: Option<&str>,
    body: &[u8],
    now_ms: i64,
    tolerance_ms: i64,
) -> Result<(), WebhookError> {
    if body.len() > MAX_WEBHOOK_BYTES {
        return Err(WebhookError::TooLarge);
    }
    let ts = timestamp_header.ok_or(WebhookError::MissingHeader(TIMESTAMP_HEADER))?;
    let sig = signature_header.ok_or(WebhookError::MissingHeader(SIGNATURE_HEADER))?;
    let timestamp_ms: i64 = ts.trim().parse().map_err(|_| WebhookError::BadTimestamp)?;
    if timestamp_ms.abs_diff(now_ms) > tolerance_ms.unsigned_abs() {
        return Err(WebhookError::StaleTimestamp { timestamp_ms, now_ms, tolerance_ms });
    }
    let hex_sig = sig.trim().strip_prefix("v1=").ok_or(WebhookError::BadSignatureFormat)?;
    let raw = hex::decode(hex_sig).map_err(|_| WebhookError::BadSignatureFormat)?;
    mac(secret, timestamp_ms, body).verify_slice(&raw).map_err(|_| WebhookError::SignatureMismatch)
}

/// [`verify`], then parses the body.
pub fn verify_and_parse(
    secret: &[u8],
    timestamp_header: Option<&str>,
    signature_header: Option<&str>,
    body: &[u8],
    now_ms: i64,
    tolerance_ms: i64,
) -> Result<WebhookEvent, WebhookError> {
    verify(secret, timestamp_header, signature_header, body, now_ms, tolerance_ms)?;
    serde_json::from_slice(body).map_err(|e| WebhookError::BadBody(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_then_verify_roundtrip_and_tamper() {
        let body = br#"{"a":1}"#;
        let sig = sign(b"k", 1_000, body);
        assert_eq!(verify(b"k", Some("1000"), Some(&sig), body, 1_000, 10), Ok(()));
        assert_eq!(
            verify(b"k", Some("1000"), Some(&sig), br#"{"a":2}"#, 1_000, 10),
            Err(WebhookError::SignatureMismatch)
        );
        assert_eq!(verify(b"other", Some("1000"), Some(&sig), body, 1_000, 10), Err(WebhookError::SignatureMismatch));
        // the timestamp is covered by the MAC
        assert_eq!(verify(b"k", Some("1001"), Some(&sig), body, 1_000, 10), Err(WebhookError::SignatureMismatch));
        assert!(matches!(
            verify(b"k", Some("1000"), Some(&sig), body, 1_011, 10),
            Err(WebhookError::StaleTimestamp { .. })
        ));
        assert!(matches!(
            verify(b"k", Some("1000"), Some(&sig), body, 989, 10),
            Err(WebhookError::StaleTimestamp { .. })
        ));
        assert_eq!(verify(b"k", None, Some(&sig), body, 1_000, 10), Err(WebhookError::MissingHeader(TIMESTAMP_HEADER)));
        assert_eq!(verify(b"k", Some("x"), Some(&sig), body, 1_000, 10), Err(WebhookError::BadTimestamp));
        assert_eq!(verify(b"k", Some("1000"), Some("zz"), body, 1_000, 10), Err(WebhookError::BadSignatureFormat));
        assert_eq!(verify(b"k", Some("1000"), Some("v1=00"), body, 1_000, 10), Err(WebhookError::SignatureMismatch));
    }
}
