//! Seat-map cache faults: the schedule's windows, each switching the shared
//! cache into its mode (down, stale, poisoned) at its start and back to
//! healthy at its end, or when the fault phase ends. One at a time.

use super::Strike;
use crate::world::build::World;
use crate::world::config::WorldConfig;
use crate::world::fault_params::CacheFault;
use crate::world::faulty_cache::{CacheMode, CacheSwitch};
use crate::world::nemesis::{Nemesis, Stage};
use crate::world::schedule::FaultSchedule;
use invariants::trace::FaultEvent;

/// Starts and ends the scheduled cache faults.
pub struct CacheNemesis {
    /// The schedule's cache faults, by start time, none overlapping.
    scheduled: Vec<CacheFault>,
    /// Index of the next one to start.
    next: usize,
    /// The one under way.
    active: Option<CacheFault>,
    switch: CacheSwitch,
}

impl CacheNemesis {
    /// Carries out `scheduled` (sorted, not overlapping) through `switch`.
    pub fn new(scheduled: Vec<CacheFault>, switch: CacheSwitch) -> Self {
        assert!(scheduled.windows(2).all(|w| w[0].end_ms <= w[1].start_ms), "cache faults one at a time, in order");
        Self { scheduled, next: 0, active: None, switch }
    }
}

impl Nemesis for CacheNemesis {
    fn act(&mut self, stage: &mut Stage<'_, '_>) {
        let at = stage.now_ms as i64;
        if let Some(c) = self.active.filter(|c| c.end_ms <= stage.now_ms || stage.faults_over) {
            self.switch.set(CacheMode::Healthy);
            stage.recorder.fault_at(at, FaultEvent::CacheHealed, format!("seat-map cache {} ended", c.mode.as_str()));
            self.active = None;
        }
        if stage.faults_over || self.active.is_some() {
            return;
        }
        if let Some(c) = self.scheduled.get(self.next).copied().filter(|c| c.start_ms <= stage.now_ms) {
            self.next += 1;
            let kind = match c.mode {
                CacheMode::Down => FaultEvent::CacheDown,
                CacheMode::Stale => FaultEvent::CacheStale,
                CacheMode::Poisoned => FaultEvent::CachePoisoned,
                CacheMode::Healthy => unreachable!("a scheduled cache fault has a fault mode"),
            };
            self.switch.set(c.mode);
            stage.recorder.fault_at(at, kind, format!("seat-map cache {} until {} ms", c.mode.as_str(), c.end_ms));
            self.active = Some(c);
        }
    }
}

/// `faults.cache`'s part in a world: its nemesis.
impl Strike for scenarios::CacheFaults {
    fn nemesis(_cfg: &WorldConfig, schedule: &FaultSchedule, world: &World) -> Option<Box<dyn Nemesis>> {
        Some(Box::new(CacheNemesis::new(schedule.cache_faults.clone(), world.cache_switch.clone())))
    }
}
