//! One seeded run, as a story: draw the fault schedule from the seed
//! ([`crate::schedule`]); build the world ([`crate::build`]: service hosts
//! running the real bookingd router, workflow and sweeper over a shared
//! MemStore, a provider host running the real fake provider, client hosts
//! running many virtual users as tasks); step it through the fault phase
//! with one nemesis per fault kind acting on it ([`crate::nemesis`],
//! [`crate::step`]); settle (the phase ends at its bound or once the world is
//! quiescent, see [`crate::quiescence`]); check the invariants on the store's
//! final records and the trace ([`crate::check`]).

use crate::build;
use crate::check::{self, Stepped};
use crate::faults::CrashFault;
use crate::nemesis::{CacheNemesis, CrashNemesis, LinkNemesis, Nemeses, OutageNemesis, RoomsNemesis, StallNemesis};
use crate::provider_host::ProviderFaults;
use crate::schedule::{self, FaultSchedule, LinkFaults, SweeperStall};
use crate::step;
use crate::user::UserParams;
use booking::fault::Plant;
use booking::payment::workflow::WorkflowConfig;
use invariants::Violation;
use invariants::trace::TraceEvent;

pub use crate::build::SELF_TEST_PANIC_VAR;

/// The service port on every service host.
pub const SERVICE_PORT: u16 = 8080;
/// Shared secrets of the simulated deployment.
pub const TOKEN_SECRET: &[u8] = b"holdfast-simulation-token-secret";
/// Admission-token secret of the simulated services.
pub const ADMISSION_SECRET: &[u8] = b"holdfast-simulation-admission-secret";
/// Webhook secret shared by the services and the provider.
pub const WEBHOOK_SECRET: &[u8] = b"holdfast-simulation-webhook-secret";

/// Everything one run is made of. Built from a scenario (see [`crate::plan`]).
#[derive(Debug, Clone)]
pub struct WorldConfig {
    /// Service hosts (`svc0`, `svc1`, ...), >= 1.
    pub server_hosts: usize,
    /// Client hosts, >= 1; users are spread over them as tasks.
    pub client_hosts: usize,
    /// Virtual users.
    pub users: usize,
    /// Probers besides the users (see [`crate::prober`]).
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
    /// Sweeper stalled between these simulated times.
    pub sweeper_stall: Option<SweeperStall>,
    /// The store unreachable between these simulated times.
    pub store_outage: Option<crate::schedule::StoreOutage>,
    /// When the waiting rooms' store stops, simulated ms (it comes back
    /// without a room `rooms_down_ms` later).
    pub rooms_lost_at_ms: Option<u64>,
    /// How long the waiting rooms' store is unreachable before it comes back empty, ms.
    pub rooms_down_ms: u64,
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
    /// [`build::CACHE_TTL_MS`] (`None`: until invalidated, a harness knob for
    /// proving that `stale-read-bounded` bites).
    pub seat_map_cache_ttl_ms: Option<u64>,
    /// Seat-map cache faults (down, stale, poisoned).
    pub cache_faults: Option<crate::schedule::CacheFaults>,
    /// Pinned link faults (a capsule's `faults.network.pinned`): exactly
    /// these strike, instead of any drawn from `link_faults`.
    pub pinned_link_faults: Option<Vec<crate::schedule::LinkFault>>,
    /// Pinned cache faults (a capsule's `faults.cache.pinned`): exactly these
    /// strike, instead of any drawn from `cache_faults`.
    pub pinned_cache_faults: Option<Vec<crate::schedule::CacheFault>>,
    /// A waiting room in front of every event (`None`: users go straight to the seats).
    pub waiting_room: Option<crate::room_user::RoomWorld>,
    /// The provider's faults hold only between these simulated ms (a
    /// brownout mid-sale); `None`: through the whole fault phase.
    pub provider_window_ms: Option<(u64, u64)>,
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The seed.
    pub seed: u64,
    /// Every violated invariant.
    pub violations: Vec<Violation>,
    /// The trace.
    pub trace: Vec<TraceEvent>,
    /// Hex SHA-256 of the trace.
    pub trace_hash: String,
    /// Simulated time the run covered, ms.
    pub simulated_ms: u64,
    /// Per-run metrics.
    pub metrics: invariants::metrics::Metrics,
    /// Set when the run could not complete (a host errored, the trace overflowed).
    pub error: Option<String>,
    /// HTTP requests the simulated servers answered (services and provider).
    pub http_exchanges: u64,
    /// Seat-map reads the services answered from their shared cache.
    pub seat_map_cache_hits: u64,
    /// How often each fault and each interesting path happened.
    pub paths: invariants::paths::PathCounts,
    /// What clients were answered, by kind (see [`invariants::answers`]).
    pub answers: invariants::answers::AnswerCounts,
    /// A panic inside the world (a failed assertion in the service, the
    /// store or the simulator): the run stopped there, and the checkers did
    /// not judge its half-written records.
    pub panic: Option<crate::panic_note::PanicNote>,
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

/// Runs one seed of `cfg`: schedule, build, fault phase, settle, check.
pub fn run(cfg: &WorldConfig, seed: u64) -> RunOutcome {
    let schedule = schedule::draw(cfg, seed);
    let mut world = build::build(cfg, seed, &schedule);
    let mut nemeses = nemeses_for(&schedule, &world);
    crate::panic_note::install();
    let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let brownout = cfg.provider_window_ms.map(|(from, to)| (from, to, &cfg.provider));
        let clients_done = step::fault_phase(&mut world, &mut nemeses, cfg.fault_ms, brownout)?;
        step::settle(&mut world, &mut nemeses, clients_done, cfg.fault_ms + cfg.settle_ms)
    }));
    // A panic in a host task shuts its runtime down and surfaces as a step
    // error or as a panic of the step itself; the hook noted it either way.
    let stepped = Stepped {
        error: stepped.as_ref().ok().and_then(|r| r.clone().err()),
        step_panicked: stepped.is_err(),
        panic: crate::panic_note::take(),
        settled: matches!(stepped, Ok(Ok(true))),
    };
    check::check(world, cfg, seed, stepped)
}

/// The nemeses that carry out `schedule` on `world`.
fn nemeses_for(schedule: &FaultSchedule, world: &build::World) -> Nemeses {
    Nemeses {
        crash: CrashNemesis::new(world.switches.clone(), schedule.crash.as_ref().map(|c| c.restart_after_ms)),
        stall: StallNemesis::new(schedule.sweeper_stall, world.switches.sweeper_stalled.clone()),
        link: LinkNemesis::new(schedule.link_faults.clone()),
        cache: CacheNemesis::new(schedule.cache_faults.clone(), world.cache_switch.clone()),
        outage: OutageNemesis::new(schedule.store_outage, world.store_down.clone()),
        rooms: RoomsNemesis::new(schedule.rooms_lost_at_ms, schedule.rooms_down_ms, world.rooms.clone()),
    }
}
