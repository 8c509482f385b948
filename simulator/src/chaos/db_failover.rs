//! The database failover: a run on a PostgreSQL pair of its own, a primary
//! and a synchronous standby (`synchronous_standby_names = '*'`: a commit
//! is acknowledged once the standby has it), both reached through one link
//! ([`test_services::link::Link`], as HAProxy or a cloud endpoint would be):
//! the harness's connections and every bookingd's go through it. Under
//! load the primary is stopped `-m immediate` (every connection cut; a
//! `COMMIT` in flight committed or not), the standby promoted (`pg_ctl
//! promote`) and the link pointed at it. Every bookingd must carry on
//! against the new primary without a restart, answering at once meanwhile,
//! and what a client was told was decided must be in the new primary's
//! tables ([`super::acknowledged`]).
//!
//! Scenarios with crash faults get it (their point is what survives a
//! crash), when chaos mode runs its own servers (not with `--database-url`).

use super::ServerError;
use super::client::Op;
use super::db_partition::{slow_answers, whole_outages};
use super::log::{ChaosFault, Entry, FaultLog};
use std::net::SocketAddr;
use std::sync::Arc;
use test_services::link::Link;
use test_services::own_postgres::OwnPostgres;
use tokio::sync::watch;

/// A primary, its synchronous standby and the link in front of them.
pub struct Pair {
    primary: OwnPostgres,
    standby: OwnPostgres,
    link: Link,
}

fn addr_of(pg: &OwnPostgres) -> SocketAddr {
    ([127, 0, 0, 1], pg.port()).into()
}

impl Pair {
    /// Initializes a primary, takes a synchronous standby of it and opens
    /// the link to the primary (a few seconds: `initdb`, `pg_basebackup`).
    pub async fn start() -> Result<Pair, String> {
        // initdb, pg_basebackup and pg_ctl wait for their servers: blocking
        // calls, off the async workers' turn.
        let (primary, standby) = tokio::task::block_in_place(|| {
            let primary = OwnPostgres::start()?;
            let standby = OwnPostgres::standby_of(&primary, true)?;
            Ok::<_, String>((primary, standby))
        })?;
        let link = Link::open(addr_of(&primary)).await.map_err(|e| format!("link to the primary: {e}"))?;
        Ok(Pair { primary, standby, link })
    }

    /// The maintenance database's URL, through the link: whichever server
    /// is the primary.
    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@{}/postgres", self.link.addr())
    }
}

/// Fails the pair over at `at_ms` (unless `stop` comes first): the link
/// cut, the primary stopped `-m immediate`, the standby promoted, the link
/// pointed at it and restored.
pub async fn run(
    pair: Arc<Pair>,
    at_ms: Option<u64>,
    log: Arc<FaultLog>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let Some(at_ms) = at_ms else { return Ok(()) };
    if !super::disrupt::until(&log, at_ms, &mut stop).await {
        return Ok(());
    }
    pair.link.cut();
    tokio::task::block_in_place(|| pair.primary.stop_immediate()).map_err(|e| format!("stop the primary: {e}"))?;
    log.record(ChaosFault::PgFailover, "PostgreSQL's primary stopped -m immediate; promoting its synchronous standby");
    tokio::task::block_in_place(|| pair.standby.promote()).map_err(|e| format!("promote the standby: {e}"))?;
    pair.link.redirect(addr_of(&pair.standby));
    pair.link.restore().await.map_err(|e| format!("restore the link after the failover: {e}"))?;
    log.record(ChaosFault::PgPromoted, "the promoted standby serves as the primary");
    Ok(())
}

/// The answers of `ops` that any bookingd gave slowly while the database
/// was known down (from the stop to the promotion), one finding each.
pub fn judge(ops: &[Op], entries: &[Entry]) -> Vec<ServerError> {
    let windows = whole_outages(entries, ChaosFault::PgFailover, ChaosFault::PgPromoted);
    slow_answers(ops, &windows, &super::db_partition::redis_faults(entries))
}
