//! Building one seed's world: the seeded store with the scenario's events,
//! the provider host, the service hosts (each the real router, workflow and
//! sweeper over the shared store, with its clock skew from the schedule and
//! its fault injector) and the client hosts (virtual users as tasks).

use crate::world::client::SimClient;
use crate::world::config::{WorldConfig, host_seed};
use crate::world::deployment::{ADMISSION_SECRET, SERVICE_PORT, TOKEN_SECRET, WEBHOOK_SECRET};
use crate::world::exchanges::Exchanges;
use crate::world::faults::{HostFaults, WorldSwitches};
use crate::world::faulty_cache::{CacheSwitch, FaultyCache};
use crate::world::net::SimListener;
use crate::world::provider_host;
use crate::world::recorder::Recorder;
use crate::world::recording_rooms::RecordingRooms;
use crate::world::room_user::{MEMBER_TIER, RoomRun, RoomWorld, SharedAdmissions};
use crate::world::schedule::{self, FaultSchedule};
use crate::world::sim_clock::{EPOCH_MS, SimClock};
use crate::world::user::{Actor, SeenHolds};
use booking::admission::records::{MemRoomRecords, RoomRecords};
use booking::admission::room::{RoomSpec, Rooms};
use booking::admission::waiting_room::{WaitingRoom, WaitingRoomConfig, WaitingRoomParts};
use booking::fake_provider::FakeProvider;
use booking::fault::FaultSeam;
use booking::http::auth::{Authenticator, Claims};
use booking::http::cache::{MemCache, NoCache, SeatMapCache};
use booking::http::{ServiceConfig, serve};
use booking::ids::SeededIds;
use booking::model::{EventId, SeatId, UserId};
use booking::payment::http_provider::HttpProvider;
use booking::service::{Service, ServiceParts};
use booking::store::{CreateEvent, MemStore, Store};
use booking::sweeper::SweeperConfig;
use invariants::trace::{FaultEvent, WorldFact};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Price of every seat in a simulated event, cents.
pub const SEAT_PRICE_CENTS: i64 = 5_000;
/// How long a user's request waits for an answer before it counts as unknown.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a service waits for the provider, and the provider for a webhook's answer.
pub const PROVIDER_TIMEOUT: Duration = Duration::from_secs(2);
/// Hold attempts per user per minute the simulated services allow: more
/// than any user of the workload makes, fewer than a prober's burst (the
/// auditor's model judges every refusal).
pub const HOLD_ATTEMPTS_PER_MINUTE: u32 = 240;
/// How long a simulated user's bearer token lives: longer than any run.
const USER_TOKEN_TTL_MS: i64 = 7 * 86_400_000;
/// Simulated time beyond the phases the world may run before turmoil stops it.
const SIMULATION_SLACK_MS: u64 = 600_000;
/// Listener backlog beyond one connection per user: the services' and provider's own.
const BACKLOG_SLACK: usize = 64;
/// A client host's ephemeral ports: all but the well-known ones. Each user
/// keeps its keep-alive connection to a service host while it sleeps (a
/// waiting user between polls too), so a client host needs a port per user
/// and service host; turmoil's default range (49152-65535, 16,384 ports)
/// ran out at the brief's 100,000 users on 4 client hosts, and the panic
/// took a quarter of the users down with it.
pub const EPHEMERAL_PORTS: std::ops::RangeInclusive<u16> = 1024..=65535;

/// One seed's world, built and not yet stepped.
pub struct World {
    /// The turmoil simulation.
    pub sim: turmoil::Sim<'static>,
    /// The shared store (outside every host: it survives crashes as a database would).
    pub store: Arc<dyn Store>,
    /// The store's clock.
    pub store_clock: SimClock,
    /// The trace.
    pub recorder: Recorder,
    /// The provider's shared state (its knobs, ledger and pending work).
    pub provider: FakeProvider,
    /// The switches the nemeses flip on every host.
    pub switches: WorldSwitches,
    /// HTTP exchanges the servers answered.
    pub exchanges: Exchanges,
    /// The metrics of every service life (each start and restart of a host).
    pub service_lives: crate::world::service_lives::ServiceLives,
    /// The seat-map cache every service host shares.
    pub cache: Arc<MemCache>,
    /// The switch the cache nemesis flips (down, stale, poisoned).
    pub cache_switch: CacheSwitch,
    /// Each service host's clock skew against the store's, ms, by host index.
    pub host_skew_ms: Vec<i64>,
    /// The store's outage switch (the outage nemesis flips it).
    pub store_down: Arc<AtomicBool>,
    /// The shared waiting rooms, if the world has any (the rooms nemesis wipes them).
    pub rooms: Option<Arc<RecordingRooms>>,
}

