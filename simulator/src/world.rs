//! One seeded run: builds the turmoil world (service hosts running the real
//! bookingd router, workflow and sweeper over a shared MemStore; a provider
//! host running the real fake provider; client hosts running many virtual
//! users as tasks), steps it while injecting the scheduled faults and marking
//! the phases (the settle phase ends at its bound or once the world is
//! quiescent, see [`crate::quiescence`]), then checks the invariants on the
//! store's final records and the trace.

use crate::client::SimClient;
use crate::exchanges::Exchanges;
use crate::faults::{CrashFault, HostFaults, WorldSwitches};
use crate::net::SimListener;
use crate::provider_host::{self, ProviderFaults};
use crate::quiescence;
use crate::recorder::Recorder;
use crate::sim_clock::{EPOCH_MS, SimClock};
use crate::user::{Actor, SeenHolds, UserParams};
use booking::clock::Clock;
use booking::fault::{Faults, Plant};
use booking::http::auth::{Authenticator, Claims};
use booking::http::cache::NoCache;
use booking::http::{ServiceConfig, serve};
use booking::ids::SeededIds;
use booking::payment::http_provider::HttpProvider;
use booking::payment::workflow::WorkflowConfig;
use booking::service::{Service, ServiceParts};
use booking::store::{CreateEvent, MemStore, Store};
use booking::sweeper::SweeperConfig;
use invariants::trace::{FaultKind, PhaseMark, TraceEvent};
use invariants::{Config as CheckConfig, Violation};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The service port on every service host.
pub const SERVICE_PORT: u16 = 8080;
/// Shared secrets of the simulated deployment.
pub const TOKEN_SECRET: &[u8] = b"holdfast-simulation-token-secret";
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
    pub partitions: Option<(f64, u64)>,
    /// Extra link latency bound, ms.
    pub max_latency_ms: Option<u64>,
    /// Largest service-host clock skew, ms (each host draws one in ±skew).
    pub clock_skew_ms: i64,
    /// Sweeper stalled between these simulated times.
    pub sweeper_stall: Option<(u64, u64)>,
    /// The planted bug, if any (see `simulator plants`).
    pub plant: Option<Plant>,
    /// The payment workflow's settings.
    pub workflow: WorkflowConfig,
    /// turmoil tick, ms.
    pub tick_ms: u64,
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
    /// How often each fault and each interesting path happened.
    pub paths: invariants::paths::PathCounts,
    /// A panic inside the world (a failed assertion in the service, the
    /// store or the simulator): the run stopped there, and the checkers did
    /// not judge its half-written records.
    pub panic: Option<crate::panic_note::PanicNote>,
}

