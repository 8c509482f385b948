//! The fault kind `faults.provider`: its table and its rows of the knob table.

use crate::knobs::row::*;
use crate::model::RangeMs;
use serde::{Deserialize, Serialize};

/// Payment provider behaviour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provider {
    /// Probability that a charge is processed but its answer is lost (unknown).
    pub unknown_probability: f64,
    /// Probability that a charge is declined.
    pub decline_probability: f64,
    /// Probability that a request fails with an error before processing (retryable).
    pub error_rate: f64,
    /// Provider response time, ms: each request waits a uniform draw in `min..=max`.
    pub latency_ms: RangeMs,
    /// Probability that a charge answers `processing` and succeeds only after the payment deadline.
    pub late_success_probability: f64,
    /// Probability that a refund/void attempt fails.
    pub refund_failure_probability: f64,
    /// Behave like a lenient real provider: a refund under a new idempotency
    /// key is accepted even beyond the charged amount (each key is a separate
    /// refund), so only holdfast's own discipline prevents a double refund.
    /// Default: false (the fake refuses a refund beyond the charge).
    #[serde(default)]
    pub lenient_refunds: bool,
    /// When the faults hold, ms into the fault phase (a brownout mid-sale);
    /// absent: the whole fault phase. `max` within the fault phase.
    #[serde(default)]
    pub window_ms: Option<RangeMs>,
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str = "[faults.provider]\nunknown_probability = 0.1\ndecline_probability = 0.05\nerror_rate = 0.05\nlatency_ms = { min = 10, max = 200 }\nlate_success_probability = 0.3\nrefund_failure_probability = 0.2\nlenient_refunds = true\nwindow_ms = { min = 1000, max = 2000 }\n";

/// The keys of `[faults.provider]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.provider",
        meaning: "the payment provider misbehaves",
        check: Check::Table,
        access: table!(faults.provider),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::Provider),
        ..ROW
    },
    Knob {
        key: "faults.provider.unknown_probability",
        meaning: "probability that a charge is processed but its answer lost",
        check: P,
        access: opt!(faults.provider => unknown_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Provider),
        ..ROW
    },
    Knob {
        key: "faults.provider.decline_probability",
        meaning: "probability that a charge is declined",
        check: P,
        access: opt!(faults.provider => decline_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Provider),
        ..ROW
    },
    Knob {
        key: "faults.provider.error_rate",
        meaning: "probability that a request fails before processing (retryable)",
        check: P,
        rule: Some(Rule {
            broken: |s| {
                s.faults
                    .provider
                    .as_ref()
                    .is_some_and(|p| p.unknown_probability + p.decline_probability + p.error_rate > 1.0)
            },
            message: "unknown_probability + decline_probability + error_rate exceed 1",
        }),
        note: "`unknown_probability + decline_probability + error_rate <= 1`",
        access: opt!(faults.provider => error_rate),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Provider),
    },
    Knob {
        key: "faults.provider.latency_ms",
        meaning: "provider response time, `{ min, max }`: each request waits a uniform draw in `min..=max`",
        check: range(MAX_LATENCY_MS),
        access: opt!(faults.provider => latency_ms),
        ..ROW
    },
    Knob {
        key: "faults.provider.late_success_probability",
        meaning: "probability that a charge answers `processing` and succeeds only 5 s after the payment deadline (`simulator::world::plan::LATE_SUCCESS_AFTER_DEADLINE_MS`), its callback bringing the outcome",
        check: P,
        access: opt!(faults.provider => late_success_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Provider),
        ..ROW
    },
    Knob {
        key: "faults.provider.refund_failure_probability",
        meaning: "probability that a refund/void attempt fails",
        check: P,
        access: opt!(faults.provider => refund_failure_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Provider),
        ..ROW
    },
    Knob {
        key: "faults.provider.lenient_refunds",
        meaning: "the provider accepts a refund under a new idempotency key even beyond the charged amount (each key a separate refund), as a real provider with partial refunds does; only holdfast's own key discipline then prevents a double refund. Swarm scenarios draw it per seed",
        check: Check::Flag,
        note: "default `false` (the fake refuses a refund beyond the charge)",
        access: opt!(faults.provider => lenient_refunds),
        swarm: Swarm::Lenient,
        ..ROW
    },
    Knob {
        key: "faults.provider.window_ms",
        meaning: "when the provider's faults hold, `{ min, max }` ms into the fault phase (a brownout mid-sale); absent: the whole fault phase",
        check: Check::Range { max: Bound::Of("`phases.fault_ms`", |s| s.phases.fault_ms) },
        access: opt_maybe!(faults.provider => window_ms),
        ..ROW
    },
];
