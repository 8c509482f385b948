//! The fault kind `faults.paused_client`: its table and its rows of the knob table.

use crate::knobs::row::*;
use serde::{Deserialize, Serialize};

/// Paused clients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PausedClient {
    /// Probability that a user pauses right after acquiring a hold.
    pub probability: f64,
    /// How long it stays paused, ms, 1..=3600000 (exceed `hold_ttl_ms` to outlive the hold).
    pub pause_ms: i64,
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str = "[faults.paused_client]\nprobability = 0.2\npause_ms = 15000\n";

/// The keys of `[faults.paused_client]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.paused_client",
        meaning: "paused clients",
        check: Check::Table,
        access: table!(faults.paused_client),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::PausedClient),
        ..ROW
    },
    Knob {
        key: "faults.paused_client.probability",
        meaning: "probability that a user pauses right after acquiring a hold",
        check: P,
        access: opt!(faults.paused_client => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::PausedClient),
        ..ROW
    },
    Knob {
        key: "faults.paused_client.pause_ms",
        meaning: "how long it stays paused; above `hold_ttl_ms` it outlives its hold",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.paused_client => pause_ms),
        shrink: LADDER_MS,
        ..ROW
    },
];
