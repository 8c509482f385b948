//! The waiting rooms' loss: at the schedule's moment their store (Redis, to
//! the service) forgets every room, as a restart without persistence does.
//! The service must rebuild each room from the authority's record; the
//! checkers and the auditor, which never saw the loss, hold every later
//! answer to the rooms as they were.

use super::{Nemesis, Stage};
use crate::recording_rooms::RecordingRooms;
use invariants::trace::FaultKind;
use std::sync::Arc;

/// Wipes the shared rooms once, at `at_ms`.
pub struct RoomsNemesis {
    at_ms: Option<u64>,
    rooms: Option<Arc<RecordingRooms>>,
}

impl RoomsNemesis {
    /// Wipes `rooms` (the world's, if it has any) at simulated `at_ms`.
    pub fn new(at_ms: Option<u64>, rooms: Option<Arc<RecordingRooms>>) -> Self {
        Self { at_ms, rooms }
    }
}

impl Nemesis for RoomsNemesis {
    fn act(&mut self, stage: &mut Stage<'_, '_>) {
        let (Some(at_ms), Some(rooms)) = (self.at_ms, &self.rooms) else { return };
        if stage.faults_over || stage.now_ms < at_ms {
            return;
        }
        self.at_ms = None;
        rooms.wipe();
        stage.recorder.fault_at(stage.now_ms as i64, FaultKind::RoomsLost, "rooms".into());
    }
}
