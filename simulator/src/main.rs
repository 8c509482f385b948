//! `simulator`: run the scenario library (or one scenario file) over seeds,
//! replay one seed, list scenarios. Exit 0 when every seed passed, 1 when
//! any failed, 2 on bad usage.

use booking::fault::{CATALOG, Plant, SEAM_MARKER};
use clap::{Parser, Subcommand};
use scenarios::FaultKind;
use simulator::plants;
use simulator::run::report;
use simulator::run::runner::{self, Summary};
use simulator::world::plan::{self, Plan};
use std::io::IsTerminal;
use std::ops::Range;
use std::process::ExitCode;
use std::sync::Arc;
use test_services::own_postgres::OwnPostgres;

/// mimalloc, tuned by [`simulator::run::allocator::tune`] at start: the worlds
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
    /// The planted-bug catalog: list it; `--check` proves each entry is caught
    /// by its scenario; `--hunt` measures how long the library takes to find each.
    Plants(PlantsArgs),
    /// Chaos mode: scenarios against the real stack (PostgreSQL, Redis, two
    /// `bookingd` processes and a `fake-provider` process, real faults).
    ///
    /// The processes are this binary (`simulator bookingd ...`, `simulator
    /// fake-provider ...`: the released daemons' code, built with the fault
    /// seam). The seed decides the workload and the fault plan, not the
    /// interleaving: a failing chaos seed may not fail again when rerun; its
    /// records (fault log, client history, final tables, ledger, process
    /// output) are written under `--out`.
    ///
    /// The nemeses (each counted in the summary): crash after a commit and
    /// restart (crash-after-commit, restart), kill -9 (kill9), clients that
    /// hang up mid-request (disconnect), every PostgreSQL backend of the run
    /// terminated (pg-terminate-backends), a bookingd cut off from PostgreSQL
    /// and healed (db-partition, db-heal: its answers meanwhile must be fast),
    /// the run's own PostgreSQL stopped -m immediate under load and started
    /// again (pg-stop, pg-start: every answer meanwhile must be fast, every
    /// order a client was told of must be in the tables after; not with
    /// --database-url), in crash-fault runs a PostgreSQL pair of the run's
    /// own instead, its primary stopped -m immediate under load and its
    /// synchronous standby promoted behind the link every connection goes
    /// through (pg-failover, pg-promoted: the same judges, on the new primary), where the scenario has network faults the payment
    /// path partitioned (a bookingd cut off from the provider: provider-cut;
    /// the provider unable to reach bookingd, its answers lost and its
    /// webhooks refused while the calls still arrive: provider-one-way;
    /// bookingd's answers to webhooks lost: webhook-answers-lost; each healed:
    /// link-heal), one bookingd's link to PostgreSQL slowed, each chunk
    /// of its answers held the scenario's largest message latency (20-100
    /// ms) for 2-3 s (db-latency), every bookingd's link to the provider
    /// slowed 800-1600 ms per chunk (provider-latency; each ended:
    /// latency-end), and 5-20 % of the TCP segments between one bookingd and
    /// its PostgreSQL and provider links dropped for 2-3 s (packet-loss,
    /// packet-loss-end: nftables, Debian's `nftables`, as root or through
    /// `sudo -n`; without it the run notes why and goes on), poisoned
    /// seat-map cache entries (redis-poison: users read
    /// seat maps, each judged whole and no staler than the cache's lifetime),
    /// bookingd and provider processes whose clocks run seconds ahead or
    /// behind, as the scenario's `faults.clock_skew` says, with a new skew at
    /// every restart (clock-skew: libfaketime, Debian's `faketime`; every
    /// hold must still live its configured lifetime by the store's clock),
    /// in waiting-room runs the run's own Redis stopped, restarted empty
    /// and stalled (redis-stop, redis-restart-empty, redis-stall), and in
    /// cache-fault runs the seat-map cache's own Redis, persistent, stopped
    /// and started again with its data (redis-restart-kept), stopped and
    /// started empty, and stalled; users
    /// pause past their holds (client-pause) and replay spent tokens
    /// (stale-replay).
    Chaos(ChaosArgs),
    /// INTERNAL: run one seed and print its verdict as one JSON line. `run`
    /// runs every seed this way, in a process of its own (see `simulator::run::pool`).
    #[command(hide = true)]
    Seed(ReplayArgs),
    /// Shrink a failing seed to a capsule: a small scenario file that fails
    /// the same way (`run --scenario-file CAPSULE --seed N [--plant P]`).
    Shrink(simulator::shrink::cli::ShrinkArgs),
}

