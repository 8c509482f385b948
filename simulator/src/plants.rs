//! The planted-bug catalog put to work: proves that each planted bug
//! ([`booking::fault::CATALOG`]) is caught by the scenario and the invariant
//! it names, within that scenario's default seeds, that the replay line
//! printed for the failure reproduces it, and that the same seed passes
//! without the bug; and measures how long the whole library takes to find
//! each one ([`hunt`]).

use crate::run::failure::Failure;
use crate::run::pool;
use crate::run::runner::SeedVerdict;
use crate::world::plan::{self, Plan};
use booking::fault::{Entry, Plant};
use serde::Serialize;

/// What checking one catalog entry found.
#[derive(Debug, Clone, Serialize)]
pub struct PlantCheck {
    /// The plant's name.
    pub plant: String,
    /// The scenario that must catch it.
    pub scenario: String,
    /// The invariant that must report it.
    pub invariant: String,
    /// Seeds run until the first failure (or all default seeds).
    pub seeds_run: u64,
    /// The first failing seed, if any.
    pub caught_seed: Option<u64>,
    /// Wall time until then, seconds.
    pub wall_s: f64,
    /// The replay line printed for the failure.
    pub replay: Option<String>,
    /// Whether every condition held.
    pub ok: bool,
    /// What did not hold, one line each.
    pub problems: Vec<String>,
}

/// Whether `v` failed with a violation of `invariant` (expected or not);
/// `panic` names a panic verdict.
pub fn names_invariant(v: &SeedVerdict, invariant: &str) -> bool {
    if invariant == "panic" {
        return v.panic.is_some();
    }
    v.failures.iter().filter_map(Failure::violation).any(|v| v.invariant.as_str() == invariant)
}

/// `failures`, one line.
fn joined(failures: &[Failure]) -> String {
    failures.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | ")
}

/// `plan` with `plant` planted.
fn planted(mut plan: Plan, plant: Plant) -> Plan {
    plan.plant = Some(plant);
    plan
}

