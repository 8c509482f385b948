//! The counters of every service life in a world: each time a service host
//! starts (first, and after every crash), its [`Service`](booking::service::Service)'s
//! metrics join the list, so the run's totals survive the crashes that
//! reset each process's own. Read once the run settled, they go into the
//! trace for the auditor ([`invariants::service_counters`]).

use booking::metrics::Metrics;
use invariants::service_counters::ServiceCounters;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Most service lives one world keeps (hosts × restarts); more is a runaway crash loop.
pub const MAX_LIVES: usize = 10_000;

/// The metrics of every service life of one world, shared by its hosts.
#[derive(Debug, Clone, Default)]
pub struct ServiceLives(Arc<Mutex<Vec<Arc<Metrics>>>>);

impl ServiceLives {
    /// Adds one life's metrics (at most [`MAX_LIVES`]).
    pub fn push(&self, metrics: Arc<Metrics>) {
        let mut lives = self.0.lock().expect("service lives poisoned");
        assert!(lives.len() < MAX_LIVES, "more than {MAX_LIVES} service lives in one world");
        lives.push(metrics);
    }

    /// The counters summed over every life; `settled`: whether the run ended quiescent.
    pub fn totals(&self, settled: bool) -> ServiceCounters {
        let lives = self.0.lock().expect("service lives poisoned");
        let sum = |f: fn(&Metrics) -> &std::sync::atomic::AtomicU64| -> u64 {
            lives.iter().map(|m| f(m).load(Ordering::Relaxed)).sum()
        };
        ServiceCounters {
            holds_acquired: sum(|m| &m.holds_acquired),
            holds_refused_contention: sum(|m| &m.holds_refused_contention),
            holds_expired_unused: sum(|m| &m.holds_expired_unused),
            expiry_lag_ms_sum: sum(|m| &m.expiry_lag_ms_sum),
            checkouts_created: sum(|m| &m.checkouts_created),
            checkouts_replayed: sum(|m| &m.checkouts_replayed),
            payments_succeeded: sum(|m| &m.payments_succeeded),
            payments_failed: sum(|m| &m.payments_failed),
            payments_late_success: sum(|m| &m.payments_late_success),
            payments_released: sum(|m| &m.payments_released),
            admissions: sum(|m| &m.admissions),
            refunds_succeeded: sum(|m| &m.refunds_succeeded),
            refunds_retrying: sum(|m| &m.refunds_retrying),
            refunds_failed: sum(|m| &m.refunds_failed),
            refunds_taken_over: sum(|m| &m.refunds_taken_over),
            workflow_store_errors: sum(|m| &m.workflow_store_errors),
            settled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_sum_every_life() {
        let lives = ServiceLives::default();
        let (a, b) = (Arc::new(Metrics::default()), Arc::new(Metrics::default()));
        lives.push(a.clone());
        lives.push(b.clone());
        a.holds_acquired.fetch_add(2, Ordering::Relaxed);
        b.holds_acquired.fetch_add(3, Ordering::Relaxed);
        b.admissions.fetch_add(1, Ordering::Relaxed);
        let t = lives.totals(true);
        assert_eq!((t.holds_acquired, t.admissions, t.settled), (5, 1, true));
    }
}
