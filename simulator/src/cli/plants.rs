//! `simulator plants`: the planted-bug catalog listed, each entry proved
//! caught by its scenario (`--check`), or hunted over the library (`--hunt`).

use super::select::parse_plant;
use super::usage_error;
use crate::plants;
use booking::fault::{CATALOG, SEAM_MARKER};
use std::process::ExitCode;

/// The arguments of `simulator plants`.
#[derive(Debug, clap::Args)]
pub struct PlantsArgs {
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

/// Runs `simulator plants`.
pub fn plants_command(args: PlantsArgs) -> ExitCode {
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
