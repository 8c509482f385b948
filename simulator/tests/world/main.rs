//! Worlds measured against what the harness promises: the fault schedule is
//! what the world does, the fault knobs do what scenarios/README.md says,
//! order and compensation transitions are checked, and the seat-map cache
//! serves the store's maps, also under faults. One test binary for all five (each binary links
//! the whole simulator: fewer binaries, a faster `ci/test`).

mod cache;
mod cache_faults;
mod knobs;
mod record_transitions;
mod regressions;
mod schedule;
mod world_truth;
