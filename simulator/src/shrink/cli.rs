//! `simulator shrink`'s arguments and what it prints: the reduction summary
//! and the capsule's replay line. Exit 0 when a capsule was written, 1 when
//! the seed does not fail (or fails in no way shrink can aim at), 2 on bad
//! usage.

use super::{Request, ShrinkError, Shrunk};
use booking::fault::Plant;
use scenarios::Scenario;
use std::process::ExitCode;

/// Default cap on candidate runs.
pub const DEFAULT_MAX_RUNS: u64 = 300;

/// `simulator shrink` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ShrinkArgs {
    /// The library scenario of the failing seed.
    #[arg(long, conflicts_with = "scenario_file", required_unless_present = "scenario_file")]
    pub scenario: Option<String>,
    /// A scenario file outside the library.
    #[arg(long)]
    pub scenario_file: Option<String>,
    /// The failing seed.
    #[arg(long)]
    pub seed: u64,
    /// The planted bug it fails with (`simulator plants` lists them).
    #[arg(long)]
    pub plant: Option<String>,
    /// Where to write the capsule (default `target/capsules/<scenario>-<seed>[-<plant>].toml`).
    #[arg(long)]
    pub out: Option<String>,
    /// Runs at most, the original's and the capsule's check included.
    #[arg(long, default_value_t = DEFAULT_MAX_RUNS, value_parser = clap::value_parser!(u64).range(3..=100_000))]
    pub max_runs: u64,
}

/// The default capsule path of `scenario`'s `seed` under `plant`.
pub fn default_out(scenario: &str, seed: u64, plant: Option<Plant>) -> String {
    let plant = plant.map(|p| format!("-{p}")).unwrap_or_default();
    format!("target/capsules/{scenario}-{seed}{plant}.toml")
}

/// Runs `simulator shrink`.
pub fn main(args: ShrinkArgs) -> ExitCode {
    let usage = |msg: String| {
        eprintln!("simulator: {msg}");
        ExitCode::from(2)
    };
    let (scenario, file) = match (&args.scenario, &args.scenario_file) {
        (Some(name), None) => match scenarios::find(name) {
            Some(s) => (s, None),
            None => return usage(format!("unknown scenario {name}; `simulator list` shows them")),
        },
        (None, Some(f)) => match Scenario::load(std::path::Path::new(f)) {
            Ok(s) => (s, Some(f.clone())),
            Err(e) => return usage(e.to_string()),
        },
        _ => return usage("shrink takes one of --scenario, --scenario-file".into()),
    };
    let plant = match &args.plant {
        Some(name) => match Plant::parse(name) {
            Some(p) => Some(p),
            None => return usage(format!("unknown plant {name}; `simulator plants` lists them")),
        },
        None => None,
    };
    let out = args.out.clone().unwrap_or_else(|| default_out(&scenario.name, args.seed, plant));
    let req =
        Request { scenario, file, seed: args.seed, plant, out: out.into(), max_runs: args.max_runs, progress: true };
    match super::shrink(&req) {
        Ok(s) => {
            print!("{}", summary(&s));
            ExitCode::SUCCESS
        }
        Err(e @ (ShrinkError::DoesNotFail { .. } | ShrinkError::NoTarget { .. })) => {
            println!("shrink: {e}");
            ExitCode::from(1)
        }
        Err(e) => usage(e.to_string()),
    }
}

/// What `shrink` prints: one `key: before -> after` line per figure, then
/// the capsule and its replay line.
pub fn summary(s: &Shrunk) -> String {
    let plant = s.plant.map(|p| format!(" --plant {p}")).unwrap_or_default();
    let (b, a) = (&s.before, &s.after);
    let mut out = format!("shrink {} seed {}{plant}: fails with {}\n", s.scenario, s.seed, s.target);
    out.push_str(&format!("users: {} -> {}\n", b.users, a.users));
    out.push_str(&format!("events: {} -> {}\n", b.events, a.events));
    out.push_str(&format!("seats-per-event: {} -> {}\n", b.seats_per_event, a.seats_per_event));
    out.push_str(&format!("fault-tables: {} -> {}\n", b.fault_tables, a.fault_tables));
    out.push_str(&format!("trace-events: {} -> {} ({:.1}x fewer)\n", b.trace_events, a.trace_events, s.ratio()));
    out.push_str(&format!("runs: {}\n", s.runs));
    out.push_str(&format!("wall-s: {:.1}\n", s.wall_s));
    for c in &s.changes {
        out.push_str(&format!("kept: {c}\n"));
    }
    out.push_str(&format!("capsule: {}\n", s.capsule.display()));
    out.push_str(&format!("replay: {}\n", s.replay));
    out
}
