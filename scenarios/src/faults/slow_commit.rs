//! The fault kind `faults.slow_commit`: its table and its rows of the knob table.

use crate::knobs::row::*;
use serde::{Deserialize, Serialize};

/// Slow disk commits: a store write waits `delay_ms` before it commits, as
/// one queued behind a slow disk does; it lands at the store's time after
/// the wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowCommit {
    /// Probability that a store write waits, per write.
    pub probability: f64,
    /// How long it waits, ms, 1..=60000.
    pub delay_ms: i64,
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str = "[faults.slow_commit]\nprobability = 0.1\ndelay_ms = 3000\n";

/// The keys of `[faults.slow_commit]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.slow_commit",
        meaning: "slow disk commits: a store write waits before it commits",
        check: Check::Table,
        access: table!(faults.slow_commit),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::SlowCommit),
        ..ROW
    },
    Knob {
        key: "faults.slow_commit.probability",
        meaning: "probability that a store write (a hold, a release, a checkout, a payment's record, a sweep, an outbox or compensation step) waits `delay_ms` before it reaches the store, per write, during the fault phase; it lands at the store's time after the wait (a hold may have expired by then), a client that times out meanwhile does not know whether it will land and its retry may overtake it, and a handler dropped meanwhile never writes",
        check: P,
        access: opt!(faults.slow_commit => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::SlowCommit),
        ..ROW
    },
    Knob {
        key: "faults.slow_commit.delay_ms",
        meaning: "how long it waits; longer than a client's request timeout, the client gives up first",
        check: ms(1, MAX_LATENCY_MS),
        access: opt!(faults.slow_commit => delay_ms),
        shrink: LADDER_MS,
        ..ROW
    },
];
