//! `simulator`: run the scenario library (or one scenario file) over seeds,
//! replay one seed, list scenarios. Exit 0 when every seed passed, 1 when
//! any failed, 2 on bad usage.

use clap::{Parser, Subcommand};
use simulator::plan::{self, Plan};
use simulator::runner::{self, SeedVerdict, Summary};
use std::io::{IsTerminal, Write};
use std::ops::Range;
use std::process::ExitCode;

/// mimalloc, tuned by [`simulator::allocator::tune`] at start: the worlds
/// allocate and free many small buffers, and glibc's malloc costs about a
/// quarter more wall time per seed (see docs/BENCHMARKS.md).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// holdfast's deterministic simulator.
#[derive(Debug, Parser)]
#[command(name = "simulator", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// One scenario per line: name, then a one-line description.
    List,
    /// Run scenarios over seeds and check every invariant.
    Run(RunArgs),
    /// Run one seed, print its verdict and trace hash (last line: `trace-hash: <hex>`).
    Replay(ReplayArgs),
    /// INTERNAL: run one seed and print its verdict as one JSON line. `run`
    /// runs every seed this way, in a process of its own (see `run_seeds`).
    #[command(hide = true)]
    Seed(ReplayArgs),
}

#[derive(Debug, clap::Args)]
struct RunArgs {
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
    /// TESTING ONLY: the store's checkout skips its token check (proves the harness catches it).
    #[arg(long, hide = true)]
    break_checkout: bool,
}

#[derive(Debug, clap::Args)]
struct ReplayArgs {
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
    /// TESTING ONLY: see `run --break-checkout`.
    #[arg(long, hide = true)]
    break_checkout: bool,
}

fn parse_range(s: &str) -> Result<Range<u64>, String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("expected A..B, got {s}"))?;
    let a: u64 = a.parse().map_err(|_| format!("bad range start {a}"))?;
    let b: u64 = b.parse().map_err(|_| format!("bad range end {b}"))?;
    if a >= b {
        return Err(format!("empty range {s}"));
    }
    Ok(a..b)
}

