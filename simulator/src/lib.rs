//! holdfast's deterministic simulator: a seeded turmoil world that runs the
//! real booking service, payment workflow and fake provider, injects faults,
//! records a trace and checks invariants on the authoritative records. Its
//! [`chaos`] mode runs the same scenarios against the real stack.

#![warn(missing_docs)]

pub mod chaos;
pub mod cli;
pub mod markup;
pub mod plants;
pub mod run;
pub mod shrink;
pub mod timeline;
pub mod world;

/// Whether this crate was built with `--cfg tokio_unstable` (from
/// `.cargo/config.toml`): without it tokio's scheduler and `select!` are not
/// seeded by the world's seed, so a seed no longer decides a run. The
/// `simulator` binary refuses to run without it.
pub const TOKIO_UNSTABLE: bool = cfg!(tokio_unstable);
