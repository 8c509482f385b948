//! The capsule: the reduced scenario as a TOML file that replays the failure
//! on its own. Its seeds are the one seed; its expectation is the promise
//! (`expect.outcome = "pass"`), so `run --scenario-file CAPSULE --plant P`
//! fails with the invariant while the bug is there and passes once it is
//! fixed: a regression test to keep (sled's habit: every bug found, pinned).
//! It declares no must-happen paths (those judge a whole default seed range).
//! A header comment records where it came from.

use super::{Figures, Shrunk};
use scenarios::Scenario;

/// Longest scenario name the format allows.
const MAX_NAME_CHARS: usize = 64;

/// The capsule scenario for `reduced`, which fails `seed` with `target`.
pub fn scenario(reduced: &Scenario, original: &Scenario, seed: u64, target: &str) -> Scenario {
    let mut s = reduced.clone();
    let suffix = format!("-capsule-{seed}");
    let keep = MAX_NAME_CHARS.saturating_sub(suffix.len()).min(original.name.len());
    s.name = format!("{}{suffix}", original.name[..keep].trim_end_matches('-'));
    s.description = format!("Shrunk from {} seed {seed}: fails with {target}", original.name);
    s.seeds.default = seed.to_string();
    // The promise, judged on this one seed: every invariant must hold.
    s.expect = super::oracle::neutral_expect();
    s
}

/// The capsule file: the header comment, then the scenario.
pub fn document(shrunk: &Shrunk, toml: &str) -> String {
    let plant = shrunk.plant.as_ref().map(|p| format!(", plant {p}")).unwrap_or_default();
    let Figures { users, seats_per_event, events, fault_tables, trace_events } = &shrunk.before;
    let after = &shrunk.after;
    let mut h = String::new();
    h.push_str("# holdfast capsule, written by `simulator shrink`: a failing run, reduced.\n");
    h.push_str(&format!("# original: scenario {}, seed {}{plant}\n", shrunk.scenario, shrunk.seed));
    h.push_str(&format!(
        "# fails with: {} (the expectation below is the promise: `run` fails while the bug is there, passes once it is fixed)\n",
        shrunk.target
    ));
    h.push_str(&format!("# users {users} -> {}, events {events} -> {}, seats per event {seats_per_event} -> {}, fault tables {fault_tables} -> {}\n",
        after.users, after.events, after.seats_per_event, after.fault_tables));
    h.push_str(&format!(
        "# trace events {trace_events} -> {} ({:.1}x fewer); runs tried {}, wall time {:.1} s\n",
        after.trace_events,
        shrunk.ratio(),
        shrunk.runs,
        shrunk.wall_s
    ));
    for change in &shrunk.changes {
        h.push_str(&format!("# kept: {change}\n"));
    }
    h.push_str(if shrunk.plant.is_some() {
        "# The planted bug is a harness flag, not part of this file: replay with `--plant`:\n"
    } else {
        "# replay:\n"
    });
    h.push_str(&format!("#   {}\n", shrunk.replay));
    h.push_str("# Link and cache faults pinned below (`pinned`) strike exactly as listed; crashes after commit,\n");
    h.push_str("# pauses, stale tokens and the provider's answers are still drawn from the seed and the tables.\n\n");
    h.push_str(toml);
    h
}
