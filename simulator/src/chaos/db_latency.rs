//! A slow database link, where the scenario has network faults: one
//! bookingd's link to PostgreSQL ([`test_services::link::Link`]) holds
//! every chunk the server sends for the scenario's largest message latency
//! (clamped to [`DELAY_MS`]) for 2–3 s, then answers at once again
//! (`db-latency`, `db-latency-end`). Every transaction of that instance
//! takes several round trips longer; locks are held longer, pool waits
//! grow, requests may time out. Nothing a client is told may change: the
//! tables, the ledger and the client history are judged as in every run.

use super::log::{ChaosFault, FaultLog};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;
use test_services::link::Link;
use tokio::sync::watch;

/// The delay per chunk, ms: at least enough to matter on loopback, at most
/// what keeps a transaction of a few round trips under a second.
pub const DELAY_MS: (u64, u64) = (20, 100);
/// How long the link stays slow, wall ms.
pub const SLOW_MS: (u64, u64) = (2_000, 3_000);

/// One planned slow spell.
#[derive(Debug, Clone, Copy)]
pub struct Planned {
    /// When it starts, wall ms into the window.
    pub at_ms: u64,
    /// How long it lasts, wall ms.
    pub for_ms: u64,
    /// The delay per chunk, ms.
    pub delay_ms: u64,
    /// The bookingd slot whose link it slows.
    pub slot: usize,
}

/// A spell in the middle half of a window of `window_ms`, on a seeded slot
/// of `slots` (> 0), delaying by `latency_ms` (clamped to [`DELAY_MS`]).
pub fn plan(rng: &mut ChaCha8Rng, window_ms: u64, slots: usize, latency_ms: u64) -> Planned {
    assert!(slots > 0, "a slow link needs a bookingd");
    Planned {
        at_ms: rng.random_range(window_ms / 4..3 * window_ms / 4),
        for_ms: rng.random_range(SLOW_MS.0..=SLOW_MS.1),
        delay_ms: latency_ms.clamp(DELAY_MS.0, DELAY_MS.1),
        slot: rng.random_range(0..slots),
    }
}

/// Slows `links[p.slot]` at `p.at_ms` for `p.for_ms` (ended at once when
/// `stop` comes first: the settle phase needs every instance quick).
pub async fn run(links: Arc<Vec<Link>>, p: Option<Planned>, log: Arc<FaultLog>, mut stop: watch::Receiver<bool>) {
    let Some(p) = p else { return };
    if !super::disrupt::until(&log, p.at_ms, &mut stop).await {
        return;
    }
    links[p.slot].delay_answers(p.delay_ms);
    let what = format!("bookingd {}'s PostgreSQL answers held {} ms per chunk for {} ms", p.slot, p.delay_ms, p.for_ms);
    log.record_at(ChaosFault::DbLatency, p.slot, what);
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(p.for_ms)) => {}
        _ = stop.changed() => {}
    }
    links[p.slot].delay_answers(0);
    log.record_at(
        ChaosFault::DbLatencyEnd,
        p.slot,
        format!("bookingd {}'s PostgreSQL link answers at once again", p.slot),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_spell_is_in_the_middle_half_with_a_bounded_delay() {
        for seed in 0..50 {
            let p = plan(&mut ChaCha8Rng::seed_from_u64(seed), 4_000, 2, seed * 5);
            assert!((1_000..3_000).contains(&p.at_ms) && (SLOW_MS.0..=SLOW_MS.1).contains(&p.for_ms), "{p:?}");
            assert!((DELAY_MS.0..=DELAY_MS.1).contains(&p.delay_ms) && p.slot < 2, "{p:?}");
        }
    }
}
