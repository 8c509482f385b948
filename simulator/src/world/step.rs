//! Stepping a built world: the fault phase (turmoil steps, each followed by
//! the nemeses), its end (every fault switched off), then the settle phase,
//! which ends at its bound or as soon as the world is quiescent (see
//! [`crate::world::quiescence`]).

use crate::world::build::World;
use crate::world::nemesis::{Nemeses, Stage};
use crate::world::quiescence;
use booking::clock::Clock;
use booking::fake_provider::ProviderFaults;
use invariants::trace::{FaultEvent, PhaseMark};

/// Why stepping stopped before the settle phase ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// turmoil reported an error (a host's task failed, the simulation ran out of time).
    #[error("simulation error: {0}")]
    Simulation(String),
}

/// Simulated ms since `world` started.
fn now_ms(world: &World) -> u64 {
    world.sim.elapsed().as_millis() as u64
}

/// One turmoil step, then every nemesis acts. Returns whether every client
/// host has finished.
fn step(world: &mut World, nemeses: &mut Nemeses, faults_over: bool) -> Result<bool, StepError> {
    let clients_done = world.sim.step().map_err(|e| StepError::Simulation(e.to_string()))?;
    let now_ms = now_ms(world);
    nemeses.act(&mut Stage { sim: &mut world.sim, now_ms, recorder: &world.recorder, faults_over });
    Ok(clients_done)
}

/// Steps through the fault phase (`fault_ms` of simulated time), then ends
/// it: no commit crashes its host any more, the provider's knobs are off, and
/// the phase's end is marked in the trace. Returns whether every client host
/// had finished at the last step.
pub fn fault_phase(
    world: &mut World,
    nemeses: &mut Nemeses,
    fault_ms: u64,
    brownout: Option<(u64, u64, &ProviderFaults)>,
) -> Result<bool, StepError> {
    let mut browning = false;
    loop {
        let clients_done = step(world, nemeses, false)?;
        let now_ms = now_ms(world);
        // A provider brownout: its faults only inside the window.
        if let Some((from_ms, to_ms, faults)) = brownout {
            let inside = (from_ms..to_ms).contains(&now_ms);
            if inside != browning {
                browning = inside;
                let (knobs, kind, what) = if inside {
                    (faults.clone(), FaultEvent::ProviderError, "provider brownout begins")
                } else {
                    (ProviderFaults::default(), FaultEvent::ProviderError, "provider brownout ends")
                };
                world.provider.set_faults(knobs).expect("scenario provider faults are valid");
                world.recorder.fault(kind, what.to_string());
            }
        }
        if now_ms >= fault_ms {
            nemeses.end_faults();
            world.provider.set_faults(ProviderFaults::default()).expect("no faults is valid");
            world.recorder.phase(now_ms as i64, PhaseMark::FaultPhaseEnd, world.store_clock.now_ms());
            return Ok(clients_done);
        }
    }
}

/// Steps the settle phase until `total_ms` of simulated time (and every
/// client has finished), or until the world is quiescent, checked every
/// [`quiescence::CHECK_INTERVAL_MS`]; marks its end in the trace. Returns
/// whether it ended with the work settled: no delayed provider work, and the
/// store holding nothing unresolved (what the service's counters are exact
/// for).
pub fn settle(
    world: &mut World,
    nemeses: &mut Nemeses,
    mut clients_done: bool,
    total_ms: u64,
) -> Result<bool, StepError> {
    let mut next_check_ms = now_ms(world);
    loop {
        let now_ms = now_ms(world);
        if now_ms >= next_check_ms {
            next_check_ms = now_ms + quiescence::CHECK_INTERVAL_MS;
            let idle = quiescence::world_idle(clients_done, nemeses.crash.hosts_down(), world.provider.pending_tasks());
            let timed_out = now_ms >= total_ms && clients_done;
            // The store's snapshot is taken only when it can end the phase.
            let settled = (idle || timed_out) && work_settled(world);
            if (idle && settled) || timed_out {
                world.recorder.phase(now_ms as i64, PhaseMark::SettleEnd, world.store_clock.now_ms());
                return Ok(settled);
            }
        }
        clients_done = step(world, nemeses, true)?;
    }
}

/// Whether the work has settled: no delayed provider work, and the store
/// holds nothing unresolved.
fn work_settled(world: &World) -> bool {
    world.provider.pending_tasks() == 0
        && quiescence::store_busy(&futures::executor::block_on(world.store.snapshot()).expect("MemStore snapshot"))
            .is_none()
}
