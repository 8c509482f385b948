//! `simulator chaos`: scenarios against the real stack, run by run or as a
//! soak (`--time-budget`), each verdict printed with its records and rerun
//! line, and the nemeses the passing runs survived.

use super::parse::{parse_duration_s, parse_range};
use super::select::parse_plant;
use super::usage_error;
use crate::world::plan::{self, Plan};
use std::ops::Range;
use std::process::ExitCode;
use std::sync::Arc;
use test_services::own_postgres::OwnPostgres;

/// The arguments of `simulator chaos`.
#[derive(Debug, clap::Args)]
pub struct ChaosArgs {
    /// A library scenario (repeatable); default: every library scenario with
    /// faults chaos mode applies to real things (crashes, partitions, pauses,
    /// stale tokens).
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// A scenario file outside the library (repeatable), e.g. a variant of a
    /// library scenario with its faults turned up. Pinned fault lists
    /// (`faults.network.pinned`, `faults.cache.pinned`) are the simulator's:
    /// chaos mode draws its own real faults.
    #[arg(long = "scenario-file")]
    files: Vec<String>,
    /// Seed range `A..B` (B exclusive).
    #[arg(long, value_parser = parse_range, conflicts_with = "seed", default_value = "0..1")]
    seeds: Range<u64>,
    /// One seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Run with this planted bug (`simulator plants` lists them).
    #[arg(long)]
    plant: Option<String>,
    /// bookingd processes.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=8))]
    bookingds: u64,
    /// How long users start new flows, in wall ms (faults run meanwhile).
    #[arg(long, default_value_t = 6_000, value_parser = clap::value_parser!(u64).range(1_000..=600_000))]
    duration_ms: u64,
    /// How long the settle phase waits at most for every order and refund to
    /// resolve, in wall ms (at least three payment deadlines are waited anyway).
    #[arg(long, default_value_t = crate::chaos::SETTLE_MAX_MS, value_parser = clap::value_parser!(u64).range(1_000..=600_000))]
    settle_max_ms: u64,
    /// A PostgreSQL server of yours (its maintenance database); each run
    /// creates (and drops) a database on it, and the server is never
    /// restarted. Default: chaos mode starts a server of its own (initdb into
    /// a temporary directory, a free port; PostgreSQL's server binaries are
    /// needed) and restarts it under load in every run.
    #[arg(long)]
    database_url: Option<String>,
    /// Redis for the seat-map cache and the cache-poison fault.
    #[arg(long, env = "HOLDFAST_TEST_REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// Run without Redis (no cache, no poison fault).
    #[arg(long)]
    no_redis: bool,
    /// Where each run's records go (`<out>/<scenario>-<seed>/`).
    #[arg(long, default_value = "target/chaos")]
    out: String,
    /// Keep each run's database (on a server of yours it is kept anyway when
    /// a run finds a violation); chaos mode's own server then keeps running,
    /// and the command that stops it is printed.
    #[arg(long)]
    keep_db: bool,
    /// One JSON verdict per run instead of text.
    #[arg(long)]
    json: bool,
    /// A soak: fresh seeds, the scenarios taking turns, from a random base
    /// (printed; `--base-seed` fixes it) until this much wall time is spent
    /// (`90s`, `30m`, `2h`); the PostgreSQL server's client connections, the
    /// harness's memory and open files and Redis's memory are sampled after
    /// each run, and their growth fails it.
    #[arg(long, value_parser = parse_duration_s, conflicts_with_all = ["seed", "expect_caught"])]
    time_budget: Option<u64>,
    /// The first seed `--time-budget` runs (default: random, printed).
    #[arg(long, requires = "time_budget")]
    base_seed: Option<u64>,
    /// Expect every run to be caught violating this invariant (with
    /// `--plant`: the plant's proof); exits 0 only if each was.
    #[arg(long, requires = "plant")]
    expect_caught: Option<String>,
    /// Expect every nemesis (every fault kind of `--help`'s list but notes)
    /// to have fired in the passing runs; exits 1 naming those that did not
    /// (CI's chaos step: a nemesis that silently stopped firing proves nothing).
    #[arg(long, conflicts_with = "expect_caught")]
    expect_every_fault: bool,
    /// Leave this nemesis out of every run's fault plan (repeatable; the
    /// kind it logs when it strikes: `packet-loss`, `provider-one-way`,
    /// `clock-skew`...), everything else as the seed says: a planted bug
    /// caught with every nemesis and not without one is that nemesis's.
    #[arg(long, value_parser = crate::chaos::leave_out::parse, conflicts_with = "expect_every_fault")]
    without: Vec<crate::chaos::log::ChaosFault>,
}

