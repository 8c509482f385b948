//! Honest knobs: the fault keys whose effect scenarios/README.md states are
//! measured in a simulated world (turmoil's clock), each against what the
//! README says it does: the provider's response time spread over its
//! `{ min, max }`, a delayed callback's probability and delay, and the
//! network's least message latency.

use async_trait::async_trait;
use booking::fake_provider::{DeliveryError, FakeProvider, ProviderFaults, WebhookTransport};
use booking::payment::wire::CreatePaymentBody;
use bytes::Bytes;
use invariants::trace::TraceKind;
use simulator::world::plan::{self, Plan};
use simulator::world::sim_clock::SimClock;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

/// Runs `probe` as the one client of a turmoil world, to its end.
fn in_world<F: std::future::Future<Output = ()> + 'static>(probe: F) {
    let mut sim = turmoil::Builder::new().rng_seed(7).simulation_duration(Duration::from_secs(3_600)).build();
    sim.client("probe", async move {
        probe.await;
        Ok(())
    });
    sim.run().expect("the world runs");
}

/// When each webhook arrived, by payment key.
#[derive(Default, Clone)]
struct Arrivals(Arc<Mutex<BTreeMap<String, Instant>>>);

#[async_trait]
impl WebhookTransport for Arrivals {
    async fn deliver(&self, _timestamp_ms: i64, _signature: &str, body: Bytes) -> Result<(), DeliveryError> {
        let event: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| DeliveryError::Failed(e.to_string()))?;
        let key = event["payment_key"].as_str().unwrap_or_default().to_string();
        self.0.lock().unwrap().entry(key).or_insert_with(Instant::now);
        Ok(())
    }
}

fn provider(faults: ProviderFaults, webhooks: Option<Arc<dyn WebhookTransport>>) -> FakeProvider {
    FakeProvider::new(11, faults, Arc::new(SimClock::new(0)), webhooks, b"secret").expect("valid knobs")
}

/// A payment's idempotency key and body, the `i`-th of a probe.
fn payment(i: u128) -> (Uuid, CreatePaymentBody) {
    (
        Uuid::from_u128(i + 1),
        CreatePaymentBody { amount_cents: 100, order_id: booking::model::OrderId::from_u128(1_000_000 + i) },
    )
}

/// `faults.provider.latency_ms = { min, max }`: each answer takes a uniform
/// draw in the range (it once collapsed to the midpoint).
#[test]
fn provider_latency_spreads_between_min_and_max() {
    let faults = ProviderFaults { latency_ms: 100, latency_max_ms: 900, ..ProviderFaults::default() };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let out = seen.clone();
    in_world(async move {
        let p = provider(faults, None);
        for i in 0..300 {
            let (key, body) = payment(i);
            let started = Instant::now();
            p.create_payment(key, body).await.expect("no fault but latency");
            out.lock().unwrap().push(started.elapsed().as_millis() as u64);
        }
    });
    let ms = seen.lock().unwrap().clone();
    let (lo, hi) = (*ms.iter().min().unwrap(), *ms.iter().max().unwrap());
    let mean = ms.iter().sum::<u64>() as f64 / ms.len() as f64;
    assert!(lo >= 100 && hi <= 901, "every answer within min..=max: {lo}..{hi}");
    assert!(lo < 200 && hi > 800, "the whole range is used: {lo}..{hi}");
    assert!((400.0..600.0).contains(&mean), "uniform: mean {mean}");
    // A fixed latency stays fixed.
    let fixed = Arc::new(Mutex::new(Vec::new()));
    let out = fixed.clone();
    in_world(async move {
        let p = provider(ProviderFaults { latency_ms: 250, ..ProviderFaults::default() }, None);
        for i in 0..20 {
            let (key, body) = payment(i);
            let started = Instant::now();
            p.create_payment(key, body).await.expect("no fault but latency");
            out.lock().unwrap().push(started.elapsed().as_millis() as u64);
        }
    });
    assert!(fixed.lock().unwrap().iter().all(|&ms| (250..=251).contains(&ms)), "{:?}", fixed.lock().unwrap());
}

