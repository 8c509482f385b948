//! The waiting-room contract: one event's queue and its checkout
//! sessions, shared by every `bookingd` instance. [`MemRooms`] keeps it in
//! memory (the simulator, tests); `RedisRooms` keeps it in Redis with
//! atomic scripts. Both answer the same calls the same way (a differential
//! test holds them to it).
//!
//! What the contract guarantees:
//! - a join is recorded at most once per user and event, and places follow
//!   the event's [`Fairness`] (see [`super::queue`]);
//! - [`Rooms::admit`] ends the sessions past their expiry first, then admits
//!   at most `target_active_sessions − active` users, atomically: several
//!   instances admitting at once never pass the target together;
//! - a session ends on a purchase (an accepted checkout) or at its expiry,
//!   never on a release or a declined payment; a purchase whose order then
//!   fails is undone ([`Rooms::reopen`]) until the session's expiry;
//! - a user whose session ended (purchased or expired) who joins again is a
//!   new arrival: at the back of the line, admitted again only in turn;
//! - once the room is sold out, every waiting user reads [`Place::SoldOut`]
//!   and nobody else is admitted.
//!
//! Times are the caller's (`now_ms`, the service clock): the rooms never read a clock.

use super::queue::{Fairness, QueueError};
use crate::model::{EventId, HoldToken, OrderId, SessionId, UserId};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

pub use image::RoomImage;
pub use lazy_redis::LazyRedisRooms;
pub use mem::MemRooms;
pub use redis::RedisRooms;

pub mod contract;
pub mod image;
mod lazy_redis;
mod mem;
pub mod redis;

/// Rooms one store keeps at most.
pub const MAX_ROOMS: usize = 10_000;

/// An event's fairness rule, as configured (the lottery's seed is the service's secret, not configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Arrival order.
    Fifo,
    /// A pre-sale lottery drawn at opening, verifiable after.
    Lottery,
    /// Priority tiers ahead of the public, FIFO within a tier.
    Priority,
}

impl Policy {
    /// The queue's fairness under this policy, with the lottery's `seed`.
    pub fn fairness(self, seed: [u8; 32]) -> Fairness {
        match self {
            Policy::Fifo => Fairness::Fifo,
            Policy::Lottery => Fairness::Lottery { seed },
            Policy::Priority => Fairness::Priority,
        }
    }
}

/// One event's waiting room, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomSpec {
    /// The fairness rule.
    pub policy: Policy,
    /// When the sale opens (nobody admitted before), ms since the epoch, service clock.
    pub opens_at_ms: i64,
    /// Checkout sessions open at once at most, >= 1.
    pub target_active_sessions: u32,
    /// How long an admission lasts unless ended sooner, ms, >= 1 (its token's lifetime).
    pub session_ttl_ms: i64,
}

impl RoomSpec {
    /// Whether every field is in range.
    pub fn valid(&self) -> bool {
        self.target_active_sessions >= 1 && self.session_ttl_ms >= 1
    }
}

/// An open or ended checkout session: one admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The session's id (bound into its admission token).
    pub session_id: SessionId,
    /// The place it was admitted from (1 = first of its batch).
    pub position: u64,
    /// When it was admitted, ms.
    pub admitted_at_ms: i64,
    /// When it expires unless ended sooner, ms.
    pub expires_at_ms: i64,
}

impl Session {
    /// The session `user_id` gets on `event_id` when admitted at `admitted_at_ms`
    /// from `position`: its id is derived from those, so every store names it alike.
    pub fn new(event_id: &EventId, user_id: &UserId, position: u64, admitted_at_ms: i64, ttl_ms: i64) -> Self {
        let mut h = Sha256::new();
        for part in [event_id.as_bytes(), b"\0", user_id.as_bytes(), b"\0", &admitted_at_ms.to_be_bytes()] {
            h.update(part);
        }
        let digest: [u8; 32] = h.finalize().into();
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        let session_id = SessionId::from_uuid(uuid::Builder::from_custom_bytes(bytes).into_uuid());
        Self { session_id, position, admitted_at_ms, expires_at_ms: admitted_at_ms + ttl_ms }
    }
}

/// How a session ended. A release or a declined payment does not end one:
/// the buyer may hold again until it expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionEnd {
    /// A checkout was accepted: order `order_id`, of the hold and under the
    /// idempotency key [`key_id`] names. Only that checkout's retries pass the gate after it;
    /// if the order fails, the session is reopened ([`Rooms::reopen`]).
    Purchased {
        /// The order the checkout created.
        order_id: OrderId,
        /// [`key_id`] of the checkout's idempotency key.
        key_id: Uuid,
    },
    /// It ran out of time (abandoned).
    Expired,
}

/// A fixed-size name for one checkout: the hold it checks out and its
/// idempotency key (SHA-256 of both, first 16 bytes), so a session can record
/// which checkout ended it without keeping the key.
pub fn key_id(hold_token: HoldToken, idempotency_key: &str) -> Uuid {
    let mut h = Sha256::new();
    h.update(hold_token.as_uuid().as_bytes());
    h.update(idempotency_key.as_bytes());
    let digest: [u8; 32] = h.finalize().into();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

/// Where a user stands in an event's room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Place {
    /// Never joined.
    NotJoined,
    /// Joined a lottery before opening: placed by the draw at opening.
    AwaitingDraw,
    /// Waiting: `position` users ahead, counting themselves (1 = next).
    Waiting {
        /// 1-based place in line.
        position: u64,
    },
    /// Admitted: the session is open (or ended: see `ended`).
    Admitted {
        /// The session.
        session: Session,
        /// How it ended, if it has.
        ended: Option<SessionEnd>,
    },
    /// The event sold out before their turn.
    SoldOut,
}

