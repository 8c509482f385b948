//! `run --time-budget`: fresh seeds until the wall-time budget is spent, as
//! TigerBeetle's fuzzers run. The seeds start at a base drawn at random (or
//! given), printed first, so any failure's replay line reproduces it;
//! scenarios take turns, one batch of `jobs` seeds each, and the budget is
//! checked between batches (a batch may overrun it by one batch's time).

use crate::run::runner::{self, RunRequest, SeedVerdict, Summary};
use crate::world::plan::Plan;
use std::process::ExitCode;

/// Most seeds one budgeted run tries, whatever the budget.
pub const MAX_BUDGET_SEEDS: u64 = 10_000_000;

/// A random base seed: from the process's randomly keyed hasher (no clock,
/// no thread RNG; this is the CLI, outside every world).
pub fn random_base() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x686f_6c64_6661_7374); // "holdfast"
    // Below 2^52: the seeds stay exact in JSON and in every printed line.
    h.finish() >> 12
}

/// Runs `plans` round-robin on fresh seeds from `base` (random when `None`)
/// until `budget_s` wall seconds are spent; writes JUnit to `junit` when
/// given. Exit 1 when any seed failed.
pub fn run(plans: &[Plan], budget_s: u64, base: Option<u64>, jobs: usize, junit: Option<&str>) -> ExitCode {
    assert!(!plans.is_empty() && jobs >= 1 && budget_s >= 1);
    let base = base.unwrap_or_else(random_base);
    println!(
        "time-budget: {budget_s} s from base seed {base} over {} scenarios (--base-seed {base} repeats it)",
        plans.len()
    );
    let started = crate::run::pool::wall_now();
    let mut next: Vec<u64> = vec![base; plans.len()];
    let mut results: Vec<(Summary, Vec<SeedVerdict>)> = Vec::new();
    let mut tried = 0u64;
    'budget: loop {
        for (i, plan) in plans.iter().enumerate() {
            if started.elapsed().as_secs() >= budget_s || tried >= MAX_BUDGET_SEEDS {
                break 'budget;
            }
            let seeds: Vec<u64> = (next[i]..next[i].saturating_add(jobs as u64)).collect();
            next[i] = next[i].saturating_add(jobs as u64);
            tried += seeds.len() as u64;
            let req = RunRequest { seeds, jobs, check_determinism: false, progress: false };
            let (summary, verdicts) = runner::run_scenario(plan, &req);
            for v in verdicts.iter().filter(|v| !v.passed) {
                println!("FAIL {} seed {}", v.scenario, v.seed);
                for f in &v.failures {
                    println!("  {f}");
                }
                println!("  replay: {}", v.replay);
            }
            absorb(&mut results, summary, verdicts);
        }
    }
    let failed: u64 = results.iter().map(|(s, _)| s.failed).sum();
    for (s, _) in &results {
        println!("{:<28} seeds {}..{} ({} run), {} failed", s.scenario, base, base + s.seeds, s.seeds, s.failed);
    }
    println!("time-budget: {tried} seeds in {:.0} s", started.elapsed().as_secs_f64());
    if let Some(path) = junit
        && let Err(e) = std::fs::write(path, crate::run::junit::document(&results))
    {
        eprintln!("simulator: cannot write {path}: {e}");
        return ExitCode::from(2);
    }
    println!("{} passed, {failed} failed", tried - failed);
    if failed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// Adds one batch's summary and verdicts to the scenario's running total.
fn absorb(results: &mut Vec<(Summary, Vec<SeedVerdict>)>, batch: Summary, verdicts: Vec<SeedVerdict>) {
    match results.iter_mut().find(|(s, _)| s.scenario == batch.scenario) {
        Some((s, vs)) => {
            s.seeds += batch.seeds;
            s.passed += batch.passed;
            s.failed += batch.failed;
            s.wall_s += batch.wall_s;
            vs.extend(verdicts);
        }
        None => results.push((Summary { missing_paths: Vec::new(), paths_judged: false, ..batch }, verdicts)),
    }
}
