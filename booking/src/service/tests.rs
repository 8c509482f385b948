//! Payment outcome metrics count each decision once, whichever path (webhook,
//! dispatcher) reports it and in whichever order.

use super::{WorkflowWebhooks, record_dispatch};
use crate::clock::{Clock, ManualClock};
use crate::http::WebhookSink;
use crate::ids::SeededIds;
use crate::metrics::Metrics;
use crate::model::{CompensationId, PaymentOpId};
use crate::payment::provider::{
    CreatePayment, PaymentProvider, ProviderError, ProviderPayment, ProviderStatus, RefundStatus, UnreachableProvider,
};
use crate::payment::replay_guard::ReplayGuard;
use crate::payment::webhook::{SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookEvent, WebhookKind, sign};
use crate::payment::workflow::{Workflow, WorkflowConfig};
use crate::store::{AcquireHold, BeginPayment, CreateEvent, MemStore, Store};
use async_trait::async_trait;
use axum::http::HeaderMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

const SECRET: &[u8] = b"0123456789abcdef-webhooks";
const START_MS: i64 = 1_700_000_000_000;

/// A provider that charges every payment and, before answering the
/// dispatcher, delivers the success webhook for it: the webhook and the
/// dispatcher both report the same success, the webhook first.
struct WebhookFirst {
    sink: OnceLock<Arc<WorkflowWebhooks>>,
    clock: Arc<ManualClock>,
}

/// A webhook of `kind` for `payment_key`, signed at `now_ms`: its headers and body.
fn signed_webhook(kind: WebhookKind, payment_key: PaymentOpId, now_ms: i64) -> (HeaderMap, Vec<u8>) {
    let event = WebhookEvent {
        provider_event_id: format!("evt_{payment_key}"),
        sequence: 1,
        kind,
        payment_key: payment_key.as_uuid(),
        provider_payment_id: "pay_1".into(),
        refund_key: None,
        failure_reason: None,
        created_at_ms: now_ms,
    };
    let body = serde_json::to_vec(&event).expect("serializable");
    let mut headers = HeaderMap::new();
    headers.insert(TIMESTAMP_HEADER, now_ms.to_string().parse().expect("header"));
    headers.insert(SIGNATURE_HEADER, sign(SECRET, now_ms, &body).parse().expect("header"));
    (headers, body)
}

impl WebhookFirst {
    async fn deliver(&self, kind: WebhookKind, payment_key: PaymentOpId) {
        let (headers, body) = signed_webhook(kind, payment_key, self.clock.now_ms());
        let sink = self.sink.get().expect("sink installed");
        sink.receive(&headers, &body).await.expect("webhook accepted");
    }
}

#[async_trait]
impl PaymentProvider for WebhookFirst {
    async fn create_payment(&self, req: &CreatePayment) -> Result<ProviderPayment, ProviderError> {
        self.deliver(WebhookKind::PaymentSucceeded, req.idempotency_key).await;
        Ok(ProviderPayment { provider_payment_id: "pay_1".into(), status: ProviderStatus::Succeeded })
    }

    async fn fetch_payment(&self, _key: PaymentOpId) -> Result<Option<ProviderPayment>, ProviderError> {
        Ok(Some(ProviderPayment { provider_payment_id: "pay_1".into(), status: ProviderStatus::Succeeded }))
    }

    async fn cancel_payment(&self, _key: PaymentOpId) -> Result<ProviderPayment, ProviderError> {
        Ok(ProviderPayment { provider_payment_id: "pay_1".into(), status: ProviderStatus::Succeeded })
    }

    async fn refund(
        &self,
        _refund_key: CompensationId,
        _payment_key: PaymentOpId,
        _amount: i64,
    ) -> Result<RefundStatus, ProviderError> {
        Ok(RefundStatus::Succeeded)
    }
}

