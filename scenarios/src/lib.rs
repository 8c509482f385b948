//! holdfast scenarios: a workload composed with fault workloads, phase
//! durations, default seeds and the expected outcome, as TOML files that
//! teams write without Rust. This crate loads and validates them (clear
//! errors naming the file and key path), embeds the built-in [`library`],
//! and draws per-seed fault mixes for swarm testing ([`SwarmDraw`]).
//!
//! The file format is documented key by key in `scenarios/README.md`.

#![warn(missing_docs)]

mod error;
mod faults;
mod knobs;
mod limits;
mod load;
mod model;
mod names;
mod seeds;
mod swarm;
mod validator;
mod write;

pub use error::ScenarioError;
pub use faults::*;
pub use knobs::{
    Access, Bound, Check, FromValue, KNOBS, Knob, MIN_PHASE_MS, MS_GRAIN, Rule, Shrink, Swarm, Value, fault_tables,
    knob, reference,
};
pub use limits::{
    MAX_HOLD_TTL_MS, MAX_LATENCY_MS, MAX_PAYMENT_TTL_MS, MAX_PHASE_MS, MAX_PINNED_FAULTS, MAX_SEATS_PER_EVENT,
    MAX_SEATS_PER_HOLD, MAX_STALL_MS,
};
pub use model::*;
pub use names::{
    CACHE_FAULT_NAMES, CLASSIFICATION_NAMES, COMMIT_POINT_NAMES, INVARIANT_NAMES, PATH_NAMES, ROOM_POLICY_NAMES,
};
pub use seeds::{MAX_SEEDS_PER_RANGE, SeedRange};
pub use swarm::{MIN_SWARM_WEIGHT, SwarmDraw, splitmix64};
pub use write::WriteError;

/// The built-in scenario files: (file name, contents), in name order.
pub const LIBRARY_FILES: &[(&str, &str)] = &[
    ("abandoned-holds.toml", include_str!("../library/abandoned-holds.toml")),
    ("adjacent-seats.toml", include_str!("../library/adjacent-seats.toml")),
    ("alice-bob-stale-token.toml", include_str!("../library/alice-bob-stale-token.toml")),
    ("all-faults.toml", include_str!("../library/all-faults.toml")),
    ("api-surface.toml", include_str!("../library/api-surface.toml")),
    ("broken-expiry.toml", include_str!("../library/broken-expiry.toml")),
    ("cache-faults.toml", include_str!("../library/cache-faults.toml")),
    ("clock-skew.toml", include_str!("../library/clock-skew.toml")),
    ("crash-after-commit.toml", include_str!("../library/crash-after-commit.toml")),
    ("duplicate-webhooks.toml", include_str!("../library/duplicate-webhooks.toml")),
    ("hot-seat.toml", include_str!("../library/hot-seat.toml")),
    ("late-success-after-release.toml", include_str!("../library/late-success-after-release.toml")),
    ("lottery-presale.toml", include_str!("../library/lottery-presale.toml")),
    ("network-partitions.toml", include_str!("../library/network-partitions.toml")),
    ("onsale-rush.toml", include_str!("../library/onsale-rush.toml")),
    ("opening-burst.toml", include_str!("../library/opening-burst.toml")),
    ("paused-clients.toml", include_str!("../library/paused-clients.toml")),
    ("payment-unknown.toml", include_str!("../library/payment-unknown.toml")),
    ("priority-members.toml", include_str!("../library/priority-members.toml")),
    ("provider-brownout.toml", include_str!("../library/provider-brownout.toml")),
    ("queue-bypass.toml", include_str!("../library/queue-bypass.toml")),
    ("refund-failures.toml", include_str!("../library/refund-failures.toml")),
    ("same-seat-race.toml", include_str!("../library/same-seat-race.toml")),
    ("stale-token-replay.toml", include_str!("../library/stale-token-replay.toml")),
    ("swarm.toml", include_str!("../library/swarm.toml")),
];

/// Every built-in scenario, parsed, in file-name order (origin `library:<file>`).
///
/// Panics if a built-in file is invalid: a test loads every one, so this
/// cannot happen in a tested build.
pub fn library() -> Vec<Scenario> {
    LIBRARY_FILES
        .iter()
        .map(|(file, text)| {
            Scenario::parse(text, &format!("library:{file}")).unwrap_or_else(|e| panic!("built-in scenario: {e}"))
        })
        .collect()
}

/// The built-in scenario called `name`, if any.
pub fn find(name: &str) -> Option<Scenario> {
    library().into_iter().find(|s| s.name == name)
}
