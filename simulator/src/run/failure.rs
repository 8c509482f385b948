//! Why a seed failed, as typed values: each prints as the one line the
//! runner shows under `FAIL`, and travels as JSON from a seed's process to
//! the pool and out of `run --json`.

use crate::world::panic_note::PanicNote;
use invariants::Violation;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One reason a seed did not meet its scenario's expectation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "failure", rename_all = "kebab-case")]
pub enum Failure {
    /// The run could not complete (a host errored, the trace overflowed).
    RunError {
        /// What went wrong.
        error: String,
    },
    /// A panic inside the world ended it.
    Panic {
        /// The panic's message and place.
        note: PanicNote,
    },
    /// An invariant was violated in a scenario that expects none.
    Violated {
        /// The violation.
        violation: Violation,
    },
    /// An invariant the scenario neither expects nor tolerates was violated
    /// beside the expected failure.
    Unexpected {
        /// The violation.
        violation: Violation,
    },
    /// The scenario expects a violation and the run had none.
    NoViolation,
    /// The scenario expects a violation of `invariant` and the run had none of it.
    ExpectedMissing {
        /// The invariant's stable name.
        invariant: String,
    },
    /// The metrics classified the run otherwise than the scenario expects.
    Classification {
        /// Expected classification.
        want: String,
        /// What the run got.
        got: String,
    },
    /// The seed's process ended without printing a verdict.
    NoVerdict {
        /// How the process ended.
        status: String,
    },
    /// The seed's process could not be started.
    NoProcess {
        /// Why.
        error: String,
    },
    /// The seed ran twice with differing trace hashes (`--check-determinism`).
    Nondeterministic {
        /// The first run's hash.
        first: String,
        /// The second run's hash.
        second: String,
    },
}

impl Failure {
    /// The violation behind this failure, if it is one.
    pub fn violation(&self) -> Option<&Violation> {
        match self {
            Failure::Violated { violation } | Failure::Unexpected { violation } => Some(violation),
            _ => None,
        }
    }

    /// Whether this failure is an unmet expectation (not something that went wrong in the run).
    pub fn is_unmet_expectation(&self) -> bool {
        matches!(self, Failure::NoViolation | Failure::ExpectedMissing { .. } | Failure::Classification { .. })
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::RunError { error } => write!(f, "run error: {error}"),
            Failure::Panic { note } => write!(f, "panic: {note}"),
            Failure::Violated { violation } => write!(f, "{violation}"),
            Failure::Unexpected { violation } => write!(f, "unexpected: {violation}"),
            Failure::NoViolation => write!(f, "expected an invariant violation, found none"),
            Failure::ExpectedMissing { invariant } => write!(f, "expected a {invariant} violation, found none"),
            Failure::Classification { want, got } => write!(f, "expected metrics classification {want}, got {got}"),
            Failure::NoVerdict { status } => write!(f, "the seed's process ended without a verdict ({status})"),
            Failure::NoProcess { error } => write!(f, "cannot start the seed's process: {error}"),
            Failure::Nondeterministic { first, second } => {
                write!(f, "nondeterminism: trace hash {first} then {second}")
            }
        }
    }
}
