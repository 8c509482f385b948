//! The real router inside turmoil over MemStore: Alice's hold expires, Bob
//! takes the seat, Alice's late checkout is refused and Bob's succeeds, all
//! through simulated HTTP with the store's clock on simulated time.

use booking::http::auth::{Authenticator, Claims};
use booking::http::cache::NoCache;
use booking::http::{ServiceConfig, serve};
use booking::ids::SeededIds;
use booking::payment::provider::UnreachableProvider;
use booking::service::{Service, ServiceParts};
use booking::store::{CreateEvent, MemStore, Store};
use serde_json::json;
use simulator::world::client::{Call, Reply, SimClient};
use simulator::world::net::SimListener;
use simulator::world::sim_clock::{EPOCH_MS, SimClock};
use std::sync::Arc;
use std::time::Duration;

const SECRET: &[u8] = b"simulation-secret-0123";

#[test]
fn alice_bob_story_over_simulated_http() {
    let mut sim = turmoil::Builder::new().rng_seed(42).simulation_duration(Duration::from_secs(60)).build();
    let store = Arc::new(MemStore::new(Arc::new(SimClock::new(0)), Arc::new(SeededIds::new(42))));
    let created = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for host in ["svc0", "svc1"] {
        let store = store.clone();
        let created = created.clone();
        sim.host(host, move || {
            let store = store.clone();
            let created = created.clone();
            async move {
                if !created.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    store
                        .create_event(&CreateEvent {
                            event_id: "e1".into(),
                            seat_ids: vec!["1A".into()],
                            price_cents: 100,
                        })
                        .await
                        .unwrap();
                }
                let service = Service::new(ServiceParts {
                    store: store.clone(),
                    cache: Arc::new(NoCache),
                    provider: Arc::new(UnreachableProvider),
                    clock: Arc::new(SimClock::new(0)),
                    token_secret: SECRET.to_vec(),
                    webhook_secret: SECRET.to_vec(),
                    config: ServiceConfig { hold_ttl_ms: 5_000, ..ServiceConfig::default() },
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
    }
    sim.client("users", async move {
        let auth = Authenticator::new(SECRET, Arc::new(SimClock::new(0)));
        let tok = |u: &str| {
            auth.issue(&Claims {
                sub: u.into(),
                events: vec!["e1".into()],
                exp_ms: EPOCH_MS + 3_600_000,
                admin: false,
                tier: None,
            })
        };
        let (alice, bob) = (tok("alice"), tok("bob"));
        let a = SimClient::new("svc0:8080", Duration::from_secs(2));
        let b = SimClient::new("svc1:8080", Duration::from_secs(2));
        let hold = |c: &SimClient, t: &str| {
            let (c, t) = (c.clone(), t.to_string());
            async move {
                c.send(Call {
                    method: "POST",
                    path: "/v1/events/e1/holds".into(),
                    token: Some(&t),
                    idempotency_key: None,
                    admission: None,
                    if_none_match: None,
                    body: Some(json!({"seat_ids":["1A"]})),
                    op: None,
                })
                .await
            }
        };
        let Reply::Answered { status: 201, body } = hold(&a, &alice).await else { panic!("alice's hold") };
        let token_a = body["hold_token"].as_str().unwrap().to_string();
        // Alice's laptop sleeps past her deadline.
        tokio::time::sleep(Duration::from_secs(6)).await;
        let Reply::Answered { status: 201, body } = hold(&b, &bob).await else { panic!("bob takes the expired hold") };
        let token_b = body["hold_token"].as_str().unwrap().to_string();
        let checkout = |c: &SimClient, t: &str, token: &str, key: &str| {
            let (c, t, path, key) =
                (c.clone(), t.to_string(), format!("/v1/events/e1/holds/{token}/checkout"), key.to_string());
            async move {
                c.send(Call {
                    method: "POST",
                    path,
                    token: Some(&t),
                    idempotency_key: Some(&key),
                    admission: None,
                    if_none_match: None,
                    body: Some(json!({"seat_ids":["1A"]})),
                    op: None,
                })
                .await
            }
        };
        match checkout(&a, &alice, &token_a, "alice-1").await {
            Reply::Answered { status: 409, body } => assert_eq!(body["type"], "urn:holdfast:problem:stale-token"),
            other => panic!("alice's stale checkout must be refused: {other:?}"),
        }
        match checkout(&b, &bob, &token_b, "bob-1").await {
            Reply::Answered { status: 201, body } => assert_eq!(body["status"], "pending"),
            other => panic!("bob's checkout: {other:?}"),
        }
        Ok(())
    });
    sim.run().unwrap();
    let seats = futures::executor::block_on(async { store.snapshot().await.unwrap().seats });
    assert_eq!(seats[0].state, booking::model::SeatState::PaymentPending);
    assert_eq!(seats[0].holder_id.as_deref(), Some("bob"));
}