/// `faults.delayed_callback.probability` and `delay_ms`: that share of
/// callbacks is held back `delay_ms`; the others arrive within the webhook
/// jitter (it once held back every callback and raised the late-success rate).
#[test]
fn a_delayed_callback_is_held_back_with_its_probability_for_its_delay() {
    let scenario = plan::find("duplicate-webhooks").expect("library scenario");
    let mut faults = scenario.world_for(0).provider;
    assert_eq!((faults.webhook_hold_rate, faults.webhook_hold_ms), (0.3, 5_000), "the scenario's knobs");
    assert_eq!(faults.webhook_delay_ms, plan::WEBHOOK_JITTER_MS);
    // Measure the hold alone: one copy per callback, in order.
    faults.webhook_duplicate_rate = 0.0;
    faults.webhook_reorder_rate = 0.0;
    faults.late_success_rate = 0.0;
    let arrivals = Arrivals::default();
    let sent = Arc::new(Mutex::new(BTreeMap::new()));
    let (transport, sent_in, out) = (arrivals.clone(), sent.clone(), Arc::new(Mutex::new(None)));
    let held_stat = out.clone();
    in_world(async move {
        let p = provider(faults, Some(Arc::new(transport)));
        for i in 0..400 {
            let (key, body) = payment(i);
            p.create_payment(key, body).await.expect("no fault");
            sent_in.lock().unwrap().insert(key.to_string(), Instant::now());
        }
        while p.pending_tasks() > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        *out.lock().unwrap() = Some(p.ledger().stats.webhooks_held);
    });
    let (sent, arrived) = (sent.lock().unwrap().clone(), arrivals.0.lock().unwrap().clone());
    assert_eq!(arrived.len(), sent.len(), "every callback arrives");
    let delays: Vec<u64> = sent.iter().map(|(k, at)| (arrived[k] - *at).as_millis() as u64).collect();
    let held = delays.iter().filter(|&&d| d >= 5_000).count();
    assert!(delays.iter().all(|&d| d <= plan::WEBHOOK_JITTER_MS + 1 || (5_000..=6_001).contains(&d)), "{delays:?}");
    let share = held as f64 / delays.len() as f64;
    assert!((0.22..=0.38).contains(&share), "held back {held} of {}: {share}", delays.len());
    assert_eq!(held_stat.lock().unwrap().expect("measured"), held as u64, "the ledger counts what was held");
}

/// `faults.network.latency_ms = { min, max }`: no answer comes sooner than
/// a request and its answer at the least latency (min was once ignored).
#[test]
fn network_latency_min_is_the_least_latency_of_every_message() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/library/same-seat-race.toml"))
        .expect("library file")
        .replace("[phases]", "[faults.network]\npartition_probability = 0.0\npartition_ms = 1000\nlatency_ms = { min = 300, max = 400 }\n\n[phases]");
    let s = scenarios::Scenario::parse(&text, "knobs").expect("valid scenario");
    let cfg = Plan::new(s, None).world_for(0);
    assert_eq!(cfg.message_latency_ms, (300, 400));
    let out = simulator::world::run(&cfg, 0);
    drop(std::panic::take_hook());
    let mut invoked = BTreeMap::new();
    let mut round_trips_ms = Vec::new();
    for e in &out.trace {
        match &e.kind {
            TraceKind::Invoke { op_id, .. } => {
                invoked.insert(*op_id, e.at_ms);
            }
            TraceKind::Ok { op_id, .. } | TraceKind::Fail { op_id, .. } => {
                round_trips_ms.push(e.at_ms - invoked[op_id])
            }
            _ => {}
        }
    }
    assert!(round_trips_ms.len() > 50, "{} answers", round_trips_ms.len());
    let least = *round_trips_ms.iter().min().unwrap();
    // A request and its answer are at least two messages (a new connection more).
    assert!(least >= 600, "an answer after {least} ms");
}
