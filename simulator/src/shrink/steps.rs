//! The reduction steps: each names one part of a scenario (a fault table, a
//! workload count, a phase, a fault knob) and proposes smaller scenarios for
//! it, most aggressive first. Steps never check validity: the reducer skips
//! a candidate the loader refuses.

use scenarios::{KNOBS, Knob, Scenario, Shrink, Value};

/// A smaller scenario and what was changed to get it (`workload.users 200 -> 100`).
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The change, for progress lines and the capsule's header.
    pub change: String,
    /// The smaller scenario.
    pub scenario: Scenario,
}

/// What a step proposes for a scenario: smaller ones, most aggressive first.
pub type Proposals = Box<dyn Fn(&Scenario) -> Vec<Candidate>>;

/// One reduction step over a scenario.
pub struct Step {
    /// The part of the scenario it reduces (a TOML key path).
    pub key: &'static str,
    /// The smaller scenarios to try, most aggressive first.
    pub smaller: Proposals,
}

/// Smaller integers than `value`, not below `lo`, smallest first: `lo`,
/// then 1/16, 1/8, 1/4, 1/2, 3/4 of it, then one `grain` less; every rung
/// above `lo` a multiple of `grain` (a phase moves by whole seconds, not by
/// one millisecond at a time).
pub fn int_ladder(value: i64, lo: i64, grain: i64) -> Vec<i64> {
    let grain = grain.max(1);
    let rungs = [value / 16, value / 8, value / 4, value / 2, value - value / 4, value - grain];
    let mut out: Vec<i64> = std::iter::once(lo)
        .chain(rungs.into_iter().map(|v| v - v.rem_euclid(grain)))
        .filter(|v| *v >= lo && *v < value)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Smallest probability above 0 a candidate gets: below it only 0 is tried
/// (halving further would never end).
pub const MIN_PROBABILITY: f64 = 0.01;

/// Smaller probabilities than `p`, smallest first: 0, a quarter, a half
/// (those two when at least [`MIN_PROBABILITY`]).
pub fn probability_ladder(p: f64) -> Vec<f64> {
    let mut out: Vec<f64> =
        [0.0, p / 4.0, p / 2.0].into_iter().filter(|v| *v < p && (*v == 0.0 || *v >= MIN_PROBABILITY)).collect();
    out.dedup();
    out
}

/// The step of one knob, as its row's [`Shrink`] says; `None` for a kept knob.
fn step_of(knob: &'static Knob) -> Option<Step> {
    let (key, get, set) = (knob.key, knob.access.get, knob.access.set);
    let smaller: Proposals = match knob.shrink {
        Shrink::Keep => return None,
        Shrink::Drop => Box::new(move |s| {
            let Some(Value::Table) = get(s) else { return Vec::new() };
            vec![candidate(s, set, Value::Absent, format!("[{key}] dropped"))]
        }),
        Shrink::Ladder { lo, grain } => Box::new(move |s| {
            let Some(Value::Int(value)) = get(s) else { return Vec::new() };
            let rungs = int_ladder(value, lo, grain).into_iter();
            rungs.map(|v| candidate(s, set, Value::Int(v), format!("{key} {value} -> {v}"))).collect()
        }),
        Shrink::Probability => Box::new(move |s| {
            let Some(Value::Share(value)) = get(s) else { return Vec::new() };
            let rungs = probability_ladder(value).into_iter();
            rungs.map(|v| candidate(s, set, Value::Share(v), format!("{key} {value} -> {v}"))).collect()
        }),
        Shrink::OneLess => Box::new(move |s| {
            let Some(Value::Names(list)) = get(s).filter(|v| matches!(v, Value::Names(l) if l.len() > 1)) else {
                return Vec::new();
            };
            (0..list.len())
                .map(|i| {
                    let mut fewer = list.clone();
                    let gone = fewer.remove(i);
                    candidate(s, set, Value::Names(fewer), format!("{key} without {gone:?}"))
                })
                .collect()
        }),
    };
    Some(Step { key, smaller })
}

/// `s` with one knob written.
fn candidate(s: &Scenario, set: fn(&mut Scenario, Value), value: Value, change: String) -> Candidate {
    let mut scenario = s.clone();
    set(&mut scenario, value);
    Candidate { change, scenario }
}

/// Every step, in the order the reducer tries them: whole tables first (the
/// fault tables, then the waiting room), then every other knob the table
/// lets shrink, in the table's order.
pub fn all() -> Vec<Step> {
    let drops = KNOBS.iter().copied().filter(|k| k.shrink == Shrink::Drop);
    let rest = KNOBS.iter().copied().filter(|k| k.shrink != Shrink::Drop);
    drops.chain(rest).filter_map(step_of).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladders_go_down_smallest_first_and_stop_at_their_floor() {
        assert_eq!(int_ladder(200, 1, 1), vec![1, 12, 25, 50, 100, 150, 199]);
        assert_eq!(int_ladder(2, 1, 1), vec![1]);
        assert!(int_ladder(1, 1, 1).is_empty());
        assert_eq!(int_ladder(3, 0, 1), vec![0, 1, 2]);
        assert_eq!(int_ladder(3750, 1000, 1000), vec![1000, 2000]);
        assert_eq!(probability_ladder(0.4), vec![0.0, 0.1, 0.2]);
        assert_eq!(probability_ladder(0.03), vec![0.0, 0.015]);
        assert!(probability_ladder(0.0).is_empty());
    }

    #[test]
    fn every_row_that_shrinks_has_one_step_and_tables_go_first() {
        let steps: Vec<&str> = all().iter().map(|s| s.key).collect();
        let mut rows: Vec<&str> = KNOBS.iter().filter(|k| k.shrink != Shrink::Keep).map(|k| k.key).collect();
        let mut sorted = steps.clone();
        sorted.sort_unstable();
        rows.sort_unstable();
        assert_eq!(sorted, rows);
        let drops = KNOBS.iter().filter(|k| k.shrink == Shrink::Drop).count();
        assert!(drops >= 12, "{drops} tables");
        for (i, key) in steps.iter().enumerate() {
            let is_drop = scenarios::knob(key).unwrap().shrink == Shrink::Drop;
            assert_eq!(is_drop, i < drops, "{key} at {i}");
        }
    }

    #[test]
    fn every_step_only_proposes_smaller_scenarios_of_the_library() {
        for s in scenarios::library() {
            for step in all() {
                for c in (step.smaller)(&s) {
                    assert_ne!(c.scenario, s, "{}: {} changed nothing", s.name, c.change);
                }
            }
        }
    }
}
