//! What the admission law of one instance saw and decided, for whoever
//! watches it: each run of the law (the pass's clock, the signals, the
//! decision) and each session end it learnt a duration from, in the order
//! the law saw them. `bookingd` logs them at debug level; the simulator
//! traces them, and its auditor recomputes every decision from its own
//! statement of the law.

use super::controller::{Decision, Signals};
use crate::model::EventId;

/// A watcher of one instance's admission laws. Called with the laws' lock
/// held, so in the order the laws saw things: it must not block or call back.
pub trait LawLog: Send + Sync + std::fmt::Debug {
    /// The law of `event_id` ran at `now_ms` (the instance's clock) under `signals` and decided `decision`.
    fn ran(&self, event_id: &EventId, now_ms: i64, signals: &Signals, decision: &Decision);
    /// A session of `event_id` ended after `duration_ms`, and the law's mean moved toward it.
    fn session_ended(&self, event_id: &EventId, duration_ms: u64);
}

/// The default watcher: one `tracing` debug line per entry.
#[derive(Debug, Default)]
pub struct TracingLawLog;

impl LawLog for TracingLawLog {
    fn ran(&self, event_id: &EventId, now_ms: i64, signals: &Signals, decision: &Decision) {
        tracing::debug!(event_id = event_id.as_str(), now_ms, ?signals, ?decision, "admission law ran");
    }

    fn session_ended(&self, event_id: &EventId, duration_ms: u64) {
        tracing::debug!(event_id = event_id.as_str(), duration_ms, "admission law learnt a session's duration");
    }
}
