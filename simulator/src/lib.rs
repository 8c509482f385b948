//! holdfast's deterministic simulator: a seeded turmoil world that runs the
//! real booking service, payment workflow and fake provider, injects faults,
//! records a trace and checks invariants on the authoritative records. Its
//! [`chaos`] mode runs the same scenarios against the real stack.

#![warn(missing_docs)]

pub mod allocator;
pub mod budget;
pub mod build;
pub mod chaos;
pub mod check;
pub mod client;
pub mod deployment;
pub mod exchanges;
pub mod failure;
pub mod failure_report;
pub mod fault_params;
pub mod faults;
pub mod faulty_cache;
pub mod faulty_store;
pub mod junit;
pub mod law_log;
pub mod markup;
pub mod nemesis;
pub mod net;
pub mod op_scope;
pub mod panic_note;
pub mod plan;
pub mod plants;
pub mod pool;
pub mod prober;
pub mod provider_host;
pub mod quiescence;
pub mod recorder;
pub mod recording_rooms;
pub mod report;
pub mod revalidation;
pub mod room_user;
pub mod runner;
pub mod schedule;
pub mod service_lives;
pub mod shrink;
pub mod sim_clock;
pub mod step;
pub mod timeline;
pub mod traced_store;
pub mod user;
pub mod verdict;
pub mod world;
pub mod world_config;

/// Whether this crate was built with `--cfg tokio_unstable` (from
/// `.cargo/config.toml`): without it tokio's scheduler and `select!` are not
/// seeded by the world's seed, so a seed no longer decides a run. The
/// `simulator` binary refuses to run without it.
pub const TOKIO_UNSTABLE: bool = cfg!(tokio_unstable);