/// How long a cached seat map lives: bookingd's default (`--cache-ttl-ms`).
pub const CACHE_TTL_MS: u64 = booking::daemon::DEFAULT_CACHE_TTL_MS;
/// Events the shared seat-map cache holds at most.
const CACHE_MAX_EVENTS: usize = 1_024;

/// Builds the world of `seed` for `cfg`, with the clock skews of `schedule`.
pub fn build(cfg: &WorldConfig, seed: u64, schedule: &FaultSchedule) -> World {
    assert!(
        cfg.server_hosts >= 1 && cfg.client_hosts >= 1 && cfg.users >= 1 && cfg.events >= 1 && cfg.seats_per_event >= 1
    );
    let recorder = Recorder::new(EPOCH_MS);
    let store_clock = SimClock::new(0);
    let events = event_seats(cfg);
    let store_down = Arc::new(AtomicBool::new(false));
    let store = seeded_store(cfg, seed, &store_clock, &recorder, &events, &store_down);
    let store = crate::world::fault_kind::store(cfg, seed, store, &recorder);
    let recording = cfg.waiting_room.map(|_| Arc::new(RecordingRooms::new(recorder.clone())));
    let rooms = cfg.waiting_room.zip(recording.clone()).map(|(r, rooms)| open_rooms(&r, &events, rooms, &recorder));
    // One seat-map cache for every service host, outside them as one Redis
    // is, behind the cache nemesis's switch; its reads traced when it has faults.
    let (shared_cache, cache_switch, cache) = seat_map_cache(cfg, &recorder);
    let mut sim = turmoil_for(cfg, seed);
    let exchanges = Exchanges::default();
    let service_lives = crate::world::service_lives::ServiceLives::default();
    let services = schedule::service_hosts(cfg.server_hosts);
    let provider = install_provider(&mut sim, cfg, seed, &services, &exchanges, &recorder);
    let switches = WorldSwitches {
        crash_enabled: Arc::new(AtomicBool::new(cfg.crash.is_some())),
        sweeper_stalled: Arc::new(AtomicBool::new(false)),
        crash_requests: Arc::new(Mutex::new(Default::default())),
    };
    for host in &services {
        let skew_ms = schedule.skew_of(host);
        let faults = host_faults(cfg, seed, host, skew_ms, &switches, &recorder);
        install_service(
            &mut sim,
            cfg,
            host,
            skew_ms,
            faults,
            (&store, &cache, rooms.as_ref()),
            (&exchanges, &service_lives, &recorder),
        );
    }
    match &cfg.waiting_room {
        Some(r) => install_room_users(&mut sim, cfg, r, seed, &services, &events, &recorder),
        None => install_users(&mut sim, cfg, seed, &services, &events, &recorder),
    }
    install_probers(&mut sim, cfg, seed, &services, &events, &recorder);
    install_self_test(&mut sim);
    let host_skew_ms = services.iter().map(|h| schedule.skew_of(h)).collect();
    World {
        sim,
        store,
        store_clock,
        recorder,
        provider,
        switches,
        exchanges,
        service_lives,
        cache: shared_cache,
        cache_switch,
        host_skew_ms,
        store_down,
        rooms: recording,
    }
}

/// Installs the fake provider's host; with a brownout window it starts
/// healthy (the step loop switches its faults).
fn install_provider(
    sim: &mut turmoil::Sim<'static>,
    cfg: &WorldConfig,
    seed: u64,
    services: &[String],
    exchanges: &Exchanges,
    recorder: &Recorder,
) -> FakeProvider {
    let faults = if cfg.provider_window_ms.is_some() { Default::default() } else { cfg.provider.clone() };
    provider_host::install(sim, host_seed(seed, "provider"), faults, services, WEBHOOK_SECRET, (exchanges, recorder))
}

