//! The service's own counters, as `GET /metrics` renders them, summed over
//! every life of every service host and read by the harness once the run
//! settled. The auditor holds them to the outcomes the store recorded
//! (`checks::auditor`): a counter is an answer too, and operators act on it.

use serde::{Deserialize, Serialize};

/// Counter totals of a run's service processes (every host, every life).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceCounters {
    /// `holdfast_holds_acquired_total`.
    pub holds_acquired: u64,
    /// `holdfast_holds_refused_contention_total`.
    pub holds_refused_contention: u64,
    /// `holdfast_seats_expired_unused_total` (seats reclaimed by sweeps and takeovers).
    pub holds_expired_unused: u64,
    /// `holdfast_hold_expiry_lag_ms_sum`: those seats' expiry lags summed, ms.
    pub expiry_lag_ms_sum: u64,
    /// `holdfast_checkouts_total{outcome="created"}`.
    pub checkouts_created: u64,
    /// `holdfast_checkouts_total{outcome="replayed"}`.
    pub checkouts_replayed: u64,
    /// `holdfast_payments_total{outcome="succeeded"}`.
    pub payments_succeeded: u64,
    /// `holdfast_payments_total{outcome="failed"}`.
    pub payments_failed: u64,
    /// `holdfast_payments_total{outcome="late_success"}`.
    pub payments_late_success: u64,
    /// `holdfast_payments_total{outcome="released"}`.
    pub payments_released: u64,
    /// `holdfast_admissions_total`.
    pub admissions: u64,
    /// `holdfast_refunds_total{outcome="succeeded"}`.
    pub refunds_succeeded: u64,
    /// `holdfast_refunds_total{outcome="retrying"}`.
    pub refunds_retrying: u64,
    /// `holdfast_refunds_total{outcome="failed"}`.
    pub refunds_failed: u64,
    /// `holdfast_refunds_taken_over_total`.
    pub refunds_taken_over: u64,
    /// `holdfast_workflow_store_errors_total`: at most the store's refusals,
    /// so not among [`ServiceCounters::named`] (no exact prediction).
    pub workflow_store_errors: u64,
    /// Whether the run ended quiescent (no work in flight when they were read).
    pub settled: bool,
}

impl ServiceCounters {
    /// Every exactly predicted counter by its field name, in declaration order.
    pub fn named(&self) -> [(&'static str, u64); 15] {
        [
            ("holds_acquired", self.holds_acquired),
            ("holds_refused_contention", self.holds_refused_contention),
            ("holds_expired_unused", self.holds_expired_unused),
            ("expiry_lag_ms_sum", self.expiry_lag_ms_sum),
            ("checkouts_created", self.checkouts_created),
            ("checkouts_replayed", self.checkouts_replayed),
            ("payments_succeeded", self.payments_succeeded),
            ("payments_failed", self.payments_failed),
            ("payments_late_success", self.payments_late_success),
            ("payments_released", self.payments_released),
            ("admissions", self.admissions),
            ("refunds_succeeded", self.refunds_succeeded),
            ("refunds_retrying", self.refunds_retrying),
            ("refunds_failed", self.refunds_failed),
            ("refunds_taken_over", self.refunds_taken_over),
        ]
    }
}
