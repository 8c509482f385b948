//! The provider host: the real fake provider app on turmoil, its webhooks
//! delivered to the service hosts over simulated HTTP (next host on failure),
//! its fault knobs switched off when the fault phase ends, its answers to
//! status reads traced as it gives them (`PaymentEvent::Read`: what the
//! reconciler was told), and its ledger — the money that actually moved —
//! appended to the trace after the run.

use crate::world::exchanges::Exchanges;
use crate::world::net::{SimConnector, SimListener};
use crate::world::recorder::Recorder;
use crate::world::sim_clock::SimClock;
use async_trait::async_trait;
use booking::fake_provider::webhook_sender::{DeliveryError, HttpWebhookTransport, WebhookTransport};
use booking::fake_provider::{FakeProvider, ProviderFaults, app};
use booking::model::{CompensationId, PaymentOpId};
use booking::payment::webhook::WebhookEvent;
use bytes::Bytes;
use invariants::trace::{PaymentEvent, WorldFact};
use std::sync::Arc;
use std::time::Duration;

/// The provider's port.
pub const PROVIDER_PORT: u16 = 9000;

/// Delivers a webhook to the first service host that accepts it; a
/// refusal of this genuine webhook is traced as the world saw it
/// ([`WorldFact::WebhookRefused`]).
struct AnyService(Vec<HttpWebhookTransport<SimConnector>>, Recorder);

#[async_trait]
impl WebhookTransport for AnyService {
    async fn deliver(&self, timestamp_ms: i64, signature: &str, body: Bytes) -> Result<(), DeliveryError> {
        let mut last = DeliveryError::Failed("no service hosts".into());
        for (host, t) in self.0.iter().enumerate() {
            match t.deliver(timestamp_ms, signature, body.clone()).await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    if let DeliveryError::Refused(status) = e {
                        self.refused(host, status, &body);
                    }
                    last = e;
                }
            }
        }
        Err(last)
    }
}

impl AnyService {
    /// Traces service host `host`'s refusal (`status`) of the webhook `body` the provider made.
    fn refused(&self, host: usize, status: u16, body: &[u8]) {
        let event: WebhookEvent = serde_json::from_slice(body).expect("the provider's own webhook body");
        let kind = serde_json::to_value(event.kind).expect("serializable").as_str().unwrap_or_default().to_string();
        self.1.world(WorldFact::WebhookRefused {
            payment_op_id: PaymentOpId::from(event.payment_key),
            kind,
            host: u32::try_from(host).expect("few hosts"),
            status,
        });
    }
}

/// Largest provider answer the read tracer buffers, bytes (a payment record is a few hundred).
const MAX_TRACED_ANSWER_BYTES: usize = 64 * 1024;

/// `router` with its answers to `GET /v1/payments/{key}` traced: the status
/// it answered, or no record (`404`); other answers (injected errors) are not reads.
fn traced_reads(router: axum::Router, recorder: Recorder) -> axum::Router {
    router.layer(axum::middleware::from_fn(move |req: axum::extract::Request, next: axum::middleware::Next| {
        let recorder = recorder.clone();
        async move {
            let key = (req.method() == axum::http::Method::GET)
                .then(|| req.uri().path().strip_prefix("/v1/payments/").and_then(|k| uuid::Uuid::parse_str(k).ok()))
                .flatten();
            let resp = next.run(req).await;
            let Some(payment_op_id) = key else { return resp };
            let (parts, body) = resp.into_parts();
            let bytes = axum::body::to_bytes(body, MAX_TRACED_ANSWER_BYTES).await.unwrap_or_default();
            let status = match parts.status.as_u16() {
                200 => serde_json::from_slice::<serde_json::Value>(&bytes)
                    .ok()
                    .and_then(|v| v["status"].as_str().map(|s| Some(s.to_string()))),
                404 => Some(None),
                _ => None,
            };
            if let Some(status) = status {
                recorder.payment(PaymentEvent::Read { payment_op_id: PaymentOpId::from(payment_op_id), status });
            }
            axum::response::Response::from_parts(parts, axum::body::Body::from(bytes))
        }
    }))
}

/// Installs the provider host, its requests counted in `exchanges` and its
/// status reads traced to `recorder`; returns the provider's shared state.
pub fn install(
    sim: &mut turmoil::Sim<'_>,
    seed: u64,
    faults: ProviderFaults,
    services: &[String],
    webhook_secret: &[u8],
    (exchanges, recorder): (&Exchanges, &Recorder),
) -> FakeProvider {
    let transports = services
        .iter()
        .map(|s| {
            HttpWebhookTransport::new(
                SimConnector,
                &format!("http://{s}:{}/v1/webhooks/provider", crate::world::deployment::SERVICE_PORT),
                Duration::from_secs(2),
            )
            .expect("webhook url is valid")
        })
        .collect();
    let provider = FakeProvider::new(
        seed,
        faults,
        Arc::new(SimClock::new(0)),
        Some(Arc::new(AnyService(transports, recorder.clone()))),
        webhook_secret,
    )
    .expect("scenario provider faults are valid");
    let shared = provider.clone();
    let exchanges = exchanges.clone();
    let recorder = recorder.clone();
    sim.host("provider", move || {
        let provider = shared.clone();
        let exchanges = exchanges.clone();
        let recorder = recorder.clone();
        async move {
            let app = exchanges.count(traced_reads(app(provider), recorder));
            booking::http::serve(SimListener::bind(PROVIDER_PORT).await?, app, std::future::pending()).await?;
            Ok(())
        }
    });
    provider
}

/// The provider's ledger — every charge and refund that really happened, in
/// key order — as trace events (the simulator's and chaos mode's).
pub fn ledger_events(ledger: &booking::fake_provider::Ledger) -> Vec<PaymentEvent> {
    let charges = ledger.payments.iter().filter(|p| p.status == "succeeded").map(|p| PaymentEvent::Charged {
        payment_op_id: PaymentOpId::from(p.idempotency_key),
        amount_cents: p.amount_cents,
        provider_payment_id: p.id.clone(),
    });
    let refunds = ledger.refunds.iter().map(|r| PaymentEvent::Refunded {
        compensation_id: CompensationId::from(r.idempotency_key),
        payment_op_id: PaymentOpId::from(r.payment_key),
        amount_cents: r.amount_cents,
    });
    charges.chain(refunds).collect()
}

/// Appends the provider's ledger ([`ledger_events`]) to the trace.
pub fn record_ledger(provider: &FakeProvider, recorder: &Recorder) {
    for e in ledger_events(&provider.ledger()) {
        recorder.payment(e);
    }
}
