//! Chaos mode's settle phase: after the users and the faults stop, wait
//! (bounded) until nothing is left open in the PostgreSQL tables.

use super::log::FaultLog;
use booking::store::{PgStore, Store};
use std::time::Duration;

/// How often the tables are asked whether anything is still open.
const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// Waits at most `settle_max` until nothing is open: nothing operators would
/// still see as unresolved (unknown or in-flight payments, refunds under
/// way), no expired hold left unreclaimed, no pending or reconciling order.
/// Returns whether it settled; a run that did not is noted in `log`.
pub async fn until_resolved(store: &PgStore, pool: &sqlx::PgPool, settle_max: Duration, log: &FaultLog) -> bool {
    let settle_until = tokio::time::Instant::now() + settle_max;
    loop {
        let open = open_records(store, pool).await;
        if open == Some(0) {
            return true;
        }
        if tokio::time::Instant::now() >= settle_until {
            let open = open.map_or("unknown".to_string(), |n| n.to_string());
            log.note(format!("not settled after {settle_max:?}: {open} open records"));
            return false;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Records still open, or `None` when the tables could not be read.
async fn open_records(store: &PgStore, pool: &sqlx::PgPool) -> Option<i64> {
    let unresolved = store.needs_resolution().await.ok().map(|r| (r.orders.len() + r.compensations.len()) as i64)?;
    let expired_holds: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM seats WHERE state = 'held' \
         AND hold_expires_at_ms < (EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000)::BIGINT",
    )
    .fetch_one(pool)
    .await
    .ok()?;
    let pending: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE status IN ('pending', 'reconciling')")
        .fetch_one(pool)
        .await
        .ok()?;
    Some(unresolved + expired_holds + pending)
}
