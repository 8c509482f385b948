//! A hold's cost in the database does not grow with the size of its event.
//!
//! Postmortem (found by `examples/hold_throughput`): the index that
//! finds a hold's seats by token led with `event_id`, and once PostgreSQL
//! switched the hold's lock query (`event_id = $1 AND seat_id = ANY($2)`) to a
//! generic plan it scanned that index for the whole event and filtered by seat:
//! every hold read every seat of its event (and every dead version of them),
//! 23,000 index entries per hold after 20 s of churn on 1,000 seats, and bookingd
//! ran at a third of PgStore's rate. Fix: the token index is on the token alone.

use crate::common;

use booking::model::SeatId;
use booking::store::{AcquireHold, CreateEvent, PgStore, Store};
use common::TestDb;
use sqlx::PgPool;

/// Seats in the event: a hold that scans its event reads at least this many rows.
const EVENT_SEATS: usize = 5_000;
/// Holds made before measuring: PostgreSQL may switch a prepared statement
/// to its generic plan after five executions.
const WARM_HOLDS: usize = 10;
/// Holds measured.
const MEASURED_HOLDS: usize = 40;
/// Rows (and index entries) one single-seat hold may read: a handful.
const MAX_ROWS_READ_PER_HOLD: i64 = 50;

/// Rows and index entries the database has returned to queries so far,
/// with this connection's own pending counts flushed first.
async fn rows_read(pool: &PgPool) -> i64 {
    let mut c = pool.acquire().await.expect("connection");
    sqlx::query("SELECT pg_stat_force_next_flush()").execute(&mut *c).await.expect("flush request");
    // The flush happens when the backend goes idle: after the statement above.
    sqlx::query("SELECT pg_stat_clear_snapshot()").execute(&mut *c).await.expect("clear snapshot");
    sqlx::query_scalar::<_, i64>("SELECT tup_returned::BIGINT FROM pg_stat_database WHERE datname = current_database()")
        .fetch_one(&mut *c)
        .await
        .expect("pg_stat_database")
}

async fn hold(store: &PgStore, seat: usize, cap: Option<u32>) {
    store
        .acquire_hold(&AcquireHold {
            event_id: "big".into(),
            seat_ids: vec![SeatId::from(format!("s{seat:05}"))],
            holder_id: "alice".into(),
            ttl_ms: 60_000,
            max_held_seats: cap,
        })
        .await
        .expect("the seat is free");
}

/// Rows read per single-seat hold on an event of `event_seats` seats, every
/// statement planned generically under PgStore's session settings.
async fn rows_read_per_hold(event_seats: usize, cap: Option<u32>) -> i64 {
    // One connection: every statement, and its statistics, on the same backend.
    let db = TestDb::create(1).await;
    // PostgreSQL switches a prepared statement to its generic plan when it
    // judges that plan no dearer than the custom ones; which it judges so
    // depends on statistics and bloat. PgStore's settings plan every
    // statement generically: the case the schema must be good for whatever
    // the planner's estimates.
    for (name, value) in PgStore::SESSION_SETTINGS {
        sqlx::query(sqlx::AssertSqlSafe(format!("SET {name} = '{value}'")))
            .execute(&db.pool)
            .await
            .expect("session setting");
    }
    let store = db.db_clock_store(7);
    let seat_ids: Vec<SeatId> = (0..event_seats).map(|s| SeatId::from(format!("s{s:05}"))).collect();
    store.create_event(&CreateEvent { event_id: "big".into(), seat_ids, price_cents: 100 }).await.expect("create");
    for seat in 0..WARM_HOLDS {
        hold(&store, seat, cap).await;
    }
    let before = rows_read(&db.pool).await;
    for seat in WARM_HOLDS..WARM_HOLDS + MEASURED_HOLDS {
        hold(&store, seat, cap).await;
    }
    let after = rows_read(&db.pool).await;
    db.drop_db().await;
    (after - before) / MEASURED_HOLDS as i64
}

#[tokio::test]
async fn a_hold_reads_a_handful_of_rows_whatever_the_event_size() {
    let per_hold = rows_read_per_hold(EVENT_SEATS, None).await;
    assert!(
        per_hold <= MAX_ROWS_READ_PER_HOLD,
        "a single-seat hold read {per_hold} rows on average (the event has {EVENT_SEATS} seats)"
    );
}

/// Postmortem (found by `examples/hold_throughput`, bookingd reading ~800
/// rows per hold): on a 1,000-seat event the generic plan of the hold's lock
/// priced ten random index reads above one scan of the small table, under
/// PostgreSQL's default `random_page_cost` of 4, and read every seat. Fix:
/// PgStore's session settings price a page read as on SSD.
#[tokio::test]
async fn a_capped_hold_on_a_small_event_reads_a_handful_of_rows() {
    const SMALL_EVENT_SEATS: usize = 1_000;
    let per_hold = rows_read_per_hold(SMALL_EVENT_SEATS, Some(MEASURED_HOLDS as u32 + WARM_HOLDS as u32)).await;
    assert!(
        per_hold <= MAX_ROWS_READ_PER_HOLD,
        "a single-seat capped hold read {per_hold} rows on average (the event has {SMALL_EVENT_SEATS} seats)"
    );
}