/// Service host `host`'s injector (its clock `skew_ms` off the store's is
/// recorded as a fault when not 0).
fn host_faults(
    cfg: &WorldConfig,
    seed: u64,
    host: &str,
    skew_ms: i64,
    switches: &WorldSwitches,
    recorder: &Recorder,
) -> HostFaults {
    if skew_ms != 0 {
        recorder.fault_at(0, FaultEvent::ClockSkewed, format!("{host} clock skew {skew_ms} ms"));
    }
    HostFaults::new(host.to_string(), cfg.crash.clone(), host_seed(seed, host), switches, recorder.clone(), cfg.plant)
}

/// The seat-map cache every service host shares (outside them, as one
/// Redis is): the cache itself, the cache nemesis's switch, and what the
/// hosts use (the cache behind the switch, its reads traced when it has faults).
fn seat_map_cache(cfg: &WorldConfig, recorder: &Recorder) -> (Arc<MemCache>, CacheSwitch, Arc<dyn SeatMapCache>) {
    let shared = Arc::new(match cfg.seat_map_cache_ttl_ms {
        // The cache server's one clock: simulated time, the same on every host.
        Some(ttl_ms) => MemCache::with_ttl(CACHE_MAX_EVENTS, ttl_ms, Arc::new(SimClock::new(0))),
        None => MemCache::new(CACHE_MAX_EVENTS),
    });
    let switch = CacheSwitch::default();
    let traced = cfg.cache_faults.is_some().then(|| recorder.clone());
    let cache: Arc<dyn SeatMapCache> = if cfg.seat_map_cache {
        Arc::new(FaultyCache::new(shared.clone(), switch.clone(), traced))
    } else {
        Arc::new(NoCache)
    };
    (shared, switch, cache)
}

/// The rooms every service host shares (outside them, as one Redis is) and
/// their record (outside them, as PostgreSQL is), one room opened per event
/// under the waiting-room secret's lottery seeds.
fn open_rooms(
    r: &RoomWorld,
    events: &[(EventId, Vec<SeatId>)],
    rooms: Arc<RecordingRooms>,
    recorder: &Recorder,
) -> SharedRooms {
    let rooms: Arc<dyn Rooms> = rooms;
    let records: Arc<dyn RoomRecords> = Arc::new(MemRoomRecords::new());
    let opener = WaitingRoom::new(
        WaitingRoomParts {
            rooms: rooms.clone(),
            records: records.clone(),
            ..WaitingRoomParts::in_memory(ADMISSION_SECRET)
        },
        Arc::new(SimClock::new(0)),
        Arc::default(),
        FaultSeam::none(),
    );
    let spec = RoomSpec {
        policy: r.policy,
        opens_at_ms: EPOCH_MS + r.opens_at_ms as i64,
        target_active_sessions: r.target_active_sessions,
        session_ttl_ms: r.session_ttl_ms,
    };
    for (event_id, _) in events {
        recorder.world(WorldFact::RoomAsked {
            event_id: event_id.clone(),
            policy: spec.policy,
            target_active_sessions: spec.target_active_sessions,
            opens_at_ms: spec.opens_at_ms,
            session_ttl_ms: spec.session_ttl_ms,
        });
        futures::executor::block_on(opener.open(event_id, &spec)).expect("scenario rooms are valid");
    }
    (rooms, records)
}

/// The shared waiting rooms and their record.
type SharedRooms = (Arc<dyn Rooms>, Arc<dyn RoomRecords>);

/// The scenario's events (`ev0`, ...) and their seats (`s00000`, ..., in order).
fn event_seats(cfg: &WorldConfig) -> Vec<(EventId, Vec<SeatId>)> {
    (0..cfg.events)
        .map(|e| {
            (
                EventId::from(format!("ev{e}")),
                (0..cfg.seats_per_event).map(|s| SeatId::from(format!("s{s:05}"))).collect(),
            )
        })
        .collect()
}

