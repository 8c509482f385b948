//! Chaos mode's verdict: the checkers that are sound on final records judge
//! the PostgreSQL tables and the provider's ledger; the client history is
//! judged for server errors no fault explains and for spent or expired hold
//! tokens that authorized anything; the bookingd logs for the store's own
//! guards firing and for statements run inside a transaction a cancelled
//! request left open.

use super::client::{Op, Outcome};
use super::log::{ChaosFault, FaultLog};
use super::{CHAOS_CHECKERS, ChaosVerdict, FAULT_LOG_LAG_MS, FAULT_SHADOW_MS, ServerError, workload};
use booking::fake_provider::Ledger;
use booking::model::Snapshot;
use invariants::trace::Trace;
use invariants::{Config, TraceKind, Violation};

/// The checkers of [`CHAOS_CHECKERS`] over `snap` and `ledger`, judged at
/// the store's `final_store_ms` with the faults over at `faults_end_store_ms`.
pub fn records(
    snap: &Snapshot,
    ledger: &Ledger,
    final_store_ms: i64,
    faults_end_store_ms: i64,
    verdict: &mut ChaosVerdict,
) -> Result<(), String> {
    let mut trace = Trace::new(1_000_000);
    for e in crate::world::provider_host::ledger_events(ledger) {
        trace.record(final_store_ms, TraceKind::Payment(e)).map_err(|e| e.to_string())?;
    }
    // bookingd runs with its default per-user cap (the harness passes no `--max-seats-held-per-user`).
    let config = Config::new(final_store_ms, faults_end_store_ms.min(final_store_ms))
        .with_hold_cap(Some(booking::http::DEFAULT_MAX_HELD_SEATS_PER_USER));
    let violations: Vec<Violation> = invariants::checks::CHECKERS
        .iter()
        .filter(|(name, _)| CHAOS_CHECKERS.contains(name))
        .flat_map(|(_, check)| check(snap, trace.events(), &config))
        .collect();
    verdict.invariants = violations.iter().map(|v| v.invariant.as_str().to_string()).collect();
    verdict.invariants.sort();
    verdict.invariants.dedup();
    verdict.violations = violations.iter().map(|v| v.to_string()).collect();
    Ok(())
}

/// The client history `ops`: 5xx answers no fault explains (before the
/// faults ended at `faults_end_wall_ms`), requests held up by a stalled
/// seat-map cache (stalls of `cache_stalls_ms`: [`super::cache_stall`]),
/// and spent or expired hold tokens that authorized a checkout.
pub fn history(
    ops: &[Op],
    log: &FaultLog,
    faults_end_wall_ms: u64,
    cache_stalls_ms: &[u64],
    verdict: &mut ChaosVerdict,
) {
    let destructive = destructive_moments(log);
    add(verdict, super::cache_stall::judge(ops, &log.entries(), cache_stalls_ms), "client history");
    for op in ops {
        if let Outcome::Status(s) = op.outcome
            && s >= 500
        {
            // A fault is logged once applied: it may have hit a request that ended just before.
            let shadowed =
                destructive.iter().any(|&t| t <= op.end_ms + FAULT_LOG_LAG_MS && op.start_ms <= t + FAULT_SHADOW_MS);
            if s != 503 {
                verdict.server_errors.push(ServerError { op: op.clone(), why: format!("{s} is never an answer") });
            } else if !shadowed && op.end_ms <= faults_end_wall_ms {
                verdict.server_errors.push(ServerError {
                    op: op.clone(),
                    why: "503 with no crash, kill, restart, terminated backend, packet loss, database or Redis outage in the 3 s before"
                        .into(),
                });
            }
        }
    }
    let mut slow = super::db_partition::judge(ops, &log.entries());
    slow.extend(super::db_restart::judge(ops, &log.entries()));
    slow.extend(super::db_failover::judge(ops, &log.entries()));
    let slow = slow
        .into_iter()
        .map(|e| (super::db_partition::INVARIANT, format!("{} at {} ms: {}", e.op.request, e.op.end_ms, e.why)));
    add(verdict, slow.collect(), "client history");
    let granted = |op: &&Op| matches!(op.outcome, Outcome::Status(s) if (200..300).contains(&s));
    // A spent hold token (checked out or released) must never authorize a checkout.
    for op in ops.iter().filter(|o| o.client.ends_with(workload::STALE_SUFFIX)).filter(granted) {
        verdict.violations.push(format!(
            "no-stale-authority (client history): {} answered {} to {}, replaying a spent hold token at {} ms",
            op.client,
            status_of(op),
            op.request,
            op.end_ms
        ));
    }
    // An expired hold (its lifetime passed on the client's clock before the
    // checkout was sent) must never be checked out.
    let expired_checkout = |o: &&Op| o.client.ends_with(workload::EXPIRED_SUFFIX) && o.request.ends_with("/checkout");
    for op in ops.iter().filter(expired_checkout).filter(granted) {
        verdict.violations.push(format!(
            "no-stale-authority (client history): {} answered {} to {}, a checkout of a hold past its lifetime, at {} ms",
            op.client,
            status_of(op),
            op.request,
            op.end_ms
        ));
    }
    if verdict.violations.iter().any(|v| v.starts_with("no-stale-authority")) {
        verdict.invariants.push("no-stale-authority".into());
    }
    verdict.invariants.sort();
    verdict.invariants.dedup();
}

