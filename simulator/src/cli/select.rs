//! What a run is made of: the scenarios named (or the whole library) and the
//! harness options every seed of them runs with.

use crate::world::plan::{self, Plan};
use booking::fault::Plant;
use scenarios::FaultKind;

/// What a run is run with besides its scenario: a planted bug, muted faults.
#[derive(Debug, Clone, clap::Args)]
pub struct HarnessArgs {
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

/// The plant named `name`, or the usage error naming the command that lists them.
pub fn parse_plant(name: &str) -> Result<Plant, String> {
    Plant::parse(name).ok_or_else(|| format!("unknown plant {name}; `simulator plants` lists them"))
}

/// The plans of `names` and `files` (the whole library when both are empty), each with `harness`'s options.
pub fn select(names: &[String], files: &[String], harness: &HarnessArgs) -> Result<Vec<Plan>, String> {
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
