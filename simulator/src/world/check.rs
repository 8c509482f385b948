//! Checking a stepped world: the provider's ledger and the operators' list
//! go into the trace, the paths are counted, the trace is hashed, and the
//! invariant checkers judge the store's final records and the trace. A world
//! that panicked is not judged: its half-written records are not evidence;
//! the panic is the verdict.

use crate::world::build::World;
use crate::world::config::WorldConfig;
use crate::world::panic_note::PanicNote;
use crate::world::provider_host;
use crate::world::sim_clock::EPOCH_MS;
use crate::world::step::StepError;
use booking::clock::Clock;
use booking::http::ServiceConfig;
use invariants::Config as CheckConfig;
use invariants::Violation;
use invariants::trace::TraceEvent;

/// How stepping ended.
#[derive(Debug)]
pub struct Stepped {
    /// Stepping stopped early with this error.
    pub error: Option<StepError>,
    /// The step itself panicked (a host's panic may surface so).
    pub step_panicked: bool,
    /// The panic the hook noted, if any.
    pub panic: Option<PanicNote>,
    /// Settling ended with the work settled (see [`crate::world::step::settle`]).
    pub settled: bool,
}

/// The deployment the auditor's model judges: the world's service settings,
/// its hosts' clock skews, its secrets.
pub fn model_config(cfg: &WorldConfig, host_skew_ms: Vec<i64>) -> invariants::model::ModelConfig {
    let service = ServiceConfig::default();
    let room = booking::admission::waiting_room::WaitingRoomConfig::default();
    invariants::model::ModelConfig {
        epoch_ms: EPOCH_MS,
        hold_ttl_ms: cfg.hold_ttl_ms,
        payment_ttl_ms: cfg.payment_ttl_ms,
        max_held_seats_per_user: service.max_held_seats_per_user,
        hold_attempts_per_minute: crate::world::build::HOLD_ATTEMPTS_PER_MINUTE,
        host_skew_ms,
        min_latency_ms: cfg.message_latency_ms.0 as i64,
        admission_secret: crate::world::deployment::ADMISSION_SECRET.to_vec(),
        webhook_secret: crate::world::deployment::WEBHOOK_SECRET.to_vec(),
        max_body_bytes: service.max_body_bytes,
        max_compensation_attempts: cfg.workflow.max_compensation_attempts,
        max_compensation_unknown_attempts: cfg.workflow.max_compensation_unknown_attempts,
        queue_poll_s: (room.poll_min_s, cfg.waiting_room.map_or(room.poll_max_s, |r| r.poll_max_s)),
        admission_law: admission_law(cfg),
    }
}

/// The admission law's settings the world's services run with: booking's
/// defaults, the room's prior session and the tick interval.
fn admission_law(cfg: &WorldConfig) -> invariants::model::law::LawSettings {
    let p = booking::admission::controller::AdmissionParams::default();
    let room = booking::admission::waiting_room::WaitingRoomConfig::default();
    invariants::model::law::LawSettings {
        prior_session_ms: cfg.waiting_room.map_or(room.prior_session_ms, |r| r.prior_session_ms),
        session_weight: p.session_weight,
        contention_threshold: p.contention_threshold,
        provider_error_threshold: p.provider_error_threshold,
        provider_latency_target_ms: p.provider_latency_target_ms,
        min_health: p.min_health,
        recovery_per_tick: p.recovery_per_tick,
        max_burst_s: p.max_burst_s,
        tick_ms: room.tick_ms,
    }
}

/// Records what operators would read once the run settled: the operators'
/// list the store serves, and the service's counters (what `GET /metrics`
/// would have said) summed over every service life; `settled`: whether the
/// run ended with its work settled.
fn record_operators_view(
    store: &dyn booking::store::Store,
    recorder: &crate::world::recorder::Recorder,
    lives: &crate::world::service_lives::ServiceLives,
    settled: bool,
) {
    let list = futures::executor::block_on(store.needs_resolution()).expect("MemStore operators' list");
    recorder.operator_list(
        list.orders.iter().map(|o| o.order_id).collect(),
        list.compensations.iter().map(|c| c.compensation_id).collect(),
    );
    recorder.service_counters(lives.totals(settled));
}

