//! `simulator`: run the scenario library (or one scenario file) over seeds,
//! replay one seed, list scenarios. Exit 0 when every seed passed, 1 when
//! any failed, 2 on bad usage. Each command's handler is in `simulator::cli`.

use clap::{Parser, Subcommand};
use simulator::cli::{chaos, plants, replay, run};
use simulator::world::plan;
use std::process::ExitCode;

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
    Run(run::RunArgs),
    /// Run one seed, print its verdict and trace hash (last line: `trace-hash: <hex>`).
    Replay(replay::ReplayArgs),
    /// The planted-bug catalog: list it; `--check` proves each entry is caught
    /// by its scenario; `--hunt` measures how long the library takes to find each.
    Plants(plants::PlantsArgs),
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
    Chaos(chaos::ChaosArgs),
    /// INTERNAL: run one seed and print its verdict as one JSON line. `run`
    /// runs every seed this way, in a process of its own (see `simulator::run::pool`).
    #[command(hide = true)]
    Seed(replay::ReplayArgs),
    /// Shrink a failing seed to a capsule: a small scenario file that fails
    /// the same way (`run --scenario-file CAPSULE --seed N [--plant P]`).
    Shrink(simulator::shrink::cli::ShrinkArgs),
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
        Command::Run(args) => run::run(args),
        Command::Replay(args) => replay::replay(args),
        Command::Plants(args) => plants::plants_command(args),
        Command::Seed(args) => replay::seed_verdict(args),
        Command::Chaos(args) => chaos::chaos(args),
        Command::Shrink(args) => simulator::shrink::cli::main(args),
    }
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
