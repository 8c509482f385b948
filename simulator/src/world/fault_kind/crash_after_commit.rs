//! Crash after commit, the world's side: a host's injector
//! ([`crate::world::faults::HostFaults`]) decided at a commit that its answer is
//! lost and asked to be crashed; this nemesis crashes it at the next step and
//! restarts it `restart_after_ms` later.

use super::Strike;
use crate::world::faults::WorldSwitches;
use crate::world::nemesis::{Nemesis, Stage};
use invariants::trace::FaultEvent;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// Restart delay when a crash was asked for without a crash fault configured, ms.
const DEFAULT_RESTART_AFTER_MS: u64 = 1_000;

/// Crashes the hosts that asked for it and restarts them later.
pub struct CrashNemesis {
    switches: WorldSwitches,
    restart_after_ms: u64,
    /// Hosts down, by the simulated ms they restart at.
    restarts: BTreeMap<u64, Vec<String>>,
}

impl CrashNemesis {
    /// The nemesis of a world whose hosts share `switches`; crashed hosts
    /// restart after `restart_after_ms` (the scenario's, if it has the fault).
    pub fn new(switches: WorldSwitches, restart_after_ms: Option<u64>) -> Self {
        Self {
            switches,
            restart_after_ms: restart_after_ms.unwrap_or(DEFAULT_RESTART_AFTER_MS),
            restarts: BTreeMap::new(),
        }
    }

    /// Crashed hosts not restarted yet.
    pub fn hosts_down(&self) -> usize {
        self.restarts.values().map(Vec::len).sum()
    }
}

impl Nemesis for CrashNemesis {
    fn act(&mut self, stage: &mut Stage<'_, '_>) {
        let requested: Vec<String> =
            std::mem::take(&mut *self.switches.crash_requests.lock().expect("poisoned")).into_iter().collect();
        for host in requested {
            stage.sim.crash(host.as_str());
            self.restarts.entry(stage.now_ms + self.restart_after_ms).or_default().push(host);
        }
        let due: Vec<u64> = self.restarts.range(..=stage.now_ms).map(|(k, _)| *k).collect();
        for k in due {
            for host in self.restarts.remove(&k).unwrap_or_default() {
                stage.sim.bounce(host.as_str());
                stage.recorder.fault_at(stage.now_ms as i64, FaultEvent::HostRestarted, format!("{host} restarted"));
            }
        }
    }

    /// No commit crashes its host after the fault phase (restarts still happen).
    fn end_faults(&mut self) {
        self.switches.crash_enabled.store(false, Ordering::SeqCst);
    }
}

/// `faults.crash_after_commit`'s part in a world: its [`CrashNemesis`] acts
/// before every other nemesis (the world asks it which hosts are down), so
/// [`crate::world::nemesis::Nemeses`] builds it itself; a crash is decided
/// at each commit by the host's injector ([`crate::world::faults`]).
impl Strike for scenarios::CrashAfterCommit {}
