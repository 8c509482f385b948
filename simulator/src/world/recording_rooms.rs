//! The simulated deployment's shared waiting rooms: [`MemRooms`] (what one
//! Redis is to several bookingd instances: outside every host, surviving
//! their crashes), every change traced as a [`RoomEvent`] for the
//! waiting-room checkers. Reads are not traced.

use crate::world::recorder::Recorder;
use async_trait::async_trait;
use booking::admission::room::{
    Admitted, Gauge, LotteryRecord, MemRooms, Place, RoomError, RoomImage, RoomSpec, Rooms, SessionEnd,
};
use booking::model::{EventId, OrderId, UserId};
use invariants::trace::RoomEvent;
use std::sync::atomic::{AtomicBool, Ordering};

/// [`MemRooms`] with its changes traced.
#[derive(Debug)]
pub struct RecordingRooms {
    inner: MemRooms,
    recorder: Recorder,
    /// The rooms-down fault: while set, every call fails as with Redis stopped.
    down: AtomicBool,
}

impl RecordingRooms {
    /// Empty rooms recording into `recorder`.
    pub fn new(recorder: Recorder) -> Self {
        Self { inner: MemRooms::new(), recorder, down: AtomicBool::new(false) }
    }

    /// Stops (`true`) or restarts the rooms' store (the rooms-down fault; the nemesis traces it).
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// `Unavailable` while the store is down.
    fn up(&self) -> Result<(), RoomError> {
        match self.down.load(Ordering::SeqCst) {
            true => Err(RoomError::Unavailable("the rooms' store is down".to_string())),
            false => Ok(()),
        }
    }

    /// Forgets every room (the rooms-lost fault; the nemesis traces it).
    pub fn wipe(&self) {
        self.inner.wipe();
    }
}

#[async_trait]
impl Rooms for RecordingRooms {
    async fn open(&self, event_id: &EventId, spec: &RoomSpec, seed: [u8; 32]) -> Result<(), RoomError> {
        self.up()?;
        let first = self.inner.spec(event_id).await?.is_none();
        self.inner.open(event_id, spec, seed).await?;
        if first {
            self.recorder.room(RoomEvent::Opened {
                event_id: event_id.clone(),
                policy: spec.policy,
                target_active_sessions: spec.target_active_sessions,
                opens_at_ms: spec.opens_at_ms,
                session_ttl_ms: spec.session_ttl_ms,
                seed: hex::encode(seed),
            });
        }
        Ok(())
    }

    async fn spec(&self, event_id: &EventId) -> Result<Option<RoomSpec>, RoomError> {
        self.up()?;
        self.inner.spec(event_id).await
    }

    async fn events(&self) -> Result<Vec<EventId>, RoomError> {
        self.up()?;
        self.inner.events().await
    }

    async fn join(&self, event_id: &EventId, user_id: &UserId, tier: u8, now_ms: i64) -> Result<Place, RoomError> {
        self.up()?;
        let before = self.inner.place(event_id, user_id).await?.0;
        let place = self.inner.join(event_id, user_id, tier, now_ms).await?;
        // A first join, or a new arrival after a session ended.
        let arrived = before == Place::NotJoined || (matches!(before, Place::Admitted { .. }) && before != place);
        if arrived {
            self.recorder.room(RoomEvent::Joined { event_id: event_id.clone(), user: user_id.clone(), tier, now_ms });
        }
        Ok(place)
    }

    async fn place(&self, event_id: &EventId, user_id: &UserId) -> Result<(Place, Gauge), RoomError> {
        self.up()?;
        self.inner.place(event_id, user_id).await
    }

    async fn admit(&self, event_id: &EventId, n: u32, rate_per_s: f64, now_ms: i64) -> Result<Admitted, RoomError> {
        self.up()?;
        let pass = self.inner.admit(event_id, n, rate_per_s, now_ms).await?;
        for (user, session) in &pass.admitted {
            self.recorder.room(RoomEvent::Admitted {
                event_id: event_id.clone(),
                user: user.clone(),
                session_id: session.session_id,
                expires_at_ms: session.expires_at_ms,
            });
        }
        self.recorder.room(RoomEvent::Pass {
            event_id: event_id.clone(),
            asked: n,
            admitted: u32::try_from(pass.admitted.len()).unwrap_or(u32::MAX),
            active: pass.active,
            waiting: pass.waiting,
            rate_per_ks: (rate_per_s * 1000.0).round() as i64,
            now_ms,
        });
        Ok(pass)
    }

    async fn end_session(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        session_id: booking::model::SessionId,
        why: SessionEnd,
        now_ms: i64,
    ) -> Result<Option<u64>, RoomError> {
        self.up()?;
        let ended = self.inner.end_session(event_id, user_id, session_id, why, now_ms).await?;
        if ended.is_some() {
            self.recorder.room(RoomEvent::Ended {
                event_id: event_id.clone(),
                user: user_id.clone(),
                session_id,
                how: why,
            });
        }
        Ok(ended)
    }

    async fn reopen(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        session_id: booking::model::SessionId,
        order_id: OrderId,
        now_ms: i64,
    ) -> Result<bool, RoomError> {
        self.up()?;
        let reopened = self.inner.reopen(event_id, user_id, session_id, order_id, now_ms).await?;
        if reopened {
            self.recorder.room(RoomEvent::Reopened { event_id: event_id.clone(), user: user_id.clone(), session_id });
        }
        Ok(reopened)
    }

    async fn restore(&self, event_id: &EventId, image: &RoomImage) -> Result<bool, RoomError> {
        self.up()?;
        self.inner.restore(event_id, image).await
    }

    async fn sell_out(&self, event_id: &EventId) -> Result<(), RoomError> {
        self.up()?;
        let already = self.inner.place(event_id, &UserId::default()).await?.1.sold_out;
        self.inner.sell_out(event_id).await?;
        if !already {
            self.recorder.room(RoomEvent::SoldOut { event_id: event_id.clone() });
        }
        Ok(())
    }

    async fn lottery(&self, event_id: &EventId) -> Result<LotteryRecord, RoomError> {
        self.up()?;
        self.inner.lottery(event_id).await
    }

    async fn lead(&self, event_id: &EventId, holder: &str, lease_ms: i64, now_ms: i64) -> Result<bool, RoomError> {
        self.up()?;
        self.inner.lead(event_id, holder, lease_ms, now_ms).await
    }
}