/// An order awaiting its charge (outbox row due) in `store`.
async fn checked_out(store: &dyn Store) -> PaymentOpId {
    store
        .create_event(&CreateEvent { event_id: "ev".into(), seat_ids: vec!["a".into()], price_cents: 1_000 })
        .await
        .unwrap();
    let g = store
        .acquire_hold(&AcquireHold {
            event_id: "ev".into(),
            seat_ids: vec!["a".into()],
            holder_id: "ann".into(),
            ttl_ms: 60_000,
            max_held_seats: None,
        })
        .await
        .unwrap();
    let begun = store
        .begin_payment(&BeginPayment {
            event_id: "ev".into(),
            holder_id: "ann".into(),
            hold_token: g.hold_token,
            seat_ids: vec!["a".into()],
            idempotency_key: "k".into(),
            payment_ttl_ms: 600_000,
        })
        .await
        .unwrap();
    begun.order.payment_op_id
}

#[tokio::test]
async fn a_success_reported_by_webhook_and_dispatcher_counts_once() {
    let clock = ManualClock::new(START_MS);
    let store: Arc<dyn Store> = Arc::new(MemStore::new(clock.clone(), Arc::new(SeededIds::new(7))));
    let op = checked_out(store.as_ref()).await;
    let provider = Arc::new(WebhookFirst { sink: OnceLock::new(), clock: clock.clone() });
    let workflow = Arc::new(Workflow::new(store.clone(), provider.clone(), WorkflowConfig::default()).unwrap());
    let metrics = Arc::new(Metrics::default());
    let sink = Arc::new(WorkflowWebhooks {
        workflow: workflow.clone(),
        secret: SECRET.to_vec(),
        clock: clock.clone(),
        metrics: metrics.clone(),
        replays: None,
    });
    assert!(provider.sink.set(sink).is_ok());

    let report = workflow.dispatch_once().await.unwrap();
    assert_eq!((report.claimed, report.confirmed), (1, 0), "the webhook decided it first");
    record_dispatch(&metrics, Ok(report));
    assert_eq!(store.payment_op(op).await.unwrap().status, crate::model::PaymentStatus::Succeeded);
    assert_eq!(metrics.payments_succeeded.load(Ordering::SeqCst), 1, "one payment, one count");

    // A duplicate delivery decides nothing and counts nothing.
    provider.deliver(WebhookKind::PaymentSucceeded, op).await;
    assert_eq!(metrics.payments_succeeded.load(Ordering::SeqCst), 1);
    assert!(metrics.render().contains("holdfast_payments_total{outcome=\"succeeded\"} 1\n"), "{}", metrics.render());
}

/// A webhook delivered again (the provider never got the first answer) is
/// accepted again; the planted replay guard refuses it with a 4xx.
#[tokio::test]
async fn a_repeated_webhook_is_accepted_and_only_the_planted_guard_refuses_it() {
    for planted in [false, true] {
        let clock = ManualClock::new(START_MS);
        let store: Arc<dyn Store> = Arc::new(MemStore::new(clock.clone(), Arc::new(SeededIds::new(7))));
        let op = checked_out(store.as_ref()).await;
        let workflow = Workflow::new(store, Arc::new(UnreachableProvider), WorkflowConfig::default()).unwrap();
        let sink = WorkflowWebhooks {
            workflow: Arc::new(workflow),
            secret: SECRET.to_vec(),
            clock: clock.clone(),
            metrics: Arc::new(Metrics::default()),
            replays: planted.then(ReplayGuard::default),
        };
        let (headers, body) = signed_webhook(WebhookKind::PaymentSucceeded, op, clock.now_ms());
        assert!(sink.receive(&headers, &body).await.is_ok(), "the first delivery is applied");
        let again = sink.receive(&headers, &body).await;
        match planted {
            false => assert!(again.is_ok(), "a repeat is answered as applied: {again:?}"),
            true => assert_eq!(again.map_err(|p| p.status), Err(401), "the planted guard refuses it"),
        }
    }
}