/// Adds `found` (invariant, what happened) to the verdict, each naming `source`.
pub fn add(verdict: &mut ChaosVerdict, found: Vec<(&'static str, String)>, source: &str) {
    for (invariant, what) in found {
        verdict.violations.push(format!("{invariant} ({source}): {what}"));
        verdict.invariants.push(invariant.to_string());
    }
    verdict.invariants.sort();
    verdict.invariants.dedup();
}

/// When the faults that may explain a `503` struck, wall ms.
fn destructive_moments(log: &FaultLog) -> Vec<u64> {
    log.entries()
        .iter()
        .filter(|e| {
            matches!(
                e.fault,
                ChaosFault::CrashAfterCommit
                    | ChaosFault::Kill9
                    | ChaosFault::Restart
                    | ChaosFault::PgTerminateBackends
                    | ChaosFault::RedisStop
                    | ChaosFault::RedisRestartEmpty
                    | ChaosFault::RedisRestartKept
                    | ChaosFault::RedisStall
                    | ChaosFault::DbPartition
                    | ChaosFault::DbHeal
                    | ChaosFault::PgStop
                    | ChaosFault::PgStart
                    | ChaosFault::PgFailover
                    | ChaosFault::PgPromoted
                    | ChaosFault::PacketLoss
                    | ChaosFault::PacketLossEnd
            )
        })
        .map(|e| e.at_ms)
        .collect()
}

/// The HTTP status of an answered op (0 for one without an answer).
fn status_of(op: &Op) -> u16 {
    match op.outcome {
        Outcome::Status(s) => s,
        _ => 0,
    }
}

/// The bookingd processes' `outputs`: the database's own guard fired (a
/// second confirmed booking for a seat was attempted and refused by the
/// unique index: a double sale stopped only by the last line of defence, or
/// another store assertion broke), or statements ran inside a transaction a
/// cancelled request left open (the disconnect defect).
pub fn logs(outputs: &[String], verdict: &mut ChaosVerdict) {
    for (i, out) in outputs.iter().enumerate() {
        for line in out.lines().filter(|l| l.contains("invariant violated")).take(5) {
            verdict.violations.push(format!("one-booking-per-seat (bookingd {i} log): {}", line.trim()));
        }
    }
    for (i, out) in outputs.iter().enumerate() {
        let leaked = out
            .lines()
            .filter(|l| {
                l.contains("there is already a transaction in progress") || l.contains("in a read-only transaction")
            })
            .count();
        if leaked > 0 {
            verdict.violations.push(format!(
                "cancel-safety (bookingd {i} log): {leaked} statements ran inside a transaction a cancelled request left open"
            ));
            verdict.invariants.push("cancel-safety".into());
        }
    }
    if verdict.violations.iter().any(|v| v.starts_with("one-booking-per-seat")) {
        verdict.invariants.push("one-booking-per-seat".into());
    }
    verdict.invariants.sort();
    verdict.invariants.dedup();
}
