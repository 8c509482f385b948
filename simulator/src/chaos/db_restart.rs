//! The database restart: the run's own PostgreSQL stopped `-m immediate`
//! under load (every connection cut, nothing shut down gracefully: a
//! server crash; transactions whose `COMMIT` was in flight committed or
//! not) and started again a moment later. Every bookingd's link to it is
//! cut meanwhile, so connecting is refused as by a stopped server on the
//! bookingd's own host (through the link alone it would be accepted, then
//! reset). Every bookingd must answer at once meanwhile and carry on
//! without a restart; what a client was told was decided must still be
//! decided ([`super::acknowledged`]).
//!
//! Runs only against a server the run owns
//! ([`test_services::own_postgres::OwnPostgres`]): chaos mode starts one
//! unless it is pointed at a server of the caller's (`--database-url`).
//!
//! Its judge ([`judge`]) is the partition's ([`super::db_partition::slow_answers`])
//! over every bookingd: from the stop plus the probe's detection bound until
//! the start, no request may wait longer than the bound.

use super::ServerError;
use super::client::Op;
use super::db_partition::{slow_answers, whole_outages};
use super::log::{ChaosFault, Entry, FaultLog};
use std::sync::Arc;
use std::time::Duration;
use test_services::link::Link;
use test_services::own_postgres::OwnPostgres;
use tokio::sync::watch;

/// How long the server stays down, wall ms: past the probe's detection
/// bound, so the open circuit answers for a while; inside the 5 s a
/// bookingd started meanwhile waits for its database.
pub const DOWN_MS: (u64, u64) = (2_000, 3_000);

/// Stops `pg` at each planned `(at_ms, for_ms)` and starts it `for_ms`
/// later (at once when `stop` comes first: the settle phase needs it).
pub async fn run(
    pg: Arc<OwnPostgres>,
    links: Arc<Vec<Link>>,
    restarts: Vec<(u64, u64)>,
    log: Arc<FaultLog>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    for (at_ms, for_ms) in restarts {
        if !super::disrupt::until(&log, at_ms, &mut stop).await {
            return Ok(());
        }
        links.iter().for_each(Link::cut);
        // pg_ctl waits for the server: a blocking call, off the async workers' turn.
        tokio::task::block_in_place(|| pg.stop_immediate()).map_err(|e| format!("stop PostgreSQL: {e}"))?;
        log.record(ChaosFault::PgStop, format!("PostgreSQL stopped -m immediate for {for_ms} ms"));
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(for_ms)) => {}
            _ = stop.changed() => {}
        }
        tokio::task::block_in_place(|| pg.resume()).map_err(|e| format!("start PostgreSQL: {e}"))?;
        for link in links.iter() {
            link.restore().await.map_err(|e| format!("restore a link after the restart: {e}"))?;
        }
        log.record(ChaosFault::PgStart, "PostgreSQL accepts connections again");
    }
    Ok(())
}

/// The `503`s of `ops` that any bookingd answered slowly while the server
/// was known down, one finding each.
pub fn judge(ops: &[Op], entries: &[Entry]) -> Vec<ServerError> {
    let windows = whole_outages(entries, ChaosFault::PgStop, ChaosFault::PgStart);
    slow_answers(ops, &windows, &super::db_partition::redis_faults(entries))
}
