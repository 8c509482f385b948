//! The fault kind `faults.rooms_lost`: its table and its rows of the knob table.

use crate::knobs::row::*;
use serde::{Deserialize, Serialize};

/// The waiting rooms' store stops at `at_ms` and comes back `down_ms` later
/// without a room (a Redis restart without persistence): while it is down
/// every call on a room's event must fail closed (`503`); once back, the
/// service rebuilds each room from the authority's record at its next call on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoomsLost {
    /// When, ms from the start of the run, within the fault phase.
    pub at_ms: i64,
    /// How long the store is unreachable before it comes back empty, ms
    /// (0, the default: it loses the rooms at once).
    #[serde(default)]
    pub down_ms: i64,
}

/// An example of the table with every key set (it needs a `[waiting_room]` too).
pub(super) const EXAMPLE: &str = "[faults.rooms_lost]\nat_ms = 20000\ndown_ms = 1000\n";

/// The keys of `[faults.rooms_lost]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.rooms_lost",
        meaning: "the waiting rooms' store loses every room",
        check: Check::Table,
        rule: Some(Rule {
            broken: |s| s.faults.rooms_lost.is_some() && s.waiting_room.is_none(),
            message: "needs a [waiting_room] to lose",
        }),
        note: "needs `[waiting_room]`",
        access: table!(faults.rooms_lost),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::RoomsLost),
    },
    Knob {
        key: "faults.rooms_lost.at_ms",
        meaning: "when the waiting rooms' store (Redis, to the service) loses every room, as a restart without persistence does; the service must rebuild each room from the authority's record at its next call on it, and every later answer is held to the room as it was",
        check: Check::Duration {
            min: Bound::Fixed(0),
            max: Bound::Of("`phases.fault_ms - 1`", |s| s.phases.fault_ms - 1),
        },
        access: opt!(faults.rooms_lost => at_ms),
        ..ROW
    },
    Knob {
        key: "faults.rooms_lost.down_ms",
        meaning: "how long the rooms' store is unreachable first (Redis stopped), from `at_ms`; meanwhile every call on a room's event must fail closed (`503`; the auditor accepts nothing else, and a hold granted without an admission is `admission-required`); 0: the rooms are lost at once",
        check: Check::Duration {
            min: Bound::Fixed(0),
            max: Bound::Of("`phases.fault_ms - 1 - at_ms`", |s| {
                s.phases.fault_ms - 1 - s.faults.rooms_lost.as_ref().map_or(0, |r| r.at_ms)
            }),
        },
        note: "default 0",
        access: opt!(faults.rooms_lost => down_ms),
        ..ROW
    },
];
