//! The payment provider's health as the admission law reads it: calls,
//! errors and latency of payment creations over the last window, measured
//! by a wrapper around the service's provider client.

use crate::clock::Clock;
use crate::model::{CompensationId, PaymentOpId};
use crate::payment::provider::{CreatePayment, PaymentProvider, ProviderError, ProviderPayment, RefundStatus};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};

/// Latency samples one window keeps at most (later calls count, their latency is not kept).
pub const MAX_LATENCY_SAMPLES: usize = 4_096;

/// One window's readings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProviderReading {
    /// Payment creations answered in the window.
    pub calls: u64,
    /// Of those, errors (unknown outcome, unreachable, refused).
    pub errors: u64,
    /// Their p95 latency, ms (0: no call).
    pub latency_p95_ms: u64,
}

#[derive(Debug, Default)]
struct Window {
    calls: u64,
    errors: u64,
    latencies_ms: Vec<u64>,
}

/// Counts payment creations as they pass; [`ProviderHealth::take`] reads and resets.
#[derive(Debug, Default)]
pub struct ProviderHealth {
    window: Mutex<Window>,
}

impl ProviderHealth {
    /// Records one creation that took `latency_ms` and failed or not.
    pub fn record(&self, latency_ms: u64, failed: bool) {
        let mut w = self.window.lock().expect("provider health lock");
        w.calls += 1;
        w.errors += u64::from(failed);
        if w.latencies_ms.len() < MAX_LATENCY_SAMPLES {
            w.latencies_ms.push(latency_ms);
        }
    }

    /// The window's readings; starts a new window.
    pub fn take(&self) -> ProviderReading {
        let mut w = std::mem::take(&mut *self.window.lock().expect("provider health lock"));
        w.latencies_ms.sort_unstable();
        let latency_p95_ms = match w.latencies_ms.len() {
            0 => 0,
            n => w.latencies_ms[(n * 95).div_ceil(100) - 1],
        };
        ProviderReading { calls: w.calls, errors: w.errors, latency_p95_ms }
    }
}

/// A provider client that reports each payment creation to a [`ProviderHealth`].
pub struct MeasuredProvider {
    inner: Arc<dyn PaymentProvider>,
    health: Arc<ProviderHealth>,
    clock: Arc<dyn Clock>,
}

impl MeasuredProvider {
    /// Wraps `inner`, timing calls by `clock`.
    pub fn new(inner: Arc<dyn PaymentProvider>, health: Arc<ProviderHealth>, clock: Arc<dyn Clock>) -> Self {
        Self { inner, health, clock }
    }
}

#[async_trait]
impl PaymentProvider for MeasuredProvider {
    async fn create_payment(&self, req: &CreatePayment) -> Result<ProviderPayment, ProviderError> {
        let started_ms = self.clock.now_ms();
        let answer = self.inner.create_payment(req).await;
        let latency_ms = u64::try_from(self.clock.now_ms() - started_ms).unwrap_or(0);
        self.health.record(latency_ms, answer.is_err());
        answer
    }

    async fn fetch_payment(&self, idempotency_key: PaymentOpId) -> Result<Option<ProviderPayment>, ProviderError> {
        self.inner.fetch_payment(idempotency_key).await
    }

    async fn cancel_payment(&self, idempotency_key: PaymentOpId) -> Result<ProviderPayment, ProviderError> {
        self.inner.cancel_payment(idempotency_key).await
    }

    async fn refund(
        &self,
        refund_key: CompensationId,
        payment_key: PaymentOpId,
        amount_cents: i64,
    ) -> Result<RefundStatus, ProviderError> {
        self.inner.refund(refund_key, payment_key, amount_cents).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reads_calls_errors_and_p95_then_resets() {
        let h = ProviderHealth::default();
        assert_eq!(h.take(), ProviderReading::default());
        for ms in 1..=100 {
            h.record(ms, ms % 10 == 0);
        }
        assert_eq!(h.take(), ProviderReading { calls: 100, errors: 10, latency_p95_ms: 95 });
        assert_eq!(h.take(), ProviderReading::default(), "a new window");
        h.record(7, false);
        assert_eq!(h.take().latency_p95_ms, 7);
    }
}
