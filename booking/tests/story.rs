//! The brief's story, on both stores: Alice holds 1A with token A, her hold
//! expires, Bob takes 1A with token B, Alice's late checkout with token A is
//! refused (StaleToken) and Bob's succeeds. Plus the database's own guard: a
//! second confirmed booking for a seat, inserted directly in SQL, fails.

use crate::common;

use booking::clock::ManualClock;
use booking::model::{OrderStatus, SeatState};
use booking::store::{
    AcquireHold, BeginPayment, CreateEvent, PaymentSuccess, Recorded, SaleOutcome, Store, StoreError,
};
use common::{TestDb, mem_store};

const START_MS: i64 = 1_700_000_000_000;
const HOLD_TTL_MS: i64 = 300_000;

async fn alice_and_bob(store: &dyn Store, clock: &ManualClock) {
    store
        .create_event(&CreateEvent {
            event_id: "gig".into(),
            seat_ids: vec!["1A".into(), "1B".into()],
            price_cents: 5_000,
        })
        .await
        .unwrap();
    let hold = |holder: &str| AcquireHold {
        event_id: "gig".into(),
        seat_ids: vec!["1A".into()],
        holder_id: holder.into(),
        ttl_ms: HOLD_TTL_MS,
        max_held_seats: None,
    };
    let a = store.acquire_hold(&hold("alice")).await.unwrap();
    assert_eq!(a.expires_at_ms, START_MS + HOLD_TTL_MS);
    // While Alice's hold is live, Bob cannot take the seat.
    assert_eq!(
        store.acquire_hold(&hold("bob")).await,
        Err(StoreError::SeatUnavailable { event_id: "gig".into(), seat_id: "1A".into() })
    );

    // Alice's browser pauses; her hold expires by the store's clock.
    clock.advance_ms(HOLD_TTL_MS);
    let b = store.acquire_hold(&hold("bob")).await.unwrap();
    assert_ne!(a.hold_token, b.hold_token);
    assert_eq!(b.reclaimed.len(), 1, "Bob's hold took over Alice's expired one inline");
    assert_eq!(b.reclaimed[0].expired_at_ms, a.expires_at_ms);

    let checkout = |holder: &str, token, key: &str| BeginPayment {
        event_id: "gig".into(),
        holder_id: holder.into(),
        hold_token: token,
        seat_ids: vec!["1A".into()],
        idempotency_key: key.into(),
        payment_ttl_ms: 60_000,
    };
    // Alice's old request arrives: token A no longer authorizes anything.
    let before = store.snapshot().await.unwrap();
    assert_eq!(store.begin_payment(&checkout("alice", a.hold_token, "alice-1")).await, Err(StoreError::StaleToken));
    assert_eq!(store.snapshot().await.unwrap(), before, "a refused checkout changes nothing");
    // Even if Alice had Bob's token, she is not the holder.
    assert_eq!(store.begin_payment(&checkout("alice", b.hold_token, "alice-2")).await, Err(StoreError::NotHolder));

    let seat = &store.seat_map(&"gig".into()).await.unwrap()[0];
    assert_eq!(
        (seat.state, seat.hold_token, seat.holder_id.as_deref()),
        (SeatState::Held, Some(b.hold_token), Some("bob"))
    );

    let order = store.begin_payment(&checkout("bob", b.hold_token, "bob-1")).await.unwrap();
    assert!(!order.replayed);
    assert_eq!(order.order.status, OrderStatus::Pending);
    assert_eq!(order.order.amount_cents, 5_000);
    let seat = &store.seat_map(&"gig".into()).await.unwrap()[0];
    assert_eq!((seat.state, seat.order_id), (SeatState::PaymentPending, Some(order.order.order_id)));

    // Alice retries with her first key: still refused, and no order of hers exists.
    assert_eq!(store.begin_payment(&checkout("alice", a.hold_token, "alice-1")).await, Err(StoreError::StaleToken));

    let sale = store
        .record_payment_success(&PaymentSuccess {
            payment_op_id: order.order.payment_op_id,
            provider_payment_id: "pay-1".into(),
        })
        .await
        .unwrap();
    let Recorded { outcome: SaleOutcome::Confirmed { bookings, .. }, decided_now: true } = sale else {
        panic!("Bob's live payment sells the seat: {sale:?}")
    };
    assert_eq!(bookings.len(), 1);
    assert_eq!(bookings[0].holder_id, "bob");
    assert_eq!(store.bookings(&"gig".into()).await.unwrap(), bookings);
}

#[tokio::test]
async fn alice_and_bob_on_mem_store() {
    let (store, clock) = mem_store(START_MS, 7);
    alice_and_bob(&store, &clock).await;
}

#[tokio::test]
async fn alice_and_bob_on_pg_store() {
    let db = TestDb::create(4).await;
    let clock = ManualClock::new(START_MS);
    let store = db.manual_store(clock.clone(), 7);
    alice_and_bob(&store, &clock).await;
    db.drop_db().await;
}

#[tokio::test]
async fn a_second_confirmed_booking_for_a_seat_is_refused_by_the_database() {
    let db = TestDb::create(2).await;
    let clock = ManualClock::new(START_MS);
    let store = db.manual_store(clock.clone(), 11);
    alice_and_bob(&store, &clock).await;
    let insert = |booking_id: uuid::Uuid, status: &'static str| {
        sqlx::query(
            "INSERT INTO bookings (event_id, seat_id, booking_id, order_id, payment_op_id, holder_id, status, created_at_ms) \
             VALUES ('gig', '1A', $1, $1, $1, 'mallory', $2, 0)",
        )
        .bind(booking_id)
        .bind(status)
        .execute(&db.pool)
    };
    let err = insert(uuid::Uuid::from_u128(1), "confirmed").await.expect_err("a second confirmed booking must fail");
    let db_err = err.as_database_error().expect("a database error");
    assert_eq!(db_err.code().as_deref(), Some("23505"), "unique violation: {db_err}");
    assert_eq!(db_err.constraint(), Some("bookings_one_confirmed_per_seat"));
    // The guard is the partial index on confirmed bookings, not the primary key.
    insert(uuid::Uuid::from_u128(2), "cancelled").await.expect("a non-confirmed row is not a second sale");
    assert_eq!(store.bookings(&"gig".into()).await.unwrap().len(), 1);
    db.drop_db().await;
}
