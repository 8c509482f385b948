//! [`MemRooms`]: the waiting-room contract in memory, behind one lock (the
//! simulator's twin of the Redis rooms; every call is atomic).

use super::{
    Admitted, Gauge, LotteryRecord, MAX_ROOMS, Place, RoomError, RoomImage, RoomSpec, Rooms, Session, SessionEnd,
};
use crate::admission::queue::{Queue, Standing};
use crate::model::{EventId, OrderId, SessionId, UserId};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// One event's room.
#[derive(Debug)]
struct Room {
    spec: RoomSpec,
    seed: [u8; 32],
    queue: Queue,
    /// Every admission, by user: its session and how it ended.
    sessions: BTreeMap<UserId, (Session, Option<SessionEnd>)>,
    /// Open sessions by expiry.
    open: BTreeSet<(i64, UserId)>,
    rate_per_s: f64,
    sold_out: bool,
    lease: Option<(String, i64)>,
}

/// The waiting rooms in memory.
#[derive(Debug, Default)]
pub struct MemRooms {
    rooms: Mutex<BTreeMap<EventId, Room>>,
}

impl MemRooms {
    /// No rooms.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every room, as a Redis restart without persistence does (the
    /// simulator's fault; a caller then sees `NoRoom` and rebuilds).
    pub fn wipe(&self) {
        self.rooms.lock().expect("rooms lock").clear();
    }

    fn with<T>(&self, event_id: &EventId, f: impl FnOnce(&mut Room) -> Result<T, RoomError>) -> Result<T, RoomError> {
        let mut rooms = self.rooms.lock().expect("rooms lock");
        let room = rooms.get_mut(event_id).ok_or_else(|| RoomError::NoRoom(event_id.to_string()))?;
        f(room)
    }
}

impl Room {
    fn place(&self, user_id: &UserId) -> Place {
        if let Some((session, ended)) = self.sessions.get(user_id) {
            return Place::Admitted { session: *session, ended: *ended };
        }
        match self.queue.find(user_id) {
            None if self.sold_out => Place::SoldOut,
            None => Place::NotJoined,
            Some(Standing::Waiting { position }) => Place::Waiting { position },
            Some(Standing::AwaitingDraw) => Place::AwaitingDraw,
            Some(Standing::SoldOut) => Place::SoldOut,
            Some(Standing::Admitted) => unreachable!("every admitted user has a session"),
        }
    }

    fn gauge(&self) -> Gauge {
        Gauge {
            waiting: self.queue.waiting() as u64,
            active: u32::try_from(self.open.len()).expect("open sessions fit the target"),
            rate_per_s: self.rate_per_s,
            sold_out: self.sold_out,
        }
    }
}

#[async_trait]
impl Rooms for MemRooms {
    async fn open(&self, event_id: &EventId, spec: &RoomSpec, seed: [u8; 32]) -> Result<(), RoomError> {
        if !spec.valid() {
            return Err(RoomError::BadSpec);
        }
        let mut rooms = self.rooms.lock().expect("rooms lock");
        if let Some(room) = rooms.get(event_id) {
            return if room.spec == *spec && room.seed == seed {
                Ok(())
            } else {
                Err(RoomError::Conflict(event_id.to_string()))
            };
        }
        if rooms.len() >= MAX_ROOMS {
            return Err(RoomError::TooManyRooms);
        }
        let queue = Queue::new(spec.policy.fairness(seed), spec.opens_at_ms);
        rooms.insert(
            event_id.clone(),
            Room {
                spec: *spec,
                seed,
                queue,
                sessions: BTreeMap::new(),
                open: BTreeSet::new(),
                rate_per_s: 0.0,
                sold_out: false,
                lease: None,
            },
        );
        Ok(())
    }

    async fn spec(&self, event_id: &EventId) -> Result<Option<RoomSpec>, RoomError> {
        Ok(self.rooms.lock().expect("rooms lock").get(event_id).map(|r| r.spec))
    }

    async fn events(&self) -> Result<Vec<EventId>, RoomError> {
        Ok(self.rooms.lock().expect("rooms lock").keys().cloned().collect())
    }

    async fn join(&self, event_id: &EventId, user_id: &UserId, tier: u8, now_ms: i64) -> Result<Place, RoomError> {
        self.with(event_id, |room| {
            if let Some((session, ended)) = room.sessions.get(user_id).copied() {
                if ended.is_none() && session.expires_at_ms > now_ms {
                    return Ok(room.place(user_id));
                }
                // The session is over: a new arrival.
                if room.sold_out {
                    return Err(crate::admission::queue::QueueError::SoldOut.into());
                }
                room.queue.rejoin(user_id, tier, now_ms)?;
                room.sessions.remove(user_id);
                room.open.remove(&(session.expires_at_ms, user_id.clone()));
                return Ok(room.place(user_id));
            }
            if room.queue.has(user_id) {
                return Ok(room.place(user_id));
            }
            if room.sold_out {
                return Err(crate::admission::queue::QueueError::SoldOut.into());
            }
            room.queue.join(user_id, tier, now_ms)?;
            Ok(room.place(user_id))
        })
    }

    async fn place(&self, event_id: &EventId, user_id: &UserId) -> Result<(Place, Gauge), RoomError> {
        self.with(event_id, |room| Ok((room.place(user_id), room.gauge())))
    }

