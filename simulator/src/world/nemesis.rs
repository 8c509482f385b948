//! The nemeses: one per fault kind that acts on the world from outside its
//! hosts, each stepped by the world after every turmoil step (see
//! [`crate::world::step`]). Faults that act inside a host (a crash decided at a
//! commit, a paused client, a stale token, the provider's knobs) are drawn
//! where they strike; the nemeses carry out what those ask of the world
//! (crash a host, restart it) and what the schedule fixed up front (link
//! faults, the sweeper's stall, seat-map cache faults).

use crate::world::build::World;
use crate::world::config::WorldConfig;
use crate::world::fault_kind;
use crate::world::fault_kind::crash_after_commit::CrashNemesis;
use crate::world::recorder::Recorder;
use crate::world::schedule::FaultSchedule;

/// What a nemesis may act on at one step.
pub struct Stage<'s, 'w> {
    /// The world.
    pub sim: &'s mut turmoil::Sim<'w>,
    /// Simulated ms since the world started.
    pub now_ms: u64,
    /// The trace, where every fault is logged with its time.
    pub recorder: &'s Recorder,
    /// True once the fault phase has ended: nothing new may strike.
    pub faults_over: bool,
}

/// One fault kind acting on the world.
pub trait Nemesis {
    /// Acts after one step: starts, ends or carries out its faults due by `stage.now_ms`.
    fn act(&mut self, stage: &mut Stage<'_, '_>);
    /// The fault phase ends now: stop starting faults (ongoing ones end at
    /// their next [`Nemesis::act`], which sees `faults_over`).
    fn end_faults(&mut self) {}
}

/// Every nemesis of a world, acting in a fixed order: crashes and restarts
/// first (the world asks it which hosts are down), then every other kind's (see [`crate::world::fault_kind`]).
pub struct Nemeses {
    /// Crashes after commit and restarts.
    pub crash: CrashNemesis,
    /// The other fault kinds', in their kinds' order.
    others: Vec<Box<dyn Nemesis>>,
}

impl Nemeses {
    /// The nemeses that carry out `cfg`'s faults and `schedule` on `world`.
    pub fn new(cfg: &WorldConfig, schedule: &FaultSchedule, world: &World) -> Self {
        let restart_after_ms = schedule.crash.as_ref().map(|c| c.restart_after_ms);
        Nemeses {
            crash: CrashNemesis::new(world.switches.clone(), restart_after_ms),
            others: fault_kind::nemeses(cfg, schedule, world),
        }
    }

    /// Each acts, in order.
    pub fn act(&mut self, stage: &mut Stage<'_, '_>) {
        self.crash.act(stage);
        for nemesis in &mut self.others {
            nemesis.act(stage);
        }
    }

    /// The fault phase ends for each.
    pub fn end_faults(&mut self) {
        self.crash.end_faults();
        for nemesis in &mut self.others {
            nemesis.end_faults();
        }
    }
}
