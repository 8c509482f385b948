//! The fault schedule is what the world does: every link fault and clock
//! skew `schedule::draw` lists for a seed shows up in that seed's trace at
//! its time, and nothing else does; the same seed draws the same schedule.

use invariants::trace::{FaultEvent, TraceKind};
use simulator::world::fault_params::LinkMode;
use simulator::world::plan;
use simulator::world::schedule;

/// Faults of `kind` in `trace`: (ms since the world started, detail).
fn faults(trace: &[invariants::trace::TraceEvent], kind: FaultEvent) -> Vec<(u64, String)> {
    trace
        .iter()
        .filter_map(|e| match &e.kind {
            TraceKind::Fault { kind: k, detail } if *k == kind => Some((e.at_ms as u64, detail.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn every_scheduled_link_fault_and_skew_happens_at_its_time_and_nothing_else() {
    // Swarm seed 0 draws clock skews and both kinds of link fault.
    let p = plan::find("swarm").expect("library scenario");
    let seed = 0;
    let cfg = p.world_for(seed);
    let sched = schedule::draw(&cfg, seed);
    assert_eq!(sched, schedule::draw(&cfg, seed), "the same seed draws the same schedule");
    assert!(!sched.link_faults.is_empty() && sched.clock_skews.iter().any(|s| s.skew_ms != 0), "{sched}");
    assert!(sched.link_faults.iter().any(|l| l.mode == LinkMode::Cut));
    assert!(sched.link_faults.iter().any(|l| l.mode == LinkMode::Held));
    let out = simulator::world::run(&cfg, seed);
    // The world's panic hook notes panics silently: the test's own assertions speak.
    drop(std::panic::take_hook());
    assert!(out.error.is_none() && out.panic.is_none(), "{:?} {:?}", out.error, out.panic);
    let tick = cfg.tick_ms;
    let started = faults(&out.trace, FaultEvent::PartitionStarted);
    let repaired = faults(&out.trace, FaultEvent::PartitionRepaired);
    assert_eq!(started.len(), sched.link_faults.len(), "{started:?}\n{sched}");
    assert_eq!(repaired.len(), sched.link_faults.len(), "{repaired:?}\n{sched}");
    for (l, (at, detail)) in sched.link_faults.iter().zip(&started) {
        let word = if l.mode == LinkMode::Cut { "cut" } else { "held" };
        assert_eq!(detail, &format!("{} <-> {} {word}", l.a, l.b));
        assert!(*at >= l.start_ms && *at < l.start_ms + tick, "{l:?} started at {at}");
        let (end, _) = repaired.iter().find(|(_, d)| *d == format!("{} <-> {}", l.a, l.b)).expect("repaired");
        assert!(*end >= l.end_ms.min(*at), "{l:?} repaired at {end}");
    }
    let skews: Vec<String> = sched
        .clock_skews
        .iter()
        .filter(|s| s.skew_ms != 0)
        .map(|s| format!("{} clock skew {} ms", s.host, s.skew_ms))
        .collect();
    let seen: Vec<String> = faults(&out.trace, FaultEvent::ClockSkewed).into_iter().map(|(_, d)| d).collect();
    assert_eq!(seen, skews);
}

#[test]
fn a_schedule_prints_every_fault_it_holds() {
    let p = plan::find("swarm").expect("library scenario");
    let sched = schedule::draw(&p.world_for(0), 0);
    let text = sched.to_string();
    assert!(text.starts_with("fault schedule of seed 0 (fault phase 0..60000 ms)\n"), "{text}");
    for l in &sched.link_faults {
        assert!(text.contains(&format!("{} <-> {} from {} to {} ms", l.a, l.b, l.start_ms, l.end_ms)), "{text}");
    }
    for s in sched.clock_skews.iter().filter(|s| s.skew_ms != 0) {
        assert!(text.contains(&format!("clock skew: {} {:+} ms", s.host, s.skew_ms)), "{text}");
    }
    // A scenario without faults prints its latency line and nothing else.
    let quiet = plan::find("same-seat-race").expect("library scenario");
    let text = schedule::draw(&quiet.world_for(0), 0).to_string();
    assert_eq!(text.lines().count(), 2, "{text}");
}
