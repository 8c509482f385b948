//! Chaos mode's verdict: the checkers that are sound on final records judge
//! the PostgreSQL tables and the provider's ledger; the client history is
//! judged for server errors no fault explains and for spent or expired hold
//! tokens that authorized anything; the bookingd logs for the store's own
//! guards firing and for statements run inside a transaction a cancelled
//! request left open.

use super::client::{Op, Outcome};
use super::fault_plan::LONGEST_REDIS_STALL_MS;
use super::log::{ChaosFault, Entry, FaultLog};
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
    let destructive = destructive_moments(&log.entries());
    add(verdict, super::cache_stall::judge(ops, &log.entries(), cache_stalls_ms), "client history");
    for op in ops {
        if let Outcome::Status(s) = op.outcome
            && s >= 500
        {
            let shadowed = shadowed(op, &destructive);
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

/// When the faults that may explain a `503` struck, wall ms. A Redis stall
/// is logged as it begins and counts until the longest one would have ended:
/// a bookingd whose first connection to Redis met the stall is refused for
/// its reconnect interval after it.
fn destructive_moments(entries: &[Entry]) -> Vec<u64> {
    let mut moments = Vec::new();
    for e in entries {
        match e.fault {
            ChaosFault::CrashAfterCommit
            | ChaosFault::Kill9
            | ChaosFault::Restart
            | ChaosFault::PgTerminateBackends
            | ChaosFault::RedisStop
            | ChaosFault::RedisRestartEmpty
            | ChaosFault::RedisRestartKept
            | ChaosFault::DbPartition
            | ChaosFault::DbHeal
            | ChaosFault::PgStop
            | ChaosFault::PgStart
            | ChaosFault::PgFailover
            | ChaosFault::PgPromoted
            | ChaosFault::PacketLoss
            | ChaosFault::PacketLossEnd => moments.push(e.at_ms),
            ChaosFault::RedisStall => moments.extend([e.at_ms, e.at_ms + LONGEST_REDIS_STALL_MS]),
            ChaosFault::Disconnect
            | ChaosFault::RedisPoison
            | ChaosFault::DbLatency
            | ChaosFault::ProviderLatency
            | ChaosFault::LatencyEnd
            | ChaosFault::ProviderCut
            | ChaosFault::ProviderOneWay
            | ChaosFault::WebhookAnswersLost
            | ChaosFault::LinkHeal
            | ChaosFault::ClockSkew
            | ChaosFault::ClientPause
            | ChaosFault::StaleReplay
            | ChaosFault::Note => {}
        }
    }
    moments
}

/// Whether `op` overlaps the shadow of one of the `destructive` moments. A
/// fault is logged once applied: it may have hit a request that ended just before.
fn shadowed(op: &Op, destructive: &[u64]) -> bool {
    destructive.iter().any(|&t| t <= op.end_ms + FAULT_LOG_LAG_MS && op.start_ms <= t + FAULT_SHADOW_MS)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(at_ms: u64, fault: ChaosFault) -> Entry {
        Entry { at_ms, fault, slot: None, detail: String::new() }
    }

    fn op(start_ms: u64, end_ms: u64) -> Op {
        Op {
            client: "user1".into(),
            request: "GET /v1/events/e/queue".into(),
            slot: 1,
            start_ms,
            end_ms,
            outcome: Outcome::Status(503),
            problem: None,
            detail: None,
        }
    }

    /// A bookingd restarted while Redis was down first connected during the
    /// stall that followed Redis's return, and was refused for its reconnect
    /// interval after the stall ended: more than the shadow after the stall began.
    #[test]
    fn a_stall_shadows_from_its_latest_end() {
        let moments = destructive_moments(&[entry(9_195, ChaosFault::RedisStall)]);
        assert!(shadowed(&op(12_500, 12_510), &moments));
        assert!(shadowed(&op(9_195 + LONGEST_REDIS_STALL_MS + FAULT_SHADOW_MS - 1, 14_700), &moments));
        assert!(!shadowed(&op(9_195 + LONGEST_REDIS_STALL_MS + FAULT_SHADOW_MS + 1, 14_700), &moments));
        assert!(!shadowed(&op(1_000, 8_000), &moments), "a 503 answered before the stall began");
    }

    #[test]
    fn faults_that_break_nothing_shadow_nothing() {
        let entries: Vec<Entry> =
            [ChaosFault::Disconnect, ChaosFault::RedisPoison, ChaosFault::ClockSkew, ChaosFault::Note]
                .into_iter()
                .map(|f| entry(1_000, f))
                .collect();
        assert!(destructive_moments(&entries).is_empty());
        assert_eq!(destructive_moments(&[entry(1_000, ChaosFault::Kill9)]), vec![1_000]);
    }
}
