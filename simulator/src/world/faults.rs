//! Server-side fault injection through the booking core's one fault seam
//! ([`booking::fault`]): each service host gets a [`HostFaults`] injector
//! that decides, from the run's seeded randomness, to crash the host right
//! after a store commit at the scenario's commit points (the world crashes
//! it and restarts it later), stalls the sweeper while the world says so,
//! and carries the run's planted bug.

use crate::world::recorder::Recorder;
use booking::fault::{CommitPoint, Injector, Plant};
use invariants::trace::FaultEvent;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Hosts that asked to be crashed, collected by the world's step loop.
pub type CrashRequests = Arc<Mutex<BTreeSet<String>>>;

/// The crash-after-commit fault of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct CrashFault {
    /// Probability that a commit at one of `points` is followed by a crash.
    pub probability: f64,
    /// Time until the crashed host restarts, ms.
    pub restart_after_ms: u64,
    /// The commit points where a crash may strike.
    pub points: Vec<CommitPoint>,
}

/// The fault seam's injector for one service host.
#[derive(Debug)]
pub struct HostFaults {
    host: String,
    crash: Option<CrashFault>,
    enabled: Arc<AtomicBool>,
    rng: Arc<Mutex<ChaCha8Rng>>,
    requests: CrashRequests,
    recorder: Recorder,
    sweeper_stalled: Arc<AtomicBool>,
    plant: Option<Plant>,
}

/// What every host of one world shares: the switches the step loop flips.
#[derive(Debug, Clone)]
pub struct WorldSwitches {
    /// Crashes may strike while true (the fault phase).
    pub crash_enabled: Arc<AtomicBool>,
    /// The sweepers skip their passes while true.
    pub sweeper_stalled: Arc<AtomicBool>,
    /// Hosts asking to be crashed.
    pub crash_requests: CrashRequests,
}

impl HostFaults {
    /// The injector of `host`: crashes per `crash` while `switches.crash_enabled`,
    /// with its own RNG seeded by `seed` (it outlives host restarts: see
    /// [`HostFaults::share`]); plants `plant`.
    pub fn new(
        host: String,
        crash: Option<CrashFault>,
        seed: u64,
        switches: &WorldSwitches,
        recorder: Recorder,
        plant: Option<Plant>,
    ) -> Self {
        if let Some(c) = &crash {
            assert!((0.0..=1.0).contains(&c.probability));
        }
        Self {
            host,
            crash,
            enabled: switches.crash_enabled.clone(),
            rng: Arc::new(Mutex::new(ChaCha8Rng::seed_from_u64(seed))),
            requests: switches.crash_requests.clone(),
            recorder,
            sweeper_stalled: switches.sweeper_stalled.clone(),
            plant,
        }
    }

    /// A handle sharing this one's RNG and switches (for the restarted host).
    pub fn share(&self) -> Self {
        Self {
            host: self.host.clone(),
            crash: self.crash.clone(),
            enabled: self.enabled.clone(),
            rng: self.rng.clone(),
            requests: self.requests.clone(),
            recorder: self.recorder.clone(),
            sweeper_stalled: self.sweeper_stalled.clone(),
            plant: self.plant,
        }
    }
}

impl Injector for HostFaults {
    fn crash_after(&self, point: CommitPoint) -> bool {
        let Some(crash) = &self.crash else { return false };
        if !crash.points.contains(&point) || !self.enabled.load(Ordering::SeqCst) || crash.probability == 0.0 {
            return false;
        }
        let hit = self.rng.lock().expect("rng poisoned").random_bool(crash.probability);
        if !hit {
            return false;
        }
        let first = self.requests.lock().expect("requests poisoned").insert(self.host.clone());
        if first {
            self.recorder
                .fault(FaultEvent::CrashAfterCommit, format!("{} crashes after committing at {point}", self.host));
        }
        // The committed work's answer never leaves: the host is about to be crashed.
        true
    }

    fn sweeper_stalled(&self) -> bool {
        self.sweeper_stalled.load(Ordering::SeqCst)
    }

    fn plant(&self) -> Option<Plant> {
        self.plant
    }
}
