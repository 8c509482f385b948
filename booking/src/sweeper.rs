//! The hold sweeper: returns expired holds to `available` so the seat map
//! shows the truth, and counts them as abandoned with their expiry lag.
//! Ownership never depends on it (a hold attempt takes over an expired hold
//! inline): a stalled sweeper makes the map look full, nothing worse.

use crate::metrics::Metrics;
use crate::store::{ExpiredHold, Store, StoreError};

/// Sweeper tunables.
#[derive(Debug, Clone)]
pub struct SweeperConfig {
    /// Pause between passes.
    pub interval_ms: u64,
    /// Seats reclaimed per pass at most.
    pub batch_seats: u32,
    /// Passes per tick at most when a pass fills its batch (bounds one tick's work).
    pub max_passes_per_tick: u32,
}

impl Default for SweeperConfig {
    fn default() -> Self {
        Self { interval_ms: 1_000, batch_seats: 500, max_passes_per_tick: 10 }
    }
}

/// Runs one tick: sweeps until a pass reclaims less than a batch, at most
/// `max_passes_per_tick` passes. Returns every reclaimed hold.
pub async fn sweep_tick(
    store: &dyn Store,
    metrics: &Metrics,
    cfg: &SweeperConfig,
) -> Result<Vec<ExpiredHold>, StoreError> {
    let mut all = Vec::new();
    for _ in 0..cfg.max_passes_per_tick {
        let swept = store.sweep_expired_holds(cfg.batch_seats).await?;
        for h in &swept {
            metrics.hold_expired(h.reclaimed_at_ms - h.expired_at_ms);
        }
        let full = swept.len() as u32 >= cfg.batch_seats;
        all.extend(swept);
        if !full {
            break;
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::ids::SeededIds;
    use crate::model::SeatId;
    use crate::store::{AcquireHold, CreateEvent, MemStore};
    use std::sync::Arc;

    #[tokio::test]
    async fn sweeps_expired_holds_in_bounded_passes_and_counts_lag() {
        let clock = ManualClock::new(10_000);
        let store = MemStore::new(clock.clone(), Arc::new(SeededIds::new(1)));
        let seats: Vec<SeatId> = (0..7).map(|i| SeatId::from(format!("s{i}"))).collect();
        store
            .create_event(&CreateEvent { event_id: "e".into(), seat_ids: seats.clone(), price_cents: 1 })
            .await
            .unwrap();
        for s in &seats {
            store
                .acquire_hold(&AcquireHold {
                    event_id: "e".into(),
                    seat_ids: vec![s.clone()],
                    holder_id: "u".into(),
                    ttl_ms: 1_000,
                    max_held_seats: None,
                })
                .await
                .unwrap();
        }
        let metrics = Metrics::default();
        let cfg = SweeperConfig { interval_ms: 1, batch_seats: 3, max_passes_per_tick: 2 };
        assert!(sweep_tick(&store, &metrics, &cfg).await.unwrap().is_empty(), "nothing expired yet");
        clock.advance_ms(1_500);
        let swept = sweep_tick(&store, &metrics, &cfg).await.unwrap();
        assert_eq!(swept.len(), 6, "two full passes of three, then the tick stops");
        assert!(swept.iter().all(|h| h.reclaimed_at_ms - h.expired_at_ms == 500));
        assert_eq!(sweep_tick(&store, &metrics, &cfg).await.unwrap().len(), 1);
        assert_eq!(metrics.holds_expired_unused.load(std::sync::atomic::Ordering::Relaxed), 7);
        assert_eq!(metrics.expiry_lag_ms_max.load(std::sync::atomic::Ordering::Relaxed), 500);
    }
}