/// Runs `simulator chaos`.
pub fn chaos(args: ChaosArgs) -> ExitCode {
    use crate::chaos::ChaosOptions;
    let seeds = args.seed.map(|s| s..s + 1).unwrap_or(args.seeds.clone());
    let plans = match chaos_plans(&args, seeds.start) {
        Ok(plans) => plans,
        Err(e) => return usage_error(e),
    };
    let (admin_url, own_pg) = match chaos_database(&args) {
        Ok(db) => db,
        Err(e) => return usage_error(e),
    };
    let opts = ChaosOptions {
        admin_url,
        own_pg: own_pg.clone(),
        redis_url: (!args.no_redis).then(|| args.redis_url.clone()),
        bookingds: args.bookingds as usize,
        duration_ms: args.duration_ms,
        settle_max_ms: args.settle_max_ms,
        out_dir: args.out.clone().into(),
        keep_db: args.keep_db,
        // A server of chaos mode's own goes with it: a failing run's tables
        // are in its records (tables.json); only --keep-db keeps it running.
        keep_failing_db: args.expect_caught.is_none() && args.database_url.is_some(),
        without: args.without.clone(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return usage_error(format!("cannot start the runtime: {e}")),
    };
    let mut tally = ChaosTally::default();
    match args.time_budget {
        None => {
            for p in &plans {
                for seed in seeds.clone() {
                    chaos_run(&runtime, p, seed, &opts, &args, &mut tally);
                }
            }
        }
        Some(budget_s) => chaos_soak(&runtime, &plans, budget_s, &opts, &args, &mut tally),
    }
    if !args.json {
        print_chaos_summary(&args, tally.total, tally.failed, &tally.survived);
    }
    let silent = never_fired(&tally.survived);
    if args.expect_every_fault && !silent.is_empty() {
        println!("chaos: these faults never fired in a passing run: {}", silent.join(" "));
        tally.failed += 1;
    }
    let (failed, kept_any) = (tally.failed, tally.kept_any);
    if let Some(pg) = &own_pg
        && kept_any
    {
        println!(
            "chaos: its PostgreSQL keeps running for the kept databases: {}; stop it with: {}",
            pg.admin_url(),
            pg.keep()
        );
    }
    if failed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// What the chaos runs so far came to.
#[derive(Default)]
struct ChaosTally {
    total: u64,
    failed: u64,
    kept_any: bool,
    survived: std::collections::BTreeMap<String, u64>,
}

/// One chaos run of `plan` at `seed`: runs it, prints its verdict, tallies it.
fn chaos_run(
    runtime: &tokio::runtime::Runtime,
    plan: &Plan,
    seed: u64,
    opts: &crate::chaos::ChaosOptions,
    args: &ChaosArgs,
    tally: &mut ChaosTally,
) {
    tally.total += 1;
    let v = runtime.block_on(crate::chaos::run_one(plan, seed, opts));
    tally.kept_any |= v.kept_database.is_some();
    let as_expected = match &args.expect_caught {
        Some(inv) => v.error.is_none() && v.invariants.contains(inv),
        None => v.passed(),
    };
    if !as_expected {
        tally.failed += 1;
    } else {
        for (k, n) in &v.faults {
            *tally.survived.entry(fault_name(k)).or_default() += n;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string(&v).unwrap_or_default());
    } else {
        print_chaos_verdict(&v, plan, args);
    }
}

/// `chaos --time-budget`: runs take turns over `plans` on fresh seeds from
/// a random base (printed) until `budget_s` is spent; the shared resources
/// are sampled after each run, and their growth fails the soak
/// ([`crate::chaos::soak`]).
fn chaos_soak(
    runtime: &tokio::runtime::Runtime,
    plans: &[Plan],
    budget_s: u64,
    opts: &crate::chaos::ChaosOptions,
    args: &ChaosArgs,
    tally: &mut ChaosTally,
) {
    use crate::chaos::soak;
    let base = args.base_seed.unwrap_or_else(crate::run::budget::random_base);
    println!(
        "chaos soak: {budget_s} s from base seed {base} over {} scenarios (--base-seed {base} repeats the plan)",
        plans.len()
    );
    let started = crate::run::pool::wall_now();
    let mut samples = Vec::new();
    'budget: for round in 0..crate::run::budget::MAX_BUDGET_SEEDS {
        for plan in plans {
            if started.elapsed().as_secs() >= budget_s {
                break 'budget;
            }
            chaos_run(runtime, plan, base + round, opts, args, tally);
            match runtime.block_on(soak::sample(opts)) {
                Ok(s) => {
                    println!("  resources after run {}: {s}", samples.len() + 1);
                    samples.push(s);
                }
                Err(e) => println!("  resources after run {}: not sampled: {e}", samples.len() + 1),
            }
        }
    }
    let grown = soak::growth(&samples);
    for g in &grown {
        println!("chaos soak: grew: {g}");
    }
    if !grown.is_empty() {
        tally.failed += 1;
    }
}

/// The PostgreSQL server chaos runs on: `--database-url`'s, else one of its
/// own, started here (its admin URL, and the server to restart).
fn chaos_database(args: &ChaosArgs) -> Result<(String, Option<Arc<OwnPostgres>>), String> {
    match &args.database_url {
        Some(url) => Ok((url.clone(), None)),
        None => {
            let pg = OwnPostgres::start()
                .map_err(|e| format!("cannot start a PostgreSQL of chaos mode's own ({e}); or give --database-url"))?;
            Ok((pg.admin_url(), Some(Arc::new(pg))))
        }
    }
}

/// The plans `chaos` runs: the named scenarios and files, else every
/// library scenario with real faults and every waiting-room scenario (its
/// runs stop, restart and stall the run's own Redis); each with the plant.
fn chaos_plans(args: &ChaosArgs, first_seed: u64) -> Result<Vec<plan::Plan>, String> {
    let mut plans = Vec::new();
    for n in &args.scenarios {
        plans.push(plan::find(n).ok_or_else(|| format!("unknown scenario {n}; `simulator list` shows them"))?);
    }
    for f in &args.files {
        plans.push(plan::from_file(f)?);
    }
    if plans.is_empty() {
        plans = plan::library()
            .into_iter()
            .filter(|p| crate::chaos::has_real_faults(p, first_seed) || p.world_for(first_seed).waiting_room.is_some())
            .collect();
    }
    if let Some(name) = &args.plant {
        let plant = parse_plant(name)?;
        plans.iter_mut().for_each(|plan| plan.plant = Some(plant));
    }
    Ok(plans)
}

/// The last line of a chaos run: how many runs passed (or were caught) and
/// what the passing ones survived.
fn print_chaos_summary(args: &ChaosArgs, total: u64, failed: u64, survived: &std::collections::BTreeMap<String, u64>) {
    let faults: Vec<String> =
        survived.iter().filter(|(k, _)| k.as_str() != "note").map(|(k, n)| format!("{k}={n}")).collect();
    match &args.expect_caught {
        Some(inv) => println!("chaos: {} of {total} planted runs were caught violating {inv}", total - failed),
        None => {
            println!("chaos: {} of {total} runs passed; the passing runs survived {}", total - failed, faults.join(" "))
        }
    }
}

/// The fault kinds CI must see fire that `survived` does not count.
fn never_fired(survived: &std::collections::BTreeMap<String, u64>) -> Vec<String> {
    use crate::chaos::log::ChaosFault;
    let fired = |k: &ChaosFault| survived.get(&fault_name(k)).is_some_and(|&n| n > 0);
    ChaosFault::ALL.iter().filter(|k| k.must_fire() && !fired(k)).map(fault_name).collect()
}

/// A chaos fault's kebab-case name.
fn fault_name(k: &crate::chaos::log::ChaosFault) -> String {
    crate::chaos::log::name(*k)
}

/// One chaos run's verdict as text; a failing run names its records and its
/// rerun line (`--scenario-file` for a plan read from a file).
fn print_chaos_verdict(v: &crate::chaos::ChaosVerdict, plan: &Plan, args: &ChaosArgs) {
    let faults: Vec<String> = v.faults.iter().map(|(k, n)| format!("{}={n}", fault_name(k))).collect();
    println!(
        "chaos {} seed {}{}: {} in {:.1} s; faults: {}; requests {} (unknown outcome {}); bookings {}, charges {}, refunds {}",
        v.scenario,
        v.seed,
        v.plant.as_ref().map(|p| format!(" plant {p}")).unwrap_or_default(),
        if v.passed() { "PASS" } else { "FAIL" },
        v.wall_ms as f64 / 1000.0,
        faults.join(" "),
        v.requests,
        v.unknown_outcomes,
        v.bookings,
        v.charges,
        v.refunds
    );
    if let Some(e) = &v.error {
        println!("  harness error: {e}");
    }
    if !v.settled && v.error.is_none() {
        println!("  not settled: orders, payments or refunds still open after the settle bound");
    }
    for line in v.violations.iter().take(20) {
        println!("  violation: {line}");
    }
    for e in v.server_errors.iter().take(10) {
        println!("  server error: {} -> {:?} at {} ms ({})", e.op.request, e.op.outcome, e.op.end_ms, e.why);
    }
    if let Some(db) = &v.kept_database {
        println!("  kept database {db} for inspection (drop it when done)");
    }
    if !v.passed() {
        println!("  records: {}", v.records);
        let mut plant = v.plant.as_ref().map(|p| format!(" --plant {p}")).unwrap_or_default();
        args.without.iter().for_each(|f| plant.push_str(&format!(" --without {}", fault_name(f))));
        let settle = if args.settle_max_ms == crate::chaos::SETTLE_MAX_MS {
            String::new()
        } else {
            format!(" --settle-max-ms {}", args.settle_max_ms)
        };
        let scenario = match &plan.file {
            Some(f) => format!("--scenario-file {f}"),
            None => format!("--scenario {}", v.scenario),
        };
        println!(
            "  rerun (the seed decides the workload and faults, not the interleaving; it may pass): simulator chaos {scenario} --seed {}{plant} --duration-ms {}{settle}",
            v.seed, args.duration_ms
        );
    }
}
