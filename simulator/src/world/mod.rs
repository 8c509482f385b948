//! One seeded run, as a story: draw the fault schedule from the seed
//! ([`crate::world::schedule`]); build the world ([`crate::world::build`]: service hosts
//! running the real bookingd router, workflow and sweeper over a shared
//! MemStore, a provider host running the real fake provider, client hosts
//! running many virtual users as tasks); step it through the fault phase
//! with one nemesis per fault kind acting on it ([`crate::world::nemesis`],
//! [`crate::world::step`]); settle (the phase ends at its bound or once the world is
//! quiescent, see [`crate::world::quiescence`]); check the invariants on the store's
//! final records and the trace ([`crate::world::check`]).

pub mod build;
pub mod check;
pub mod client;
pub mod config;
pub mod deployment;
pub mod exchanges;
pub mod fault_kind;
pub mod fault_params;
pub mod faults;
pub mod faulty_cache;
pub mod law_log;
pub mod nemesis;
pub mod net;
pub mod op_scope;
pub mod panic_note;
pub mod plan;
pub mod prober;
pub mod provider_host;
pub mod quiescence;
pub mod recorder;
pub mod recording_rooms;
pub mod revalidation;
pub mod room_user;
pub mod schedule;
pub mod service_lives;
pub mod sim_clock;
pub mod step;
pub mod traced_store;
pub mod user;

use check::{RunOutcome, Stepped};
use config::WorldConfig;
use nemesis::Nemeses;

pub use build::SELF_TEST_PANIC_VAR;

/// Runs one seed of `cfg`: schedule, build, fault phase, settle, check.
pub fn run(cfg: &WorldConfig, seed: u64) -> RunOutcome {
    let schedule = schedule::draw(cfg, seed);
    let mut world = build::build(cfg, seed, &schedule);
    let mut nemeses = Nemeses::new(cfg, &schedule, &world);
    crate::world::panic_note::install();
    let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let brownout = cfg.provider_window_ms.map(|(from, to)| (from, to, &cfg.provider));
        let clients_done = step::fault_phase(&mut world, &mut nemeses, cfg.fault_ms, brownout)?;
        step::settle(&mut world, &mut nemeses, clients_done, cfg.fault_ms + cfg.settle_ms)
    }));
    // A panic in a host task shuts its runtime down and surfaces as a step
    // error or as a panic of the step itself; the hook noted it either way.
    let stepped = Stepped {
        error: stepped.as_ref().ok().and_then(|r| r.clone().err()),
        step_panicked: stepped.is_err(),
        panic: crate::world::panic_note::take(),
        settled: matches!(stepped, Ok(Ok(true))),
    };
    check::check(world, cfg, seed, stepped)
}