fn usage_error(msg: String) -> ExitCode {
    eprintln!("simulator: {msg}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    simulator::allocator::tune();
    let cli = Cli::parse();
    match cli.command {
        Command::List => {
            for p in plan::library() {
                println!("{:<28} {}", p.name, p.description);
            }
            ExitCode::SUCCESS
        }
        Command::Run(args) => run(args),
        Command::Replay(args) => replay(args),
        Command::Seed(args) => seed_verdict(args),
    }
}

fn select(names: &[String], files: &[String], broken: bool) -> Result<Vec<Plan>, String> {
    let mut plans = Vec::new();
    if names.is_empty() && files.is_empty() {
        plans = plan::library();
    }
    for n in names {
        plans.push(plan::find(n).ok_or_else(|| format!("unknown scenario {n}; `simulator list` shows them"))?);
    }
    for f in files {
        plans.push(plan::from_file(f)?);
    }
    if broken {
        for p in &mut plans {
            p.break_checkout = true;
        }
    }
    Ok(plans)
}

/// Wall-clock timing of the runner itself (not simulated code).
#[allow(clippy::disallowed_methods)]
fn wall_now() -> std::time::Instant {
    std::time::Instant::now()
}

fn run(args: RunArgs) -> ExitCode {
    let plans = match select(&args.scenarios, &args.files, args.break_checkout) {
        Ok(p) => p,
        Err(e) => return usage_error(e),
    };
    let jobs = args.jobs.clamp(1, 64);
    let tty = std::io::stderr().is_terminal();
    let mut summaries = Vec::new();
    let mut failed_any = false;
    for plan in &plans {
        let seeds: Vec<u64> = match (&args.seeds, args.seed) {
            (Some(r), _) => r.clone().collect(),
            (None, Some(s)) => vec![s],
            (None, None) => plan.default_seeds.clone().collect(),
        };
        let started = wall_now();
        let verdicts = run_seeds(plan, &seeds, jobs, args.check_determinism, tty);
        let wall_s = started.elapsed().as_secs_f64().max(1e-9);
        let passed = verdicts.iter().filter(|v| v.passed).count() as u64;
        let sim_s: f64 = verdicts.iter().map(|v| v.simulated_ms as f64 / 1000.0).sum::<f64>()
            * if args.check_determinism { 2.0 } else { 1.0 };
        let summary = Summary {
            scenario: plan.name.clone(),
            seeds: seeds.len() as u64,
            passed,
            failed: seeds.len() as u64 - passed,
            wall_s,
            seeds_per_s: seeds.len() as f64 / wall_s,
            sim_per_wall: sim_s / wall_s,
            http_exchanges_per_seed: verdicts.iter().map(|v| v.http_exchanges as f64).sum::<f64>()
                / verdicts.len().max(1) as f64,
            metrics: runner::MetricsSummary::of(&verdicts),
        };
        for v in &verdicts {
            if args.json {
                println!("{}", serde_json::to_string(&serde_json::json!({ "seed_verdict": v })).expect("serializes"));
            } else if !v.passed {
                println!("FAIL {} seed {}", v.scenario, v.seed);
                for f in &v.failures {
                    println!("  {f}");
                }
                println!("  replay: {}", v.replay);
            }
        }
        if args.json {
            println!("{}", serde_json::to_string(&serde_json::json!({ "summary": summary })).expect("serializes"));
        }
        failed_any |= summary.failed > 0;
        summaries.push(summary);
    }
    if !args.json {
        println!(
            "{:<28} {:>6} {:>6} {:>6} {:>10} {:>12} {:>10}",
            "scenario", "seeds", "passed", "failed", "seeds/s", "sim-s/wall-s", "http/seed"
        );
        for s in &summaries {
            println!(
                "{:<28} {:>6} {:>6} {:>6} {:>10.1} {:>12.0} {:>10.0}",
                s.scenario, s.seeds, s.passed, s.failed, s.seeds_per_s, s.sim_per_wall, s.http_exchanges_per_seed
            );
        }
        println!();
        println!(
            "{:<28} {:>7} {:>9} {:>9} {:>8} {:>8} {:>6} {:>8} {:>8}  classification",
            "metrics (mean per seed)",
            "holds",
            "refused",
            "abandon",
            "lag-max",
            "expired",
            "sold",
            "charged",
            "refunded"
        );
        for s in &summaries {
            let m = &s.metrics;
            let classes: Vec<String> = m.classifications.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            println!(
                "{:<28} {:>7.0} {:>9.0} {:>9.0} {:>6}ms {:>7.1}% {:>6.0} {:>8.0} {:>8.0}  {}",
                s.scenario,
                m.holds_acquired,
                m.holds_refused_contention,
                m.holds_abandoned,
                m.expiry_lag_max_ms,
                m.held_expired_share * 100.0,
                m.seats_sold,
                m.charged,
                m.refunded,
                classes.join(" ")
            );
        }
        let (seeds, failed): (u64, u64) = summaries.iter().fold((0, 0), |(a, b), s| (a + s.seeds, b + s.failed));
        println!("{} passed, {} failed", seeds - failed, failed);
    }
    if failed_any { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// Runs `seeds` of `plan`, `jobs` at a time, each seed in a process of its
/// own (`simulator seed ...`), exactly as `replay` runs it.
///
/// Why processes: tokio numbers tasks from one process-wide counter and a
/// runtime drops its tasks in an order that depends on those numbers, so a
/// crashed host's connections would close in an order that depends on what
/// else the process ran before (or runs beside) the world. A fresh process
/// per seed makes every run, and every `replay` of it, see the same numbers.
fn run_seeds(plan: &Plan, seeds: &[u64], jobs: usize, twice: bool, tty: bool) -> Vec<SeedVerdict> {
    let done = std::sync::atomic::AtomicUsize::new(0);
    let mut verdicts: Vec<Option<SeedVerdict>> = vec![None; seeds.len()];
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots = std::sync::Mutex::new(&mut verdicts);
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(seeds.len()).max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if i >= seeds.len() {
                        return;
                    }
                    let mut verdict = seed_in_process(plan, seeds[i]);
                    if twice {
                        let again = seed_in_process(plan, seeds[i]);
                        if again.trace_hash != verdict.trace_hash {
                            verdict.passed = false;
                            verdict.failures.push(format!(
                                "nondeterminism: trace hash {} then {}",
                                verdict.trace_hash, again.trace_hash
                            ));
                        }
                    }
                    slots.lock().expect("poisoned")[i] = Some(verdict);
                    let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    if tty {
                        eprint!("\r{:<28} {n}/{}", plan.name, seeds.len());
                        let _ = std::io::stderr().flush();
                    }
                }
            });
        }
    });
    if tty {
        eprintln!();
    }
    verdicts.into_iter().map(|v| v.expect("every seed ran")).collect()
}

