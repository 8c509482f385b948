//! `simulator shrink`: reduce a failing seed to a capsule.
//!
//! A greedy, bounded reducer in the style of delta debugging over the
//! scenario's model ([`steps`]): drop whole fault tables, then lower the
//! workload's counts, the phases and each fault's knobs, each down a ladder
//! of smaller values (most aggressive first), and repeat the whole pass
//! until no step helps or the run budget is spent. A candidate the loader
//! refuses is skipped, not run. A candidate is kept iff the SAME seed (under
//! the same planted bug) still fails with the target: the invariant the
//! planted bug's catalog entry names when the original run violates it,
//! else the original run's first failure (an invariant, or `panic`); other
//! violations may come and go. Every candidate runs in a process of its own
//! ([`oracle`]), as `run` runs seeds. The result is a capsule ([`capsule`]).
//!
//! Once nothing smaller helps, the fault schedule is pinned ([`pinned`]):
//! the link and cache faults the seed draws are written into the scenario as
//! explicit lists, and the passes go on, now dropping, shortening and
//! delaying each pinned fault on its own. Crashes after commit, paused
//! clients, stale tokens and the provider's answers are policies decided at
//! the moment from the seed's streams: they are not pinned, and the capsule's
//! seed still draws them from its (reduced) tables.

pub mod capsule;
pub mod cli;
pub mod oracle;
pub mod pinned;
mod reducer;
pub mod steps;

use booking::fault::Plant;
use scenarios::Scenario;
use std::path::PathBuf;

/// Why shrinking stopped without a capsule.
#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    /// The seed passes: nothing to shrink.
    #[error("{scenario} seed {seed} does not fail{plant}: nothing to shrink")]
    DoesNotFail {
        /// The scenario.
        scenario: String,
        /// The seed.
        seed: u64,
        /// ` with plant P`, or empty.
        plant: String,
    },
    /// The seed fails only by an unmet expectation (a missing violation, a
    /// classification), which no smaller run can be held to.
    #[error("{scenario} seed {seed} fails only by {failures}, which shrink cannot aim at")]
    NoTarget {
        /// The scenario.
        scenario: String,
        /// The seed.
        seed: u64,
        /// Its failures.
        failures: String,
    },
    /// A file could not be written or read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A scenario could not be written as TOML.
    #[error(transparent)]
    Write(#[from] scenarios::WriteError),
    /// The written capsule did not reproduce the failure (a bug of shrink).
    #[error("the capsule {path} does not replay the failure: {failures}")]
    CapsuleDiffers {
        /// The capsule.
        path: String,
        /// What its run reported instead.
        failures: String,
    },
}

/// What shrinking is asked to do.
#[derive(Debug, Clone)]
pub struct Request {
    /// The scenario the failing seed belongs to.
    pub scenario: Scenario,
    /// Its file, when it is not a library scenario.
    pub file: Option<String>,
    /// The failing seed.
    pub seed: u64,
    /// The planted bug it runs with.
    pub plant: Option<Plant>,
    /// Where the capsule goes.
    pub out: PathBuf,
    /// Candidate runs at most (the original's run and the capsule's check included).
    pub max_runs: u64,
    /// Print a line per run on stderr.
    pub progress: bool,
}

/// The sizes shrinking reports before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figures {
    /// Virtual users.
    pub users: u32,
    /// Seats of each event.
    pub seats_per_event: u32,
    /// Events.
    pub events: u32,
    /// Fault tables.
    pub fault_tables: usize,
    /// Events in the seed's trace.
    pub trace_events: u64,
}

impl Figures {
    fn of(s: &Scenario, trace_events: u64) -> Self {
        Self {
            users: s.workload.users,
            seats_per_event: s.workload.seats_per_event,
            events: s.workload.events,
            fault_tables: scenarios::fault_tables(s),
            trace_events,
        }
    }
}

/// A finished shrink: the capsule written and what it took.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The original scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The planted bug.
    pub plant: Option<Plant>,
    /// The failure kept: an invariant's name, or `panic`.
    pub target: String,
    /// The original run's figures.
    pub before: Figures,
    /// The capsule's.
    pub after: Figures,
    /// The changes kept, in order.
    pub changes: Vec<String>,
    /// Runs made (the original's and the capsule's check included).
    pub runs: u64,
    /// Wall time, s.
    pub wall_s: f64,
    /// The capsule's path.
    pub capsule: PathBuf,
    /// The command that replays the capsule.
    pub replay: String,
    /// The capsule's trace hash.
    pub trace_hash: String,
}

impl Shrunk {
    /// Trace events before over after.
    pub fn ratio(&self) -> f64 {
        self.before.trace_events as f64 / self.after.trace_events.max(1) as f64
    }
}

/// Full passes over every step at most (each pass either keeps a change or ends the loop).
pub const MAX_PASSES: usize = 32;

/// The failure to keep: the plant's catalog invariant for this scenario when
/// the run violates it, else the run's first failure.
fn target(labels: &[String], scenario: &str, plant: Option<Plant>) -> Option<String> {
    let caught_by: Vec<&str> = plant
        .map(|p| {
            let e = p.entry();
            std::iter::once((e.scenario, e.invariant))
                .chain(e.also.iter().copied())
                .filter(|(s, _)| *s == scenario)
                .map(|(_, i)| i)
                .collect()
        })
        .unwrap_or_default();
    labels.iter().find(|l| caught_by.contains(&l.as_str())).or_else(|| labels.first()).cloned()
}

