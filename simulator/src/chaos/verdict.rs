//! What one chaos run came to.

use super::client::Op;
use super::log::ChaosFault;
use serde::Serialize;
use std::collections::BTreeMap;

/// A finding of the client history.
#[derive(Debug, Clone, Serialize)]
pub struct ServerError {
    /// The request and its answer.
    pub op: Op,
    /// Why no fault explains it.
    pub why: String,
}

/// The verdict of one chaos run.
#[derive(Debug, Clone, Serialize)]
pub struct ChaosVerdict {
    /// Scenario.
    pub scenario: String,
    /// Seed.
    pub seed: u64,
    /// The planted bug, if any.
    pub plant: Option<String>,
    /// Violations the checkers found in the final tables and the ledger.
    pub violations: Vec<String>,
    /// The invariants violated (names).
    pub invariants: Vec<String>,
    /// 5xx answers no fault explains.
    pub server_errors: Vec<ServerError>,
    /// Whether every order, payment and refund resolved within the settle bound.
    pub settled: bool,
    /// How often each real fault happened.
    pub faults: BTreeMap<ChaosFault, u64>,
    /// Requests sent by users, and how many came to an unknown outcome.
    pub requests: u64,
    /// See `requests`.
    pub unknown_outcomes: u64,
    /// Bookings, charges and refunds in the final records.
    pub bookings: usize,
    /// See `bookings`.
    pub charges: usize,
    /// See `bookings`.
    pub refunds: usize,
    /// Wall time of the run, in ms.
    pub wall_ms: u64,
    /// Where the run's records are.
    pub records: String,
    /// A harness error (the stack did not start, ...): the run proves nothing.
    pub error: Option<String>,
    /// The run's database, when it was kept for inspection (`--keep-db`, or a violation).
    pub kept_database: Option<String>,
}

impl ChaosVerdict {
    /// Whether the run passed: no violation, no unexplained server error, settled, no harness error.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.server_errors.is_empty() && self.settled && self.error.is_none()
    }
}
