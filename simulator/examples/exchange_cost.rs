//! Benchmark: the wall cost of one HTTP exchange between a virtual user and
//! the real router inside turmoil, and of one simulated step of a world that
//! exchanges nothing — the two floors under every seed's cost.
//!
//! One service host (the real router over a 100-seat MemStore event, 90 of
//! its seats held), one
//! client host running `users` tasks that each send `per_user` requests of one
//! kind, 500 ms apart. Prints one JSON line per kind with microseconds per
//! exchange, then one for a step of an idle world of `idle_hosts` hosts
//! (default 8, all-faults' count). `ci/bench` runs it; by hand:
//!
//! ```sh
//! cargo run --release -p simulator --example exchange_cost -- [users] [per_user] [idle_hosts]
//! ```

use booking::http::auth::{Authenticator, Claims};
use booking::http::cache::NoCache;
use booking::http::{ServiceConfig, serve};
use booking::ids::SeededIds;
use booking::model::MAX_HOLD_TTL_MS;
use booking::payment::provider::UnreachableProvider;
use booking::service::{Service, ServiceParts};
use booking::store::{AcquireHold, CreateEvent, MemStore, Store};
use simulator::world::client::{Call, SimClient};
use simulator::world::net::SimListener;
use simulator::world::sim_clock::{EPOCH_MS, SimClock};
use std::sync::Arc;
use std::time::Duration;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SECRET: &[u8] = b"exchange-cost-secret-0123";
const SEATS: usize = 100;

