//! The fault kind `faults.delayed_callback`: its table and its rows of the knob table.

use crate::knobs::row::*;
use serde::{Deserialize, Serialize};

/// Delayed, duplicated, reordered payment callbacks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayedCallback {
    /// Probability that a payment callback (each webhook copy) is held back `delay_ms`.
    pub probability: f64,
    /// How long it is held back, ms, 1..=3600000 (exceed `payment_ttl_ms` to arrive after the deadline).
    pub delay_ms: i64,
    /// Probability that a callback is delivered twice.
    pub duplicate_probability: f64,
    /// Probability that a callback is delivered after a later one.
    pub reorder_probability: f64,
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str = "[faults.delayed_callback]\nprobability = 0.2\ndelay_ms = 25000\nduplicate_probability = 0.2\nreorder_probability = 0.1\n";

/// The keys of `[faults.delayed_callback]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.delayed_callback",
        meaning: "payment callbacks late, twice or out of order",
        check: Check::Table,
        access: table!(faults.delayed_callback),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::DelayedCallback),
        ..ROW
    },
    Knob {
        key: "faults.delayed_callback.probability",
        meaning: "probability that a payment callback (each webhook copy) is held back `delay_ms`; every copy is otherwise sent within 0–1,000 ms (`simulator::world::plan::WEBHOOK_JITTER_MS`). Late successes are `faults.provider.late_success_probability`",
        check: P,
        access: opt!(faults.delayed_callback => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::DelayedCallback),
        ..ROW
    },
    Knob {
        key: "faults.delayed_callback.delay_ms",
        meaning: "how much later a held-back callback arrives; above `payment_ttl_ms` it arrives after the deadline",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.delayed_callback => delay_ms),
        shrink: LADDER_MS,
        ..ROW
    },
    Knob {
        key: "faults.delayed_callback.duplicate_probability",
        meaning: "probability that a callback is delivered twice",
        check: P,
        access: opt!(faults.delayed_callback => duplicate_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::DelayedCallback),
        ..ROW
    },
    Knob {
        key: "faults.delayed_callback.reorder_probability",
        meaning: "probability that a callback is held back a further 2,001 ms, so that later ones overtake it",
        check: P,
        access: opt!(faults.delayed_callback => reorder_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::DelayedCallback),
        ..ROW
    },
];
