//! Running scenarios over seed ranges: verdicts, the per-scenario summary
//! (seeds, passed, failed, seeds per second, simulated seconds per wall
//! second) and, for each failure, the violated invariant and the one command
//! that replays it.

use crate::plan::Plan;
use crate::world::{self, RunOutcome};
use serde::Serialize;

/// The verdict of one seed.
#[derive(Debug, Clone, Serialize)]
pub struct SeedVerdict {
    /// Scenario name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// Whether the outcome matched the scenario's expectation.
    pub passed: bool,
    /// Why it failed, one line per violation (or the run error, or the unmet expectation).
    pub failures: Vec<String>,
    /// The command that replays this seed.
    pub replay: String,
    /// Trace hash.
    pub trace_hash: String,
    /// Simulated time, ms.
    pub simulated_ms: u64,
    /// Metrics.
    pub metrics: invariants::metrics::Metrics,
}

/// A scenario's summary over its seeds.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds whose outcome matched the expectation.
    pub passed: u64,
    /// The others.
    pub failed: u64,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Seeds per wall second.
    pub seeds_per_s: f64,
    /// Simulated seconds per wall second.
    pub sim_per_wall: f64,
}

/// The replay command for `scenario` and `seed`; `file` names a scenario file
/// outside the library; `broken` adds the test-only broken-store switch.
pub fn replay_command(scenario: &str, seed: u64, file: Option<&str>, broken: bool) -> String {
    let target = match file {
        Some(f) => format!("--scenario-file {f}"),
        None => format!("--scenario {scenario}"),
    };
    let broken = if broken { " --break-checkout" } else { "" };
    format!("cargo run --release -p simulator -- replay {target} --seed {seed}{broken}")
}

/// Judges one run against the plan's expectation.
pub fn judge(plan: &Plan, out: &RunOutcome) -> SeedVerdict {
    let mut failures: Vec<String> = Vec::new();
    if let Some(e) = &out.error {
        failures.push(format!("run error: {e}"));
    }
    let violated = !out.violations.is_empty();
    if plan.expect_violation {
        if !violated {
            failures.push("expected an invariant violation, found none".into());
        }
        for want in &plan.expect_violations {
            if !out.violations.iter().any(|v| v.invariant.as_str() == want) {
                failures.push(format!("expected a {want} violation, found none"));
            }
        }
    } else {
        failures.extend(out.violations.iter().map(|v| v.to_string()));
    }
    if let Some(want) = &plan.expect_classification {
        let got = out.metrics.classification.as_str();
        if got != want {
            failures.push(format!("expected metrics classification {want}, got {got}"));
        }
    }
    SeedVerdict {
        scenario: plan.name.clone(),
        seed: out.seed,
        passed: failures.is_empty(),
        failures,
        replay: replay_command(&plan.name, out.seed, plan.file.as_deref(), plan.break_checkout),
        trace_hash: out.trace_hash.clone(),
        simulated_ms: out.simulated_ms,
        metrics: out.metrics.clone(),
    }
}

/// Runs one seed of `plan`.
pub fn run_seed(plan: &Plan, seed: u64) -> (RunOutcome, SeedVerdict) {
    let out = world::run(&plan.world_for(seed), seed);
    let verdict = judge(plan, &out);
    (out, verdict)
}
