//! The store's outage: every store call of every service host fails, as
//! when the database is unreachable, within the schedule's window.

use super::Strike;
use crate::world::build::World;
use crate::world::fault_params::StoreOutage;
use crate::world::nemesis::{Nemesis, Stage};
use crate::world::schedule::FaultSchedule;
use invariants::trace::FaultEvent;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Flips the store's outage switch at the window's edges.
pub struct OutageNemesis {
    window: Option<StoreOutage>,
    down: Arc<AtomicBool>,
}

impl OutageNemesis {
    /// Takes the store down through `down` (the faulty store's switch) within `window`.
    pub fn new(window: Option<StoreOutage>, down: Arc<AtomicBool>) -> Self {
        Self { window, down }
    }
}

impl Nemesis for OutageNemesis {
    fn act(&mut self, stage: &mut Stage<'_, '_>) {
        let Some(w) = self.window else { return };
        let down = !stage.faults_over && stage.now_ms >= w.from_ms && stage.now_ms < w.to_ms;
        if down != self.down.load(Ordering::SeqCst) {
            self.down.store(down, Ordering::SeqCst);
            let kind = if down { FaultEvent::StoreDown } else { FaultEvent::StoreRestored };
            stage.recorder.fault_at(stage.now_ms as i64, kind, "store".into());
        }
    }
}

/// `faults.store_outage`'s part in a world: its nemesis.
pub struct Kind;

impl Strike for Kind {
    fn nemesis(&self, schedule: &FaultSchedule, world: &World) -> Option<Box<dyn Nemesis>> {
        Some(Box::new(OutageNemesis::new(schedule.store_outage, world.store_down.clone())))
    }
}
