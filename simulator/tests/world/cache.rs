//! The seat-map cache under simulation: the services share one cache (as
//! bookingd's share Redis), invalidated from one place on every seat-map
//! change, background writes included. Serving from it changes nothing a
//! user sees: a seed's trace is the same with the cache as without it, while
//! hundreds of reads are answered from it. (In a world a store read and the
//! cache put that follows it run without a yield between them, so no stale
//! put can race an invalidation: any difference is a missed invalidation.)
//! Each run is a process of its own, as `run` runs seeds.

use std::process::Command;

/// `replay`'s trace hash and cache hits for `scenario` `seed`, with `extra` arguments.
fn replay(scenario: &str, seed: u64, extra: &[&str]) -> (String, u64) {
    let out = Command::new(env!("CARGO_BIN_EXE_simulator"))
        .args(["replay", "--scenario", scenario, "--seed", &seed.to_string()])
        .args(extra)
        .output()
        .expect("simulator runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .trim()
            .to_string()
    };
    (field("trace-hash:"), field("seat-map-cache-hits:").parse().expect("a count"))
}

#[test]
fn cached_seat_maps_are_the_store_s_seat_maps() {
    for (scenario, seed) in [("hot-seat", 0), ("opening-burst", 1), ("all-faults", 2), ("payment-unknown", 0)] {
        let (cached, hits) = replay(scenario, seed, &[]);
        let (uncached, none) = replay(scenario, seed, &["--no-seat-map-cache"]);
        assert!(hits > 100, "{scenario} {seed}: {hits} hits");
        assert_eq!(none, 0);
        assert_eq!(cached, uncached, "{scenario} seed {seed}: a cached read differed from the store's");
    }
}