/// Runs `seed` of `plan` in a child process and reads its verdict. A child
/// that dies (a panic in the world) is a failed seed with its replay line.
fn seed_in_process(plan: &Plan, seed: u64) -> SeedVerdict {
    let exe = std::env::current_exe().expect("the simulator knows its own path");
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("seed").arg("--seed").arg(seed.to_string());
    match &plan.file {
        Some(f) => cmd.arg("--scenario-file").arg(f),
        None => cmd.arg("--scenario").arg(&plan.name),
    };
    if plan.break_checkout {
        cmd.arg("--break-checkout");
    }
    let failed = |why: String| SeedVerdict {
        scenario: plan.name.clone(),
        seed,
        passed: false,
        failures: vec![why],
        replay: runner::replay_command(&plan.name, seed, plan.file.as_deref(), plan.break_checkout),
        trace_hash: String::new(),
        simulated_ms: 0,
        http_exchanges: 0,
        metrics: Default::default(),
    };
    match cmd.stderr(std::process::Stdio::inherit()).output() {
        Ok(out) => match serde_json::from_slice::<SeedVerdict>(&out.stdout) {
            Ok(v) => v,
            Err(_) => failed(format!("the seed's process ended without a verdict ({})", out.status)),
        },
        Err(e) => failed(format!("cannot start the seed's process: {e}")),
    }
}

/// The one scenario `replay` or `seed` (`verb`) names, or the usage error.
fn one_plan(args: &ReplayArgs, verb: &str) -> Result<Plan, ExitCode> {
    let names: Vec<String> = args.scenario.iter().cloned().collect();
    let files: Vec<String> = args.scenario_file.iter().cloned().collect();
    match select(&names, &files, args.break_checkout) {
        Ok(mut p) if p.len() == 1 => Ok(p.remove(0)),
        Ok(_) => Err(usage_error(format!("{verb} takes one scenario"))),
        Err(e) => Err(usage_error(e)),
    }
}

fn seed_verdict(args: ReplayArgs) -> ExitCode {
    let plan = match one_plan(&args, "seed") {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (_, verdict) = runner::run_seed(&plan, args.seed);
    println!("{}", serde_json::to_string(&verdict).expect("a verdict serializes"));
    ExitCode::SUCCESS
}

fn replay(args: ReplayArgs) -> ExitCode {
    let plan = match one_plan(&args, "replay") {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (out, verdict) = runner::run_seed(&plan, args.seed);
    if let Some(path) = &args.trace
        && let Err(e) = std::fs::write(path, invariants::trace::to_json_lines(&out.trace))
    {
        return usage_error(format!("cannot write {path}: {e}"));
    }
    println!("scenario: {}", plan.name);
    println!("seed: {}", args.seed);
    println!("verdict: {}", if verdict.passed { "pass" } else { "fail" });
    for v in &out.violations {
        println!("violation: {v}");
    }
    for f in verdict.failures.iter().filter(|f| !f.starts_with("expected")) {
        if !out.violations.iter().any(|v| &v.to_string() == f) {
            println!("failure: {f}");
        }
    }
    println!("metrics: {}", serde_json::to_string(&out.metrics).expect("serializes"));
    println!("http-exchanges: {}", out.http_exchanges);
    println!("trace-events: {}", out.trace.len());
    println!("trace-hash: {}", out.trace_hash);
    if verdict.passed { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
