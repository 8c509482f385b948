//! The fault kind `faults.crash_after_commit`: its table and its rows of the knob table.

use crate::knobs::row::*;
use serde::{Deserialize, Serialize};

/// Crashes between commit and acknowledgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashAfterCommit {
    /// Probability that a committed write's response is lost to a crash of its host.
    pub probability: f64,
    /// Time until the crashed host restarts, ms, 1..=3600000.
    pub restart_after_ms: i64,
    /// The commit points where a crash may strike (see
    /// [`crate::COMMIT_POINT_NAMES`]: handlers and background workers).
    /// Default: `["checkout"]`.
    #[serde(default = "default_crash_points")]
    pub points: Vec<String>,
}

fn default_crash_points() -> Vec<String> {
    vec!["checkout".to_string()]
}

/// An example of the table with every key set.
pub(super) const EXAMPLE: &str = "[faults.crash_after_commit]\nprobability = 0.05\nrestart_after_ms = 2000\npoints = [\"checkout\", \"payment-outcome\", \"webhook\", \"sweep\"]\n";

/// The keys of `[faults.crash_after_commit]`, in the README's order.
pub(super) static KNOBS: &[Knob] = &[
    Knob {
        key: "faults.crash_after_commit",
        meaning: "crashes between a store commit and the answer",
        check: Check::Table,
        access: table!(faults.crash_after_commit),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::CrashAfterCommit),
        ..ROW
    },
    Knob {
        key: "faults.crash_after_commit.probability",
        meaning: "probability that a committed write's answer is lost to a crash of its host",
        check: P,
        access: opt!(faults.crash_after_commit => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::CrashAfterCommit),
        ..ROW
    },
    Knob {
        key: "faults.crash_after_commit.restart_after_ms",
        meaning: "time until the host restarts",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.crash_after_commit => restart_after_ms),
        shrink: LADDER_MS,
        ..ROW
    },
    Knob {
        key: "faults.crash_after_commit.points",
        meaning: "the commit points where a crash may strike, each right after its store transaction commits: handlers `hold`, `release`, `checkout`; dispatcher `outbox-claim`, `payment-outcome` (also the reconciler's); reconciler `unresolved-release`; `webhook` (applied, not yet acknowledged); `sweep`; refunds `compensation-start`, `compensation-finish`",
        check: Check::Names { known: COMMIT_POINT_NAMES, noun: "commit point", non_empty: true },
        note: "default `[\"checkout\"]`",
        access: opt!(faults.crash_after_commit => points),
        shrink: Shrink::OneLess,
        ..ROW
    },
];
