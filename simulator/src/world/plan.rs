//! From a scenario file to the world of one seed: the workload becomes
//! virtual users, each fault table becomes knobs on the world, the provider
//! or the users. Swarm scenarios switch and weigh faults per seed.

use crate::world::config::WorldConfig;
use crate::world::fault_params::{CacheFault, CacheFaults, LinkFault, LinkFaults, PausedClients};
use crate::world::faults::CrashFault;
use crate::world::faulty_cache::CacheMode;
use crate::world::room_user::RoomWorld;
use crate::world::user::UserParams;
use booking::admission::room::Policy;
use booking::fake_provider::ProviderFaults;
use booking::fault::{CommitPoint, Plant};
use scenarios::{FaultKind, Outcome, Scenario};
use std::ops::Range;

/// A scenario ready to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Scenario name.
    pub name: String,
    /// One line.
    pub description: String,
    /// The file it came from when outside the library (for the replay line).
    pub file: Option<String>,
    /// Its default seeds.
    pub default_seeds: Range<u64>,
    /// True when the scenario expects an invariant violation (e.g. broken expiry).
    pub expect_violation: bool,
    /// Invariants the scenario expects violated (all of them must be).
    pub expect_violations: Vec<String>,
    /// The metrics classification it expects, if any.
    pub expect_classification: Option<String>,
    /// The planted bug every seed runs with (see `simulator plants`).
    pub plant: Option<Plant>,
    /// Fault kinds whose injection is switched off (`--mute`, for proving
    /// that `expect.must_happen` notices a fault that stopped firing).
    pub muted: Vec<FaultKind>,
    /// Invariants each seed may violate besides the expected ones (expected-failure scenarios).
    pub tolerated: Vec<String>,
    /// Paths that must happen at least once across the default seeds.
    pub must_happen: Vec<String>,
    /// Whether the services share a seat-map cache (default; off with the
    /// harness flag `--no-seat-map-cache`, to compare a run without it).
    pub seat_map_cache: bool,
    /// Judge with these checkers only (`--checkers`; empty: all).
    pub checkers: Vec<String>,
    scenario: Scenario,
}

/// A validated scenario range as unsigned ms (validation keeps both ends >= 0).
fn ms_range(r: scenarios::RangeMs) -> (u64, u64) {
    (r.min.max(0) as u64, r.max.max(0) as u64)
}

/// turmoil's tick: 20 ms of simulated time per step (finer ticks cost wall time; message latency below a tick is quantized).
pub const TICK_MS: u64 = 20;

impl Plan {
    /// A plan for `scenario`; `file` is its path when it is not from the library.
    pub fn new(scenario: Scenario, file: Option<String>) -> Self {
        let seeds = scenario.default_seeds();
        Self {
            name: scenario.name.clone(),
            description: scenario.description.clone(),
            file,
            default_seeds: seeds.iter(),
            expect_violation: scenario.expect.outcome == Outcome::Fail,
            expect_violations: scenario.expect.violations.clone(),
            expect_classification: scenario.expect.classification.clone(),
            plant: None,
            muted: Vec::new(),
            tolerated: scenario.expect.tolerated.clone(),
            must_happen: scenario.expect.must_happen.clone(),
            seat_map_cache: true,
            checkers: Vec::new(),
            scenario,
        }
    }

    /// The world of `seed`: the scenario's workload, its faults for this
    /// seed (swarm scenarios switch faults per seed) less the muted ones.
    pub fn world_for(&self, seed: u64) -> WorldConfig {
        let s = &self.scenario;
        let w = &s.workload;
        let mut f = s.faults_for_seed(seed);
        for kind in &self.muted {
            f.remove(*kind);
        }
        WorldConfig {
            server_hosts: w.server_hosts as usize,
            client_hosts: w.client_hosts as usize,
            users: w.users as usize,
            events: w.events as usize,
            seats_per_event: w.seats_per_event as usize,
            probers: w.probers as usize,
            user: user_params(s, &f),
            hold_ttl_ms: w.hold_ttl_ms,
            payment_ttl_ms: w.payment_ttl_ms,
            fault_ms: s.phases.fault_ms as u64,
            settle_ms: s.phases.settle_ms as u64,
            crash: crash_fault(&f),
            provider: provider_faults(w, &f),
            link_faults: link_faults(&f),
            message_latency_ms: message_latency_ms(f.network.as_ref()),
            clock_skew_ms: f.clock_skew.as_ref().map(|c| c.max_skew_ms).unwrap_or(0),
            plant: self.plant,
            workflow: workflow_config(s),
            tick_ms: TICK_MS,
            seat_map_cache: self.seat_map_cache,
            checkers: self.checkers.clone(),
            seat_map_cache_ttl_ms: Some(crate::world::build::CACHE_TTL_MS),
            pinned_link_faults: f
                .network
                .as_ref()
                .and_then(|n| n.pinned.as_ref())
                .map(|pinned| pinned.iter().map(LinkFault::from_pinned).collect()),
            pinned_cache_faults: f
                .cache
                .as_ref()
                .and_then(|c| c.pinned.as_ref())
                .map(|pinned| pinned.iter().map(CacheFault::from_pinned).collect()),
            cache_faults: cache_faults(&f),
            waiting_room: s.waiting_room.as_ref().map(room_world),
            provider_window_ms: f
                .provider
                .as_ref()
                .and_then(|p| p.window_ms)
                .map(|w| (w.min.max(0) as u64, w.max.max(0) as u64)),
            faults: f,
        }
    }
}

