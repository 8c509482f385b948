//! holdfast's booking core: an event seat has at most one confirmed booking,
//! whatever races, crashes, retries or late payments happen, and nothing
//! charged is ever invisible.
//!
//! - [`admission`]: the waiting room's admission law and admission tokens.
//! - [`model`]: the records (pure data).
//! - [`store`]: the authoritative store ([`store::Store`], [`store::MemStore`], [`store::PgStore`]).
//! - [`clock`], [`ids`]: injected time and ids, so the simulator decides both.
//! - [`payment`]: the payment provider seam and the payment workflow.
//! - [`fake_provider`]: a stateful fake payment provider with fault knobs.
//! - [`http`]: the bookingd router; [`service`]: wiring shared by bookingd and the simulator.
//! - [`problem_kind`]: the stable names of every refusal, shared with the simulator and the checkers.
//! - [`sweeper`]: returns expired holds; [`metrics`]: counters in Prometheus format.
//! - [`fault`]: the one fault seam (crash after commit, sweeper stall, planted
//!   bugs), switchable only in a build with the `fault-injection` feature.

#![warn(missing_docs)]

pub mod admission;
pub mod clock;
pub mod daemon;
pub mod fake_provider;
pub mod fault;
pub mod http;
pub mod ids;
pub mod invalidating_store;
pub mod metrics;
pub mod model;
pub mod payment;
pub mod problem_kind;
pub mod service;
pub mod store;
pub mod sweeper;
pub mod typed_ids;