/// What a run is run with besides its scenario: a planted bug, muted faults.
#[derive(Debug, Clone, clap::Args)]
struct HarnessArgs {
    /// Run with this planted bug (`simulator plants` lists them).
    #[arg(long)]
    plant: Option<String>,
    /// TESTING ONLY: the same as `--plant unconditional-checkout`.
    #[arg(long, hide = true)]
    break_checkout: bool,
    /// TESTING ONLY: switch this fault kind off whatever the scenario says
    /// (a `[faults.NAME]` table name; repeatable).
    #[arg(long, hide = true)]
    mute: Vec<String>,
    /// TESTING ONLY: the services share no seat-map cache (every read goes
    /// to the store), to compare a run with the cache against one without.
    #[arg(long, hide = true)]
    no_seat_map_cache: bool,
    /// Judge with these checkers only, comma-separated (`auditor`,
    /// `bookings`, ...: the names of `invariants::checks::CHECKERS`); default: all.
    #[arg(long, value_delimiter = ',')]
    checkers: Vec<String>,
}

#[derive(Debug, clap::Args)]
struct PlantsArgs {
    /// Prove every entry (or `--plant`'s): its scenario fails within its
    /// default seeds with its invariant, the printed replay line reproduces
    /// the failure, and the same seed passes without the bug.
    #[arg(long, conflicts_with = "hunt")]
    check: bool,
    /// For every entry (or `--plant`'s): run the library's must-pass scenarios
    /// round-robin until the first failure; report seeds and wall time.
    #[arg(long)]
    hunt: bool,
    /// With `--check`: judge every entry by the auditor alone (every other
    /// checker off): each entry's own scenario must fail with `auditor`.
    #[arg(long, requires = "check")]
    auditor: bool,
    /// Only this entry.
    #[arg(long)]
    plant: Option<String>,
    /// Seeds run in parallel.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// One JSON object per entry.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct ChaosArgs {
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
    #[arg(long, default_value_t = simulator::chaos::SETTLE_MAX_MS, value_parser = clap::value_parser!(u64).range(1_000..=600_000))]
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
    #[arg(long, value_parser = simulator::chaos::leave_out::parse, conflicts_with = "expect_every_fault")]
    without: Vec<simulator::chaos::log::ChaosFault>,
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

fn parse_range(s: &str) -> Result<Range<u64>, String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("expected A..B, got {s}"))?;
    let a: u64 = a.parse().map_err(|_| format!("bad range start {a}"))?;
    let b: u64 = b.parse().map_err(|_| format!("bad range end {b}"))?;
    if a >= b {
        return Err(format!("empty range {s}"));
    }
    Ok(a..b)
}

/// `90s`, `10m`, `2h` (or plain seconds) as seconds, at least 1.
fn parse_duration_s(s: &str) -> Result<u64, String> {
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().map_err(|_| format!("bad duration {s}: expected e.g. 90s, 10m, 2h"))?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3_600,
        _ => return Err(format!("bad duration unit in {s}: use s, m or h")),
    };
    match n.checked_mul(scale) {
        Some(secs) if secs >= 1 => Ok(secs),
        _ => Err(format!("duration {s} out of range")),
    }
}

