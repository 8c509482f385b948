//! The nemeses: one per fault kind that acts on the world from outside its
//! hosts, each stepped by the world after every turmoil step (see
//! [`crate::step`]). Faults that act inside a host (a crash decided at a
//! commit, a paused client, a stale token, the provider's knobs) are drawn
//! where they strike; the nemeses carry out what those ask of the world
//! (crash a host, restart it) and what the schedule fixed up front (link
//! faults, the sweeper's stall, seat-map cache faults).

mod cache;
mod crash;
mod link;
mod outage;
mod rooms;
mod stall;

pub use cache::CacheNemesis;
pub use crash::CrashNemesis;
pub use link::LinkNemesis;
pub use outage::OutageNemesis;
pub use rooms::RoomsNemesis;
pub use stall::StallNemesis;

use crate::recorder::Recorder;

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

/// Every nemesis of a world, acting in a fixed order (crashes and restarts,
/// the sweeper's stall, link faults, cache faults, the store's outage, the
/// rooms' loss): the order is part of the trace.
pub struct Nemeses {
    /// Crashes after commit and restarts.
    pub crash: CrashNemesis,
    /// The sweeper's stall window.
    pub stall: StallNemesis,
    /// Link faults.
    pub link: LinkNemesis,
    /// Seat-map cache faults.
    pub cache: CacheNemesis,
    /// The store's outage window.
    pub outage: OutageNemesis,
    /// The waiting rooms' loss.
    pub rooms: RoomsNemesis,
}

impl Nemeses {
    /// Each acts, in order.
    pub fn act(&mut self, stage: &mut Stage<'_, '_>) {
        self.crash.act(stage);
        self.stall.act(stage);
        self.link.act(stage);
        self.cache.act(stage);
        self.outage.act(stage);
        self.rooms.act(stage);
    }

    /// The fault phase ends for each.
    pub fn end_faults(&mut self) {
        self.crash.end_faults();
        self.stall.end_faults();
        self.link.end_faults();
        self.cache.end_faults();
        self.outage.end_faults();
        self.rooms.end_faults();
    }
}
