//! Simulated clocks. The store's clock is the simulation's global time plus a
//! fixed epoch; a service host's clock may be skewed from it (the store's
//! clock still decides expiry). Neither reads the OS clock.

use booking::clock::Clock;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// The fixed epoch every simulation starts at: 2026-01-01T00:00:00Z, in ms.
pub const EPOCH_MS: i64 = 1_767_225_600_000;

/// The simulation's global time plus `skew_ms`. Read outside a simulated host
/// (after the run, by the checkers) it returns its last reading inside one.
#[derive(Debug, Clone, Default)]
pub struct SimClock {
    skew_ms: i64,
    last_ms: Arc<AtomicI64>,
}

impl SimClock {
    /// A clock `skew_ms` ahead of (negative: behind) the simulation's time.
    pub fn new(skew_ms: i64) -> Self {
        Self { skew_ms, last_ms: Arc::new(AtomicI64::new(EPOCH_MS + skew_ms)) }
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> i64 {
        match turmoil::sim_elapsed() {
            Some(elapsed) => {
                let now = EPOCH_MS + i64::try_from(elapsed.as_millis()).expect("fits") + self.skew_ms;
                self.last_ms.fetch_max(now, Ordering::SeqCst);
                now
            }
            None => self.last_ms.load(Ordering::SeqCst),
        }
    }
}