/// Runs the replay line `replay` (a `cargo run … -- replay …` command) with
/// this executable; returns its exit code and output.
fn run_replay_line(replay: &str) -> Result<(Option<i32>, String), String> {
    let args = replay
        .split_once(" -- ")
        .map(|(_, a)| a)
        .ok_or_else(|| format!("the replay line is not a cargo run command: {replay}"))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new(exe)
        .args(args.split_whitespace())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    Ok((out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// Checks one catalog entry (see the module doc) against each scenario that
/// must catch it ([`Entry::catchers`]), `jobs` seeds at a time.
pub fn check(entry: &Entry, jobs: usize) -> Vec<PlantCheck> {
    entry.catchers().into_iter().map(|(scenario, invariant)| check_one(entry, scenario, invariant, &[], jobs)).collect()
}

/// Proves `entry` caught by the auditor alone (every other checker off) in
/// its own scenario, within its default seeds, as [`check`] proves it.
pub fn check_by_auditor(entry: &Entry, jobs: usize) -> PlantCheck {
    check_one(entry, entry.scenario, "auditor", &["auditor".to_string()], jobs)
}

/// Checks that `scenario`, judged by `checkers` (empty: all), catches
/// `entry`'s plant with `invariant`.
fn check_one(entry: &Entry, scenario: &str, invariant: &str, checkers: &[String], jobs: usize) -> PlantCheck {
    let mut problems = Vec::new();
    let Some(base) = plan::find(scenario) else {
        return PlantCheck {
            plant: entry.name.into(),
            scenario: scenario.into(),
            invariant: invariant.into(),
            seeds_run: 0,
            caught_seed: None,
            wall_s: 0.0,
            replay: None,
            ok: false,
            problems: vec![format!("no library scenario {scenario}")],
        };
    };
    let seeds: Vec<u64> = base.default_seeds.clone().collect();
    let mut base = base;
    base.checkers = checkers.to_vec();
    let plan = planted(base.clone(), entry.plant);
    let started = pool::wall_now();
    // The first seed whose failure names the invariant (the auditor may catch the bug in earlier seeds).
    let (seeds_run, first) = pool::until_first(&plan, &seeds, jobs, |v| names_invariant(v, invariant));
    let wall_s = started.elapsed().as_secs_f64();
    let caught_seed = first.as_ref().map(|v| v.seed);
    match &first {
        None => problems.push(format!("no seed of {scenario} failed with {invariant} ({seeds_run} seeds)")),
        Some(v) => {
            if !names_invariant(v, invariant) {
                problems.push(format!("seed {} failed, but not with {}: {}", v.seed, invariant, joined(&v.failures)));
            }
            match run_replay_line(&v.replay) {
                Err(e) => problems.push(e),
                Ok((code, out)) => {
                    let hash_line = format!("trace-hash: {}", v.trace_hash);
                    if code != Some(1) || !out.lines().any(|l| l == hash_line) {
                        problems.push(format!(
                            "the replay line did not reproduce seed {} (exit {code:?}): {}",
                            v.seed, v.replay
                        ));
                    }
                }
            }
            let clean = pool::seed_in_process(&base, v.seed);
            if !clean.passed {
                problems.push(format!("seed {} fails without the plant too: {}", v.seed, joined(&clean.failures)));
            }
        }
    }
    PlantCheck {
        plant: entry.name.into(),
        scenario: scenario.into(),
        invariant: invariant.into(),
        seeds_run,
        caught_seed,
        wall_s,
        replay: first.map(|v| v.replay),
        ok: problems.is_empty(),
        problems,
    }
}

/// How long the whole library takes to find one planted bug.
#[derive(Debug, Clone, Serialize)]
pub struct Hunt {
    /// The plant's name.
    pub plant: String,
    /// (scenario, seed) runs until the first failure.
    pub seeds_run: u64,
    /// Wall time until then, seconds.
    pub wall_s: f64,
    /// The scenario and seed that caught it, and the first failure line.
    pub caught_by: Option<(String, u64, String)>,
}

/// Runs the library's must-pass scenarios round-robin (seed 0 of every
/// scenario, then seed 1, ...) with `plant` planted, `jobs` seeds at a time,
/// until the first failing seed, as a team's CI over the library would find
/// the bug.
pub fn hunt(plant: Plant, jobs: usize) -> Hunt {
    let plans: Vec<Plan> =
        plan::library().into_iter().filter(|p| !p.expect_violation).map(|p| planted(p, plant)).collect();
    let longest = plans.iter().map(|p| p.default_seeds.end - p.default_seeds.start).max().unwrap_or(0);
    let mut order: Vec<(&Plan, u64)> = Vec::new();
    for i in 0..longest {
        for p in &plans {
            let seed = p.default_seeds.start + i;
            if p.default_seeds.contains(&seed) {
                order.push((p, seed));
            }
        }
    }
    let started = pool::wall_now();
    let mut seeds_run = 0u64;
    for chunk in order.chunks(jobs.clamp(1, 64)) {
        let verdicts: Vec<SeedVerdict> = std::thread::scope(|scope| {
            let handles: Vec<_> =
                chunk.iter().map(|(p, seed)| scope.spawn(move || pool::seed_in_process(p, *seed))).collect();
            handles.into_iter().map(|h| h.join().expect("a seed thread never panics")).collect()
        });
        seeds_run += chunk.len() as u64;
        if let Some(v) = verdicts.into_iter().find(|v| !v.passed) {
            let first = v.failures.first().map(ToString::to_string).unwrap_or_default();
            return Hunt {
                plant: plant.to_string(),
                seeds_run,
                wall_s: started.elapsed().as_secs_f64(),
                caught_by: Some((v.scenario, v.seed, first)),
            };
        }
    }
    Hunt { plant: plant.to_string(), seeds_run, wall_s: started.elapsed().as_secs_f64(), caught_by: None }
}