/// The MemStore of the run, its ids seeded, every write traced, the run's
/// planted bug applied, the events created.
fn seeded_store(
    cfg: &WorldConfig,
    seed: u64,
    clock: &SimClock,
    recorder: &Recorder,
    events: &[(EventId, Vec<SeatId>)],
    down: &Arc<AtomicBool>,
) -> Arc<dyn Store> {
    let faults = cfg.plant.map(FaultSeam::planting).unwrap_or_default();
    let store = MemStore::new(Arc::new(clock.clone()), Arc::new(SeededIds::new(host_seed(seed, "ids"))))
        .with_observer(Arc::new(recorder.clone()))
        .with_faults(&faults);
    // Behind the outage switch; every call traced at its linearization point, for the auditor.
    let store = booking::store::outage::OutageStore::new(Arc::new(store), down.clone());
    let store =
        crate::world::traced_store::TracedStore::new(Arc::new(store), Arc::new(clock.clone()), recorder.clone());
    for (event_id, seat_ids) in events {
        let create =
            CreateEvent { event_id: event_id.clone(), seat_ids: seat_ids.clone(), price_cents: SEAT_PRICE_CENTS };
        futures::executor::block_on(store.create_event(&create)).expect("scenario events are valid");
    }
    Arc::new(store)
}

/// The turmoil simulation: seeded, on the fixed epoch, ticking `cfg.tick_ms`.
/// Precondition: a client host's users hold at most one connection per
/// service host each, within [`EPHEMERAL_PORTS`] (asserted).
fn turmoil_for(cfg: &WorldConfig, seed: u64) -> turmoil::Sim<'static> {
    let (min_ms, max_ms) = cfg.message_latency_ms;
    let ports = EPHEMERAL_PORTS.len();
    let per_host = cfg.users.div_ceil(cfg.client_hosts.max(1)) * cfg.server_hosts.max(1);
    assert!(
        per_host <= ports,
        "{} users on {} client hosts need up to {per_host} connections per client host; it has {ports} ports",
        cfg.users,
        cfg.client_hosts
    );
    turmoil::Builder::new()
        .rng_seed(seed)
        .epoch(std::time::UNIX_EPOCH + Duration::from_millis(EPOCH_MS as u64))
        .simulation_duration(Duration::from_millis(cfg.fault_ms + cfg.settle_ms + SIMULATION_SLACK_MS))
        .tick_duration(Duration::from_millis(cfg.tick_ms))
        .min_message_latency(Duration::from_millis(min_ms))
        .max_message_latency(Duration::from_millis(max_ms))
        // A listener's backlog: every user may dial one host in the same tick
        // (an on-sale opening), plus the services' and provider's own
        // connections. turmoil panics on a full backlog rather than refusing.
        .tcp_capacity(cfg.users + BACKLOG_SLACK)
        .ephemeral_ports(EPHEMERAL_PORTS)
        .build()
}

/// What every service host shares: the store, the seat-map cache, the waiting rooms (if any).
type SharedParts<'a> = (&'a Arc<dyn Store>, &'a Arc<dyn SeatMapCache>, Option<&'a SharedRooms>);

