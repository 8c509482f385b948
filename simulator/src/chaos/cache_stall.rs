//! The seat-map cache is an optimisation: while its Redis is stalled
//! (cache-fault runs, `redis-stall`), no request may wait on it longer than
//! [`WAIT_BOUND_MS`] (bookingd gives a cache call 300 ms, then reads the
//! store). A cache that waits for Redis as long as Redis takes makes every
//! read and every write as slow as the stall.
//!
//! A request is judged when it was sent while the stall had more than
//! [`WAIT_BOUND_MS`] to run, and excused when its bookingd's database went
//! down before the bound was up, or had been down until up to
//! [`DB_SHADOW_MS`] before (a restart, a failover, a partition of its
//! instance: a cold pool is slow by itself).

use super::client::Op;
use super::db_partition::{DownWindow, partitions, whole_outages};
use super::log::{ChaosFault, Entry};

/// The invariant a request held up by a stalled cache breaks.
pub const INVARIANT: &str = "cache-never-blocks";

/// The longest a request sent during a cache stall may take, wall ms: two
/// cache calls' 300 ms (the read and the refill, or the invalidation) and
/// the store's answer, with room for a chaos machine's load.
pub const WAIT_BOUND_MS: u64 = 1_200;

/// How long after the database came back a request may still be slow for
/// its sake, wall ms (pools reconnecting).
pub const DB_SHADOW_MS: u64 = 1_000;

/// How long before its log entry a stall began, wall ms (the harness sends
/// `DEBUG SLEEP`, waits this long, then logs it).
const LOGGED_AFTER_MS: u64 = 20;

/// The lengths of the cache's Redis stalls in a run of `cfg` with `faults`,
/// in the order they strike: none unless the stalled Redis is the cache's
/// (a cache-fault run; a waiting-room run stalls its rooms' Redis).
pub fn lengths_ms(cfg: &crate::world::config::WorldConfig, faults: &super::disrupt::FaultPlan) -> Vec<u64> {
    if cfg.cache_faults.is_none() || cfg.waiting_room.is_some() {
        return Vec::new();
    }
    let mut stalls = faults.redis_stalls.clone();
    stalls.sort_unstable();
    stalls.into_iter().map(|(_, ms)| ms).collect()
}

/// The requests of `ops` that a stall of the cache's Redis held up: each
/// `stalls_ms[k]` is the length of the stall logged k-th in `entries` (none
/// where the run's stalled Redis is not the cache's).
pub fn judge(ops: &[Op], entries: &[Entry], stalls_ms: &[u64]) -> Vec<(&'static str, String)> {
    let stalls = entries.iter().filter(|e| e.fault == ChaosFault::RedisStall).zip(stalls_ms);
    let mut db_down = partitions(entries);
    db_down.extend(whole_outages(entries, ChaosFault::PgStop, ChaosFault::PgStart));
    db_down.extend(whole_outages(entries, ChaosFault::PgFailover, ChaosFault::PgPromoted));
    let mut found = Vec::new();
    for (entry, &stall_ms) in stalls {
        let from_ms = entry.at_ms.saturating_sub(LOGGED_AFTER_MS);
        let judged_until_ms = (from_ms + stall_ms).saturating_sub(WAIT_BOUND_MS);
        let shadowed = |op: &Op| db_down.iter().any(|w| struck(w, op));
        for op in ops.iter().filter(|op| (from_ms..judged_until_ms).contains(&op.start_ms)) {
            let took_ms = op.end_ms - op.start_ms;
            if took_ms > WAIT_BOUND_MS && !shadowed(op) {
                found.push((
                    INVARIANT,
                    format!(
                        "{} waited {took_ms} ms for {} ({:?}) from bookingd {}, sent {} ms into a {stall_ms} ms cache stall (bound {WAIT_BOUND_MS} ms)",
                        op.client,
                        op.request,
                        op.outcome,
                        op.slot,
                        op.start_ms - from_ms
                    ),
                ));
            }
        }
    }
    found
}

/// Whether `op` met its database down in `w` before it should have been
/// answered, or was sent within [`DB_SHADOW_MS`] after.
fn struck(w: &DownWindow, op: &Op) -> bool {
    let before_bound = w.from_ms <= op.start_ms + WAIT_BOUND_MS;
    w.slot.is_none_or(|s| s == op.slot) && before_bound && op.start_ms <= w.to_ms.saturating_add(DB_SHADOW_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stall_at(at_ms: u64) -> Entry {
        Entry { at_ms, fault: ChaosFault::RedisStall, slot: None, detail: String::new() }
    }

    fn read(start_ms: u64, end_ms: u64) -> Op {
        Op::answered("user1", "GET /v1/events/ev/seats", (start_ms, end_ms), 200, None)
    }

    #[test]
    fn a_read_held_up_by_the_stall_is_found_and_a_quick_one_is_not() {
        let entries = [stall_at(1_020)];
        let found = judge(&[read(1_100, 3_000), read(1_200, 1_500)], &entries, &[2_500]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1.contains("waited 1900 ms"), "{found:?}");
    }

    #[test]
    fn late_sends_excused_requests_and_other_redis_stalls_are_not_judged() {
        let entries = [stall_at(1_020)];
        // Sent with less than the bound left of the stall: it may wait that long.
        assert!(judge(&[read(2_400, 4_000)], &entries, &[2_500]).is_empty());
        // A database restart just before explains a slow answer.
        let restarted = [
            Entry { at_ms: 100, fault: ChaosFault::PgStop, slot: None, detail: String::new() },
            Entry { at_ms: 900, fault: ChaosFault::PgStart, slot: None, detail: String::new() },
            stall_at(1_020),
        ];
        assert!(judge(&[read(1_100, 3_000)], &restarted, &[2_500]).is_empty());
        // No stall lengths: the stalled Redis was not the cache's.
        assert!(judge(&[read(1_100, 3_000)], &entries, &[]).is_empty());
    }
}
