//! [`MemRoomRecords`]: the rooms' record in memory, behind one lock.

use super::RoomRecords;
use crate::admission::room::image::{JournalUser, RoomJournal};
use crate::admission::room::{RoomError, RoomSpec, Session, SessionEnd};
use crate::model::{EventId, UserId};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// One room's record: its journal, with the users by id.
#[derive(Debug)]
struct Room {
    spec: RoomSpec,
    sold_out: bool,
    users: BTreeMap<UserId, JournalUser>,
}

#[derive(Debug, Default)]
struct Records {
    rooms: BTreeMap<EventId, Room>,
    seq: i64,
}

/// The rooms' record in memory.
#[derive(Debug, Default)]
pub struct MemRoomRecords {
    inner: Mutex<Records>,
}

impl MemRoomRecords {
    /// No rooms.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, event_id: &EventId, f: impl FnOnce(&mut Room, &mut i64) -> T) -> Result<T, RoomError> {
        let mut inner = self.inner.lock().expect("records lock");
        let Records { rooms, seq } = &mut *inner;
        let journal = rooms.get_mut(event_id).ok_or_else(|| RoomError::NoRoom(event_id.to_string()))?;
        Ok(f(journal, seq))
    }
}

fn user<'a>(room: &'a mut Room, user_id: &UserId) -> Option<&'a mut JournalUser> {
    room.users.get_mut(user_id)
}

#[async_trait]
impl RoomRecords for MemRoomRecords {
    async fn record_room(&self, event_id: &EventId, spec: &RoomSpec) -> Result<(), RoomError> {
        let mut inner = self.inner.lock().expect("records lock");
        match inner.rooms.get(event_id) {
            Some(j) if j.spec == *spec => Ok(()),
            Some(_) => Err(RoomError::Conflict(event_id.to_string())),
            None => {
                inner.rooms.insert(event_id.clone(), Room { spec: *spec, sold_out: false, users: BTreeMap::new() });
                Ok(())
            }
        }
    }

    async fn room(&self, event_id: &EventId) -> Result<Option<RoomSpec>, RoomError> {
        Ok(self.inner.lock().expect("records lock").rooms.get(event_id).map(|j| j.spec))
    }

    async fn rooms(&self) -> Result<Vec<EventId>, RoomError> {
        Ok(self.inner.lock().expect("records lock").rooms.keys().cloned().collect())
    }

    async fn record_join(&self, event_id: &EventId, user_id: &UserId, tier: u8, now_ms: i64) -> Result<(), RoomError> {
        self.with(event_id, |journal, seq| {
            *seq += 1;
            match user(journal, user_id) {
                Some(u) if u.session.is_some() => {
                    u.tier = tier;
                    u.joined = (now_ms, *seq);
                    u.session = None;
                }
                Some(_) => {}
                None => {
                    let u = JournalUser {
                        user_id: user_id.clone(),
                        tier,
                        first_joined: (now_ms, *seq),
                        joined: (now_ms, *seq),
                        session: None,
                    };
                    journal.users.insert(user_id.clone(), u);
                }
            }
        })
    }

    async fn record_admissions(&self, event_id: &EventId, admitted: &[(UserId, Session)]) -> Result<(), RoomError> {
        self.with(event_id, |journal, seq| {
            for (user_id, session) in admitted {
                match user(journal, user_id) {
                    Some(u) => u.session = Some((*session, None)),
                    None => {
                        *seq += 1;
                        let at = (session.admitted_at_ms, *seq);
                        let u = JournalUser {
                            user_id: user_id.clone(),
                            tier: 0,
                            first_joined: at,
                            joined: at,
                            session: Some((*session, None)),
                        };
                        journal.users.insert(user_id.clone(), u);
                    }
                }
            }
        })
    }

    async fn record_purchase(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        admitted_at_ms: i64,
        end: Option<SessionEnd>,
    ) -> Result<(), RoomError> {
        // Like an UPDATE: nothing to change on an unrecorded room.
        let mut inner = self.inner.lock().expect("records lock");
        if let Some(u) = inner.rooms.get_mut(event_id).and_then(|room| user(room, user_id))
            && let Some((s, recorded)) = &mut u.session
            && s.admitted_at_ms == admitted_at_ms
        {
            *recorded = end;
        }
        Ok(())
    }

    async fn record_sold_out(&self, event_id: &EventId) -> Result<(), RoomError> {
        let mut inner = self.inner.lock().expect("records lock");
        if let Some(room) = inner.rooms.get_mut(event_id) {
            room.sold_out = true;
        }
        Ok(())
    }

    async fn journal(&self, event_id: &EventId) -> Result<Option<RoomJournal>, RoomError> {
        let inner = self.inner.lock().expect("records lock");
        Ok(inner.rooms.get(event_id).map(|r| RoomJournal {
            spec: r.spec,
            sold_out: r.sold_out,
            users: r.users.values().cloned().collect(),
        }))
    }
}
