//! The reduction steps: each names one part of a scenario (a fault table, a
//! workload count, a phase, a fault knob) and proposes smaller scenarios for
//! it, most aggressive first. Steps never check validity: the reducer skips
//! a candidate the loader refuses.

use scenarios::Scenario;

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

/// A step that removes a whole table (`present` says whether it is there).
fn drop_table(key: &'static str, present: fn(&Scenario) -> bool, remove: fn(&mut Scenario)) -> Step {
    Step {
        key,
        smaller: Box::new(move |s| {
            if !present(s) {
                return Vec::new();
            }
            let mut scenario = s.clone();
            remove(&mut scenario);
            vec![Candidate { change: format!("[{key}] dropped"), scenario }]
        }),
    }
}

/// A step down an integer's [`int_ladder`].
fn int_step(
    key: &'static str,
    lo: i64,
    grain: i64,
    get: fn(&Scenario) -> Option<i64>,
    set: fn(&mut Scenario, i64),
) -> Step {
    Step {
        key,
        smaller: Box::new(move |s| {
            let Some(value) = get(s) else { return Vec::new() };
            int_ladder(value, lo, grain)
                .into_iter()
                .map(|v| {
                    let mut scenario = s.clone();
                    set(&mut scenario, v);
                    Candidate { change: format!("{key} {value} -> {v}"), scenario }
                })
                .collect()
        }),
    }
}

/// A step down a probability's [`probability_ladder`].
fn probability_step(key: &'static str, get: fn(&Scenario) -> Option<f64>, set: fn(&mut Scenario, f64)) -> Step {
    Step {
        key,
        smaller: Box::new(move |s| {
            let Some(value) = get(s) else { return Vec::new() };
            probability_ladder(value)
                .into_iter()
                .map(|v| {
                    let mut scenario = s.clone();
                    set(&mut scenario, v);
                    Candidate { change: format!("{key} {value} -> {v}"), scenario }
                })
                .collect()
        }),
    }
}

/// A step that removes one name of a list at a time (commit points, cache modes).
fn list_step(
    key: &'static str,
    get: fn(&Scenario) -> Option<Vec<String>>,
    set: fn(&mut Scenario, Vec<String>),
) -> Step {
    Step {
        key,
        smaller: Box::new(move |s| {
            let Some(list) = get(s).filter(|l| l.len() > 1) else { return Vec::new() };
            (0..list.len())
                .map(|i| {
                    let mut fewer = list.clone();
                    let gone = fewer.remove(i);
                    let mut scenario = s.clone();
                    set(&mut scenario, fewer);
                    Candidate { change: format!("{key} without {gone:?}"), scenario }
                })
                .collect()
        }),
    }
}

/// Shortest phase a candidate gets, ms; phases shrink by multiples of it.
pub const MIN_PHASE_MS: i64 = 1_000;
/// Fault lengths (pauses, delays, partitions, restarts) shrink by multiples of this, ms.
pub const MS_GRAIN: i64 = 100;

