//! The seat-map cache under simulation: the services share one cache (as
//! bookingd's share Redis), invalidated from one place on every seat-map
//! change, background writes included. Serving from it changes nothing a
//! user sees: a seed's trace is the same with the cache as without it (but
//! for where each map came from, and the store reads a cache hit saves),
//! while hundreds of reads are answered from it. (In a world a store read
//! and the cache put that follows it run without a yield between them, so no
//! stale put can race an invalidation: any difference is a missed
//! invalidation.) Each run is a process of its own, as `run` runs seeds.

use invariants::store_call::StoreCall;
use invariants::trace::{OpResult, TraceEvent, TraceKind};
use std::process::Command;

/// `replay`'s trace (as written with `--trace`) and cache hits for `scenario` `seed`, with `extra` arguments.
fn replay(scenario: &str, seed: u64, extra: &[&str]) -> (Vec<TraceEvent>, u64) {
    let path = std::env::temp_dir().join(format!("holdfast-cache-{scenario}-{seed}-{}.jsonl", extra.len()));
    let out = Command::new(env!("CARGO_BIN_EXE_simulator"))
        .args(["replay", "--scenario", scenario, "--seed", &seed.to_string(), "--trace"])
        .arg(&path)
        .args(extra)
        .output()
        .expect("simulator runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let hits = text
        .lines()
        .find_map(|l| l.strip_prefix("seat-map-cache-hits:"))
        .unwrap_or_else(|| panic!("no cache hits in {text}"))
        .trim()
        .parse()
        .expect("a count");
    let trace = invariants::trace::from_json_lines(&std::fs::read_to_string(&path).expect("the trace")).unwrap();
    (trace, hits)
}

/// The trace as a user sees it: where each map came from, and the whole-map
/// store reads (the cache's misses), left out.
fn as_users_see_it(trace: Vec<TraceEvent>) -> Vec<String> {
    trace
        .into_iter()
        .filter(|e| !matches!(&e.kind, TraceKind::Store { call, .. } if matches!(**call, StoreCall::SeatMap { .. })))
        .map(|mut e| {
            if let TraceKind::Ok { result: OpResult::SeatMap { source, .. }, .. } = &mut e.kind {
                source.clear();
            }
            invariants::trace::to_json_line(&TraceEvent { seq: 0, ..e })
        })
        .collect()
}

#[test]
fn cached_seat_maps_are_the_store_s_seat_maps() {
    for (scenario, seed) in [("hot-seat", 0), ("opening-burst", 1), ("all-faults", 2), ("payment-unknown", 0)] {
        let (cached, hits) = replay(scenario, seed, &[]);
        let (uncached, none) = replay(scenario, seed, &["--no-seat-map-cache"]);
        assert!(hits > 100, "{scenario} {seed}: {hits} hits");
        assert_eq!(none, 0);
        let (cached, uncached) = (as_users_see_it(cached), as_users_see_it(uncached));
        let first = cached.iter().zip(&uncached).position(|(a, b)| a != b);
        assert!(
            first.is_none() && cached.len() == uncached.len(),
            "{scenario} seed {seed}: a cached read differed from the store's, first at {first:?}"
        );
    }
}