/// The crash-after-commit fault of a seed's faults.
fn crash_fault(f: &scenarios::Faults) -> Option<CrashFault> {
    f.crash_after_commit.as_ref().map(|c| CrashFault {
        probability: c.probability,
        restart_after_ms: c.restart_after_ms as u64,
        points: c.points.iter().map(|p| CommitPoint::parse(p).expect("validated commit point")).collect(),
    })
}

/// The drawn link faults of a seed's faults (none without a chance of one or a pinned list).
fn link_faults(f: &scenarios::Faults) -> Option<LinkFaults> {
    f.network
        .as_ref()
        .filter(|n| n.partition_probability > 0.0 || n.pinned.is_some())
        .map(|n| LinkFaults { per_second_probability: n.partition_probability, length_ms: n.partition_ms as u64 })
}

/// The drawn seat-map cache faults of a seed's faults (none without a chance of one or a pinned list).
fn cache_faults(f: &scenarios::Faults) -> Option<CacheFaults> {
    f.cache.as_ref().filter(|c| c.probability > 0.0 || c.pinned.is_some()).map(|c| CacheFaults {
        per_second_probability: c.probability,
        length_ms: c.length_ms as u64,
        modes: c.modes.iter().map(|m| CacheMode::parse(m).expect("validated cache fault")).collect(),
    })
}

/// The world's waiting room, from the scenario's (absent keys: bookingd's defaults).
fn room_world(r: &scenarios::WaitingRoom) -> RoomWorld {
    RoomWorld {
        policy: match r.policy.as_str() {
            "lottery" => Policy::Lottery,
            "priority" => Policy::Priority,
            _ => Policy::Fifo,
        },
        target_active_sessions: r.target_active_sessions,
        session_ttl_ms: r.session_ttl_ms,
        opens_at_ms: r.opens_at_ms as u64,
        prior_session_ms: r.prior_session_ms.unwrap_or(90_000) as u64,
        member_share: r.member_share,
        bypass_share: r.bypass_share,
        poll_max_s: r.poll_max_s.unwrap_or(60),
    }
}

/// Message latency on every link without a network fault: `1..=20` ms.
pub const MIN_MESSAGE_LATENCY_MS: u64 = 1;
/// See [`MIN_MESSAGE_LATENCY_MS`].
pub const DEFAULT_MAX_MESSAGE_LATENCY_MS: u64 = 20;
/// Flows one user runs at most.
pub const MAX_FLOWS_PER_USER: u32 = 500;
/// Attempts of one request under one idempotency key when its answer is unknown.
pub const MAX_ATTEMPTS: u32 = 4;
/// Polls of an order's status after its checkout, at most.
pub const MAX_STATUS_POLLS: u32 = 10;
/// How long after the payment deadline a late success lands, ms.
pub const LATE_SUCCESS_AFTER_DEADLINE_MS: i64 = 5_000;
/// With `[faults.delayed_callback]`: every webhook copy is sent after a
/// uniform delay in `0..=WEBHOOK_JITTER_MS` (a reordered one a further
/// `2 * WEBHOOK_JITTER_MS + 1`), a delayed one `delay_ms` later still.
pub const WEBHOOK_JITTER_MS: u64 = 1_000;

