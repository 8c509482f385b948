//! Worlds measured against what the harness promises: the fault schedule is
//! what the world does, the fault knobs do what scenarios/README.md says,
//! order and compensation transitions are checked, the seat-map cache
//! serves the store's maps, also under faults, the judges hold the service
//! to the world's own facts, and undisturbed refusals are the model's. One
//! test binary for all of them (each binary links the whole simulator:
//! fewer binaries, a faster `ci/test`).

mod cache;
mod cache_faults;
mod knobs;
mod record_transitions;
mod regressions;
mod schedule;
mod undisturbed_refusals;
mod world_truth;