/// The request kinds measured: name, method, path and JSON body.
const KINDS: &[(&str, &str, &str, Option<&str>)] = &[
    ("healthz", "GET", "/healthz", None),
    ("order-not-found", "GET", "/v1/orders/00000000-0000-0000-0000-000000000000", None),
    ("hold-refused-seat-held", "POST", "/v1/events/e1/holds", Some(r#"{"seat_ids":["s00000"]}"#)),
    ("seat-map-100", "GET", "/v1/events/e1/seats", None),
    ("seat-map-10-of-100-available", "GET", "/v1/events/e1/seats?state=available", None),
];

fn measure(
    kind: (&'static str, &'static str, &'static str, Option<&'static str>),
    users: usize,
    per_user: usize,
) -> f64 {
    let (_, method, path, body) = kind;
    let mut sim = turmoil::Builder::new()
        .rng_seed(1)
        .simulation_duration(Duration::from_secs(100_000))
        .tick_duration(Duration::from_millis(simulator::world::plan::TICK_MS))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(20))
        .build();
    let store = Arc::new(MemStore::new(Arc::new(SimClock::new(0)), Arc::new(SeededIds::new(42))));
    futures::executor::block_on(store.create_event(&CreateEvent {
        event_id: "e1".into(),
        seat_ids: (0..SEATS).map(|s| format!("s{s:05}").into()).collect(),
        price_cents: 100,
    }))
    .expect("valid event");
    // A rush in progress: all but the last 10 seats held for the whole run.
    for seat in 0..SEATS - 10 {
        futures::executor::block_on(store.acquire_hold(&AcquireHold {
            event_id: "e1".into(),
            seat_ids: vec![format!("s{seat:05}").into()],
            holder_id: "early-bird".into(),
            ttl_ms: MAX_HOLD_TTL_MS,
            max_held_seats: None,
        }))
        .expect("a free seat can be held");
    }
    sim.host("svc0", move || {
        let store = store.clone();
        async move {
            // The hold limiter out of the way: this measures exchanges, not refusals.
            let config = ServiceConfig { hold_attempts_per_minute: 1_000_000, ..ServiceConfig::default() };
            let service = Service::new(ServiceParts {
                store,
                cache: Arc::new(NoCache),
                provider: Arc::new(UnreachableProvider),
                clock: Arc::new(SimClock::new(0)),
                token_secret: SECRET.to_vec(),
                webhook_secret: SECRET.to_vec(),
                config,
                workflow: Default::default(),
                sweeper: Default::default(),
                faults: booking::fault::FaultSeam::none(),
                waiting_room: booking::admission::waiting_room::WaitingRoomParts::in_memory(
                    b"admission-secret-0123456789",
                ),
            })
            .expect("a valid service");
            serve(SimListener::bind(8080).await?, service.router(), std::future::pending()).await?;
            Ok(())
        }
    });
    sim.client("users", async move {
        let auth = Authenticator::new(SECRET, Arc::new(SimClock::new(0)));
        let mut set = tokio::task::JoinSet::new();
        for u in 0..users {
            let token = auth.issue(&Claims {
                sub: format!("u{u}").into(),
                events: vec!["*".into()],
                exp_ms: EPOCH_MS + 365 * 86_400_000,
                admin: false,
                tier: None,
            });
            let client = SimClient::new("svc0:8080", Duration::from_secs(30));
            set.spawn(async move {
                // Staggered starts: turmoil's accept queue is bounded.
                tokio::time::sleep(Duration::from_millis(u as u64 * 5)).await;
                for _ in 0..per_user {
                    let body = body.map(|b| serde_json::from_str(b).expect("a JSON body"));
                    let call = Call {
                        method,
                        path: path.into(),
                        token: Some(&token),
                        idempotency_key: None,
                        admission: None,
                        if_none_match: None,
                        body,
                        op: None,
                    };
                    client.send_raw(call).await.expect("the service answers");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            });
        }
        while let Some(r) = set.join_next().await {
            r?;
        }
        Ok(())
    });
    #[allow(clippy::disallowed_methods)] // wall time is what a benchmark measures
    let started = std::time::Instant::now();
    sim.run().expect("the benchmark world runs");
    started.elapsed().as_secs_f64() * 1e6 / (users * per_user) as f64
}

/// Microseconds per step of a world of `hosts` hosts whose software only
/// sleeps (turmoil ticking each host's runtime and the network, nothing
/// else), over `steps` steps of [`simulator::world::plan::TICK_MS`].
fn idle_step_us(hosts: usize, steps: u64) -> f64 {
    let tick_ms = simulator::world::plan::TICK_MS;
    let mut sim = turmoil::Builder::new()
        .rng_seed(1)
        .simulation_duration(Duration::from_millis(tick_ms * (steps + 10)))
        .tick_duration(Duration::from_millis(tick_ms))
        .build();
    for h in 0..hosts - 1 {
        sim.host(format!("idle{h}").as_str(), || async {
            std::future::pending::<()>().await;
            Ok(())
        });
    }
    sim.client("sleeper", async move {
        tokio::time::sleep(Duration::from_millis(tick_ms * steps)).await;
        Ok(())
    });
    #[allow(clippy::disallowed_methods)] // wall time is what a benchmark measures
    let started = std::time::Instant::now();
    sim.run().expect("the idle world runs");
    started.elapsed().as_secs_f64() * 1e6 / steps as f64
}

fn main() {
    simulator::run::allocator::tune();
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("numbers")).collect();
    let users = args.first().copied().unwrap_or(100);
    let per_user = args.get(1).copied().unwrap_or(20);
    // all-faults has 8 hosts (3 services, the provider, 4 client hosts).
    let hosts = args.get(2).copied().unwrap_or(8);
    // A warm-up world first: the first world of a process pays for growing the heap.
    measure(KINDS[0], users, per_user.min(2));
    for &k in KINDS {
        let (kind, ..) = k;
        let us = measure(k, users, per_user);
        println!(r#"{{"kind":"{kind}","exchanges":{},"us_per_exchange":{us:.1}}}"#, users * per_user);
    }
    // all-faults' 120 simulated seconds: 6,000 steps.
    let steps = 6_000;
    let us = idle_step_us(hosts, steps);
    let tick_ms = simulator::world::plan::TICK_MS;
    println!(r#"{{"kind":"idle-step","hosts":{hosts},"steps":{steps},"tick_ms":{tick_ms},"us_per_step":{us:.2}}}"#);
}