/// The paths the run took: the provider's and the trace's.
fn paths_of(
    trace: &[invariants::TraceEvent],
    provider: &booking::fake_provider::FakeProvider,
    tick_ms: u64,
) -> invariants::paths::PathCounts {
    let mut paths = invariants::paths::PathCounts::new();
    invariants::paths::count_provider(&mut paths, &provider.ledger().stats);
    for (p, n) in invariants::paths::count(trace, tick_ms as i64) {
        *paths.entry(p).or_insert(0) += n;
    }
    paths
}

/// Judges `world` of `seed` after stepping ended as `stepped`.
pub fn check(world: World, cfg: &WorldConfig, seed: u64, stepped: Stepped) -> RunOutcome {
    let World { sim, store, store_clock, recorder, provider, exchanges, cache, host_skew_ms, service_lives, .. } =
        world;
    let simulated_ms = sim.elapsed().as_millis() as u64;
    let mut error = stepped.error.map(|e| e.to_string());
    if stepped.step_panicked && stepped.panic.is_none() {
        error.get_or_insert_with(|| "the world panicked without a note".into());
    }
    // Dropping the world drops its hosts' tasks: a panic there is the world's too.
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(sim)));
    let panic = stepped.panic.or_else(crate::world::panic_note::take);
    if dropped.is_err() && panic.is_none() {
        error.get_or_insert_with(|| "the world panicked while shutting down".into());
    }
    provider_host::record_ledger(&provider, &recorder);
    if panic.is_none() && error.is_none() {
        record_operators_view(store.as_ref(), &recorder, &service_lives, stepped.settled);
    }
    let trace = recorder.take_events();
    let paths = paths_of(&trace, &provider, cfg.tick_ms);
    if recorder.overflowed() {
        error.get_or_insert_with(|| "trace overflowed its bound".into());
    }
    let trace_hash = invariants::to_hex(&invariants::trace_hash(&trace));
    let answers = invariants::answers::count(&trace);
    let final_now = store_clock.now_ms();
    let faults_end = (EPOCH_MS + cfg.fault_ms as i64).min(final_now);
    // The service runs with bookingd's default per-user cap (`ServiceConfig::default`);
    // a cached seat map is held to bookingd's cache TTL, the bound it states
    // (cached reads are traced only in worlds with cache faults).
    let check_cfg = CheckConfig::new(final_now, faults_end)
        .with_hold_cap(ServiceConfig::default().max_held_seats_per_user)
        .with_cache_ttl(Some(crate::world::build::CACHE_TTL_MS as i64))
        .with_audit(model_config(cfg, host_skew_ms))
        .with_checkers(cfg.checkers.clone());
    // After a panic the store may hold a half-written transaction (and its
    // lock is poisoned): the panic is the verdict, its trace the evidence.
    let judged = panic.is_none() && !(error.is_some() && stepped.step_panicked);
    let (violations, metrics, judged) = if judged {
        let snapshot = futures::executor::block_on(store.snapshot()).expect("MemStore snapshot");
        let violations = invariants::check_all(&snapshot, &trace, &check_cfg);
        let metrics = invariants::metrics::Metrics::compute(&snapshot, &trace, &check_cfg);
        (violations, metrics, Some(Box::new((snapshot, check_cfg))))
    } else {
        (Vec::new(), invariants::metrics::Metrics::default(), None)
    };
    RunOutcome {
        seed,
        violations,
        trace,
        trace_hash,
        simulated_ms,
        metrics,
        error,
        http_exchanges: exchanges.total(),
        seat_map_cache_hits: cache.hits(),
        paths,
        answers,
        panic,
        judged,
    }
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
    pub panic: Option<crate::world::panic_note::PanicNote>,
    /// What the checkers judged besides the trace: the final records and
    /// their configuration (`None` when the run was not judged), so a test
    /// can judge an altered trace the same way.
    pub judged: Option<Box<(booking::model::Snapshot, CheckConfig)>>,
}