/// Message latency on every link: `[faults.network].latency_ms` (at least
/// [`MIN_MESSAGE_LATENCY_MS`], and a range at least 1 ms wide, as turmoil
/// needs), or `1..=20` ms without a network fault.
fn message_latency_ms(network: Option<&scenarios::Network>) -> (u64, u64) {
    match network {
        Some(n) => {
            let min = (n.latency_ms.min.max(0) as u64).max(MIN_MESSAGE_LATENCY_MS);
            (min, (n.latency_ms.max.max(0) as u64).max(min + 1))
        }
        None => (MIN_MESSAGE_LATENCY_MS, DEFAULT_MAX_MESSAGE_LATENCY_MS),
    }
}

/// What the users do: the workload's shares and times, the client-side faults.
fn user_params(s: &Scenario, f: &scenarios::Faults) -> UserParams {
    let w = &s.workload;
    UserParams {
        events: Default::default(),
        hot_seats: w.hot_seats as usize,
        hot_share: w.hot_share,
        multi_seat_share: w.multi_seat_share,
        max_seats_per_hold: w.max_seats_per_hold as usize,
        checkout_share: w.checkout_share,
        abandon_share: w.abandon_share,
        hoard: (w.hoard_share > 0.0).then_some(w.hoard_share),
        double_submit: (w.double_submit_share > 0.0).then_some(w.double_submit_share),
        partial_checkout: (w.partial_checkout_share > 0.0).then_some(w.partial_checkout_share),
        think_ms: ms_range(w.think_time_ms),
        arrival_ms: ms_range(w.arrival_ms.unwrap_or(w.think_time_ms)),
        pause: f
            .paused_client
            .as_ref()
            .map(|p| PausedClients { probability: p.probability, pause_ms: p.pause_ms as u64 }),
        stale_replay: f.stale_token.as_ref().map(|t| t.probability),
        active_until_ms: s.phases.fault_ms as u64,
        max_flows: MAX_FLOWS_PER_USER,
        max_attempts: MAX_ATTEMPTS,
        max_status_polls: MAX_STATUS_POLLS,
    }
}

/// The provider's knobs from `[faults.provider]` and `[faults.delayed_callback]`:
/// the response time a uniform draw in `latency_ms`; late successes land
/// [`LATE_SUCCESS_AFTER_DEADLINE_MS`] after the payment deadline; each
/// webhook copy arrives within [`WEBHOOK_JITTER_MS`], and a delayed callback
/// (`probability`) `delay_ms` later still.
fn provider_faults(w: &scenarios::Workload, f: &scenarios::Faults) -> ProviderFaults {
    let mut provider = ProviderFaults::default();
    if let Some(p) = &f.provider {
        provider.lost_response_rate = p.unknown_probability;
        provider.decline_rate = p.decline_probability;
        provider.error_rate = p.error_rate;
        provider.latency_ms = p.latency_ms.min.max(0) as u64;
        provider.latency_max_ms = p.latency_ms.max.max(0) as u64;
        provider.late_success_rate = p.late_success_probability;
        provider.late_success_delay_ms = (w.payment_ttl_ms + LATE_SUCCESS_AFTER_DEADLINE_MS) as u64;
        provider.refund_failure_rate = p.refund_failure_probability;
        provider.lenient_refunds = p.lenient_refunds;
    }
    if let Some(d) = &f.delayed_callback {
        provider.webhook_delay_ms = WEBHOOK_JITTER_MS;
        provider.webhook_hold_rate = d.probability;
        provider.webhook_hold_ms = d.delay_ms as u64;
        provider.webhook_duplicate_rate = d.duplicate_probability;
        provider.webhook_reorder_rate = d.reorder_probability;
    }
    provider
}

/// The payment workflow's settings: the defaults, with the scenario's refund attempts.
fn workflow_config(s: &Scenario) -> booking::payment::workflow::WorkflowConfig {
    let mut wf = booking::payment::workflow::WorkflowConfig::default();
    if let Some(n) = s.service.max_refund_attempts {
        wf.max_compensation_attempts = n as i32;
        wf.max_compensation_unknown_attempts = 2 * n as i32;
    }
    wf
}

/// The library, in name order.
pub fn library() -> Vec<Plan> {
    let mut all: Vec<Plan> = scenarios::library().into_iter().map(|s| Plan::new(s, None)).collect();
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}

/// A library scenario by name.
pub fn find(name: &str) -> Option<Plan> {
    scenarios::find(name).map(|s| Plan::new(s, None))
}

/// A scenario file outside the library.
pub fn from_file(path: &str) -> Result<Plan, String> {
    let s = Scenario::load(std::path::Path::new(path)).map_err(|e| e.to_string())?;
    Ok(Plan::new(s, Some(path.to_string())))
}
