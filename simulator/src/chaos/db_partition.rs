//! The database partition: one bookingd cut off from PostgreSQL for a while
//! (its link, [`test_services::link::Link`], resets every connection and
//! refuses new ones: a transaction whose `COMMIT` was sent may have
//! committed or not, the crash-between-commit-and-acknowledgement fault in
//! its purest form), then healed. The other instances carry on.
//!
//! Its judge ([`judge`]): once the cut-off bookingd can know the database is
//! down (its probe's detection bound after the cut), no request to it may
//! wait longer than [`ANSWER_BOUND_MS`] until the heal: it is answered from
//! the open circuit (a `503`) or the cache, without waiting for the pool.

use super::ServerError;
use super::client::Op;
use super::log::{ChaosFault, Entry, FaultLog};
use booking::store::circuit::OUTAGE_DETECTION_BOUND_MS;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;
use test_services::link::Link;
use tokio::sync::watch;

/// The invariant a slow `503` while the database is known down breaks
/// (docs/RUNNING_BOOKINGD.md's bound).
pub const INVARIANT: &str = "outage-answered-fast";

/// How long a partition lasts, wall ms: longer than the probe's detection
/// bound, so that the open circuit answers for a while; shorter than the
/// shadow a fault casts on the `503`s it explains.
pub const PARTITION_MS: (u64, u64) = (2_000, 3_000);

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
    slow_answers(ops, &partitions(entries), &redis_faults(entries))
}

/// The partitions of `entries`: from each `db-partition` to its slot's
/// next `db-heal` (never healed: `u64::MAX`).
pub fn partitions(entries: &[Entry]) -> Vec<DownWindow> {
    let mut windows = Vec::new();
    for cut in entries.iter().filter(|e| e.fault == ChaosFault::DbPartition) {
        let Some(slot) = cut.slot else { continue };
        let heal_ms = entries
            .iter()
            .find(|e| e.fault == ChaosFault::DbHeal && e.slot == Some(slot) && e.at_ms >= cut.at_ms)
            .map_or(u64::MAX, |e| e.at_ms);
        windows.push(DownWindow { slot: Some(slot), from_ms: cut.at_ms, to_ms: heal_ms });
    }
    windows
}

/// How long bookingd waits for a Redis answer before it gives up, wall ms
/// (its response timeout): a request may wait this long on a stalled or
/// vanished Redis, which the judge does not blame on the database.
const REDIS_WAIT_MS: u64 = 2_000;

/// When Redis itself was down or stalled (waiting-room runs), widened by
/// what a request may wait on it: answers overlapping these may be slow for
/// Redis's sake (docs/WAITING_ROOM.md), whatever the database does.
pub fn redis_faults(entries: &[Entry]) -> Vec<(u64, u64)> {
    let mut spans = Vec::new();
    for e in entries {
        match e.fault {
            ChaosFault::RedisStop => {
                let back = entries.iter().find(|b| {
                    matches!(b.fault, ChaosFault::RedisRestartEmpty | ChaosFault::RedisRestartKept)
                        && b.at_ms >= e.at_ms
                });
                spans.push((e.at_ms, back.map_or(u64::MAX, |b| b.at_ms.saturating_add(REDIS_WAIT_MS))));
            }
            // Logged when DEBUG SLEEP was sent or answered: either side of the entry.
            ChaosFault::RedisStall => spans.push((
                e.at_ms.saturating_sub(super::fault_plan::LONGEST_REDIS_STALL_MS),
                e.at_ms + super::fault_plan::LONGEST_REDIS_STALL_MS + REDIS_WAIT_MS,
            )),
            _ => {}
        }
    }
    spans
}

/// The windows during which the whole database was down, from each `down`
/// entry to the next `up` one (never ended: `u64::MAX`): a restart's or a
/// failover's.
pub fn whole_outages(entries: &[Entry], down: ChaosFault, up: ChaosFault) -> Vec<DownWindow> {
    let mut windows = Vec::new();
    for d in entries.iter().filter(|e| e.fault == down) {
        let up_ms = entries.iter().find(|e| e.fault == up && e.at_ms >= d.at_ms).map_or(u64::MAX, |e| e.at_ms);
        windows.push(DownWindow { slot: None, from_ms: d.at_ms, to_ms: up_ms });
    }
    windows
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

/// The answers of `ops` (but those overlapping an `excused` span, Redis's
/// faults) that waited longer than [`ANSWER_BOUND_MS`] inside
/// a window once the bookingd could know its database was down (its probe's
/// detection bound after the window's start; the fault struck before its log
/// entry, so that is late enough), one finding each. Once it is known,
/// every request must be answered within the bound whatever the answer (a
/// `503` from the open circuit, a seat map from the cache), and a request
/// already waiting for a connection must stop waiting; one that spent
/// longer in the window waited for the database that was known down.
pub fn slow_answers(ops: &[Op], windows: &[DownWindow], excused: &[(u64, u64)]) -> Vec<ServerError> {
    let mut findings = Vec::new();
    for w in windows {
        let known_ms = w.from_ms + OUTAGE_DETECTION_BOUND_MS;
        let struck = |op: &&Op| w.slot.is_none_or(|s| s == op.slot);
        let waited_on_redis = |op: &&Op| excused.iter().any(|&(a, b)| op.start_ms <= b && op.end_ms >= a);
        for op in ops.iter().filter(struck).filter(|op| !waited_on_redis(op)) {
            let waited_ms = op.end_ms.min(w.to_ms).saturating_sub(op.start_ms.max(known_ms));
            if waited_ms > ANSWER_BOUND_MS {
                let why = format!(
                    "{:?} after {} ms, {waited_ms} of them while its database was known down (bound {ANSWER_BOUND_MS} ms)",
                    op.outcome,
                    op.end_ms - op.start_ms
                );
                findings.push(ServerError { op: op.clone(), why });
            }
        }
    }
    findings
}
