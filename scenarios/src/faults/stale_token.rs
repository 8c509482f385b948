//! The fault kind `faults.stale_token`: its table and its rows of the knob table.

use crate::knobs::row::*;
use serde::{Deserialize, Serialize};

/// Stale token replays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaleToken {
    /// Probability that a finished user's old release or checkout request is replayed
    /// (by itself or, half the time, by another user).
    pub probability: f64,
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str = "[faults.stale_token]\nprobability = 0.3\n";

/// The keys of `[faults.stale_token]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.stale_token",
        meaning: "stale hold tokens replayed",
        check: Check::Table,
        access: table!(faults.stale_token),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::StaleToken),
        ..ROW
    },
    Knob {
        key: "faults.stale_token.probability",
        meaning: "probability, per granted hold and per sold-out look, that a user presents a hold token that is not its current one: its own previous token (Alice's old request arriving after she holds again) or the newest hold of another user (a leaked link, often still live); three times in four as a checkout, else a release",
        check: P,
        access: opt!(faults.stale_token => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::StaleToken),
        ..ROW
    },
];
