//! What a chaos run's faults will be, drawn from its seed before it starts
//! ([`disrupt::FaultPlan`]): crash points, kills, terminated backends, the
//! database's partition and restart, the payment path's partitions, slowed
//! links and packet loss where the scenario has network faults, and the
//! run's own Redis stopped and stalled in waiting-room and cache-fault runs.

use super::disrupt::{self, FaultPlan};
use super::{ChaosOptions, db_partition, db_restart, link_latency, packet_loss, provider_link};
use crate::world::plan::Plan;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A waiting-room run's Redis outage (stop, then start again empty) lasts
/// this long at least, wall ms (and until the bookingd killed during it
/// serves again); it begins in the window's second quarter.
const REDIS_DOWN_MS: (u64, u64) = (1_500, 2_500);
/// How long the seat-map cache's Redis stays down, wall ms.
const CACHE_REDIS_DOWN_MS: (u64, u64) = (500, 1_000);
/// How long the seat-map cache's Redis stalls, wall ms: long enough that a
/// request sent in its first part would wait past [`cache_stall`]'s bound
/// on a cache that waited for Redis.
const CACHE_STALL_MS: (u64, u64) = (1_800, 2_500);
/// A waiting-room run's Redis stall, wall ms: past bookingd's 2 s response
/// timeout or shorter (slow, yet answered); in the window's last quarter.
const REDIS_STALL_MS: (u64, u64) = (300, 2_500);
/// The longest Redis stall any run plans, wall ms.
pub(crate) const LONGEST_REDIS_STALL_MS: u64 =
    if REDIS_STALL_MS.1 > CACHE_STALL_MS.1 { REDIS_STALL_MS.1 } else { CACHE_STALL_MS.1 };
/// Concurrent disconnecting clients.
const DISCONNECTORS: usize = 6;

/// Whether a library scenario has faults chaos mode applies to real things:
/// crashes, network faults (the payment path's partitions), clock skew, pauses, stale tokens, provider faults.
pub fn has_real_faults(plan: &Plan, seed: u64) -> bool {
    let c = plan.world_for(seed);
    let p = &c.provider;
    let provider = p.lost_response_rate > 0.0
        || p.error_rate > 0.0
        || p.decline_rate > 0.0
        || p.late_success_rate > 0.0
        || p.refund_failure_rate > 0.0
        || p.webhook_duplicate_rate > 0.0
        || p.webhook_reorder_rate > 0.0
        || p.webhook_hold_rate > 0.0;
    c.crash.is_some()
        || c.link_faults.is_some()
        || c.clock_skew_ms > 0
        || c.cache_faults.is_some()
        || c.user.pause.is_some()
        || c.user.stale_replay.is_some()
        || provider
}

/// `n` sorted wall moments in the last three quarters of a window of `d` ms.
fn moments(rng: &mut ChaCha8Rng, d: u64, n: usize) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).map(|_| rng.random_range(d / 4..d)).collect();
    v.sort_unstable();
    v
}

/// The fault plan of `seed` for a world config.
pub(super) fn fault_plan(
    cfg: &crate::world::config::WorldConfig,
    opts: &ChaosOptions,
    rng: &mut ChaCha8Rng,
) -> FaultPlan {
    let d = opts.duration_ms.max(1_000);
    let (crash_points, crash_skip) = match &cfg.crash {
        Some(c) => {
            // About one crash per 1/p commits at the chosen points.
            let mean = (1.0 / c.probability.max(0.01)).min(200.0) as u64;
            (c.points.iter().map(|p| p.to_string()).collect(), (mean / 2, mean + mean / 2))
        }
        None => (Vec::new(), (0, 0)),
    };
    let kills = if cfg.crash.is_some() { moments(rng, d, 2) } else { Vec::new() };
    let mut plan = FaultPlan {
        crash_points,
        crash_skip,
        restart_after_ms: cfg.crash.as_ref().map(|c| c.restart_after_ms.min(500)).unwrap_or(200),
        kills_at_ms: kills,
        pg_terminations_at_ms: moments(rng, d, 2),
        redis_poison_at_ms: if opts.redis_url.is_some() { moments(rng, d, 2) } else { Vec::new() },
        disconnectors: DISCONNECTORS,
        redis_stops: Vec::new(),
        redis_stalls: Vec::new(),
        db_partitions: vec![(
            rng.random_range(d / 4..3 * d / 4),
            rng.random_range(db_partition::PARTITION_MS.0..=db_partition::PARTITION_MS.1),
        )],
        pg_restarts: Vec::new(),
        provider_links: Vec::new(),
        pg_failover_at_ms: None,
        link_latency: Vec::new(),
        packet_loss: None,
    };
    if cfg.link_faults.is_some() {
        plan.provider_links = provider_link::plan(rng, d, opts.bookingds.max(1));
        plan.link_latency = link_latency::plan(rng, d, opts.bookingds.max(1), cfg.message_latency_ms.1);
        plan.packet_loss = Some(packet_loss::plan(rng, d, opts.bookingds.max(1)));
    }
    if opts.own_pg.is_some() {
        let down_ms = rng.random_range(db_restart::DOWN_MS.0..=db_restart::DOWN_MS.1);
        // Nothing is dispatched while the database is down: with the payment
        // path's partitions, not before the one-way one has had its effect.
        let from_ms = if plan.provider_links.is_empty() { d / 4 } else { 5 * d / 8 };
        plan.pg_restarts = vec![(rng.random_range(from_ms..3 * d / 4), down_ms)];
    }
    if cfg.waiting_room.is_some() {
        let stop_at = rng.random_range(d / 4..d / 2);
        let down_ms = rng.random_range(REDIS_DOWN_MS.0..=REDIS_DOWN_MS.1);
        plan.redis_stops = vec![disrupt::RedisStop { at_ms: stop_at, down_ms, keep_data: false, kill_bookingd: true }];
        let stall_at = rng.random_range(3 * d / 4..d);
        plan.redis_stalls = vec![(stall_at, rng.random_range(REDIS_STALL_MS.0..=REDIS_STALL_MS.1))];
    } else if cfg.cache_faults.is_some() {
        // The seat-map cache's Redis: back with its data once, slow for a
        // while, empty once (short outages, so all fit a window).
        let mut stop = |from_ms: u64, to_ms: u64, keep_data: bool| disrupt::RedisStop {
            at_ms: rng.random_range(from_ms..to_ms),
            down_ms: rng.random_range(CACHE_REDIS_DOWN_MS.0..=CACHE_REDIS_DOWN_MS.1),
            keep_data,
            kill_bookingd: false,
        };
        plan.redis_stops = vec![stop(d / 8, d / 4, true), stop(5 * d / 8, 3 * d / 4, false)];
        // Between the two, while users still come: requests meet the stall.
        let stall_at = rng.random_range(d / 4..3 * d / 8);
        plan.redis_stalls = vec![(stall_at, rng.random_range(CACHE_STALL_MS.0..=CACHE_STALL_MS.1))];
    }
    plan
}

/// When a run's own primary fails over, wall ms: in the middle half of a
/// window of `duration_ms`.
pub(super) fn failover_at_ms(seed: u64, duration_ms: u64) -> u64 {
    let d = duration_ms.max(1_000);
    ChaCha8Rng::seed_from_u64(seed ^ 0xfa11).random_range(d / 4..3 * d / 4)
}
