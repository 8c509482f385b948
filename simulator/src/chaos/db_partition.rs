//! The database partition: one bookingd cut off from PostgreSQL for a while
//! (its link, [`test_services::link::Link`], resets every connection and
//! refuses new ones: a transaction whose `COMMIT` was sent may have
//! committed or not, the crash-between-commit-and-acknowledgement fault in
//! its purest form), then healed. The other instances carry on.
//!
//! Its judge ([`judge`]): once the cut-off bookingd can know the database is
//! down (its probe's detection bound after the cut), every `503` it answers
//! until the heal must arrive within [`ANSWER_BOUND_MS`]: it is answered
//! from the open circuit, without waiting for the pool.

use super::ServerError;
use super::client::{Op, Outcome};
use super::log::{ChaosFault, Entry, FaultLog};
use booking::store::circuit::OUTAGE_DETECTION_BOUND_MS;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;
use test_services::link::Link;
use tokio::sync::watch;

/// How long a partition lasts, wall ms: longer than the probe's detection
/// bound, so that the open circuit answers for a while; shorter than the
/// shadow a fault casts on the `503`s it explains.
pub const PARTITION_MS: (u64, u64) = (1_500, 2_500);

/// The longest a `503` of a bookingd that knows its database is down may
/// take, wall ms: docs/RUNNING_BOOKINGD.md's 500 ms, doubled for a chaos
/// machine's load (two cores shared by the clients, every process and PostgreSQL).
pub const ANSWER_BOUND_MS: u64 = 1_000;

/// Cuts a seeded bookingd off from PostgreSQL at each planned `(at_ms,
/// for_ms)` and heals it `for_ms` later (at once when `stop` comes first:
/// the settle phase needs every instance).
pub async fn run(
    links: Arc<Vec<Link>>,
    partitions: Vec<(u64, u64)>,
    seed: u64,
    log: Arc<FaultLog>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xDB_C07);
    for (at_ms, for_ms) in partitions {
        if !super::disrupt::until(&log, at_ms, &mut stop).await {
            return Ok(());
        }
        let slot = rng.random_range(0..links.len());
        links[slot].cut();
        log.record_at(
            ChaosFault::DbPartition,
            slot,
            format!("bookingd {slot} cut off from PostgreSQL for {for_ms} ms"),
        );
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(for_ms)) => {}
            _ = stop.changed() => {}
        }
        links[slot].restore().await.map_err(|e| format!("heal the partition: {e}"))?;
        log.record_at(ChaosFault::DbHeal, slot, format!("bookingd {slot} reaches PostgreSQL again"));
    }
    Ok(())
}

/// The `503`s of `ops` that a cut-off bookingd answered slowly although it
/// could know its database was down (see the module doc), one finding each.
pub fn judge(ops: &[Op], entries: &[Entry]) -> Vec<ServerError> {
    let mut windows = Vec::new();
    for cut in entries.iter().filter(|e| e.fault == ChaosFault::DbPartition) {
        let Some(slot) = cut.slot else { continue };
        let heal_ms = entries
            .iter()
            .find(|e| e.fault == ChaosFault::DbHeal && e.slot == Some(slot) && e.at_ms >= cut.at_ms)
            .map_or(u64::MAX, |e| e.at_ms);
        windows.push(DownWindow { slot: Some(slot), from_ms: cut.at_ms, to_ms: heal_ms });
    }
    slow_503s(ops, &windows)
}

/// A while during which a bookingd (`slot`; `None`: every one) could not
/// reach its database: from `from_ms` (the fault's log time) to `to_ms`.
#[derive(Debug, Clone, Copy)]
pub struct DownWindow {
    /// The bookingd cut off, or `None` for all (the database itself was down).
    pub slot: Option<usize>,
    /// When the fault was logged, wall ms.
    pub from_ms: u64,
    /// When it ended, wall ms (`u64::MAX`: never logged as ended).
    pub to_ms: u64,
}

/// The `503`s of `ops` inside a window, once the bookingd could know (its
/// probe's detection bound and the log's lag after the window's start),
/// that took longer than [`ANSWER_BOUND_MS`], one finding each.
pub fn slow_503s(ops: &[Op], windows: &[DownWindow]) -> Vec<ServerError> {
    let mut findings = Vec::new();
    for w in windows {
        let known_ms = w.from_ms + OUTAGE_DETECTION_BOUND_MS + super::FAULT_LOG_LAG_MS;
        let struck = |op: &&Op| w.slot.is_none_or(|s| s == op.slot);
        for op in ops.iter().filter(struck).filter(|op| op.start_ms >= known_ms && op.end_ms <= w.to_ms) {
            let took_ms = op.end_ms - op.start_ms;
            if op.outcome == Outcome::Status(503) && took_ms > ANSWER_BOUND_MS {
                let why =
                    format!("503 took {took_ms} ms while its database was known down (bound {ANSWER_BOUND_MS} ms)");
                findings.push(ServerError { op: op.clone(), why });
            }
        }
    }
    findings
}
