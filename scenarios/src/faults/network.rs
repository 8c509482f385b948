//! The fault kind `faults.network`: its table and its rows of the knob table.

use crate::knobs::row::*;
use crate::model::RangeMs;
use serde::{Deserialize, Serialize};

/// Network faults between users, services and the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Probability per simulated second that a random link is partitioned.
    pub partition_probability: f64,
    /// How long a partition lasts, ms, 1..=3600000.
    pub partition_ms: i64,
    /// Latency of every message on every link, ms (a draw per message in `min..=max`).
    pub latency_ms: RangeMs,
    /// The link faults themselves, pinned (a capsule's, written by
    /// `simulator shrink`): exactly these strike, and none is drawn from
    /// `partition_probability`. At most [`crate::MAX_PINNED_FAULTS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<Vec<PinnedLinkFault>>,
}

/// One pinned link fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedLinkFault {
    /// When it starts, ms from the start of the run, >= 0.
    pub start_ms: i64,
    /// When it ends, ms, > `start_ms` and within the fault phase.
    pub end_ms: i64,
    /// One end: `svcN` (N below `workload.server_hosts`) or `clientN`.
    pub a: String,
    /// The other end: `provider` (for a service host) or `svcN` (for a client host).
    pub b: String,
    /// `cut` (messages dropped) or `held` (queued, delivered when it ends).
    pub mode: String,
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str =
    "[faults.network]\npartition_probability = 0.02\npartition_ms = 5000\nlatency_ms = { min = 0, max = 50 }\n";

/// The keys of `[faults.network]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.network",
        meaning: "network partitions and latency",
        check: Check::Table,
        access: table!(faults.network),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::Network),
        ..ROW
    },
    Knob {
        key: "faults.network.partition_probability",
        meaning: "probability per simulated second that a random link is partitioned",
        check: P,
        access: opt!(faults.network => partition_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Network),
        ..ROW
    },
    Knob {
        key: "faults.network.partition_ms",
        meaning: "how long a partition lasts",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.network => partition_ms),
        shrink: LADDER_MS,
        ..ROW
    },
    Knob {
        key: "faults.network.latency_ms",
        meaning: "latency of every message on every link, `{ min, max }` (turmoil draws it per message; at least 1 ms, and `max` at least `min + 1`); without `[faults.network]` it is 1..=20 ms",
        check: range(MAX_LATENCY_MS),
        access: opt!(faults.network => latency_ms),
        ..ROW
    },
    Knob {
        key: "faults.network.pinned",
        meaning: "the link faults themselves, as `simulator shrink` writes them in a capsule: a list of `{ start_ms, end_ms, a, b, mode }` (`a`/`b`: `svcN` and `provider`, or `clientN` and `svcN`; `mode`: `\"cut\"` drops messages, `\"held\"` queues them until the end); exactly these strike and none is drawn from `partition_probability` (which is still drawn, so the cache faults drawn after it stay as they were)",
        check: Check::Special("`0 <= start_ms < end_ms <= phases.fault_ms`; hosts of this world; at most 10,000"),
        ..ROW
    },
];
