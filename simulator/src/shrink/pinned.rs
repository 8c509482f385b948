//! The fault schedule itself, pinned: the link and cache faults the seed
//! draws are written into the scenario as explicit lists
//! (`faults.network.pinned`, `faults.cache.pinned`), after which each one can
//! be dropped, shortened or delayed on its own. Crashes after commit, paused
//! clients, stale tokens and the provider's knobs are policies decided at the
//! moment (see `crate::world::schedule`): they stay drawn from the seed.

use super::steps::{Candidate, Step};
use crate::world::plan::Plan;
use crate::world::schedule;
use scenarios::MS_GRAIN;
use scenarios::{PinnedCacheFault, PinnedLinkFault, Scenario};

/// `s` with the link and cache faults that `seed` draws for it pinned, and
/// what was pinned; `None` when it has neither table, or both are pinned already.
pub fn pin(s: &Scenario, seed: u64) -> Option<(Scenario, String)> {
    let links_open = s.faults.network.as_ref().is_some_and(|n| n.pinned.is_none());
    let cache_open = s.faults.cache.as_ref().is_some_and(|c| c.pinned.is_none());
    if !links_open && !cache_open {
        return None;
    }
    let drawn = schedule::draw(&Plan::new(s.clone(), None).world_for(seed), seed);
    let mut pinned = s.clone();
    let mut what = Vec::new();
    if links_open && let Some(n) = pinned.faults.network.as_mut() {
        n.pinned = Some(drawn.link_faults.iter().map(crate::world::fault_params::LinkFault::to_pinned).collect());
        what.push(format!("{} link faults", drawn.link_faults.len()));
    }
    if cache_open && let Some(c) = pinned.faults.cache.as_mut() {
        c.pinned = Some(drawn.cache_faults.iter().map(crate::world::fault_params::CacheFault::to_pinned).collect());
        what.push(format!("{} cache faults", drawn.cache_faults.len()));
    }
    Some((pinned, format!("fault schedule pinned: {}", what.join(", "))))
}

/// The windows one pinned fault may shrink to, most aggressive first:
/// gone (`None`), then half as long, then starting halfway through (a delay
/// that keeps its end). Lengths move by [`MS_GRAIN`], never below 1 ms.
fn smaller_windows(start_ms: i64, end_ms: i64) -> Vec<(Option<(i64, i64)>, &'static str)> {
    let len = end_ms - start_ms;
    let half = (len / 2 - (len / 2).rem_euclid(MS_GRAIN)).max(1);
    let mut out = vec![(None, "dropped")];
    if half < len {
        out.push((Some((start_ms, start_ms + half)), "shortened"));
        out.push((Some((end_ms - half, end_ms)), "delayed"));
    }
    out
}

/// A pinned fault's window, read and written.
trait Window: Clone {
    fn window(&self) -> (i64, i64);
    fn set_window(&mut self, start_ms: i64, end_ms: i64);
    /// How the change names it (`cut svc0 <-> provider 100..900 ms`).
    fn label(&self) -> String;
}

impl Window for PinnedLinkFault {
    fn window(&self) -> (i64, i64) {
        (self.start_ms, self.end_ms)
    }
    fn set_window(&mut self, start_ms: i64, end_ms: i64) {
        (self.start_ms, self.end_ms) = (start_ms, end_ms);
    }
    fn label(&self) -> String {
        format!("{} {} <-> {} {}..{} ms", self.mode, self.a, self.b, self.start_ms, self.end_ms)
    }
}

impl Window for PinnedCacheFault {
    fn window(&self) -> (i64, i64) {
        (self.start_ms, self.end_ms)
    }
    fn set_window(&mut self, start_ms: i64, end_ms: i64) {
        (self.start_ms, self.end_ms) = (start_ms, end_ms);
    }
    fn label(&self) -> String {
        format!("{} {}..{} ms", self.mode, self.start_ms, self.end_ms)
    }
}

/// The step over one pinned list (`get` reads it, `set` writes it back):
/// each fault dropped, shortened or delayed, one at a time.
fn pinned_step<F: Window + 'static>(
    key: &'static str,
    get: fn(&Scenario) -> Option<Vec<F>>,
    set: fn(&mut Scenario, Vec<F>),
) -> Step {
    Step {
        key,
        smaller: Box::new(move |s| {
            let Some(list) = get(s) else { return Vec::new() };
            let mut out = Vec::new();
            for (i, fault) in list.iter().enumerate() {
                let (start_ms, end_ms) = fault.window();
                for (window, how) in smaller_windows(start_ms, end_ms) {
                    let mut fewer = list.clone();
                    match window {
                        None => {
                            fewer.remove(i);
                        }
                        Some((start_ms, end_ms)) => fewer[i].set_window(start_ms, end_ms),
                    }
                    let mut scenario = s.clone();
                    set(&mut scenario, fewer);
                    out.push(Candidate { change: format!("{key}[{i}] ({}) {how}", fault.label()), scenario });
                }
            }
            out
        }),
    }
}

/// Steps over the pinned faults: each link fault and each cache fault
/// dropped, shortened or delayed, one at a time.
pub fn steps() -> Vec<Step> {
    vec![
        pinned_step(
            "faults.network.pinned",
            |s| s.faults.network.as_ref().and_then(|n| n.pinned.clone()),
            |s, list| s.faults.network.iter_mut().for_each(|n| n.pinned = Some(list.clone())),
        ),
        pinned_step(
            "faults.cache.pinned",
            |s| s.faults.cache.as_ref().and_then(|c| c.pinned.clone()),
            |s, list| s.faults.cache.iter_mut().for_each(|c| c.pinned = Some(list.clone())),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_window_is_dropped_then_halved_then_delayed() {
        assert_eq!(
            smaller_windows(1_000, 3_000),
            vec![(None, "dropped"), (Some((1_000, 2_000)), "shortened"), (Some((2_000, 3_000)), "delayed")]
        );
        // Too short to halve by whole grains: halves to 1 ms at least.
        assert_eq!(smaller_windows(10, 11), vec![(None, "dropped")]);
        assert_eq!(
            smaller_windows(0, 150),
            vec![(None, "dropped"), (Some((0, 1)), "shortened"), (Some((149, 150)), "delayed")]
        );
    }

    #[test]
    fn pinning_writes_down_exactly_what_the_seed_draws() {
        let lib = scenarios::library();
        let s = lib.iter().find(|s| s.name == "network-partitions").expect("a library scenario with link faults");
        for seed in 0..3 {
            let (pinned, what) = pin(s, seed).expect("it has link faults to pin");
            assert!(what.starts_with("fault schedule pinned: "), "{what}");
            let before = schedule::draw(&Plan::new(s.clone(), None).world_for(seed), seed);
            let after = schedule::draw(&Plan::new(pinned.clone(), None).world_for(seed), seed);
            assert_eq!(before, after, "seed {seed}: the pinned schedule is the drawn one");
            assert!(pin(&pinned, seed).is_none(), "nothing left to pin");
            // And it survives the file format.
            let text = pinned.to_toml().expect("writes");
            assert_eq!(Scenario::parse(&text, "pinned").expect("reads back").faults, pinned.faults);
        }
    }
}