/// Every step, in the order the reducer tries them: whole fault tables
/// first, then the workload's counts, the phases, then each fault's knobs.
pub fn all() -> Vec<Step> {
    vec![
        drop_table("faults.paused_client", |s| s.faults.paused_client.is_some(), |s| s.faults.paused_client = None),
        drop_table("faults.stale_token", |s| s.faults.stale_token.is_some(), |s| s.faults.stale_token = None),
        drop_table(
            "faults.delayed_callback",
            |s| s.faults.delayed_callback.is_some(),
            |s| s.faults.delayed_callback = None,
        ),
        drop_table(
            "faults.crash_after_commit",
            |s| s.faults.crash_after_commit.is_some(),
            |s| s.faults.crash_after_commit = None,
        ),
        drop_table("faults.provider", |s| s.faults.provider.is_some(), |s| s.faults.provider = None),
        drop_table("faults.network", |s| s.faults.network.is_some(), |s| s.faults.network = None),
        drop_table("faults.clock_skew", |s| s.faults.clock_skew.is_some(), |s| s.faults.clock_skew = None),
        drop_table("faults.sweeper_stall", |s| s.faults.sweeper_stall.is_some(), |s| s.faults.sweeper_stall = None),
        drop_table("faults.store_outage", |s| s.faults.store_outage.is_some(), |s| s.faults.store_outage = None),
        drop_table("faults.rooms_lost", |s| s.faults.rooms_lost.is_some(), |s| s.faults.rooms_lost = None),
        drop_table("faults.cache", |s| s.faults.cache.is_some(), |s| s.faults.cache = None),
        drop_table(
            "waiting_room",
            |s| s.waiting_room.is_some() && s.faults.rooms_lost.is_none(),
            |s| s.waiting_room = None,
        ),
        int_step("workload.users", 1, 1, |s| Some(s.workload.users.into()), |s, v| s.workload.users = v as u32),
        int_step("workload.probers", 0, 1, |s| Some(s.workload.probers.into()), |s, v| s.workload.probers = v as u32),
        int_step("workload.events", 1, 1, |s| Some(s.workload.events.into()), |s, v| s.workload.events = v as u32),
        int_step(
            "workload.seats_per_event",
            1,
            1,
            |s| Some(s.workload.seats_per_event.into()),
            |s, v| {
                s.workload.seats_per_event = v as u32;
                s.workload.hot_seats = s.workload.hot_seats.min(v as u32);
                if s.workload.hot_seats == 0 {
                    s.workload.hot_share = 0.0;
                }
            },
        ),
        int_step(
            "workload.hot_seats",
            0,
            1,
            |s| Some(s.workload.hot_seats.into()),
            |s, v| {
                s.workload.hot_seats = v as u32;
                if v == 0 {
                    s.workload.hot_share = 0.0;
                }
            },
        ),
        int_step(
            "workload.client_hosts",
            1,
            1,
            |s| Some(s.workload.client_hosts.into()),
            |s, v| s.workload.client_hosts = v as u32,
        ),
        int_step(
            "workload.server_hosts",
            1,
            1,
            |s| Some(s.workload.server_hosts.into()),
            |s, v| s.workload.server_hosts = v as u32,
        ),
        int_step(
            "workload.max_seats_per_hold",
            1,
            1,
            |s| Some(s.workload.max_seats_per_hold.into()),
            |s, v| {
                s.workload.max_seats_per_hold = v as u32;
                if v == 1 {
                    s.workload.multi_seat_share = 0.0;
                    s.workload.partial_checkout_share = 0.0;
                }
            },
        ),
        probability_step(
            "workload.multi_seat_share",
            |s| Some(s.workload.multi_seat_share),
            |s, v| s.workload.multi_seat_share = v,
        ),
        probability_step("workload.hoard_share", |s| Some(s.workload.hoard_share), |s, v| s.workload.hoard_share = v),
        probability_step(
            "workload.double_submit_share",
            |s| Some(s.workload.double_submit_share),
            |s, v| s.workload.double_submit_share = v,
        ),
        probability_step(
            "workload.partial_checkout_share",
            |s| Some(s.workload.partial_checkout_share),
            |s, v| s.workload.partial_checkout_share = v,
        ),
        int_step(
            "phases.fault_ms",
            MIN_PHASE_MS,
            MIN_PHASE_MS,
            |s| Some(s.phases.fault_ms),
            |s, v| s.phases.fault_ms = v,
        ),
        int_step(
            "phases.settle_ms",
            MIN_PHASE_MS,
            MIN_PHASE_MS,
            |s| Some(s.phases.settle_ms),
            |s, v| s.phases.settle_ms = v,
        ),
        probability_step(
            "faults.paused_client.probability",
            |s| s.faults.paused_client.as_ref().map(|f| f.probability),
            |s, v| s.faults.paused_client.iter_mut().for_each(|f| f.probability = v),
        ),
        int_step(
            "faults.paused_client.pause_ms",
            1,
            MS_GRAIN,
            |s| s.faults.paused_client.as_ref().map(|f| f.pause_ms),
            |s, v| s.faults.paused_client.iter_mut().for_each(|f| f.pause_ms = v),
        ),
        probability_step(
            "faults.stale_token.probability",
            |s| s.faults.stale_token.as_ref().map(|f| f.probability),
            |s, v| s.faults.stale_token.iter_mut().for_each(|f| f.probability = v),
        ),
        probability_step(
            "faults.delayed_callback.probability",
            |s| s.faults.delayed_callback.as_ref().map(|f| f.probability),
            |s, v| s.faults.delayed_callback.iter_mut().for_each(|f| f.probability = v),
        ),
        int_step(
            "faults.delayed_callback.delay_ms",
            1,
            MS_GRAIN,
            |s| s.faults.delayed_callback.as_ref().map(|f| f.delay_ms),
            |s, v| s.faults.delayed_callback.iter_mut().for_each(|f| f.delay_ms = v),
        ),
        probability_step(
            "faults.delayed_callback.duplicate_probability",
            |s| s.faults.delayed_callback.as_ref().map(|f| f.duplicate_probability),
            |s, v| s.faults.delayed_callback.iter_mut().for_each(|f| f.duplicate_probability = v),
        ),
        probability_step(
            "faults.delayed_callback.reorder_probability",
            |s| s.faults.delayed_callback.as_ref().map(|f| f.reorder_probability),
            |s, v| s.faults.delayed_callback.iter_mut().for_each(|f| f.reorder_probability = v),
        ),
        probability_step(
            "faults.crash_after_commit.probability",
            |s| s.faults.crash_after_commit.as_ref().map(|f| f.probability),
            |s, v| s.faults.crash_after_commit.iter_mut().for_each(|f| f.probability = v),
        ),
        int_step(
            "faults.crash_after_commit.restart_after_ms",
            1,
            MS_GRAIN,
            |s| s.faults.crash_after_commit.as_ref().map(|f| f.restart_after_ms),
            |s, v| s.faults.crash_after_commit.iter_mut().for_each(|f| f.restart_after_ms = v),
        ),
        list_step(
            "faults.crash_after_commit.points",
            |s| s.faults.crash_after_commit.as_ref().map(|f| f.points.clone()),
            |s, v| s.faults.crash_after_commit.iter_mut().for_each(|f| f.points = v.clone()),
        ),
        probability_step(
            "faults.provider.unknown_probability",
            |s| s.faults.provider.as_ref().map(|f| f.unknown_probability),
            |s, v| s.faults.provider.iter_mut().for_each(|f| f.unknown_probability = v),
        ),
        probability_step(
            "faults.provider.decline_probability",
            |s| s.faults.provider.as_ref().map(|f| f.decline_probability),
            |s, v| s.faults.provider.iter_mut().for_each(|f| f.decline_probability = v),
        ),
        probability_step(
            "faults.provider.error_rate",
            |s| s.faults.provider.as_ref().map(|f| f.error_rate),
            |s, v| s.faults.provider.iter_mut().for_each(|f| f.error_rate = v),
        ),
        probability_step(
            "faults.provider.late_success_probability",
            |s| s.faults.provider.as_ref().map(|f| f.late_success_probability),
            |s, v| s.faults.provider.iter_mut().for_each(|f| f.late_success_probability = v),
        ),
        probability_step(
            "faults.provider.refund_failure_probability",
            |s| s.faults.provider.as_ref().map(|f| f.refund_failure_probability),
            |s, v| s.faults.provider.iter_mut().for_each(|f| f.refund_failure_probability = v),
        ),
        probability_step(
            "faults.network.partition_probability",
            |s| s.faults.network.as_ref().map(|f| f.partition_probability),
            |s, v| s.faults.network.iter_mut().for_each(|f| f.partition_probability = v),
        ),
        int_step(
            "faults.network.partition_ms",
            1,
            MS_GRAIN,
            |s| s.faults.network.as_ref().map(|f| f.partition_ms),
            |s, v| s.faults.network.iter_mut().for_each(|f| f.partition_ms = v),
        ),
        int_step(
            "faults.clock_skew.max_skew_ms",
            1,
            MS_GRAIN,
            |s| s.faults.clock_skew.as_ref().map(|f| f.max_skew_ms),
            |s, v| s.faults.clock_skew.iter_mut().for_each(|f| f.max_skew_ms = v),
        ),
        probability_step(
            "faults.cache.probability",
            |s| s.faults.cache.as_ref().map(|f| f.probability),
            |s, v| s.faults.cache.iter_mut().for_each(|f| f.probability = v),
        ),
        int_step(
            "faults.cache.length_ms",
            1,
            MS_GRAIN,
            |s| s.faults.cache.as_ref().map(|f| f.length_ms),
            |s, v| s.faults.cache.iter_mut().for_each(|f| f.length_ms = v),
        ),
        list_step(
            "faults.cache.modes",
            |s| s.faults.cache.as_ref().map(|f| f.modes.clone()),
            |s, v| s.faults.cache.iter_mut().for_each(|f| f.modes = v.clone()),
        ),
    ]
}

/// How many fault tables `s` has (the waiting room is not a fault).
pub fn fault_tables(s: &Scenario) -> usize {
    let f = &s.faults;
    [
        f.paused_client.is_some(),
        f.stale_token.is_some(),
        f.delayed_callback.is_some(),
        f.crash_after_commit.is_some(),
        f.provider.is_some(),
        f.network.is_some(),
        f.clock_skew.is_some(),
        f.sweeper_stall.is_some(),
        f.cache.is_some(),
        f.store_outage.is_some(),
        f.rooms_lost.is_some(),
    ]
    .into_iter()
    .filter(|p| *p)
    .count()
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
