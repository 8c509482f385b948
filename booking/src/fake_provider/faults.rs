//! The fake provider's fault knobs. Every probability is in `0.0..=1.0`;
//! draws come from the provider's seeded RNG, in request order.

use serde::{Deserialize, Serialize};

/// Fault knobs, settable at construction and via `POST /admin/faults`.
/// Missing JSON fields take their (fault-free) defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderFaults {
    /// Added to every `/v1` request before it is handled, in ms (the least,
    /// when `latency_max_ms` is above it).
    pub latency_ms: u64,
    /// When above `latency_ms`: each `/v1` request waits a uniform draw in
    /// `latency_ms..=latency_max_ms` instead, in ms.
    pub latency_max_ms: u64,
    /// Probability that a `/v1` request fails with a 503 before it is processed.
    pub error_rate: f64,
    /// Probability that a create or refund is processed but its response is
    /// lost (the client gets a 500): an unknown outcome.
    pub lost_response_rate: f64,
    /// Probability that a new payment is declined (`card_declined`).
    pub decline_rate: f64,
    /// Probability that a new payment answers `processing` and succeeds only
    /// after `late_success_delay_ms` (then a `payment_succeeded` webhook).
    pub late_success_rate: f64,
    /// Delay of a late success, in ms.
    pub late_success_delay_ms: u64,
    /// Each webhook is delivered after a uniform delay in `0..=webhook_delay_ms`.
    pub webhook_delay_ms: u64,
    /// Probability that a webhook is delivered twice (each copy with its own delay).
    pub webhook_duplicate_rate: f64,
    /// Probability that a webhook is held back an extra `2 * webhook_delay_ms + 1` ms,
    /// so that later events overtake it.
    pub webhook_reorder_rate: f64,
    /// Probability that a webhook is never delivered.
    pub webhook_drop_rate: f64,
    /// Probability that a webhook copy is held back an extra `webhook_hold_ms`
    /// (a delayed callback).
    pub webhook_hold_rate: f64,
    /// How long a held-back webhook copy waits beyond its delay, in ms.
    pub webhook_hold_ms: u64,
    /// Probability that a refund attempt fails (402), retryable.
    pub refund_failure_rate: f64,
    /// Every refund key fails its first N attempts (402).
    pub refund_fail_first_n: u32,
    /// Partial-refund semantics that do not protect the caller, as some real
    /// providers have: each new refund idempotency key is a separate refund,
    /// accepted even when the payment's refunds would then exceed the charged
    /// amount (the same key still replays the same refund; a payment that is
    /// not charged is still not refundable). Default false: a refund beyond
    /// the payment's amount is refused (409 `not-refundable`).
    pub lenient_refunds: bool,
}

impl Default for ProviderFaults {
    fn default() -> Self {
        Self {
            latency_ms: 0,
            latency_max_ms: 0,
            error_rate: 0.0,
            lost_response_rate: 0.0,
            decline_rate: 0.0,
            late_success_rate: 0.0,
            late_success_delay_ms: 0,
            webhook_delay_ms: 0,
            webhook_duplicate_rate: 0.0,
            webhook_reorder_rate: 0.0,
            webhook_drop_rate: 0.0,
            webhook_hold_rate: 0.0,
            webhook_hold_ms: 0,
            refund_failure_rate: 0.0,
            refund_fail_first_n: 0,
            lenient_refunds: false,
        }
    }
}

/// Upper bound on every delay knob: 1 hour.
pub const MAX_FAULT_DELAY_MS: u64 = 60 * 60 * 1000;

impl ProviderFaults {
    /// Checks every probability is in `0..=1` and every delay <= [`MAX_FAULT_DELAY_MS`].
    pub fn validate(&self) -> Result<(), String> {
        let probs = [
            ("error_rate", self.error_rate),
            ("lost_response_rate", self.lost_response_rate),
            ("decline_rate", self.decline_rate),
            ("late_success_rate", self.late_success_rate),
            ("webhook_duplicate_rate", self.webhook_duplicate_rate),
            ("webhook_reorder_rate", self.webhook_reorder_rate),
            ("webhook_drop_rate", self.webhook_drop_rate),
            ("webhook_hold_rate", self.webhook_hold_rate),
            ("refund_failure_rate", self.refund_failure_rate),
        ];
        for (name, p) in probs {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} must be in 0..=1"));
            }
        }
        for (name, d) in [
            ("latency_ms", self.latency_ms),
            ("latency_max_ms", self.latency_max_ms),
            ("webhook_hold_ms", self.webhook_hold_ms),
            ("late_success_delay_ms", self.late_success_delay_ms),
            ("webhook_delay_ms", self.webhook_delay_ms),
        ] {
            if d > MAX_FAULT_DELAY_MS {
                return Err(format!("{name} must be <= {MAX_FAULT_DELAY_MS}"));
            }
        }
        Ok(())
    }
}
