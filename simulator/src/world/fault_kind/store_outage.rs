//! The store's outage: every store call of every service host fails, as
//! when the database is unreachable, within the scenario's window.

use super::Strike;
use crate::world::build::World;
use crate::world::config::WorldConfig;
use crate::world::fault_params::MsWindow;
use crate::world::nemesis::{Nemesis, Stage};
use crate::world::schedule::FaultSchedule;
use invariants::trace::FaultEvent;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Flips the store's outage switch at the window's edges.
pub struct OutageNemesis {
    window: Option<MsWindow>,
    down: Arc<AtomicBool>,
}

impl OutageNemesis {
    /// Takes the store down through `down` (the faulty store's switch) within `window`.
    pub fn new(window: Option<MsWindow>, down: Arc<AtomicBool>) -> Self {
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

/// `faults.store_outage`'s part in a world: its nemesis and its plan line.
impl Strike for scenarios::StoreOutage {
    fn nemesis(cfg: &WorldConfig, _schedule: &FaultSchedule, world: &World) -> Option<Box<dyn Nemesis>> {
        Some(Box::new(OutageNemesis::new(window(&cfg.faults), world.store_down.clone())))
    }

    fn describe(faults: &scenarios::Faults) -> Option<String> {
        window(faults).map(|w| format!("store unreachable: from {} to {} ms", w.from_ms, w.to_ms))
    }
}

/// The outage's window, if the seed's faults have one.
pub fn window(faults: &scenarios::Faults) -> Option<MsWindow> {
    faults.store_outage.as_ref().map(|o| MsWindow::of(o.from_ms, o.to_ms))
}
