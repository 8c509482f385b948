//! One seed's verdict, and the one command that replays the seed.

use crate::run::failure::Failure;
use crate::world::plan::Plan;
use serde::{Deserialize, Serialize};

/// The verdict of one seed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedVerdict {
    /// Scenario name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// Whether the outcome matched the scenario's expectation.
    pub passed: bool,
    /// Why it failed: each violation, the run error or panic, each unmet expectation.
    pub failures: Vec<Failure>,
    /// The command that replays this seed.
    pub replay: String,
    /// Trace hash.
    pub trace_hash: String,
    /// Simulated time, ms.
    pub simulated_ms: u64,
    /// HTTP requests the simulated servers answered: what a seed's wall time is made of.
    pub http_exchanges: u64,
    /// Metrics.
    pub metrics: invariants::metrics::Metrics,
    /// How often each fault and each interesting path happened.
    #[serde(default)]
    pub paths: invariants::paths::PathCounts,
    /// What clients were answered, by kind.
    #[serde(default)]
    pub answers: invariants::answers::AnswerCounts,
    /// The panic that ended the world, if one did (also among `failures`).
    #[serde(default)]
    pub panic: Option<crate::world::panic_note::PanicNote>,
    /// Events in the run's trace (what `shrink` reduces).
    #[serde(default)]
    pub trace_events: u64,
}

impl SeedVerdict {
    /// The verdict of a seed that produced no run to judge (its process
    /// died, its scenario did not load): failed with `why`, nothing measured.
    pub fn without_run(scenario: String, seed: u64, replay: String, why: Failure) -> Self {
        Self {
            scenario,
            seed,
            passed: false,
            failures: vec![why],
            replay,
            trace_hash: String::new(),
            simulated_ms: 0,
            http_exchanges: 0,
            metrics: Default::default(),
            paths: Default::default(),
            answers: Default::default(),
            panic: None,
            trace_events: 0,
        }
    }
}

/// The replay command for `seed` of `plan`: its scenario (or scenario
/// file), its planted bug and its muted faults, so that it reproduces the run.
pub fn replay_command(plan: &Plan, seed: u64) -> String {
    let target = match &plan.file {
        Some(f) => format!("--scenario-file {f}"),
        None => format!("--scenario {}", plan.name),
    };
    let mut extra = String::new();
    if let Some(p) = plan.plant {
        extra.push_str(&format!(" --plant {p}"));
    }
    for m in &plan.muted {
        extra.push_str(&format!(" --mute {}", m.as_str()));
    }
    if !plan.seat_map_cache {
        extra.push_str(" --no-seat-map-cache");
    }
    if !plan.checkers.is_empty() {
        extra.push_str(&format!(" --checkers {}", plan.checkers.join(",")));
    }
    format!("cargo run --release -p simulator -- replay {target} --seed {seed}{extra}")
}
