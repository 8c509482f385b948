//! `simulator run`: scenarios over seeds, each seed in a process of its own,
//! every invariant checked; the tables, JUnit, the library's answer count.

use super::parse::{parse_duration_s, parse_range};
use super::select::{HarnessArgs, select};
use super::usage_error;
use crate::run::report;
use crate::run::runner::{self, Summary};
use crate::world::plan::Plan;
use std::io::IsTerminal;
use std::ops::Range;
use std::process::ExitCode;

/// The arguments of `simulator run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A library scenario to run (repeatable); default: the whole library.
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// A scenario file outside the library (repeatable).
    #[arg(long = "scenario-file")]
    files: Vec<String>,
    /// Seed range `A..B` (B exclusive); default: each scenario's own default range.
    #[arg(long, value_parser = parse_range, conflicts_with = "seed")]
    seeds: Option<Range<u64>>,
    /// One seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Print one JSON object per seed and one per scenario summary, instead of tables.
    #[arg(long)]
    json: bool,
    /// Run every seed twice and fail on any differing trace hash.
    #[arg(long)]
    check_determinism: bool,
    /// Worlds run in parallel (each world is single-threaded and deterministic).
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Stop after the first scenario that fails (mutation testing's speed-up;
    /// the scenarios not run are listed).
    #[arg(long)]
    fail_fast: bool,
    /// Run only shard `I` of `N` (1-based) of each scenario's seeds: the
    /// shards of one `N` are disjoint and together cover the seeds. A shard
    /// does not judge `expect.must_happen` (that needs every default seed).
    #[arg(long, value_parser = runner::Shard::parse)]
    shard: Option<runner::Shard>,
    /// Also write the results as JUnit XML to this file (one test case per
    /// seed, the replay line in each failure).
    #[arg(long)]
    junit: Option<String>,
    /// Run fresh seeds, round-robin over the scenarios, from a random base
    /// (printed; `--base-seed` fixes it) until this much wall time is spent:
    /// `90s`, `10m`, `2h`. Each failure prints its replay line.
    #[arg(long, value_parser = parse_duration_s, conflicts_with_all = ["seeds", "seed", "shard", "check_determinism"])]
    time_budget: Option<u64>,
    /// The first seed `--time-budget` runs (default: random, printed).
    #[arg(long, requires = "time_budget")]
    base_seed: Option<u64>,
    #[command(flatten)]
    harness: HarnessArgs,
}

/// Runs `simulator run`.
pub fn run(args: RunArgs) -> ExitCode {
    let plans = match select(&args.scenarios, &args.files, &args.harness) {
        Ok(p) => p,
        Err(e) => return usage_error(e),
    };
    if let Some(budget_s) = args.time_budget {
        return crate::run::budget::run(
            &plans,
            budget_s,
            args.base_seed,
            args.jobs.clamp(1, 64),
            args.junit.as_deref(),
        );
    }
    let mut summaries = Vec::new();
    let mut runs = Vec::new();
    for plan in &plans {
        let mut seeds: Vec<u64> = match (&args.seeds, args.seed) {
            (Some(r), _) => r.clone().collect(),
            (None, Some(s)) => vec![s],
            (None, None) => plan.default_seeds.clone().collect(),
        };
        if let Some(shard) = args.shard {
            seeds = shard.of(&seeds);
            if seeds.is_empty() {
                continue; // fewer seeds than shards: this one has none of this scenario's
            }
        }
        let req = runner::RunRequest {
            seeds,
            jobs: args.jobs.clamp(1, 64),
            check_determinism: args.check_determinism,
            progress: std::io::stderr().is_terminal(),
        };
        let (summary, verdicts) = runner::run_scenario(plan, &req);
        report::scenario(&summary, &verdicts, args.json);
        let failed = summary.failed_any();
        summaries.push(summary.clone());
        if args.junit.is_some() {
            runs.push((summary, verdicts));
        }
        if args.fail_fast && failed {
            let rest: Vec<&str> = plans[summaries.len()..].iter().map(|p| p.name.as_str()).collect();
            if !rest.is_empty() {
                println!("--fail-fast: not run: {}", rest.join(", "));
            }
            break;
        }
    }
    if !args.json {
        report::tables(&summaries, &plans);
    }
    let unprovoked = library_answers(&args, &plans, &summaries);
    if let Some(path) = &args.junit
        && let Err(e) = std::fs::write(path, crate::run::junit::document(&runs))
    {
        return usage_error(format!("cannot write {path}: {e}"));
    }
    if summaries.iter().any(Summary::failed_any) || !unprovoked.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// When `run` covered the whole library over its default seeds, as it is
/// (no plant, muted fault or narrowed checkers): the problem kinds no seed
/// answered, each printed (every kind outside `invariants::answers::UNPROVOKED`
/// must be provoked somewhere).
fn library_answers(args: &RunArgs, plans: &[Plan], summaries: &[Summary]) -> Vec<booking::problem_kind::ProblemKind> {
    let whole = args.scenarios.is_empty()
        && args.files.is_empty()
        && args.seeds.is_none()
        && args.seed.is_none()
        && args.shard.is_none()
        && plans.iter().all(|p| p.plant.is_none() && p.muted.is_empty() && p.checkers.is_empty())
        && summaries.len() == plans.len();
    if !whole {
        return Vec::new();
    }
    let totals = crate::run::runner::answer_totals_of(summaries);
    let missing = invariants::answers::never_provoked(&totals);
    for k in &missing {
        println!(
            "FAIL the library never provoked the problem kind {k} (invariants::answers::UNPROVOKED excuses only the kinds it names)"
        );
    }
    missing
}