    async fn admit(&self, event_id: &EventId, n: u32, rate_per_s: f64, now_ms: i64) -> Result<Admitted, RoomError> {
        self.with(event_id, |room| {
            let mut expired_ms = Vec::new();
            while let Some((expires_at_ms, user)) = room.open.first().cloned() {
                if expires_at_ms > now_ms {
                    break;
                }
                room.open.pop_first();
                let (session, ended) = room.sessions.get_mut(&user).expect("an open session is recorded");
                assert!(ended.is_none(), "an open session has not ended");
                *ended = Some(SessionEnd::Expired);
                expired_ms.push(u64::try_from(now_ms - session.admitted_at_ms).unwrap_or(0));
            }
            room.rate_per_s = rate_per_s;
            let target = room.spec.target_active_sessions as usize;
            let room_left = target.saturating_sub(room.open.len());
            let k = (n as usize).min(room_left);
            let mut admitted = Vec::new();
            if !room.sold_out && k > 0 {
                for (i, user) in room.queue.admit(k as u32, now_ms).into_iter().enumerate() {
                    let session = Session::new(event_id, &user, i as u64 + 1, now_ms, room.spec.session_ttl_ms);
                    room.open.insert((session.expires_at_ms, user.clone()));
                    room.sessions.insert(user.clone(), (session, None));
                    admitted.push((user, session));
                }
            } else {
                room.queue.open_if_due(now_ms);
            }
            // Reopened sessions may keep a room above its target; an admission never takes it past.
            assert!(admitted.is_empty() || room.open.len() <= target, "admission never passes the target");
            Ok(Admitted { admitted, expired_ms, active: room.gauge().active, waiting: room.queue.waiting() as u64 })
        })
    }

    async fn end_session(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        session_id: SessionId,
        why: SessionEnd,
        now_ms: i64,
    ) -> Result<Option<u64>, RoomError> {
        self.with(event_id, |room| {
            let Some((session, ended)) = room.sessions.get_mut(user_id) else { return Ok(None) };
            if session.session_id != session_id || ended.is_some() {
                return Ok(None);
            }
            *ended = Some(why);
            let removed = room.open.remove(&(session.expires_at_ms, user_id.clone()));
            assert!(removed, "an open session is in the open set");
            Ok(Some(u64::try_from(now_ms - session.admitted_at_ms).unwrap_or(0)))
        })
    }

    async fn reopen(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        session_id: SessionId,
        order_id: OrderId,
        now_ms: i64,
    ) -> Result<bool, RoomError> {
        self.with(event_id, |room| {
            let Some((session, ended)) = room.sessions.get_mut(user_id) else { return Ok(false) };
            let by_order = matches!(ended, Some(SessionEnd::Purchased { order_id: o, .. }) if *o == order_id);
            if session.session_id != session_id || !by_order || session.expires_at_ms <= now_ms {
                return Ok(false);
            }
            *ended = None;
            room.open.insert((session.expires_at_ms, user_id.clone()));
            Ok(true)
        })
    }

    async fn restore(&self, event_id: &EventId, image: &RoomImage) -> Result<bool, RoomError> {
        if !image.spec.valid() {
            return Err(RoomError::BadSpec);
        }
        let mut rooms = self.rooms.lock().expect("rooms lock");
        if rooms.contains_key(event_id) {
            return Ok(false);
        }
        if rooms.len() >= MAX_ROOMS {
            return Err(RoomError::TooManyRooms);
        }
        let admitted: Vec<(UserId, u8)> = image.sessions.iter().map(|(u, t, _, _)| (u.clone(), *t)).collect();
        let mut queue = Queue::restored(
            image.spec.policy.fairness(image.seed),
            image.spec.opens_at_ms,
            image.drawn,
            &image.pre_draw,
            &admitted,
            &image.waiting,
        );
        if image.sold_out {
            queue.sold_out();
        }
        let sessions: BTreeMap<UserId, (Session, Option<SessionEnd>)> =
            image.sessions.iter().map(|(u, _, s, e)| (u.clone(), (*s, *e))).collect();
        let open = sessions.iter().filter(|(_, (_, e))| e.is_none()).map(|(u, (s, _))| (s.expires_at_ms, u.clone()));
        let room = Room {
            spec: image.spec,
            seed: image.seed,
            queue,
            open: open.collect(),
            sessions,
            rate_per_s: 0.0,
            sold_out: image.sold_out,
            lease: None,
        };
        rooms.insert(event_id.clone(), room);
        Ok(true)
    }

    async fn sell_out(&self, event_id: &EventId) -> Result<(), RoomError> {
        self.with(event_id, |room| {
            room.sold_out = true;
            room.queue.sold_out();
            Ok(())
        })
    }

    async fn lottery(&self, event_id: &EventId) -> Result<LotteryRecord, RoomError> {
        self.with(event_id, |room| {
            let commitment = room.queue.commitment().ok_or_else(|| RoomError::NotALottery(event_id.to_string()))?;
            let (seed, joiners) = match room.queue.reveal() {
                Ok((seed, joiners)) => (Some(hex::encode(seed)), Some(joiners)),
                Err(_) => (None, None),
            };
            Ok(LotteryRecord { commitment, seed, joiners })
        })
    }

    async fn lead(&self, event_id: &EventId, holder: &str, lease_ms: i64, now_ms: i64) -> Result<bool, RoomError> {
        self.with(event_id, |room| {
            let free = match &room.lease {
                None => true,
                Some((h, until)) => h == holder || *until <= now_ms,
            };
            if free {
                room.lease = Some((holder.to_string(), now_ms + lease_ms));
            }
            Ok(free)
        })
    }
}