/// The room's gauges, as of the last admission pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Gauge {
    /// Users waiting.
    pub waiting: u64,
    /// Sessions open.
    pub active: u32,
    /// The admission rate the last pass ran at, per second (0 before the first).
    pub rate_per_s: f64,
    /// Whether the event sold out.
    pub sold_out: bool,
}

/// What one admission pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admitted {
    /// Users admitted now, in admission order, with their sessions.
    pub admitted: Vec<(UserId, Session)>,
    /// Durations of the sessions this pass ended by expiry, ms.
    pub expired_ms: Vec<u64>,
    /// Sessions open after the pass.
    pub active: u32,
    /// Users still waiting after the pass.
    pub waiting: u64,
}

/// The lottery's public record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LotteryRecord {
    /// Hex SHA-256 of the seed, published when the room opened.
    pub commitment: String,
    /// The seed, hex, once drawn.
    pub seed: Option<String>,
    /// Who joined before the draw, in arrival order, once drawn.
    pub joiners: Option<Vec<UserId>>,
}

/// Why a room call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoomError {
    /// The event has no waiting room.
    #[error("event {0} has no waiting room")]
    NoRoom(String),
    /// A room with another configuration exists for the event.
    #[error("event {0} has a waiting room configured otherwise")]
    Conflict(String),
    /// The configuration is out of range.
    #[error("waiting room configuration out of range")]
    BadSpec,
    /// The room's policy is not a lottery.
    #[error("event {0}'s waiting room is not a lottery")]
    NotALottery(String),
    /// The store holds [`MAX_ROOMS`] rooms already.
    #[error("too many waiting rooms")]
    TooManyRooms,
    /// The queue refused (tier, full, sold out, lottery not drawn).
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The backing store failed; the call may or may not have taken effect.
    #[error("waiting-room store unavailable: {0}")]
    Unavailable(String),
}

/// The waiting rooms of every event, shared by every service instance.
#[async_trait]
pub trait Rooms: Send + Sync + 'static {
    /// Opens `event_id`'s room with `spec` and the lottery's `seed` (kept secret
    /// until drawn). Idempotent for an equal spec; another spec is `Conflict`.
    async fn open(&self, event_id: &EventId, spec: &RoomSpec, seed: [u8; 32]) -> Result<(), RoomError>;
    /// The room's configuration, if it has one.
    async fn spec(&self, event_id: &EventId) -> Result<Option<RoomSpec>, RoomError>;
    /// Every event with a room, in event-id order.
    async fn events(&self) -> Result<Vec<EventId>, RoomError>;
    /// `user_id` joins in `tier` (priority rooms; 0 otherwise) at `now_ms`;
    /// joining again changes nothing. Answers where they stand.
    async fn join(&self, event_id: &EventId, user_id: &UserId, tier: u8, now_ms: i64) -> Result<Place, RoomError>;
    /// Where `user_id` stands, and the room's gauges.
    async fn place(&self, event_id: &EventId, user_id: &UserId) -> Result<(Place, Gauge), RoomError>;
    /// One admission pass at `now_ms`: ends sessions past expiry, then admits
    /// up to `min(n, target − active)` in the policy's order (nobody before
    /// opening or once sold out), recording `rate_per_s` for the gauges.
    async fn admit(&self, event_id: &EventId, n: u32, rate_per_s: f64, now_ms: i64) -> Result<Admitted, RoomError>;
    /// Ends `user_id`'s session `session_id` for `why` at `now_ms`: its
    /// duration when this call ended it, `None` if it had ended already (or is not theirs).
    async fn end_session(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        session_id: SessionId,
        why: SessionEnd,
        now_ms: i64,
    ) -> Result<Option<u64>, RoomError>;
    /// Undoes the purchase `order_id` that ended `user_id`'s session
    /// `session_id` (the order failed), when that purchase still ends it and
    /// the session has not expired by `now_ms`: the session is open (and
    /// counted) again. Answers whether it reopened.
    async fn reopen(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        session_id: SessionId,
        order_id: OrderId,
        now_ms: i64,
    ) -> Result<bool, RoomError>;
    /// Rebuilds a room the store lost from `image` (see [`RoomImage`]), as
    /// one atomic change; a room that exists is left as it is. Answers
    /// whether it rebuilt.
    async fn restore(&self, event_id: &EventId, image: &RoomImage) -> Result<bool, RoomError>;
    /// Marks the event sold out: waiting users read `SoldOut`, nobody else is admitted.
    async fn sell_out(&self, event_id: &EventId) -> Result<(), RoomError>;
    /// The lottery's public record (`NoRoom` or a `Queue` error for other policies).
    async fn lottery(&self, event_id: &EventId) -> Result<LotteryRecord, RoomError>;
    /// Takes or renews the admission lease of `event_id` for `holder` until
    /// `now_ms + lease_ms`: true when `holder` may run this second's admission
    /// pass (one instance at a time; a crashed leader's lease lapses).
    async fn lead(&self, event_id: &EventId, holder: &str, lease_ms: i64, now_ms: i64) -> Result<bool, RoomError>;
}

#[cfg(test)]
mod tests;