/// Installs service host `host`: the real [`Service`] (router, workflow,
/// sweeper) over `store`, its clock `skew_ms` off the store's, its faults
/// from `faults` (shared across its restarts).
fn install_service(
    sim: &mut turmoil::Sim<'static>,
    cfg: &WorldConfig,
    host: &str,
    skew_ms: i64,
    faults: HostFaults,
    (store, cache, rooms): SharedParts<'_>,
    (exchanges, lives, recorder): (&Exchanges, &crate::world::service_lives::ServiceLives, &Recorder),
) {
    let room_config = cfg.waiting_room.map(|r| WaitingRoomConfig {
        poll_max_s: r.poll_max_s,
        prior_session_ms: r.prior_session_ms,
        ..WaitingRoomConfig::default()
    });
    let (rooms, instance) = (rooms.cloned(), host.to_string());
    let config = ServiceConfig {
        hold_ttl_ms: cfg.hold_ttl_ms,
        payment_ttl_ms: cfg.payment_ttl_ms,
        hold_attempts_per_minute: HOLD_ATTEMPTS_PER_MINUTE,
        ..ServiceConfig::default()
    };
    let (store, cache, exchanges, workflow) = (store.clone(), cache.clone(), exchanges.clone(), cfg.workflow.clone());
    let (lives, recorder) = (lives.clone(), recorder.clone());
    let starts = std::sync::atomic::AtomicU32::new(0);
    sim.host(host, move || {
        let (store, cache, exchanges, lives) = (store.clone(), cache.clone(), exchanges.clone(), lives.clone());
        let (config, workflow) = (config.clone(), workflow.clone());
        let life = starts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let waiting_room = waiting_room_parts(rooms.as_ref(), room_config, &instance, &recorder, life);
        let faults = FaultSeam::new(Arc::new(faults.share()));
        async move {
            let provider = HttpProvider::new(
                crate::world::net::SimConnector,
                &format!("http://provider:{}", provider_host::PROVIDER_PORT),
                PROVIDER_TIMEOUT,
            )
            .expect("provider url is valid");
            let service = Arc::new(
                Service::new(ServiceParts {
                    store,
                    cache,
                    provider: Arc::new(provider),
                    clock: Arc::new(SimClock::new(skew_ms)),
                    token_secret: TOKEN_SECRET.to_vec(),
                    webhook_secret: WEBHOOK_SECRET.to_vec(),
                    config,
                    workflow,
                    sweeper: SweeperConfig::default(),
                    faults,
                    waiting_room,
                })
                .expect("service config is valid"),
            );
            lives.push(service.metrics());
            let (_stop, stop_rx) = tokio::sync::watch::channel(false);
            let bg = service.clone();
            tokio::spawn(async move { bg.run_background(stop_rx).await });
            let router = exchanges.count(crate::world::op_scope::layer(service.router()));
            serve(SimListener::bind(SERVICE_PORT).await?, router, std::future::pending()).await?;
            Ok(())
        }
    });
}

/// The waiting-room parts of one life of a service host: the world's shared
/// rooms with the host's law traced, or none (in memory, unused) without a room.
fn waiting_room_parts(
    rooms: Option<&SharedRooms>,
    config: Option<WaitingRoomConfig>,
    instance: &str,
    recorder: &Recorder,
    life: u32,
) -> WaitingRoomParts {
    match (rooms, config) {
        (Some((rooms, records)), Some(config)) => WaitingRoomParts {
            rooms: rooms.clone(),
            records: records.clone(),
            config,
            instance: instance.to_string(),
            law_log: Arc::new(crate::world::law_log::TracedLawLog::new(recorder.clone(), instance.to_string(), life)),
            ..WaitingRoomParts::in_memory(ADMISSION_SECRET)
        },
        _ => WaitingRoomParts::in_memory(ADMISSION_SECRET),
    }
}

/// What every user of the world does: the scenario's params, the world's
/// events, no new flow after the fault phase.
fn world_params(cfg: &WorldConfig, events: &[(EventId, Vec<SeatId>)]) -> crate::world::user::UserParams {
    let mut params = cfg.user.clone();
    params.events = Arc::new(events.to_vec());
    params.active_until_ms = cfg.fault_ms;
    params
}

/// A user's bearer token: every event, longer than any run, a priority tier if a member.
fn user_token(auth: &Authenticator, user: &UserId, tier: Option<u8>) -> String {
    auth.issue(&Claims {
        sub: user.clone(),
        events: vec!["*".into()],
        exp_ms: EPOCH_MS + USER_TOKEN_TTL_MS,
        admin: false,
        tier,
    })
}

