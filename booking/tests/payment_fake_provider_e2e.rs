//! The workflow end to end over real HTTP against the fake provider app
//! (in-process, on a tokio listener), with signed webhooks delivered to a
//! receiver that verifies them and calls `Workflow::handle_webhook`.

use crate::payment_support;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use booking::clock::{Clock, ManualClock};
use booking::fake_provider::{FakeProvider, HttpWebhookTransport, ProviderFaults, app};
use booking::model::{CompensationStatus, OrderStatus};
use booking::payment::webhook::{DEFAULT_TOLERANCE_MS, SIGNATURE_HEADER, TIMESTAMP_HEADER, verify_and_parse};
use booking::payment::{HttpProvider, Workflow};
use payment_support::*;
use std::sync::Arc;
use std::time::Duration;

const SECRET: &[u8] = b"test-secret";

async fn serve(router: axum::Router) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, router).await.unwrap() });
    format!("http://{addr}")
}

struct Receiver {
    wf: Arc<Workflow>,
    clock: Arc<ManualClock>,
}

async fn receive(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
    let ev = match verify_and_parse(
        SECRET,
        h(TIMESTAMP_HEADER).as_deref(),
        h(SIGNATURE_HEADER).as_deref(),
        &body,
        r.clock.now_ms(),
        DEFAULT_TOLERANCE_MS,
    ) {
        Ok(ev) => ev,
        Err(_) => return StatusCode::BAD_REQUEST,
    };
    match r.wf.handle_webhook(&ev).await {
        Ok(_) => StatusCode::OK,
        Err(_) => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

struct E2e {
    w: World,
    wf: Arc<Workflow>,
    fake: FakeProvider,
}

async fn e2e(faults: ProviderFaults) -> E2e {
    let w = World::new(mem_store).await;
    // The receiver needs the workflow, the workflow needs the provider URL: bind the receiver later.
    let recv_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let recv_url = format!("http://{}/webhooks", recv_listener.local_addr().unwrap());
    let transport = HttpWebhookTransport::with_http(&recv_url, Duration::from_secs(2)).unwrap();
    let fake = FakeProvider::new(11, faults, w.clock.clone(), Some(Arc::new(transport)), SECRET).unwrap();
    let url = serve(app(fake.clone())).await;
    let provider = Arc::new(HttpProvider::with_http(&url, Duration::from_secs(2)).unwrap());
    let wf = Arc::new(Workflow::new(w.store.clone(), provider, test_config()).unwrap());
    let recv = axum::Router::new()
        .route("/webhooks", axum::routing::post(receive))
        .with_state(Arc::new(Receiver { wf: wf.clone(), clock: w.clock.clone() }));
    tokio::spawn(async move { axum::serve(recv_listener, recv).await.unwrap() });
    E2e { w, wf, fake }
}

async fn wait_for(mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..300 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached in 3 s");
}

#[tokio::test]
async fn lost_response_then_reconciled_over_http() {
    let E2e { w, wf, fake } = e2e(ProviderFaults { lost_response_rate: 1.0, ..ProviderFaults::default() }).await;
    let order = w.checkout("alice", &["A1"]).await;
    let r = wf.dispatch_once().await.unwrap();
    assert_eq!(r.unknown, 1, "a 500 after processing is an unknown outcome");
    // The success webhook (no delay) may already have confirmed it; either way it ends confirmed.
    wait_for(async || {
        w.order(&order).await.status == OrderStatus::Confirmed || wf.reconcile_once().await.unwrap().succeeded == 1
    })
    .await;
    assert_eq!(w.order(&order).await.status, OrderStatus::Confirmed);
    assert_eq!(fake.ledger().payments.len(), 1, "one charge for all the retries");
    w.assert_nothing_charged_is_hidden(false).await;
}

#[tokio::test]
async fn late_success_after_release_refunded_over_http_with_failing_refunds() {
    let faults = ProviderFaults {
        late_success_rate: 1.0,
        late_success_delay_ms: 200,
        refund_fail_first_n: 2,
        webhook_duplicate_rate: 1.0,
        webhook_delay_ms: 30,
        webhook_reorder_rate: 0.5,
        ..ProviderFaults::default()
    };
    let E2e { w, wf, fake } = e2e(faults).await;
    let order = w.checkout("alice", &["A1"]).await;
    assert_eq!(wf.dispatch_once().await.unwrap().unknown, 1, "processing");
    w.clock.set_ms(order.payment_deadline_at_ms);
    assert_eq!(wf.reconcile_once().await.unwrap().released, 1);
    // The late success arrives by webhook (twice): a compensation.
    wait_for(async || w.order(&order).await.status == OrderStatus::Compensating).await;
    // Refunds fail twice, then succeed; the dispatcher retries with backoff.
    for _ in 0..6 {
        wf.dispatch_once().await.unwrap();
        w.clock.advance_ms(test_config().compensation_backoff_cap_ms);
    }
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensated);
    let c = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    assert_eq!((c.status, c.attempts), (CompensationStatus::Succeeded, 3));
    let ledger = fake.ledger();
    assert_eq!(ledger.refunds.len(), 1);
    assert_eq!(ledger.stats.refund_failures, 2);
    wait_for(async || fake.pending_tasks() == 0).await;
    assert!(fake.ledger().stats.webhooks_duplicated >= 1);
    assert_eq!(w.store.needs_resolution().await.unwrap(), Default::default());
    // Provider truth agrees with the store: charged once, refunded once.
    let charged: Vec<_> = ledger.payments.iter().filter(|p| p.status == "succeeded").collect();
    assert_eq!(charged.len(), 1);
    assert_eq!(ledger.refunds[0].payment_key, order.payment_op_id.as_uuid());
    w.assert_nothing_charged_is_hidden(false).await;
}
