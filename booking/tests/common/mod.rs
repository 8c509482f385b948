//! Test support: a fresh PostgreSQL database per test, migrated, dropped at the end.
//!
//! The server is the one `test_services::postgres_url` picks:
//! `HOLDFAST_TEST_DATABASE_URL` (a URL of its maintenance database), a
//! container where Docker runs (feature `containers`), else
//! `postgres://postgres@127.0.0.1:5432/postgres`.

#![allow(dead_code)] // each test binary uses part of this module

use booking::clock::ManualClock;
use booking::ids::{IdSource, RandomIds, SeededIds};
use booking::store::Store;
use booking::store::{MemStore, PgClock, PgStore};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;

/// The server's maintenance database URL.
pub fn admin_url() -> String {
    test_services::postgres_url()
}

/// A database of its own for one test. Call [`TestDb::drop_db`] at the end;
/// a panicking test leaves its `holdfast_test_*` database behind for inspection.
pub struct TestDb {
    /// The database's name.
    pub name: String,
    /// A pool on it (migrated).
    pub pool: PgPool,
}

impl TestDb {
    /// Creates and migrates a fresh database; `max_connections` sizes the pool.
    pub async fn create(max_connections: u32) -> TestDb {
        let name = format!("holdfast_test_{}", RandomIds.next_uuid().simple());
        let mut admin = PgConnection::connect(&admin_url()).await.expect("connect to the test server");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .expect("create test database");
        admin.close().await.expect("close admin connection");
        let opts =
            PgConnectOptions::from_str(&admin_url()).expect("valid url").database(&name).disable_statement_logging();
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(std::time::Duration::from_secs(30))
            .connect_with(opts)
            .await
            .expect("connect to the test database");
        PgStore::migrate(&pool).await.expect("migrate");
        TestDb { name, pool }
    }

    /// A store on this database with a manual clock and seeded ids.
    pub fn manual_store(&self, clock: Arc<ManualClock>, seed: u64) -> PgStore {
        PgStore::new(self.pool.clone(), PgClock::Manual(clock), Arc::new(SeededIds::new(seed)))
    }

    /// A store on this database judging time by the database's clock.
    pub fn db_clock_store(&self, seed: u64) -> PgStore {
        PgStore::new(self.pool.clone(), PgClock::Database, Arc::new(SeededIds::new(seed)))
    }

    /// Empties every table (between property-test cases).
    pub async fn truncate(&self) {
        sqlx::query(
            "TRUNCATE events, seats, holders, orders, payment_ops, bookings, compensations, outbox, idempotency_keys, \
             waiting_rooms, waiting_room_users",
        )
        .execute(&self.pool)
        .await
        .expect("truncate");
    }

    /// Empties every table with `DELETE` in one transaction: cheaper than
    /// [`TestDb::truncate`] on the small tables of one scenario.
    pub async fn clear(&self) {
        sqlx::raw_sql(
            "BEGIN; DELETE FROM bookings; DELETE FROM compensations; DELETE FROM outbox; \
             DELETE FROM idempotency_keys; DELETE FROM payment_ops; DELETE FROM seats; DELETE FROM holders; \
             DELETE FROM orders; DELETE FROM waiting_room_users; DELETE FROM waiting_rooms; DELETE FROM events; COMMIT;",
        )
        .execute(&self.pool)
        .await
        .expect("clear");
    }

    /// Closes the pool and drops the database.
    pub async fn drop_db(self) {
        self.pool.close().await;
        let mut admin = PgConnection::connect(&admin_url()).await.expect("connect to the test server");
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)))
            .execute(&mut admin)
            .await
            .expect("drop test database");
        let _ = admin.close().await;
    }
}

/// A MemStore with its own manual clock at `start_ms` and seeded ids.
pub fn mem_store(start_ms: i64, seed: u64) -> (MemStore, Arc<ManualClock>) {
    let clock = ManualClock::new(start_ms);
    (MemStore::new(clock.clone(), Arc::new(SeededIds::new(seed))), clock)
}

/// Runs `scenario` on a fresh MemStore and then on a fresh PgStore, each with
/// a manual clock at `start_ms` and ids seeded with `seed`.
pub async fn on_both<F, Fut>(start_ms: i64, seed: u64, scenario: F)
where
    F: Fn(Box<dyn Store>, Arc<ManualClock>) -> Fut,
    Fut: Future<Output = ()>,
{
    let (mem, clock) = mem_store(start_ms, seed);
    scenario(Box::new(mem), clock).await;
    let db = TestDb::create(2).await;
    let clock = ManualClock::new(start_ms);
    scenario(Box::new(db.manual_store(clock.clone(), seed)), clock).await;
    db.drop_db().await;
}