/// Installs the client hosts, the users spread over them round-robin, each
/// a task with its own token, seeded randomness and a client per service host.
fn install_users(
    sim: &mut turmoil::Sim<'static>,
    cfg: &WorldConfig,
    seed: u64,
    services: &[String],
    events: &[(EventId, Vec<SeatId>)],
    recorder: &Recorder,
) {
    let auth = Authenticator::new(TOKEN_SECRET, Arc::new(SimClock::new(0)));
    let params = world_params(cfg, events);
    // Holds seen by any user of the world: the pool stale and borrowed tokens come from.
    let seen: SeenHolds = Arc::new(Mutex::new(Vec::new()));
    for c in 0..cfg.client_hosts {
        let actors: Vec<Actor> = (c..cfg.users)
            .step_by(cfg.client_hosts)
            .map(|u| {
                let user = UserId::from(format!("u{u:05}"));
                let clients =
                    services.iter().map(|s| SimClient::new(format!("{s}:{SERVICE_PORT}"), CLIENT_TIMEOUT)).collect();
                let (token, user_seed) = (user_token(&auth, &user, None), host_seed(seed, &user));
                Actor::new(user, token, clients, recorder.clone(), user_seed)
            })
            .collect();
        let (params, seen) = (params.clone(), seen.clone());
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
}

/// Installs the client hosts of a waiting-room world: every user a small
/// task that arrives, waits in its event's queue and buys once admitted;
/// the users of one client host share one client per service host (a
/// waiting user costs a sleeping task, not a connection pool). Members of a
/// priority room carry a tier-0 credential.
fn install_room_users(
    sim: &mut turmoil::Sim<'static>,
    cfg: &WorldConfig,
    room: &RoomWorld,
    seed: u64,
    services: &[String],
    events: &[(EventId, Vec<SeatId>)],
    recorder: &Recorder,
) {
    let auth = Authenticator::new(TOKEN_SECRET, Arc::new(SimClock::new(0)));
    let params = world_params(cfg, events);
    let run = RoomRun {
        bypass_share: room.bypass_share,
        give_up_at_ms: cfg.fault_ms + cfg.settle_ms,
        session_ttl_ms: u64::try_from(room.session_ttl_ms).expect("a session lifetime is positive"),
    };
    let shared: SharedAdmissions = Arc::default();
    for c in 0..cfg.client_hosts {
        let clients: Vec<SimClient> =
            services.iter().map(|s| SimClient::new(format!("{s}:{SERVICE_PORT}"), CLIENT_TIMEOUT)).collect();
        let actors: Vec<Actor> = (c..cfg.users)
            .step_by(cfg.client_hosts)
            .map(|u| {
                let user = UserId::from(format!("u{u:06}"));
                let user_seed = host_seed(seed, &user);
                // A member with `member_share`, drawn from the user's own stream (not its actor's).
                let member = ((user_seed >> 11) as f64 / (1u64 << 53) as f64) < room.member_share;
                if member {
                    recorder.world(WorldFact::Credential { user: user.clone(), tier: MEMBER_TIER });
                }
                let token = user_token(&auth, &user, member.then_some(MEMBER_TIER));
                Actor::new(user, token, clients.clone(), recorder.clone(), user_seed)
            })
            .collect();
        let (params, shared) = (params.clone(), shared.clone());
        sim.client(format!("client{c}").as_str(), async move {
            let mut set = tokio::task::JoinSet::new();
            for a in actors {
                set.spawn(a.run_in_room(params.clone(), run, shared.clone()));
            }
            while let Some(r) = set.join_next().await {
                r?;
            }
            Ok(())
        });
    }
}

/// Installs the world's probers (`cfg.probers`) as tasks on one client host
/// of their own, `probers`: each three users of its own (`p<i>`, `p<i>b`, `p<i>c`),
/// with an operator's, a scoped, an expired and a forged credential beside
/// its own (see [`crate::world::prober`]).
fn install_probers(
    sim: &mut turmoil::Sim<'static>,
    cfg: &WorldConfig,
    seed: u64,
    services: &[String],
    events: &[(EventId, Vec<SeatId>)],
    recorder: &Recorder,
) {
    if cfg.probers == 0 {
        return;
    }
    let auth = Authenticator::new(TOKEN_SECRET, Arc::new(SimClock::new(0)));
    let clients: Vec<SimClient> =
        services.iter().map(|s| SimClient::new(format!("{s}:{SERVICE_PORT}"), CLIENT_TIMEOUT)).collect();
    let mut pairs = Vec::new();
    for i in 0..cfg.probers {
        let users = [format!("p{i:04}"), format!("p{i:04}b"), format!("p{i:04}c")].map(UserId::from);
        for u in &users {
            recorder.world(WorldFact::Prober { user: u.clone() });
        }
        let actor = |u: &UserId| {
            Actor::new(u.clone(), user_token(&auth, u, None), clients.clone(), recorder.clone(), host_seed(seed, u))
        };
        pairs.push((actor(&users[0]), actor(&users[1]), actor(&users[2]), prober_kit(cfg, events, &auth, &users[0])));
    }
    let arrival_ms = cfg.user.arrival_ms;
    sim.client("probers", async move {
        let mut set = tokio::task::JoinSet::new();
        for (a, b, c, kit) in pairs {
            set.spawn(crate::world::prober::run(a, b, c, kit, arrival_ms));
        }
        while let Some(r) = set.join_next().await {
            r?;
        }
        Ok(())
    });
}

/// What prober `user` knows of the world of `cfg`: its events, its
/// credentials (an operator's, a scoped, an expired and a forged one), the
/// timing it aims with, and the faults it meets.
fn prober_kit(
    cfg: &WorldConfig,
    events: &[(EventId, Vec<SeatId>)],
    auth: &Authenticator,
    user: &UserId,
) -> crate::world::prober::ProberKit {
    let forger = Authenticator::new(b"not-the-holdfast-token-secret", Arc::new(SimClock::new(0)));
    let claims = |sub: &UserId, events: Vec<String>, exp_ms: i64, admin: bool| Claims {
        sub: sub.clone(),
        events,
        exp_ms,
        admin,
        tier: None,
    };
    let until = EPOCH_MS + USER_TOKEN_TTL_MS;
    crate::world::prober::ProberKit {
        events: events.to_vec(),
        admin_token: auth.issue(&claims(&UserId::from("operator"), vec!["*".into()], until, true)),
        scoped_token: auth.issue(&claims(user, vec![crate::world::prober::SCOPED_TO.into()], until, false)),
        expired_token: auth.issue(&claims(user, vec!["*".into()], EPOCH_MS, false)),
        forged_token: forger.issue(&claims(user, vec!["*".into()], until, false)),
        min_latency_ms: cfg.message_latency_ms.0,
        tick_ms: cfg.tick_ms,
        hold_attempts_per_minute: HOLD_ATTEMPTS_PER_MINUTE,
        webhook_secret: WEBHOOK_SECRET.to_vec(),
        max_body_bytes: ServiceConfig::default().max_body_bytes,
        active_until_ms: cfg.fault_ms,
        give_up_at_ms: cfg.fault_ms + cfg.settle_ms,
        store_outage: crate::world::fault_kind::store_outage::window(&cfg.faults).map(|w| (w.from_ms, w.to_ms)),
        room: cfg.waiting_room.map(|r| crate::world::prober::room::RoomKit {
            policy: match r.policy {
                booking::admission::room::Policy::Fifo => "fifo",
                booking::admission::room::Policy::Lottery => "lottery",
                booking::admission::room::Policy::Priority => "priority",
            },
            opens_at_ms: EPOCH_MS + r.opens_at_ms as i64,
            target_active_sessions: r.target_active_sessions,
            session_ttl_ms: r.session_ttl_ms,
        }),
    }
}

/// The environment variable that makes a world panic at that many simulated
/// ms (the harness's test of its own panic verdict; not for users).
pub const SELF_TEST_PANIC_VAR: &str = "HOLDFAST_SIM_SELF_TEST_PANIC_AT_MS";

/// The harness's own test of its panic verdict: a panic inside the world at
/// a simulated time, from [`SELF_TEST_PANIC_VAR`] (the process pool passes it on).
fn install_self_test(sim: &mut turmoil::Sim<'static>) {
    if let Some(at_ms) = std::env::var(SELF_TEST_PANIC_VAR).ok().and_then(|v| v.parse::<u64>().ok()) {
        sim.client("selftest", async move {
            tokio::time::sleep(Duration::from_millis(at_ms)).await;
            panic!("harness self-test: a panic inside the world at {at_ms} ms");
        });
    }
}
