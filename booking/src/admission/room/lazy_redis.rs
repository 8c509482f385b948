//! The waiting rooms in Redis for a daemon that must serve whether or not
//! Redis answers at start ([`LazyRedisRooms`]).

use super::{Admitted, Gauge, LotteryRecord, Place, RedisRooms, RoomError, RoomImage, RoomSpec, Rooms, SessionEnd};
use crate::model::{EventId, UserId};
use std::time::Duration;

/// The waiting rooms in Redis, connected once Redis answers: like the seat-map
/// cache, Redis down at start is no reason not to serve. Until the first
/// connection (tried at most once per `retry` interval) every room call
/// answers [`RoomError::Unavailable`] (503); after it, [`RedisRooms`]
/// reconnects by itself. Never falls back to memory: rooms one instance
/// alone kept would let the instances together admit past a room's target.
pub struct LazyRedisRooms {
    url: String,
    prefix: String,
    retry: Duration,
    rooms: tokio::sync::OnceCell<RedisRooms>,
    last_attempt: std::sync::Mutex<Option<tokio::time::Instant>>,
}

impl LazyRedisRooms {
    /// Rooms under `prefix` in the Redis at `url`, connected at once if it
    /// answers, else tried again at most once per `retry`. Fails only on a
    /// malformed URL; an unreachable Redis is logged and tried again later.
    pub async fn new(url: &str, prefix: &str, retry: Duration) -> Result<Self, redis::RedisError> {
        redis::Client::open(url)?;
        let lazy = Self {
            url: url.to_string(),
            prefix: prefix.to_string(),
            retry,
            rooms: tokio::sync::OnceCell::new(),
            last_attempt: std::sync::Mutex::new(None),
        };
        match lazy.rooms().await {
            Ok(_) => tracing::info!(prefix, "waiting rooms in redis"),
            Err(e) => {
                tracing::warn!(error = %e, "redis unavailable at start: waiting-room calls fail (503) until it answers")
            }
        }
        Ok(lazy)
    }

    async fn rooms(&self) -> Result<&RedisRooms, RoomError> {
        if let Some(rooms) = self.rooms.get() {
            return Ok(rooms);
        }
        {
            let mut last = self.last_attempt.lock().expect("last attempt lock");
            if last.is_some_and(|at| at.elapsed() < self.retry) {
                return Err(RoomError::Unavailable("redis not connected yet".to_string()));
            }
            *last = Some(tokio::time::Instant::now());
        }
        self.rooms.get_or_try_init(|| RedisRooms::connect(&self.url, &self.prefix)).await
    }
}

#[async_trait::async_trait]
impl Rooms for LazyRedisRooms {
    async fn open(&self, event_id: &EventId, spec: &RoomSpec, seed: [u8; 32]) -> Result<(), RoomError> {
        self.rooms().await?.open(event_id, spec, seed).await
    }
    async fn spec(&self, event_id: &EventId) -> Result<Option<RoomSpec>, RoomError> {
        self.rooms().await?.spec(event_id).await
    }
    async fn events(&self) -> Result<Vec<EventId>, RoomError> {
        self.rooms().await?.events().await
    }
    async fn join(&self, event_id: &EventId, user_id: &UserId, tier: u8, now_ms: i64) -> Result<Place, RoomError> {
        self.rooms().await?.join(event_id, user_id, tier, now_ms).await
    }
    async fn place(&self, event_id: &EventId, user_id: &UserId) -> Result<(Place, Gauge), RoomError> {
        self.rooms().await?.place(event_id, user_id).await
    }
    async fn admit(&self, event_id: &EventId, n: u32, rate_per_s: f64, now_ms: i64) -> Result<Admitted, RoomError> {
        self.rooms().await?.admit(event_id, n, rate_per_s, now_ms).await
    }
    async fn end_session(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        session_id: crate::model::SessionId,
        why: SessionEnd,
        now_ms: i64,
    ) -> Result<Option<u64>, RoomError> {
        self.rooms().await?.end_session(event_id, user_id, session_id, why, now_ms).await
    }
    async fn reopen(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        session_id: crate::model::SessionId,
        order_id: crate::model::OrderId,
        now_ms: i64,
    ) -> Result<bool, RoomError> {
        self.rooms().await?.reopen(event_id, user_id, session_id, order_id, now_ms).await
    }
    async fn restore(&self, event_id: &EventId, image: &RoomImage) -> Result<bool, RoomError> {
        self.rooms().await?.restore(event_id, image).await
    }
    async fn sell_out(&self, event_id: &EventId) -> Result<(), RoomError> {
        self.rooms().await?.sell_out(event_id).await
    }
    async fn lottery(&self, event_id: &EventId) -> Result<LotteryRecord, RoomError> {
        self.rooms().await?.lottery(event_id).await
    }
    async fn lead(&self, event_id: &EventId, holder: &str, lease_ms: i64, now_ms: i64) -> Result<bool, RoomError> {
        self.rooms().await?.lead(event_id, holder, lease_ms, now_ms).await
    }
}
