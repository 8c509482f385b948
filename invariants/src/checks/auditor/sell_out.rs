//! A room is marked sold out by the pass that found every seat sold: after
//! admitting, the pass reads the event's seat map (a store call no request
//! made), and a room whose map then showed every seat sold must be marked
//! sold out (`SoldOut`) before its next pass, so the waiting are told at
//! their next poll. A crash, a restart or the rooms' store failing in
//! between excuses it (the mark is retried by a later pass).

use crate::store_call::StoreCall;
use crate::trace::{OpId, RoomEvent};
use booking::model::EventId;
use std::collections::{BTreeMap, BTreeSet};

/// The sell-outs each room's passes owe.
#[derive(Debug, Default)]
pub(super) struct SellOut {
    /// Rooms whose pass ran and whose seat-map read is to come.
    checking: BTreeSet<EventId>,
    /// Rooms whose pass found every seat sold, with that read's trace sequence.
    due: BTreeMap<EventId, u64>,
    sold_out: BTreeSet<EventId>,
}

impl SellOut {
    /// Takes in a room event; a pass that comes while a sell-out is owed is
    /// a finding: (the event, what, the read that showed it sold out).
    pub(super) fn room(&mut self, r: &RoomEvent) -> Option<(EventId, String, u64)> {
        match r {
            RoomEvent::SoldOut { event_id } => {
                self.sold_out.insert(event_id.clone());
                self.due.remove(event_id);
                None
            }
            RoomEvent::Pass { event_id, .. } => {
                let owed = self.due.remove(event_id);
                if !self.sold_out.contains(event_id) {
                    self.checking.insert(event_id.clone());
                }
                owed.map(|seq| {
                    let what =
                        "a pass found every seat sold, and the room was not marked sold out before the next pass";
                    (event_id.clone(), what.to_string(), seq)
                })
            }
            _ => None,
        }
    }

    /// Takes in a store call at trace sequence `seq`; `all_sold(event)`:
    /// whether the model has every seat of the event sold.
    pub(super) fn store_call(
        &mut self,
        seq: u64,
        op_id: Option<OpId>,
        call: &StoreCall,
        all_sold: impl Fn(&str) -> bool,
    ) {
        if let (None, StoreCall::SeatMap { event_id, answer: Ok(_) }) = (op_id, call)
            && self.checking.remove(event_id)
            && all_sold(event_id)
        {
            self.due.insert(event_id.clone(), seq);
        }
    }

    /// Work may have been cut (a crash, a restart, the rooms' store failing): owed marks are excused.
    pub(super) fn excuse(&mut self) {
        self.due.clear();
    }
}