fn usage_error(msg: String) -> ExitCode {
    eprintln!("simulator: {msg}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    // `simulator bookingd ...` and `simulator fake-provider ...` are the real
    // daemons (with the fault seam): chaos mode runs them as processes.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match args.get(1).and_then(|a| a.to_str()) {
        Some("bookingd") => return exit_code(booking::daemon::main_from(args[1..].iter().cloned())),
        Some("fake-provider") => return exit_code(booking::fake_provider::cli::main_from(args[1..].iter().cloned())),
        _ => {}
    }
    if !simulator::TOKIO_UNSTABLE {
        eprintln!(
            "simulator: built without `--cfg tokio_unstable`, so tokio's scheduling and `select!` are not \
             seeded and a seed no longer decides a run. The flag comes from .cargo/config.toml; a RUSTFLAGS \
             variable overrides that file: unset it and build again."
        );
        return ExitCode::from(2);
    }
    simulator::run::allocator::tune();
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
        Command::Plants(args) => plants_command(args),
        Command::Seed(args) => seed_verdict(args),
        Command::Chaos(args) => chaos(args),
        Command::Shrink(args) => simulator::shrink::cli::main(args),
    }
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn chaos(args: ChaosArgs) -> ExitCode {
    use simulator::chaos::ChaosOptions;
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
    opts: &simulator::chaos::ChaosOptions,
    args: &ChaosArgs,
    tally: &mut ChaosTally,
) {
    tally.total += 1;
    let v = runtime.block_on(simulator::chaos::run_one(plan, seed, opts));
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
/// ([`simulator::chaos::soak`]).
fn chaos_soak(
    runtime: &tokio::runtime::Runtime,
    plans: &[Plan],
    budget_s: u64,
    opts: &simulator::chaos::ChaosOptions,
    args: &ChaosArgs,
    tally: &mut ChaosTally,
) {
    use simulator::chaos::soak;
    let base = args.base_seed.unwrap_or_else(simulator::run::budget::random_base);
    println!(
        "chaos soak: {budget_s} s from base seed {base} over {} scenarios (--base-seed {base} repeats the plan)",
        plans.len()
    );
    let started = simulator::run::pool::wall_now();
    let mut samples = Vec::new();
    'budget: for round in 0..simulator::run::budget::MAX_BUDGET_SEEDS {
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
            .filter(|p| {
                simulator::chaos::has_real_faults(p, first_seed) || p.world_for(first_seed).waiting_room.is_some()
            })
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
    use simulator::chaos::log::ChaosFault;
    let fired = |k: &ChaosFault| survived.get(&fault_name(k)).is_some_and(|&n| n > 0);
    ChaosFault::ALL.iter().filter(|k| k.must_fire() && !fired(k)).map(fault_name).collect()
}

/// A chaos fault's kebab-case name.
fn fault_name(k: &simulator::chaos::log::ChaosFault) -> String {
    simulator::chaos::log::name(*k)
}

/// One chaos run's verdict as text; a failing run names its records and its
/// rerun line (`--scenario-file` for a plan read from a file).
fn print_chaos_verdict(v: &simulator::chaos::ChaosVerdict, plan: &Plan, args: &ChaosArgs) {
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
        let settle = if args.settle_max_ms == simulator::chaos::SETTLE_MAX_MS {
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

fn parse_plant(name: &str) -> Result<Plant, String> {
    Plant::parse(name).ok_or_else(|| format!("unknown plant {name}; `simulator plants` lists them"))
}

fn select(names: &[String], files: &[String], harness: &HarnessArgs) -> Result<Vec<Plan>, String> {
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
    let plant = match (&harness.plant, harness.break_checkout) {
        (Some(_), true) => return Err("--break-checkout is --plant unconditional-checkout: give one".into()),
        (Some(name), false) => Some(parse_plant(name)?),
        (None, true) => Some(Plant::UnconditionalCheckout),
        (None, false) => None,
    };
    let muted = harness
        .mute
        .iter()
        .map(|m| {
            FaultKind::parse(m).ok_or_else(|| {
                let known: Vec<&str> = FaultKind::ALL.iter().map(|k| k.as_str()).collect();
                format!("unknown fault kind {m} (known: {})", known.join(", "))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let known: Vec<&str> = invariants::checks::CHECKERS.iter().map(|(n, _)| *n).collect();
    if let Some(c) = harness.checkers.iter().find(|c| !known.contains(&c.as_str())) {
        return Err(format!("unknown checker {c} (known: {})", known.join(", ")));
    }
    for p in &mut plans {
        p.plant = plant;
        p.muted = muted.clone();
        p.seat_map_cache = !harness.no_seat_map_cache;
        p.checkers = harness.checkers.clone();
    }
    Ok(plans)
}

fn run(args: RunArgs) -> ExitCode {
    let plans = match select(&args.scenarios, &args.files, &args.harness) {
        Ok(p) => p,
        Err(e) => return usage_error(e),
    };
    if let Some(budget_s) = args.time_budget {
        return simulator::run::budget::run(
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
        && let Err(e) = std::fs::write(path, simulator::run::junit::document(&runs))
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
    let totals = simulator::run::runner::answer_totals_of(summaries);
    let missing = invariants::answers::never_provoked(&totals);
    for k in &missing {
        println!(
            "FAIL the library never provoked the problem kind {k} (invariants::answers::UNPROVOKED excuses only the kinds it names)"
        );
    }
    missing
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
    if args.plan {
        println!("scenario: {}", plan.name);
        print!("{}", simulator::world::schedule::draw(&plan.world_for(args.seed), args.seed));
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
    let others = |f: &&simulator::run::failure::Failure| {
        !f.is_unmet_expectation() && !matches!(f, simulator::run::failure::Failure::Violated { .. })
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
    out: &simulator::world::check::RunOutcome,
    verdict: &runner::SeedVerdict,
) -> std::io::Result<()> {
    // The violations are drawn with their witnesses; the rest (a panic, an
    // unmet expectation) are shown as they are.
    let notes: Vec<String> =
        verdict.failures.iter().filter(|f| f.violation().is_none()).map(ToString::to_string).collect();
    let page = simulator::timeline::render(&simulator::timeline::Timeline {
        scenario: &plan.name,
        seed: out.seed,
        passed: verdict.passed,
        replay: &verdict.replay,
        trace_hash: &out.trace_hash,
        trace: &out.trace,
        violations: &out.violations,
        notes: &notes,
        max_lanes: simulator::timeline::DEFAULT_MAX_LANES,
    });
    if let Some(dir) = std::path::Path::new(path).parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, page)
}

fn plants_command(args: PlantsArgs) -> ExitCode {
    let entries: Vec<&booking::fault::Entry> = match &args.plant {
        Some(name) => match parse_plant(name) {
            Ok(p) => vec![p.entry()],
            Err(e) => return usage_error(e),
        },
        None => CATALOG.iter().collect(),
    };
    if !args.check && !args.hunt {
        list_plants(&entries);
        return ExitCode::SUCCESS;
    }
    // The simulator does not run what a real-stack plant breaks: chaos mode checks it.
    let entries: Vec<&booking::fault::Entry> = entries.into_iter().filter(|e| !e.real_stack).collect();
    if entries.is_empty() {
        return usage_error("that plant is caught on the real stack only: `simulator chaos --plant NAME --scenario SCENARIO --expect-caught INVARIANT` (see `simulator plants`)".into());
    }
    let (mut checked, mut failed) = (0, 0);
    for e in &entries {
        let results = if args.check { check_plant(e, &args) } else { vec![hunt_plant(e, &args)] };
        checked += results.len();
        failed += results.iter().filter(|ok| !**ok).count();
    }
    if !args.json {
        println!("{} passed, {} failed", checked - failed, failed);
    }
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// The catalog as a table: plant, area, scenario, invariant, what it is.
fn list_plants(entries: &[&booking::fault::Entry]) {
    println!("# {SEAM_MARKER}");
    println!("{:<30} {:<16} {:<24} {:<22} what", "plant", "area", "caught by scenario", "invariant");
    for e in entries {
        println!(
            "{:<30} {:<16} {:<24} {:<22} {} [{}]{}",
            e.name,
            e.area.as_str(),
            e.scenario,
            e.invariant,
            e.what,
            e.lives_in,
            match (e.real_stack, e.proved_by_test) {
                (_, Some(test)) => format!(" (real stack: {test})"),
                (true, None) => " (real stack: simulator chaos)".to_string(),
                (false, None) => String::new(),
            }
        );
        for (scenario, invariant) in e.also {
            println!("{:<30} {:<16} {scenario:<24} {invariant}", "", "");
        }
    }
}

/// Proves entry `e` in each of its scenarios; prints each check; returns whether each held.
fn check_plant(e: &booking::fault::Entry, args: &PlantsArgs) -> Vec<bool> {
    let checks = if args.auditor { vec![plants::check_by_auditor(e, args.jobs)] } else { plants::check(e, args.jobs) };
    for c in &checks {
        if args.json {
            println!("{}", serde_json::to_string(c).expect("serializes"));
            continue;
        }
        let seed = c.caught_seed.map_or("-".into(), |s| s.to_string());
        println!(
            "{} {:<30} {:<24} {:<22} seed {:>3} after {:>3} seeds, {:>6.1} s",
            if c.ok { "ok  " } else { "FAIL" },
            c.plant,
            c.scenario,
            c.invariant,
            seed,
            c.seeds_run,
            c.wall_s
        );
        for p in &c.problems {
            println!("     {p}");
        }
        if let Some(r) = c.replay.as_ref().filter(|_| !c.ok) {
            println!("     replay: {r}");
        }
    }
    checks.iter().map(|c| c.ok).collect()
}

/// Hunts entry `e` over the library; prints what caught it; returns whether anything did.
fn hunt_plant(e: &booking::fault::Entry, args: &PlantsArgs) -> bool {
    let h = plants::hunt(e.plant, args.jobs);
    if args.json {
        println!("{}", serde_json::to_string(&h).expect("serializes"));
    } else {
        match &h.caught_by {
            Some((scenario, seed, first)) => println!(
                "{:<30} caught after {:>4} seeds, {:>6.1} s: {scenario} seed {seed}: {first}",
                h.plant, h.seeds_run, h.wall_s
            ),
            None => println!("{:<30} NOT caught in {} seeds, {:.1} s", h.plant, h.seeds_run, h.wall_s),
        }
    }
    h.caught_by.is_some()
}
