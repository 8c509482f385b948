//! The authority's record of the waiting rooms: which events have a room
//! (so no instance ever treats a room's event as open to all, whatever the
//! rooms' store does), and who joined, was admitted and purchased (so a
//! room the rooms' store lost is rebuilt: see [`super::room::image`]).
//! [`PgRoomRecords`] keeps it in PostgreSQL beside the bookings;
//! [`MemRoomRecords`] in memory (the simulator, tests). Every call is one
//! statement (or one lock): nothing is left half-done by a caller that stops
//! waiting.

use super::room::image::RoomJournal;
use super::room::{RoomError, RoomSpec, Session, SessionEnd};
use crate::model::{EventId, UserId};
use async_trait::async_trait;

pub use mem::MemRoomRecords;
pub use pg::PgRoomRecords;

mod mem;
mod pg;

/// The authority's record of the waiting rooms. Errors are [`RoomError`]s:
/// `Conflict` for a room recorded otherwise, `Unavailable` when the store
/// cannot answer (the call may or may not have taken effect).
#[async_trait]
pub trait RoomRecords: Send + Sync + 'static {
    /// Records `event_id`'s room: idempotent for an equal spec, `Conflict`
    /// for another. Precondition: the event exists and `spec` is valid.
    async fn record_room(&self, event_id: &EventId, spec: &RoomSpec) -> Result<(), RoomError>;
    /// `event_id`'s room, `None` when it has none.
    async fn room(&self, event_id: &EventId) -> Result<Option<RoomSpec>, RoomError>;
    /// Every event with a room, in event-id order.
    async fn rooms(&self) -> Result<Vec<EventId>, RoomError>;
    /// `user_id` stands in line in `tier` as of `now_ms`: recorded as their
    /// first join, or as a new arrival when they had a session; a user already
    /// recorded waiting is left as they are. `NoRoom` when the room is not recorded.
    async fn record_join(&self, event_id: &EventId, user_id: &UserId, tier: u8, now_ms: i64) -> Result<(), RoomError>;
    /// These users were admitted with these sessions (a user the record
    /// missed is recorded as joined at their admission). `NoRoom` when the room is not recorded.
    async fn record_admissions(&self, event_id: &EventId, admitted: &[(UserId, Session)]) -> Result<(), RoomError>;
    /// `user_id`'s session admitted at `admitted_at_ms` ended by
    /// purchase `end` (`None`: the purchase was undone). Other ends are not
    /// recorded: expiry follows from the session. An unrecorded room or user changes nothing.
    async fn record_purchase(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        admitted_at_ms: i64,
        end: Option<SessionEnd>,
    ) -> Result<(), RoomError>;
    /// The event sold out (an unrecorded room: nothing changes).
    async fn record_sold_out(&self, event_id: &EventId) -> Result<(), RoomError>;
    /// Everything recorded about `event_id`'s room, `None` when it has none.
    async fn journal(&self, event_id: &EventId) -> Result<Option<RoomJournal>, RoomError>;
}
