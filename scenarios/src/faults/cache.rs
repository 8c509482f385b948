//! The fault kind `faults.cache`: its table and its rows of the knob table.

use crate::knobs::row::*;
use serde::{Deserialize, Serialize};

/// Seat-map cache faults: each simulated second of the fault phase starts one
/// with `probability` (a mode drawn from `modes`), lasting `length_ms`; one
/// at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheFaults {
    /// Probability per simulated second that a cache fault starts.
    pub probability: f64,
    /// How long each lasts, ms, 1..=3600000.
    pub length_ms: i64,
    /// Which faults may strike (see [`crate::CACHE_FAULT_NAMES`]): `down`
    /// (every read misses; writes and invalidations are lost), `stale`
    /// (invalidations are lost: entries live out their TTL), `poisoned`
    /// (reads answer a map that shows every seat available). Default: all three.
    #[serde(default = "default_cache_modes")]
    pub modes: Vec<String>,
    /// The cache faults themselves, pinned (a capsule's): exactly these
    /// strike, in time order and one at a time, and none is drawn from
    /// `probability`. At most [`crate::MAX_PINNED_FAULTS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<Vec<PinnedCacheFault>>,
}

/// One pinned seat-map cache fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedCacheFault {
    /// When it starts, ms from the start of the run, >= 0.
    pub start_ms: i64,
    /// When it ends, ms, > `start_ms` and within the fault phase.
    pub end_ms: i64,
    /// `down`, `stale` or `poisoned` (see [`CacheFaults::modes`]).
    pub mode: String,
}

fn default_cache_modes() -> Vec<String> {
    crate::CACHE_FAULT_NAMES.iter().map(|s| s.to_string()).collect()
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str =
    "[faults.cache]\nprobability = 0.2\nlength_ms = 3000\nmodes = [\"down\", \"stale\", \"poisoned\"]\n";

/// The keys of `[faults.cache]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.cache",
        meaning: "the seat-map cache goes down, loses its invalidations, or is poisoned",
        check: Check::Table,
        access: table!(faults.cache),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::Cache),
        ..ROW
    },
    Knob {
        key: "faults.cache.probability",
        meaning: "probability that a seat-map cache fault starts, per simulated second of the fault phase in which none is under way (one at a time; the seed's windows are drawn up front, `replay --plan` lists them)",
        check: P,
        access: opt!(faults.cache => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Cache),
        ..ROW
    },
    Knob {
        key: "faults.cache.length_ms",
        meaning: "how long each lasts (cut short at the end of the fault phase)",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.cache => length_ms),
        shrink: LADDER_MS,
        ..ROW
    },
    Knob {
        key: "faults.cache.modes",
        meaning: "which may strike, one drawn per fault: `\"down\"` (every read misses; puts and invalidations are lost, as when Redis is unreachable), `\"stale\"` (invalidations are lost: entries live out bookingd's cache TTL, 1 s), `\"poisoned\"` (reads answer the cached map with every seat shown available). With cache faults every map served from the cache is traced and `stale-read-bounded` holds it to the TTL",
        check: Check::Names { known: CACHE_FAULT_NAMES, noun: "cache fault", non_empty: true },
        note: "default all three",
        access: opt!(faults.cache => modes),
        shrink: Shrink::OneLess,
        ..ROW
    },
    Knob {
        key: "faults.cache.pinned",
        meaning: "the cache faults themselves, as a capsule writes them: a list of `{ start_ms, end_ms, mode }`; exactly these strike, in time order, one at a time, and none is drawn from `probability`",
        check: Check::Special(
            "`0 <= start_ms < end_ms <= phases.fault_ms`, each starting at or after the previous one's end; mode as in `modes`; at most 10,000",
        ),
        ..ROW
    },
];
