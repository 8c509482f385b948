//! What one world is made of: its configuration (built from a scenario by
//! [`crate::world::plan`]) and the seeds of its streams.

use crate::world::fault_params::{CacheFault, CacheFaults, LinkFault, LinkFaults};
use crate::world::faults::CrashFault;
use crate::world::room_user::RoomWorld;
use crate::world::user::UserParams;
use booking::fake_provider::ProviderFaults;
use booking::fault::Plant;
use booking::payment::workflow::WorkflowConfig;

/// Everything one run is made of. Built from a scenario (see [`crate::world::plan`]).
#[derive(Debug, Clone)]
pub struct WorldConfig {
    /// Service hosts (`svc0`, `svc1`, ...), >= 1.
    pub server_hosts: usize,
    /// Client hosts, >= 1; users are spread over them as tasks.
    pub client_hosts: usize,
    /// Virtual users.
    pub users: usize,
    /// Probers besides the users (see [`crate::world::prober`]).
    pub probers: usize,
    /// Events, each with `seats_per_event` seats.
    pub events: usize,
    /// Seats per event.
    pub seats_per_event: usize,
    /// What users do.
    pub user: UserParams,
    /// Hold lifetime.
    pub hold_ttl_ms: i64,
    /// Payment deadline after checkout.
    pub payment_ttl_ms: i64,
    /// Length of the fault phase; users start no flow after it.
    pub fault_ms: u64,
    /// Length of the settle phase (no faults) before the final check.
    pub settle_ms: u64,
    /// Crash after commit: where, how likely, and the restart delay.
    pub crash: Option<CrashFault>,
    /// Provider faults (during the fault phase).
    pub provider: ProviderFaults,
    /// Link faults: probability per simulated second that a random link is cut
    /// (partition: messages dropped) or held (messages queued, delivered on
    /// release), and for how long.
    pub link_faults: Option<LinkFaults>,
    /// Latency of every message on every link, ms (`min..=max`, `1 <= min <= max`).
    pub message_latency_ms: (u64, u64),
    /// Largest service-host clock skew, ms (each host draws one in ±skew).
    pub clock_skew_ms: i64,
    /// The planted bug, if any (see `simulator plants`).
    pub plant: Option<Plant>,
    /// The payment workflow's settings.
    pub workflow: WorkflowConfig,
    /// turmoil tick, ms.
    pub tick_ms: u64,
    /// Whether the services share a seat-map cache (as bookingd's share
    /// Redis); off, every seat-map read goes to the store.
    pub seat_map_cache: bool,
    /// Judge with these checkers only (`invariants::checks::CHECKERS` names); empty: all.
    pub checkers: Vec<String>,
    /// How long the shared cache keeps an entry, ms: bookingd's
    /// [`crate::world::build::CACHE_TTL_MS`] (`None`: until invalidated, a harness knob for
    /// proving that `stale-read-bounded` bites).
    pub seat_map_cache_ttl_ms: Option<u64>,
    /// Seat-map cache faults (down, stale, poisoned).
    pub cache_faults: Option<CacheFaults>,
    /// Pinned link faults (a capsule's `faults.network.pinned`): exactly
    /// these strike, instead of any drawn from `link_faults`.
    pub pinned_link_faults: Option<Vec<LinkFault>>,
    /// Pinned cache faults (a capsule's `faults.cache.pinned`): exactly these
    /// strike, instead of any drawn from `cache_faults`.
    pub pinned_cache_faults: Option<Vec<CacheFault>>,
    /// A waiting room in front of every event (`None`: users go straight to the seats).
    pub waiting_room: Option<RoomWorld>,
    /// The provider's faults hold only between these simulated ms (a
    /// brownout mid-sale); `None`: through the whole fault phase.
    pub provider_window_ms: Option<(u64, u64)>,
    /// The seed's fault tables as the scenario states them (swarm-drawn,
    /// muted kinds removed): what a fault kind's module reads (see
    /// [`crate::world::fault_kind`]).
    pub faults: scenarios::Faults,
}

/// A stream's seed: the run's `seed` mixed with the stream's name `salt`
/// (a host, a user, `world`, `ids`), stable across processes and platforms.
pub fn host_seed(seed: u64, salt: &str) -> u64 {
    // FNV-1a over the salt, mixed with the seed: stable across processes and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in salt.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