/// The command that replays the capsule at `path`.
pub fn replay_command(path: &std::path::Path, seed: u64, plant: Option<Plant>) -> String {
    let plant = plant.map(|p| format!(" --plant {p}")).unwrap_or_default();
    format!("cargo run --release -p simulator -- run --scenario-file {} --seed {seed}{plant}", path.display())
}

fn progress(on: bool, line: impl FnOnce() -> String) {
    if on {
        eprintln!("shrink: {}", line());
    }
}

/// Shrinks `req`'s seed and writes its capsule. Must run inside the
/// `simulator` binary (candidates run as `simulator seed` processes).
pub fn shrink(req: &Request) -> Result<Shrunk, ShrinkError> {
    let started = crate::run::pool::wall_now();
    let oracle = oracle::Oracle::new(req.seed, req.plant)?;
    let (first, target) = first_failure(req)?;
    let mut reducer = start(req, &oracle, target)?;
    reducer.run()?;
    let reducer::Reducer { target, current, best, changes, runs, .. } = reducer;
    let toml = capsule::scenario(&current, &req.scenario, req.seed, &target).to_toml()?;
    let mut shrunk = Shrunk {
        scenario: req.scenario.name.clone(),
        seed: req.seed,
        plant: req.plant,
        target: target.clone(),
        before: Figures::of(&req.scenario, first.trace_events),
        after: Figures::of(&current, best.verdict.trace_events),
        changes,
        runs,
        wall_s: started.elapsed().as_secs_f64(),
        capsule: req.out.clone(),
        replay: replay_command(&req.out, req.seed, req.plant),
        trace_hash: best.verdict.trace_hash.clone(),
    };
    write(&req.out, &capsule::document(&shrunk, &toml))?;
    // The capsule, run as written under its own expectation (the promise),
    // must fail with the target, on the same trace.
    let check = oracle.run_file(&req.out);
    shrunk.runs += 1;
    if !check.labels.contains(&target) || check.verdict.trace_hash != shrunk.trace_hash {
        let failures: Vec<String> = check.verdict.failures.iter().map(ToString::to_string).collect();
        return Err(ShrinkError::CapsuleDiffers {
            path: req.out.display().to_string(),
            failures: format!("{} (trace hash {})", failures.join("; "), check.verdict.trace_hash),
        });
    }
    shrunk.wall_s = started.elapsed().as_secs_f64();
    write(&req.out, &capsule::document(&shrunk, &toml))?;
    Ok(shrunk)
}

/// The original run of `req`'s seed and the failure to keep.
fn first_failure(req: &Request) -> Result<(crate::run::runner::SeedVerdict, String), ShrinkError> {
    let mut original_plan = crate::world::plan::Plan::new(req.scenario.clone(), req.file.clone());
    original_plan.plant = req.plant;
    let first = crate::run::pool::seed_in_process(&original_plan, req.seed);
    let plant_note = req.plant.map(|p| format!(" with plant {p}")).unwrap_or_default();
    if first.passed {
        let (scenario, seed) = (req.scenario.name.clone(), req.seed);
        return Err(ShrinkError::DoesNotFail { scenario, seed, plant: plant_note });
    }
    let Some(target) = target(&oracle::labels(&first), &req.scenario.name, req.plant) else {
        let failures: Vec<String> = first.failures.iter().map(ToString::to_string).collect();
        let (scenario, seed) = (req.scenario.name.clone(), req.seed);
        return Err(ShrinkError::NoTarget { scenario, seed, failures: failures.join("; ") });
    };
    progress(req.progress, || {
        format!(
            "{} seed {}{plant_note} fails with {target}; {} trace events",
            req.scenario.name, req.seed, first.trace_events
        )
    });
    Ok((first, target))
}

/// The reduction's start: a swarm scenario's seed draws its fault mix, so
/// it becomes this seed's mix, explicitly, when that still fails so.
fn start<'r>(
    req: &'r Request,
    oracle: &'r oracle::Oracle,
    target: String,
) -> Result<reducer::Reducer<'r>, ShrinkError> {
    let mut current = req.scenario.clone();
    if current.swarm {
        current.faults = current.faults_for_seed(req.seed);
        current.swarm = false;
    }
    let mut best = oracle.try_candidate(&current)?;
    let mut runs: u64 = 2;
    let mut changes: Vec<String> = Vec::new();
    if !best.labels.contains(&target) {
        // The explicit mix did not reproduce it: shrink the scenario as it is.
        current = req.scenario.clone();
        best = oracle.try_candidate(&current)?;
        runs += 1;
    } else if req.scenario.swarm {
        changes.push("swarm -> this seed's fault mix".to_string());
    }
    Ok(reducer::Reducer { req, oracle, target, current, best, changes, runs })
}

fn write(path: &std::path::Path, text: &str) -> Result<(), ShrinkError> {
    let io = |source| ShrinkError::Io { path: path.display().to_string(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, text).map_err(|source| ShrinkError::Io { path: path.display().to_string(), source })
}
