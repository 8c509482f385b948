//! The timeline's lanes: one row per run part, host, link, room, seat or user.

use booking::model::{EventId, SeatId, UserId};
/// A lane: one row of the timeline. The derived order is the display order:
/// the run and its faults first, then waiting rooms, seats and users.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum LaneKey {
    /// Phase markers and the operators' list.
    Run,
    /// A service host (`svc0`): crashes, restarts, clock skew.
    Host(String),
    /// A link between two hosts (`client0 <-> svc1`): partitions.
    Link(String),
    /// The hold sweeper: its stall.
    Sweeper,
    /// The seat-map cache: its faults, the maps it served.
    Cache,
    /// The network as a whole: latency faults.
    Network,
    /// The payment provider: its fault knobs, and money movements no order claims.
    Provider,
    /// The store: calls made by background work (dispatcher, reconciler, sweeper, webhooks).
    Store,
    /// An event's waiting room: openings, admission passes, sell-out.
    Room(EventId),
    /// A seat: its state over time and every write to it.
    Seat {
        /// The event.
        event_id: EventId,
        /// The seat.
        seat_id: SeatId,
    },
    /// A user: requests, orders, payments, refunds, pauses, queueing.
    User(UserId),
    /// Events whose lane could not be told (an answer to an unknown request, say).
    Other,
}

impl LaneKey {
    /// The lane's label.
    pub fn label(&self) -> String {
        match self {
            LaneKey::Run => "run".into(),
            LaneKey::Host(h) => format!("host {h}"),
            LaneKey::Link(l) => format!("link {l}"),
            LaneKey::Sweeper => "sweeper".into(),
            LaneKey::Cache => "seat-map cache".into(),
            LaneKey::Network => "network".into(),
            LaneKey::Provider => "provider".into(),
            LaneKey::Store => "store (background calls)".into(),
            LaneKey::Room(e) => format!("waiting room {e}"),
            LaneKey::Seat { event_id, seat_id } => format!("seat {event_id}/{seat_id}"),
            LaneKey::User(u) => format!("user {u}"),
            LaneKey::Other => "other".into(),
        }
    }

    /// The heading of the group the lane is listed under.
    pub fn group(&self) -> &'static str {
        match self {
            LaneKey::Run
            | LaneKey::Host(_)
            | LaneKey::Link(_)
            | LaneKey::Sweeper
            | LaneKey::Cache
            | LaneKey::Network
            | LaneKey::Provider
            | LaneKey::Store => "run, hosts and faults",
            LaneKey::Room(_) => "waiting rooms",
            LaneKey::Seat { .. } => "seats",
            LaneKey::User(_) => "users",
            LaneKey::Other => "other",
        }
    }
}
