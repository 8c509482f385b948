//! The per-user cap on seats held at once (`AcquireHold::max_held_seats`):
//! what counts toward it, on MemStore and PgStore, and that one user's
//! concurrent holds cannot pass it together on PostgreSQL.

use crate::common;

use booking::model::{EventId, SeatId};
use booking::store::*;
use common::{TestDb, on_both};
use std::sync::Arc;

const START_MS: i64 = 1_700_000_000_000;
/// The cap the tests use.
const CAP: u32 = 8;
/// Hold lifetime, ms.
const HOLD_TTL_MS: i64 = 60_000;

fn seat(i: usize) -> SeatId {
    SeatId::from(format!("s{i:03}"))
}

async fn event(store: &dyn Store, seats: usize) {
    store
        .create_event(&CreateEvent {
            event_id: "ev".into(),
            seat_ids: (0..seats).map(seat).collect(),
            price_cents: 100,
        })
        .await
        .unwrap();
}

fn hold_req(seats: std::ops::Range<usize>, holder: &str, cap: Option<u32>) -> AcquireHold {
    AcquireHold {
        event_id: "ev".into(),
        seat_ids: seats.map(seat).collect(),
        holder_id: holder.into(),
        ttl_ms: HOLD_TTL_MS,
        max_held_seats: cap,
    }
}

#[tokio::test]
async fn held_and_paying_seats_count_expired_and_released_ones_do_not() {
    on_both(START_MS, 3, |store, clock| async move {
        event(&*store, 40).await;
        let six = store.acquire_hold(&hold_req(0..6, "ann", Some(CAP))).await.unwrap();
        // 6 + 3 > 8: refused, and nothing taken.
        let err = store.acquire_hold(&hold_req(6..9, "ann", Some(CAP))).await.unwrap_err();
        assert_eq!(err, StoreError::HoldLimit { event_id: "ev".into(), limit: CAP, held: 6, requested: 3 });
        assert_eq!(err.kind(), booking::problem_kind::ProblemKind::HoldLimit);
        assert!(store.seat_map(&EventId::from("ev")).await.unwrap()[6..9].iter().all(|s| s.holder_id.is_none()));
        // Another user is not affected; neither is a hold without a cap.
        store.acquire_hold(&hold_req(10..18, "bob", Some(CAP))).await.unwrap();
        store.acquire_hold(&hold_req(18..20, "ann", None)).await.unwrap();
        // Seats in payment count: 6 paying + 2 held (18..20) = 8.
        store
            .begin_payment(&BeginPayment {
                event_id: "ev".into(),
                holder_id: "ann".into(),
                hold_token: six.hold_token,
                seat_ids: (0..6).map(seat).collect(),
                idempotency_key: "k1".into(),
                payment_ttl_ms: 120_000,
            })
            .await
            .unwrap();
        let err = store.acquire_hold(&hold_req(20..21, "ann", Some(CAP))).await.unwrap_err();
        assert_eq!(err, StoreError::HoldLimit { event_id: "ev".into(), limit: CAP, held: 8, requested: 1 });
        // Once the two held seats expire they no longer count (the 6 in payment still do).
        clock.advance_ms(HOLD_TTL_MS);
        store.acquire_hold(&hold_req(20..22, "ann", Some(CAP))).await.unwrap();
        let err = store.acquire_hold(&hold_req(22..23, "ann", Some(CAP))).await.unwrap_err();
        assert_eq!(err, StoreError::HoldLimit { event_id: "ev".into(), limit: CAP, held: 8, requested: 1 });
        // A cap of zero is not a cap: refused as invalid input by both stores.
        let err = store.acquire_hold(&hold_req(30..31, "cy", Some(0))).await.unwrap_err();
        assert!(matches!(err, StoreError::InvalidInput(_)), "{err:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_users_concurrent_holds_cannot_pass_the_cap_together() {
    // 16 tasks of one user race for 16 different seats, 4 rounds: the cap lets exactly 8 through.
    const RACERS: usize = 16;
    const ROUNDS: usize = 4;
    let db = TestDb::create(RACERS as u32).await;
    let store = Arc::new(db.db_clock_store(5));
    store
        .create_event(&CreateEvent {
            event_id: "ev".into(),
            seat_ids: (0..RACERS * ROUNDS).map(seat).collect(),
            price_cents: 100,
        })
        .await
        .unwrap();
    for round in 0..ROUNDS {
        let holder = format!("hoarder{round}");
        let tasks: Vec<_> = (0..RACERS)
            .map(|i| {
                let store = store.clone();
                let req = hold_req(round * RACERS + i..round * RACERS + i + 1, &holder, Some(CAP));
                tokio::spawn(async move { store.acquire_hold(&req).await })
            })
            .collect();
        let mut granted = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(_) => granted += 1,
                Err(StoreError::HoldLimit { limit, held, .. }) => {
                    assert_eq!((limit, held), (CAP, CAP), "refused only once the cap is reached");
                }
                Err(e) => panic!("unexpected {e:?}"),
            }
        }
        assert_eq!(granted, CAP as usize, "round {round}");
        let held = store
            .seat_map(&EventId::from("ev"))
            .await
            .unwrap()
            .iter()
            .filter(|s| s.holder_id.as_deref() == Some(&holder))
            .count();
        assert_eq!(held, CAP as usize, "round {round}: the table agrees");
    }
    db.drop_db().await;
}
