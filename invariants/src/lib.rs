//! holdfast's invariant checkers: pure functions over the store's final
//! records ([`booking::model::Snapshot`]) and the run's [`trace`], reporting
//! every broken promise as a [`Violation`] that names the invariant, the
//! record, and the trace events that witness it. Plus per-run [`metrics`].
//!
//! Entry points: [`check_all`], [`metrics::Metrics::compute`], [`hash::trace_hash`].

#![warn(missing_docs)]

pub mod checks;
pub mod config;
pub mod hash;
pub mod trace;
pub mod violation;

#[cfg(test)]
mod testkit;

pub use config::Config;
pub use hash::{to_hex, trace_hash};
pub use trace::{TraceEvent, TraceKind};
pub use violation::{Invariant, Subject, Violation};

use booking::model::Snapshot;

/// Runs every checker of [`checks::CHECKERS`] and returns all violations,
/// sorted by (invariant, subject, witnesses, detail) and deduplicated.
pub fn check_all(snap: &Snapshot, trace: &[TraceEvent], cfg: &Config) -> Vec<Violation> {
    let mut out: Vec<Violation> = checks::CHECKERS.iter().flat_map(|(_, check)| check(snap, trace, cfg)).collect();
    out.sort_by(|a, b| {
        (a.invariant, &a.subject, &a.witnesses, &a.detail).cmp(&(b.invariant, &b.subject, &b.witnesses, &b.detail))
    });
    out.dedup();
    out
}
