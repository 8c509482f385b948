//! The waiting rooms' store down, then back without a room: at the
//! scenario's moment it stops answering (every call fails, as Redis
//! stopped), and `down_ms` later it comes back having forgotten every room,
//! as a restart without persistence does (at once when `down_ms` is 0).
//! While it is down every call on a room's event must fail closed; once
//! back, the service must rebuild each room from the authority's record.
//! The checkers and the auditor, which never saw the loss, hold every later
//! answer to the rooms as they were.

use super::Strike;
use crate::world::build::World;
use crate::world::config::WorldConfig;
use crate::world::nemesis::{Nemesis, Stage};
use crate::world::recording_rooms::RecordingRooms;
use crate::world::schedule::FaultSchedule;
use invariants::trace::FaultEvent;
use std::sync::Arc;

/// Stops the shared rooms at `at_ms` and brings them back empty `down_ms` later.
pub struct RoomsNemesis {
    at_ms: Option<u64>,
    down_ms: u64,
    down: bool,
    rooms: Option<Arc<RecordingRooms>>,
}

impl RoomsNemesis {
    /// Stops `rooms` (the world's, if it has any) at simulated `at_ms`, and
    /// brings them back without a room at `at_ms + down_ms`.
    pub fn new(at_ms: Option<u64>, down_ms: u64, rooms: Option<Arc<RecordingRooms>>) -> Self {
        Self { at_ms, down_ms, down: false, rooms }
    }
}

impl Nemesis for RoomsNemesis {
    fn act(&mut self, stage: &mut Stage<'_, '_>) {
        let (Some(at_ms), Some(rooms)) = (self.at_ms, &self.rooms) else { return };
        let back_ms = at_ms + self.down_ms;
        if !self.down && self.down_ms > 0 && !stage.faults_over && stage.now_ms >= at_ms && stage.now_ms < back_ms {
            self.down = true;
            rooms.set_down(true);
            stage.recorder.fault_at(stage.now_ms as i64, FaultEvent::RoomsDown, "rooms".into());
        }
        // Back (empty) at its time, or when the faults end, whichever is first.
        if (stage.faults_over && self.down) || stage.now_ms >= back_ms {
            self.at_ms = None;
            rooms.wipe();
            rooms.set_down(false);
            self.down = false;
            stage.recorder.fault_at(stage.now_ms as i64, FaultEvent::RoomsLost, "rooms".into());
        }
    }
}

/// `faults.rooms_lost`'s part in a world: its nemesis and its plan line.
impl Strike for scenarios::RoomsLost {
    fn nemesis(cfg: &WorldConfig, _schedule: &FaultSchedule, world: &World) -> Option<Box<dyn Nemesis>> {
        let (at_ms, down_ms) = moments(&cfg.faults).unzip();
        Some(Box::new(RoomsNemesis::new(at_ms, down_ms.unwrap_or(0), world.rooms.clone())))
    }

    fn describe(faults: &scenarios::Faults) -> Option<String> {
        Some(match moments(faults)? {
            (at, 0) => format!("waiting rooms lost by their store at {at} ms"),
            (at, d) => format!("waiting rooms' store down from {at} to {} ms, then back without a room", at + d),
        })
    }
}

/// When the rooms' store stops and for how long, ms, if the seed's faults say so.
fn moments(faults: &scenarios::Faults) -> Option<(u64, u64)> {
    let r = faults.rooms_lost.as_ref()?;
    Some((u64::try_from(r.at_ms).expect("validated moment"), u64::try_from(r.down_ms).expect("validated length")))
}
