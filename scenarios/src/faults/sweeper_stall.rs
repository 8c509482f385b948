//! The fault kind `faults.sweeper_stall`: its table and its rows of the knob table.

use crate::knobs::row::*;
use serde::{Deserialize, Serialize};

/// A stalled expiry sweeper.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweeperStall {
    /// When the stall starts, ms from the start of the run, >= 0.
    pub from_ms: i64,
    /// When it ends, ms from the start of the run, > `from_ms`; past the end of
    /// the settle phase means never (a broken expiry process).
    pub to_ms: i64,
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str = "[faults.sweeper_stall]\nfrom_ms = 10000\nto_ms = 30000\n";

/// The keys of `[faults.sweeper_stall]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.sweeper_stall",
        meaning: "the expiry sweeper stops for a while",
        check: Check::Table,
        access: table!(faults.sweeper_stall),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::SweeperStall),
        ..ROW
    },
    Knob {
        key: "faults.sweeper_stall.from_ms",
        meaning: "when the expiry sweeper stalls, from the start of the run",
        check: ms(0, MAX_STALL_MS),
        access: opt!(faults.sweeper_stall => from_ms),
        ..ROW
    },
    Knob {
        key: "faults.sweeper_stall.to_ms",
        meaning: "when it resumes; past the end of the settle phase means never (broken expiry)",
        check: Check::Duration {
            min: Bound::Of("`from_ms + 1`", |s| s.faults.sweeper_stall.as_ref().map_or(0, |f| f.from_ms + 1)),
            max: Bound::Fixed(MAX_STALL_MS),
        },
        access: opt!(faults.sweeper_stall => to_ms),
        ..ROW
    },
];
