//! The fault kind `faults.clock_skew`: its table and its rows of the knob table.

use crate::knobs::row::*;
use serde::{Deserialize, Serialize};

/// Clock skew between service hosts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSkew {
    /// Each service host's clock is off by up to this much either way, ms, 1..=3600000.
    pub max_skew_ms: i64,
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str = "[faults.clock_skew]\nmax_skew_ms = 30000\n";

/// The keys of `[faults.clock_skew]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.clock_skew",
        meaning: "service hosts' clocks disagree (the store's clock decides)",
        check: Check::Table,
        access: table!(faults.clock_skew),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::ClockSkew),
        ..ROW
    },
    Knob {
        key: "faults.clock_skew.max_skew_ms",
        meaning: "each service host's clock is off by up to this much either way",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.clock_skew => max_skew_ms),
        shrink: LADDER_MS,
        swarm: Swarm::ScaleMs(F::ClockSkew),
        ..ROW
    },
];
