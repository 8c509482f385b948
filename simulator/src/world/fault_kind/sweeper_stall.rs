//! The sweeper's stall: every service host's sweeper skips its passes within
//! the scenario's window.

use super::Strike;
use crate::world::build::World;
use crate::world::config::WorldConfig;
use crate::world::fault_params::MsWindow;
use crate::world::nemesis::{Nemesis, Stage};
use crate::world::schedule::FaultSchedule;
use invariants::trace::FaultEvent;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Flips the sweepers' stall switch at the window's edges.
pub struct StallNemesis {
    window: Option<MsWindow>,
    stalled: Arc<AtomicBool>,
}

impl StallNemesis {
    /// Stalls through `stalled` (the hosts' shared switch) within `window`.
    pub fn new(window: Option<MsWindow>, stalled: Arc<AtomicBool>) -> Self {
        Self { window, stalled }
    }
}

impl Nemesis for StallNemesis {
    fn act(&mut self, stage: &mut Stage<'_, '_>) {
        let Some(w) = self.window else { return };
        let stall = stage.now_ms >= w.from_ms && stage.now_ms < w.to_ms;
        if stall != self.stalled.load(Ordering::SeqCst) {
            self.stalled.store(stall, Ordering::SeqCst);
            let kind = if stall { FaultEvent::SweeperStalled } else { FaultEvent::SweeperResumed };
            stage.recorder.fault_at(stage.now_ms as i64, kind, "hold sweeper".into());
        }
    }
}

/// `faults.sweeper_stall`'s part in a world: its nemesis and its plan line.
impl Strike for scenarios::SweeperStall {
    fn nemesis(cfg: &WorldConfig, _schedule: &FaultSchedule, world: &World) -> Option<Box<dyn Nemesis>> {
        Some(Box::new(StallNemesis::new(window(&cfg.faults), world.switches.sweeper_stalled.clone())))
    }

    fn describe(faults: &scenarios::Faults) -> Option<String> {
        window(faults).map(|w| format!("sweeper stalled: from {} to {} ms", w.from_ms, w.to_ms))
    }
}

/// The stall's window, if the seed's faults have one.
fn window(faults: &scenarios::Faults) -> Option<MsWindow> {
    faults.sweeper_stall.as_ref().map(|s| MsWindow::of(s.from_ms, s.to_ms))
}
