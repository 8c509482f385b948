//! Cancellation is a fault: a `PgStore` call whose future is dropped part-way
//! (axum drops a handler's future when its client hangs up) must leave its
//! pooled connection clean, so unrelated callers never fail because of it.
//!
//! Postmortem: sqlx 0.9.0 does not roll back a `BEGIN` whose future
//! is dropped, so a client resetting its connection put a pooled connection back
//! "idle in transaction"; later holds on it failed with `503` (`there is already a
//! transaction in progress`, `cannot execute UPDATE in a read-only transaction`).
//! Fix: `PgStore` runs every transaction on a guarded connection that is closed,
//! never reused, unless its transaction ended cleanly (`store::pg::tx::TxConn`).

use crate::common;

use booking::model::{SeatId, UserId};
use booking::store::{AcquireHold, CreateEvent, PgStore, Store, StoreError};
use common::TestDb;
use std::time::Duration;

/// Callers that hang up, each making calls one after another.
const CANCELLERS: usize = 6;
/// Calls each canceller makes, each dropped after 0..`MAX_CANCEL_DELAY_US` µs.
const CALLS_PER_CANCELLER: usize = 300;
/// The latest moment a call is cancelled, in µs after it starts.
const MAX_CANCEL_DELAY_US: u64 = 1_500;
/// Unrelated callers, each making holds one after another meanwhile.
const INNOCENTS: usize = 4;
/// Holds each innocent caller makes: every one must succeed.
const HOLDS_PER_INNOCENT: usize = 75;
/// All unrelated holds.
const INNOCENT_HOLDS: usize = INNOCENTS * HOLDS_PER_INNOCENT;
/// Seats of the event the cancelled holds aim at.
const BAIT_SEATS: usize = 1_000;

/// A tiny deterministic generator for the cancellation delays.
fn delays_us(seed: u64, n: usize) -> Vec<u64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % MAX_CANCEL_DELAY_US
        })
        .collect()
}

async fn hold(store: &PgStore, event: &str, seat: SeatId, holder: UserId) -> Result<(), StoreError> {
    store
        .acquire_hold(&AcquireHold {
            event_id: event.into(),
            seat_ids: vec![seat],
            holder_id: holder,
            ttl_ms: 600_000,
            max_held_seats: None,
        })
        .await
        .map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn calls_dropped_mid_transaction_never_break_unrelated_holds() {
    // A small pool: a poisoned connection is soon reused by an innocent hold.
    let db = TestDb::create(4).await;
    let store = db.db_clock_store(12);
    let victims: Vec<SeatId> = (0..INNOCENT_HOLDS).map(|i| SeatId::from(format!("V{i:04}"))).collect();
    let bait: Vec<SeatId> = (0..BAIT_SEATS).map(|i| SeatId::from(format!("B{i:04}"))).collect();
    for (event, seats) in [("innocent", &victims), ("bait", &bait)] {
        store
            .create_event(&CreateEvent { event_id: event.into(), seat_ids: seats.clone(), price_cents: 100 })
            .await
            .unwrap();
    }

    // Callers that hang up: reads (a read-only transaction) and holds, each
    // dropped at a seeded delay after it starts.
    let cancellers: Vec<_> = (0..CANCELLERS)
        .map(|c| {
            let store = store.clone();
            tokio::spawn(async move {
                for (i, delay_us) in delays_us(42 + c as u64, CALLS_PER_CANCELLER).into_iter().enumerate() {
                    let call = async {
                        if i % 2 == 0 {
                            let _ = store.seat_map(&"bait".into()).await;
                        } else {
                            let seat = SeatId::from(format!("B{:04}", (c * CALLS_PER_CANCELLER + i) % BAIT_SEATS));
                            let _ = hold(&store, "bait", seat, UserId::from(format!("quitter{c}.{i}"))).await;
                        }
                    };
                    let _ = tokio::time::timeout(Duration::from_micros(delay_us), call).await;
                }
            })
        })
        .collect();
    let innocents: Vec<_> = (0..INNOCENTS)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut failures = Vec::new();
                for i in 0..HOLDS_PER_INNOCENT {
                    let k = n * HOLDS_PER_INNOCENT + i;
                    if let Err(e) =
                        hold(&store, "innocent", SeatId::from(format!("V{k:04}")), UserId::from(format!("fan{k}")))
                            .await
                    {
                        failures.push(e);
                    }
                }
                failures
            })
        })
        .collect();
    for c in cancellers {
        c.await.expect("canceller panicked");
    }
    let mut failures = Vec::new();
    for h in innocents {
        failures.extend(h.await.expect("innocent caller panicked"));
    }
    assert!(
        failures.is_empty(),
        "{} of {INNOCENT_HOLDS} unrelated holds failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );

    // Nothing is left open: no pooled connection sits inside a transaction.
    let idle_in_tx: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(idle_in_tx, 0, "connections left idle in transaction");
    // And every pooled connection still decides: a taken seat is refused by name.
    for i in 0..16 {
        let seat = SeatId::from(format!("V{i:04}"));
        let refused = hold(&store, "innocent", seat.clone(), "latecomer".into()).await;
        assert_eq!(refused, Err(StoreError::SeatUnavailable { event_id: "innocent".into(), seat_id: seat }));
        store.seat_map(&"innocent".into()).await.expect("a read after the storm");
    }
    db.drop_db().await;
}
