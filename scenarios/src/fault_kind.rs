//! The fault kinds a scenario can configure, each a table under `faults`
//! that swarm testing switches on or off per seed.

use crate::model::Faults;
use serde::{Deserialize, Serialize};

/// The faults a scenario can configure, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// `faults.paused_client`.
    PausedClient,
    /// `faults.stale_token`.
    StaleToken,
    /// `faults.delayed_callback`.
    DelayedCallback,
    /// `faults.crash_after_commit`.
    CrashAfterCommit,
    /// `faults.provider`.
    Provider,
    /// `faults.network`.
    Network,
    /// `faults.clock_skew`.
    ClockSkew,
    /// `faults.sweeper_stall`.
    SweeperStall,
    /// `faults.cache`.
    Cache,
    /// `faults.store_outage`.
    StoreOutage,
    /// `faults.rooms_lost`.
    RoomsLost,
}

impl FaultKind {
    /// Every kind, in file order.
    pub const ALL: &'static [FaultKind] = &[
        FaultKind::PausedClient,
        FaultKind::StaleToken,
        FaultKind::DelayedCallback,
        FaultKind::CrashAfterCommit,
        FaultKind::Provider,
        FaultKind::Network,
        FaultKind::ClockSkew,
        FaultKind::SweeperStall,
        FaultKind::Cache,
        FaultKind::StoreOutage,
        FaultKind::RoomsLost,
    ];

    /// The table name under `faults`.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::PausedClient => "paused_client",
            FaultKind::StaleToken => "stale_token",
            FaultKind::DelayedCallback => "delayed_callback",
            FaultKind::CrashAfterCommit => "crash_after_commit",
            FaultKind::Provider => "provider",
            FaultKind::Network => "network",
            FaultKind::ClockSkew => "clock_skew",
            FaultKind::SweeperStall => "sweeper_stall",
            FaultKind::Cache => "cache",
            FaultKind::StoreOutage => "store_outage",
            FaultKind::RoomsLost => "rooms_lost",
        }
    }

    /// Parses a table name under `faults`.
    pub fn parse(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.iter().copied().find(|k| k.as_str() == name)
    }
}

impl Faults {
    /// Whether the fault of `kind` is configured. Every field is named here:
    /// a fault table without a kind fails to compile.
    pub fn has(&self, kind: FaultKind) -> bool {
        let Faults {
            paused_client,
            stale_token,
            delayed_callback,
            crash_after_commit,
            provider,
            network,
            clock_skew,
            sweeper_stall,
            store_outage,
            rooms_lost,
            cache,
        } = self;
        match kind {
            FaultKind::PausedClient => paused_client.is_some(),
            FaultKind::StaleToken => stale_token.is_some(),
            FaultKind::DelayedCallback => delayed_callback.is_some(),
            FaultKind::CrashAfterCommit => crash_after_commit.is_some(),
            FaultKind::Provider => provider.is_some(),
            FaultKind::Network => network.is_some(),
            FaultKind::ClockSkew => clock_skew.is_some(),
            FaultKind::SweeperStall => sweeper_stall.is_some(),
            FaultKind::Cache => cache.is_some(),
            FaultKind::StoreOutage => store_outage.is_some(),
            FaultKind::RoomsLost => rooms_lost.is_some(),
        }
    }

    /// Switches the fault of `kind` off.
    pub fn remove(&mut self, kind: FaultKind) {
        match kind {
            FaultKind::PausedClient => self.paused_client = None,
            FaultKind::StaleToken => self.stale_token = None,
            FaultKind::DelayedCallback => self.delayed_callback = None,
            FaultKind::CrashAfterCommit => self.crash_after_commit = None,
            FaultKind::Provider => self.provider = None,
            FaultKind::Network => self.network = None,
            FaultKind::ClockSkew => self.clock_skew = None,
            FaultKind::SweeperStall => self.sweeper_stall = None,
            FaultKind::Cache => self.cache = None,
            FaultKind::StoreOutage => self.store_outage = None,
            FaultKind::RoomsLost => self.rooms_lost = None,
        }
    }

    /// The configured kinds, in file order.
    pub fn kinds(&self) -> Vec<FaultKind> {
        FaultKind::ALL.iter().copied().filter(|k| self.has(*k)).collect()
    }
}
