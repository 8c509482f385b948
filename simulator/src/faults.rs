//! Server-side fault injection: the crash between a store commit and the
//! client's answer. A service host's [`CrashHooks`] decides, from the run's
//! seeded randomness, to swallow a committed answer and ask the world to
//! crash the host; the world crashes it and restarts it later.

use crate::recorder::Recorder;
use async_trait::async_trait;
use booking::http::{CommitPoint, FaultHooks};
use invariants::trace::FaultKind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Hosts that asked to be crashed, collected by the world's step loop.
pub type CrashRequests = Arc<Mutex<BTreeSet<String>>>;

/// Crash-after-commit hooks for one service host.
#[derive(Debug)]
pub struct CrashHooks {
    host: String,
    probability: f64,
    enabled: Arc<AtomicBool>,
    rng: Arc<Mutex<ChaCha8Rng>>,
    requests: CrashRequests,
    recorder: Recorder,
}

impl CrashHooks {
    /// Hooks for `host` crashing after a checkout commit with `probability`
    /// while `enabled` is true. The RNG outlives host restarts.
    pub fn new(
        host: String,
        probability: f64,
        seed: u64,
        enabled: Arc<AtomicBool>,
        requests: CrashRequests,
        recorder: Recorder,
    ) -> Self {
        assert!((0.0..=1.0).contains(&probability));
        Self {
            host,
            probability,
            enabled,
            rng: Arc::new(Mutex::new(ChaCha8Rng::seed_from_u64(seed))),
            requests,
            recorder,
        }
    }

    /// A handle sharing this one's RNG and switches (for the restarted host).
    pub fn share(&self) -> Self {
        Self {
            host: self.host.clone(),
            probability: self.probability,
            enabled: self.enabled.clone(),
            rng: self.rng.clone(),
            requests: self.requests.clone(),
            recorder: self.recorder.clone(),
        }
    }
}

#[async_trait]
impl FaultHooks for CrashHooks {
    async fn after_commit(&self, point: CommitPoint) {
        if point != CommitPoint::Checkout || !self.enabled.load(Ordering::SeqCst) || self.probability == 0.0 {
            return;
        }
        let hit = self.rng.lock().expect("rng poisoned").random_bool(self.probability);
        if !hit {
            return;
        }
        let first = self.requests.lock().expect("requests poisoned").insert(self.host.clone());
        if first {
            self.recorder
                .fault(FaultKind::CrashAfterCommit, format!("{} crashes after committing a checkout", self.host));
        }
        // The committed answer never leaves: the host is about to be crashed.
        std::future::pending::<()>().await;
    }
}
