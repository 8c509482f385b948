//! The rooms' record: PostgreSQL ([`PgRoomRecords`]) and its in-memory twin
//! ([`MemRoomRecords`]) answer a seeded random sequence of calls alike, and
//! end with the same journals (sequence numbers compared by their order:
//! PostgreSQL's come from a sequence shared by every room).

use crate::common;

use booking::admission::records::{MemRoomRecords, PgRoomRecords, RoomRecords};
use booking::admission::room::image::{JournalUser, RoomJournal};
use booking::admission::room::{Policy, RoomError, RoomSpec, Session, SessionEnd};
use booking::model::{EventId, OrderId, SeatId, UserId};
use booking::store::{CreateEvent, Store};
use common::TestDb;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

const EVENTS: [&str; 2] = ["ev-a", "ev-b"];
const TTL_MS: i64 = 10_000;

fn spec(target: u32) -> RoomSpec {
    RoomSpec { policy: Policy::Priority, opens_at_ms: 5_000, target_active_sessions: target, session_ttl_ms: TTL_MS }
}

/// One random call and its answer on `records` (unit answers as `()`).
async fn call(records: &dyn RoomRecords, rng: &mut ChaCha8Rng, now_ms: i64) -> (String, Result<String, RoomError>) {
    let ev = EventId::from(EVENTS[rng.random_range(0..EVENTS.len())]);
    let user = UserId::from(format!("u{}", rng.random_range(0..6)));
    let unit = |r: Result<(), RoomError>| r.map(|()| String::new());
    match rng.random_range(0..10) {
        0 => (format!("record_room {ev}"), unit(records.record_room(&ev, &spec(rng.random_range(2..4))).await)),
        1 => (format!("room {ev}"), records.room(&ev).await.map(|s| format!("{s:?}"))),
        2..5 => {
            let tier = rng.random_range(0..3);
            (format!("join {ev} {user} {tier}"), unit(records.record_join(&ev, &user, tier, now_ms).await))
        }
        5 | 6 => {
            let session = Session::new(&ev, &user, 1, now_ms, TTL_MS);
            (format!("admit {ev} {user}"), unit(records.record_admissions(&ev, &[(user.clone(), session)]).await))
        }
        7 | 8 => {
            let at = now_ms - rng.random_range(0..3) * 10;
            let end = rng.random_bool(0.7).then(|| SessionEnd::Purchased {
                order_id: OrderId::from_u128(rng.random()),
                key_id: Uuid::from_u128(rng.random()),
            });
            (format!("purchase {ev} {user} {at} {end:?}"), unit(records.record_purchase(&ev, &user, at, end).await))
        }
        _ => (format!("sold_out {ev}"), unit(records.record_sold_out(&ev).await)),
    }
}

/// A journal with its sequence numbers replaced by their rank, users by id.
fn normalized(j: Option<RoomJournal>) -> Option<(RoomSpec, bool, Vec<JournalUser>)> {
    let j = j?;
    let mut seqs: Vec<i64> = j.users.iter().flat_map(|u| [u.first_joined.1, u.joined.1]).collect();
    seqs.sort();
    seqs.dedup();
    let rank: BTreeMap<i64, i64> = seqs.into_iter().enumerate().map(|(i, s)| (s, i as i64)).collect();
    let mut users: Vec<JournalUser> = j
        .users
        .into_iter()
        .map(|u| JournalUser {
            first_joined: (u.first_joined.0, rank[&u.first_joined.1]),
            joined: (u.joined.0, rank[&u.joined.1]),
            ..u
        })
        .collect();
    users.sort_by(|a, b| a.user_id.cmp(&b.user_id));
    Some((j.spec, j.sold_out, users))
}

#[tokio::test]
async fn pg_room_records_answer_as_mem_room_records_do() {
    let db = TestDb::create(2).await;
    let store = db.db_clock_store(1);
    for ev in EVENTS {
        let seats = vec![SeatId::from("s1")];
        store.create_event(&CreateEvent { event_id: ev.into(), seat_ids: seats, price_cents: 1 }).await.unwrap();
    }
    let pg: Arc<dyn RoomRecords> = Arc::new(PgRoomRecords::new(store.pool().clone()));
    let mem: Arc<dyn RoomRecords> = Arc::new(MemRoomRecords::new());
    let mut rng = ChaCha8Rng::seed_from_u64(0x07ec_07d5);
    let (mut sessions, mut purchases) = (0, 0);
    for i in 0..600 {
        let now_ms = 10 * i as i64;
        let mut twin = rng.clone();
        let (what, p) = call(pg.as_ref(), &mut rng, now_ms).await;
        let (_, m) = call(mem.as_ref(), &mut twin, now_ms).await;
        assert_eq!(p, m, "call {i}: {what}");
        if i % 50 == 49 {
            for ev in EVENTS.map(EventId::from) {
                let (p, m) = (pg.journal(&ev).await.unwrap(), mem.journal(&ev).await.unwrap());
                for u in p.iter().flat_map(|j| &j.users) {
                    sessions += usize::from(u.session.is_some());
                    purchases += usize::from(u.session.is_some_and(|(_, end)| end.is_some()));
                }
                assert_eq!(normalized(p), normalized(m), "call {i}: {ev}'s journal");
            }
        }
    }
    assert_eq!(pg.rooms().await.unwrap(), mem.rooms().await.unwrap());
    assert!(sessions > 0 && purchases > 0, "the sequence compared sessions ({sessions}) and purchases ({purchases})");
    drop(store);
    db.drop_db().await;
}