fn host_seed(seed: u64, salt: &str) -> u64 {
    // FNV-1a over the salt, mixed with the seed: stable across processes and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in salt.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The environment variable that makes a world panic at that many simulated
/// ms (the harness's test of its own panic verdict; not for users).
pub const SELF_TEST_PANIC_VAR: &str = "HOLDFAST_SIM_SELF_TEST_PANIC_AT_MS";

/// Runs one seed of `cfg`.
pub fn run(cfg: &WorldConfig, seed: u64) -> RunOutcome {
    assert!(
        cfg.server_hosts >= 1 && cfg.client_hosts >= 1 && cfg.users >= 1 && cfg.events >= 1 && cfg.seats_per_event >= 1
    );
    let recorder = Recorder::new(EPOCH_MS);
    let store_clock = SimClock::new(0);
    let store_faults = cfg.plant.map(Faults::planting).unwrap_or_default();
    let store = MemStore::new(Arc::new(store_clock.clone()), Arc::new(SeededIds::new(host_seed(seed, "ids"))))
        .with_observer(Arc::new(recorder.clone()))
        .with_faults(&store_faults);
    let events: Vec<(String, Vec<String>)> = (0..cfg.events)
        .map(|e| (format!("ev{e}"), (0..cfg.seats_per_event).map(|s| format!("s{s:05}")).collect()))
        .collect();
    for (event_id, seat_ids) in &events {
        futures::executor::block_on(store.create_event(&CreateEvent {
            event_id: event_id.clone(),
            seat_ids: seat_ids.clone(),
            price_cents: 5_000,
        }))
        .expect("scenario events are valid");
    }
    let store: Arc<dyn Store> = Arc::new(store);

    let total_ms = cfg.fault_ms + cfg.settle_ms;
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .epoch(std::time::UNIX_EPOCH + Duration::from_millis(EPOCH_MS as u64))
        .simulation_duration(Duration::from_millis(total_ms + 600_000))
        .tick_duration(Duration::from_millis(cfg.tick_ms))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(cfg.max_latency_ms.unwrap_or(20).max(2)))
        // A listener's backlog: every user may dial one host in the same tick
        // (an on-sale opening), plus the services' and provider's own
        // connections. turmoil panics on a full backlog rather than refusing.
        .tcp_capacity(cfg.users + 64)
        .build();
    let mut rng = ChaCha8Rng::seed_from_u64(host_seed(seed, "world"));

    // Every request a simulated server answers is counted.
    let exchanges = Exchanges::default();

    // The provider.
    let service_names: Vec<String> = (0..cfg.server_hosts).map(|i| format!("svc{i}")).collect();
    let provider = provider_host::install(
        &mut sim,
        host_seed(seed, "provider"),
        cfg.provider.clone(),
        &service_names,
        WEBHOOK_SECRET,
        &exchanges,
    );

    // Service hosts.
    let switches = WorldSwitches {
        crash_enabled: Arc::new(AtomicBool::new(cfg.crash.is_some())),
        sweeper_stalled: Arc::new(AtomicBool::new(false)),
        crash_requests: Arc::new(Mutex::new(Default::default())),
    };
    for name in &service_names {
        let skew_ms = if cfg.clock_skew_ms > 0 { rng.random_range(-cfg.clock_skew_ms..=cfg.clock_skew_ms) } else { 0 };
        if skew_ms != 0 {
            recorder.fault_at(0, FaultKind::ClockSkewed, format!("{name} clock skew {skew_ms} ms"));
        }
        let host_faults = HostFaults::new(
            name.clone(),
            cfg.crash.clone(),
            host_seed(seed, name),
            &switches,
            recorder.clone(),
            cfg.plant,
        );
        let store = store.clone();
        let config = ServiceConfig {
            hold_ttl_ms: cfg.hold_ttl_ms,
            payment_ttl_ms: cfg.payment_ttl_ms,
            hold_attempts_per_minute: 10_000,
            ..ServiceConfig::default()
        };
        let exchanges = exchanges.clone();
        let workflow = cfg.workflow.clone();
        sim.host(name.as_str(), move || {
            let store = store.clone();
            let exchanges = exchanges.clone();
            let faults = Faults::new(Arc::new(host_faults.share()));
            let config = config.clone();
            let workflow = workflow.clone();
            async move {
                let provider = HttpProvider::new(
                    crate::net::SimConnector,
                    &format!("http://provider:{}", provider_host::PROVIDER_PORT),
                    Duration::from_secs(2),
                )
                .expect("provider url is valid");
                let service = Arc::new(
                    Service::new(ServiceParts {
                        store,
                        cache: Arc::new(NoCache),
                        provider: Arc::new(provider),
                        clock: Arc::new(SimClock::new(skew_ms)),
                        token_secret: TOKEN_SECRET.to_vec(),
                        webhook_secret: WEBHOOK_SECRET.to_vec(),
                        config,
                        workflow,
                        sweeper: SweeperConfig::default(),
                        faults,
                    })
                    .expect("service config is valid"),
                );
                let (_stop, stop_rx) = tokio::sync::watch::channel(false);
                let bg = service.clone();
                tokio::spawn(async move { bg.run_background(stop_rx).await });
                let router = exchanges.count(service.router());
                serve(SimListener::bind(SERVICE_PORT).await?, router, std::future::pending()).await?;
                Ok(())
            }
        });
    }

    // Client hosts.
    let user_auth = Authenticator::new(TOKEN_SECRET, Arc::new(SimClock::new(0)));
    let mut params = cfg.user.clone();
    params.events = events.clone();
    params.active_until_ms = cfg.fault_ms;
    // Holds seen by any user of the world: the pool stale and borrowed tokens come from.
    let seen: SeenHolds = Arc::new(Mutex::new(Vec::new()));
    for c in 0..cfg.client_hosts {
        let mut actors = Vec::new();
        for u in (c..cfg.users).step_by(cfg.client_hosts) {
            let user = format!("u{u:05}");
            let token = user_auth.issue(&Claims {
                sub: user.clone(),
                events: vec!["*".into()],
                exp_ms: EPOCH_MS + 7 * 86_400_000,
                admin: false,
            });
            let services = service_names
                .iter()
                .map(|s| SimClient::new(format!("{s}:{SERVICE_PORT}"), Duration::from_secs(3)))
                .collect();
            actors.push(Actor::new(user.clone(), token, services, recorder.clone(), host_seed(seed, &user)));
        }
        let params = params.clone();
        let seen = seen.clone();
        sim.client(format!("client{c}").as_str(), async move {
            let mut set = tokio::task::JoinSet::new();
            for a in actors {
                set.spawn(a.run(params.clone(), seen.clone()));
            }
            while let Some(r) = set.join_next().await {
                r?;
            }
            Ok(())
        });
    }

    // The harness's own test of its panic verdict: a panic inside the world at a
    // simulated time, from the environment (the process pool passes it on).
    if let Some(at_ms) = std::env::var(SELF_TEST_PANIC_VAR).ok().and_then(|v| v.parse::<u64>().ok()) {
        sim.client("selftest", async move {
            tokio::time::sleep(Duration::from_millis(at_ms)).await;
            panic!("harness self-test: a panic inside the world at {at_ms} ms");
        });
    }

    // Partition schedule, decided up front: each simulated second of the fault
    // phase cuts a random link (client-service or service-provider) with the
    // scenario's probability.
    let mut partitions: Vec<(u64, u64, String, String, bool)> = Vec::new();
    if let Some((per_second, len_ms)) = cfg.partitions {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for s in &service_names {
            pairs.push((s.clone(), "provider".into()));
            for c in 0..cfg.client_hosts {
                pairs.push((format!("client{c}"), s.clone()));
            }
        }
        for second in 0..cfg.fault_ms / 1000 {
            if rng.random_bool(per_second) {
                let (a, b) = pairs[rng.random_range(0..pairs.len())].clone();
                let start = second * 1000 + rng.random_range(0..1000);
                let hold = rng.random_bool(0.5);
                partitions.push((start, (start + len_ms).min(cfg.fault_ms), a, b, hold));
            }
        }
    }
    let mut restarts: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    partitions.sort();
    let mut active_partitions: Vec<(u64, String, String, bool)> = Vec::new();
    let mut next_partition = 0usize;
    let mut faults_over = false;
    let mut error = None;
    let mut next_quiescence_check_ms = cfg.fault_ms;
    crate::panic_note::install();
    let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        loop {
            let clients_done = match sim.step() {
                Ok(f) => f,
                Err(e) => {
                    error = Some(format!("simulation error: {e}"));
                    break;
                }
            };
            let now_ms = sim.elapsed().as_millis() as u64;
            // Crash the hosts that swallowed a committed answer; restart them later.
            let requested: Vec<String> =
                std::mem::take(&mut *switches.crash_requests.lock().expect("poisoned")).into_iter().collect();
            for host in requested {
                sim.crash(host.as_str());
                let delay = cfg.crash.as_ref().map_or(1_000, |c| c.restart_after_ms);
                restarts.entry(now_ms + delay).or_default().push(host);
            }
            let due: Vec<u64> = restarts.range(..=now_ms).map(|(k, _)| *k).collect();
            for k in due {
                for host in restarts.remove(&k).unwrap_or_default() {
                    sim.bounce(host.as_str());
                    recorder.fault_at(now_ms as i64, FaultKind::HostRestarted, format!("{host} restarted"));
                }
            }
            // Sweeper stall window.
            if let Some((from, to)) = cfg.sweeper_stall {
                let stall = now_ms >= from && now_ms < to;
                if stall != switches.sweeper_stalled.load(Ordering::SeqCst) {
                    switches.sweeper_stalled.store(stall, Ordering::SeqCst);
                    let kind = if stall { FaultKind::SweeperStalled } else { FaultKind::SweeperResumed };
                    recorder.fault_at(now_ms as i64, kind, "hold sweeper".into());
                }
            }
            // Partitions.
            if !faults_over {
                while next_partition < partitions.len() && partitions[next_partition].0 <= now_ms {
                    let (_, end, a, b, hold) = partitions[next_partition].clone();
                    if hold {
                        sim.hold(a.as_str(), b.as_str());
                        recorder.fault_at(now_ms as i64, FaultKind::PartitionStarted, format!("{a} <-> {b} held"));
                    } else {
                        sim.partition(a.as_str(), b.as_str());
                        recorder.fault_at(now_ms as i64, FaultKind::PartitionStarted, format!("{a} <-> {b} cut"));
                    }
                    active_partitions.push((end, a, b, hold));
                    next_partition += 1;
                }
            }
            active_partitions.retain(|(end, a, b, hold)| {
                if *end <= now_ms || faults_over {
                    if *hold {
                        sim.release(a.as_str(), b.as_str());
                    } else {
                        sim.repair(a.as_str(), b.as_str());
                    }
                    recorder.fault_at(now_ms as i64, FaultKind::PartitionRepaired, format!("{a} <-> {b}"));
                    false
                } else {
                    true
                }
            });
            if !faults_over && now_ms >= cfg.fault_ms {
                faults_over = true;
                switches.crash_enabled.store(false, Ordering::SeqCst);
                provider.set_faults(ProviderFaults::default()).expect("no faults is valid");
                recorder.phase(now_ms as i64, PhaseMark::FaultPhaseEnd, store_clock.now_ms());
            }
            // The settle phase ends at its bound, or earlier once nothing is left to do.
            if faults_over && now_ms >= next_quiescence_check_ms {
                next_quiescence_check_ms = now_ms + quiescence::CHECK_INTERVAL_MS;
                let idle = quiescence::world_idle(
                    clients_done,
                    restarts.values().map(Vec::len).sum(),
                    provider.pending_tasks(),
                ) && quiescence::store_busy(
                    &futures::executor::block_on(store.snapshot()).expect("MemStore snapshot"),
                )
                .is_none();
                if idle || (now_ms >= total_ms && clients_done) {
                    recorder.phase(now_ms as i64, PhaseMark::SettleEnd, store_clock.now_ms());
                    break;
                }
            }
        }
    }));
    let simulated_ms = sim.elapsed().as_millis() as u64;
    // A panic in a host task shuts its runtime down and surfaces as a step
    // error or as a panic of the step itself; the hook noted it either way.
    let panic = crate::panic_note::take();
    if stepped.is_err() && panic.is_none() {
        error.get_or_insert_with(|| "the world panicked without a note".into());
    }
    // Dropping the world drops its hosts' tasks: a panic there is the world's too.
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(sim)));
    let panic = panic.or_else(crate::panic_note::take);
    if dropped.is_err() && panic.is_none() {
        error.get_or_insert_with(|| "the world panicked while shutting down".into());
    }

    provider_host::record_ledger(&provider, &recorder);
    if panic.is_none() && error.is_none() {
        // What operators would read now: the checkers hold it to the records.
        let list = futures::executor::block_on(store.needs_resolution()).expect("MemStore operators' list");
        recorder.operator_list(
            list.orders.iter().map(|o| o.order_id).collect(),
            list.compensations.iter().map(|c| c.compensation_id).collect(),
        );
    }
    let mut paths = invariants::paths::PathCounts::new();
    invariants::paths::count_provider(&mut paths, &provider.ledger().stats);
    let trace = recorder.events();
    for (p, n) in invariants::paths::count(&trace) {
        *paths.entry(p).or_insert(0) += n;
    }
    if recorder.overflowed() {
        error.get_or_insert_with(|| "trace overflowed its bound".into());
    }
    let trace_hash = invariants::to_hex(&invariants::trace_hash(&trace));
    let final_now = store_clock.now_ms();
    let faults_end = (EPOCH_MS + cfg.fault_ms as i64).min(final_now);
    // The service runs with bookingd's default per-user cap (`ServiceConfig::default`).
    let check_cfg =
        CheckConfig::new(final_now, faults_end).with_hold_cap(ServiceConfig::default().max_held_seats_per_user);
    // After a panic the store may hold a half-written transaction (and its
    // lock is poisoned): the panic is the verdict, its trace the evidence.
    let (violations, metrics) = match (&panic, error.is_some() && stepped.is_err()) {
        (None, false) => {
            let snapshot = futures::executor::block_on(store.snapshot()).expect("MemStore snapshot");
            (
                invariants::check_all(&snapshot, &trace, &check_cfg),
                invariants::metrics::Metrics::compute(&snapshot, &trace, &check_cfg),
            )
        }
        _ => (Vec::new(), invariants::metrics::Metrics::default()),
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
        paths,
        panic,
    }
}
