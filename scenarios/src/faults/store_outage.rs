//! The fault kind `faults.store_outage`: its table and its rows of the knob table.

use crate::knobs::row::*;
use serde::{Deserialize, Serialize};

/// A store outage: from `from_ms` to `to_ms` every store call of every
/// service host fails with a backend error (the database unreachable); the
/// service answers `503`, its background work retries later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreOutage {
    /// When it starts, ms from the start of the run, >= 0.
    pub from_ms: i64,
    /// When it ends, ms from the start of the run, > `from_ms`, within the fault phase.
    pub to_ms: i64,
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str = "[faults.store_outage]\nfrom_ms = 35000\nto_ms = 37000\n";

/// The keys of `[faults.store_outage]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.store_outage",
        meaning: "the store is unreachable for a window",
        check: Check::Table,
        access: table!(faults.store_outage),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::StoreOutage),
        ..ROW
    },
    Knob {
        key: "faults.store_outage.from_ms",
        meaning: "when the store becomes unreachable (every call of every service host fails with a backend error, as when PostgreSQL is down: the service answers `503 backend`, its health check `503 unavailable`, its background work retries after), from the start of the run",
        check: Check::Duration {
            min: Bound::Fixed(0),
            max: Bound::Of("`phases.fault_ms - 1`", |s| s.phases.fault_ms - 1),
        },
        access: opt!(faults.store_outage => from_ms),
        ..ROW
    },
    Knob {
        key: "faults.store_outage.to_ms",
        meaning: "when it answers again",
        check: Check::Duration {
            min: Bound::Of("`from_ms + 1`", |s| s.faults.store_outage.as_ref().map_or(0, |f| f.from_ms + 1)),
            max: Bound::Of("`phases.fault_ms`", |s| s.phases.fault_ms),
        },
        access: opt!(faults.store_outage => to_ms),
        ..ROW
    },
];
