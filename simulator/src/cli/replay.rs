//! `simulator replay` (one seed: its verdict, trace, timeline and trace
//! hash) and the hidden `simulator seed` that `run` starts for each seed.

use super::select::{HarnessArgs, select};
use super::usage_error;
use crate::run::runner;
use crate::world::plan::Plan;
use std::process::ExitCode;

/// The arguments of `simulator replay` (and `seed`).
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The library scenario.
    #[arg(long, required_unless_present = "scenario_file", conflicts_with = "scenario_file")]
    scenario: Option<String>,
    /// A scenario file outside the library.
    #[arg(long)]
    scenario_file: Option<String>,
    /// The seed.
    #[arg(long)]
    seed: u64,
    /// Write the trace as JSON lines to this file.
    #[arg(long)]
    trace: Option<String>,
    /// Also write the seed's timeline to this file: one self-contained HTML
    /// page (swimlanes per seat and user, fault bands, each violation with
    /// links to its witness events); it fetches nothing.
    #[arg(long, conflicts_with = "plan")]
    html: Option<String>,
    /// Print the seed's fault schedule (every fault drawn up front, and the
    /// policies drawn as the run goes) and exit without running it.
    #[arg(long)]
    plan: bool,
    #[command(flatten)]
    harness: HarnessArgs,
}

/// The one scenario `replay` or `seed` (`verb`) names, or the usage error.
fn one_plan(args: &ReplayArgs, verb: &str) -> Result<Plan, ExitCode> {
    let names: Vec<String> = args.scenario.iter().cloned().collect();
    let files: Vec<String> = args.scenario_file.iter().cloned().collect();
    match select(&names, &files, &args.harness) {
        Ok(mut p) if p.len() == 1 => Ok(p.remove(0)),
        Ok(_) => Err(usage_error(format!("{verb} takes one scenario"))),
        Err(e) => Err(usage_error(e)),
    }
}

/// Runs `simulator seed`: one seed, its verdict as one JSON line.
pub fn seed_verdict(args: ReplayArgs) -> ExitCode {
    let plan = match one_plan(&args, "seed") {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (_, verdict) = runner::run_seed(&plan, args.seed);
    println!("{}", serde_json::to_string(&verdict).expect("a verdict serializes"));
    ExitCode::SUCCESS
}

/// Runs `simulator replay`.
pub fn replay(args: ReplayArgs) -> ExitCode {
    let plan = match one_plan(&args, "replay") {
        Ok(p) => p,
        Err(code) => return code,
    };
    if args.plan {
        println!("scenario: {}", plan.name);
        print!("{}", crate::world::schedule::draw(&plan.world_for(args.seed), args.seed));
        return ExitCode::SUCCESS;
    }
    let (out, verdict) = runner::run_seed(&plan, args.seed);
    if let Some(path) = &args.trace
        && let Err(e) = std::fs::write(path, invariants::trace::to_json_lines(&out.trace))
    {
        return usage_error(format!("cannot write {path}: {e}"));
    }
    if let Some(path) = &args.html
        && let Err(e) = write_timeline(path, &plan, &out, &verdict)
    {
        return usage_error(format!("cannot write {path}: {e}"));
    }
    println!("scenario: {}", plan.name);
    println!("seed: {}", args.seed);
    println!("verdict: {}", if verdict.passed { "pass" } else { "fail" });
    for v in &out.violations {
        println!("violation: {v}");
    }
    // Violations were printed above; unmet expectations show in the verdict.
    let others = |f: &&crate::run::failure::Failure| {
        !f.is_unmet_expectation() && !matches!(f, crate::run::failure::Failure::Violated { .. })
    };
    for f in verdict.failures.iter().filter(others) {
        println!("failure: {f}");
    }
    if let Some(p) = &out.panic {
        println!("panic: {p}");
    }
    println!("metrics: {}", serde_json::to_string(&out.metrics).expect("serializes"));
    let paths: Vec<String> = out.paths.iter().map(|(k, v)| format!("{k} {v}")).collect();
    println!("paths: {}", paths.join(", "));
    println!("http-exchanges: {}", out.http_exchanges);
    println!("seat-map-cache-hits: {}", out.seat_map_cache_hits);
    println!("trace-events: {}", out.trace.len());
    let (seats, orders, compensations) = out.trace.iter().fold((0, 0, 0), |(s, o, c), e| match e.kind {
        invariants::TraceKind::SeatChange(_) => (s + 1, o, c),
        invariants::TraceKind::OrderChange(_) => (s, o + 1, c),
        invariants::TraceKind::CompensationChange(_) => (s, o, c + 1),
        _ => (s, o, c),
    });
    println!(
        "transitions checked (each against its table): seat {seats}, order {orders}, compensation {compensations}"
    );
    println!("trace-hash: {}", out.trace_hash);
    if verdict.passed { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// Writes the seed's timeline (`replay --html`) to `path`, creating its directory.
fn write_timeline(
    path: &str,
    plan: &Plan,
    out: &crate::world::check::RunOutcome,
    verdict: &runner::SeedVerdict,
) -> std::io::Result<()> {
    // The violations are drawn with their witnesses; the rest (a panic, an
    // unmet expectation) are shown as they are.
    let notes: Vec<String> =
        verdict.failures.iter().filter(|f| f.violation().is_none()).map(ToString::to_string).collect();
    let page = crate::timeline::render(&crate::timeline::Timeline {
        scenario: &plan.name,
        seed: out.seed,
        passed: verdict.passed,
        replay: &verdict.replay,
        trace_hash: &out.trace_hash,
        trace: &out.trace,
        violations: &out.violations,
        notes: &notes,
        max_lanes: crate::timeline::DEFAULT_MAX_LANES,
    });
    if let Some(dir) = std::path::Path::new(path).parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, page)
}
