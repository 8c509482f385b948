//! The payment workflow's paths, on a store with a manual clock and a scripted
//! provider. Every scenario is generic over the store: `payment_scenarios!`
//! instantiates them for each factory: MemStore (`mem`) and PgStore on the real
//! PostgreSQL (`pg`, one database per test, see [`pg_store`]).

use crate::common;
use crate::payment_support;

use booking::model::{
    CompensationId, CompensationStatus, EventId, OrderStatus, OutboxStatus, PaymentOpId, PaymentStatus, SeatState,
};
use booking::payment::provider::ProviderStatus;
use booking::payment::webhook::{WebhookEvent, WebhookKind};
use booking::payment::workflow::WebhookOutcome;
use payment_support::*;

async fn seat_state(w: &World, seat: &str) -> SeatState {
    w.store.seat_map(&EventId::from("ev")).await.unwrap().into_iter().find(|s| s.seat_id == seat).unwrap().state
}

async fn all_outbox_done(w: &World) -> bool {
    w.snapshot().await.outbox.iter().all(|o| o.status == OutboxStatus::Done)
}

fn event(kind: WebhookKind, seq: u64, key: PaymentOpId, refund_key: Option<CompensationId>) -> WebhookEvent {
    WebhookEvent {
        provider_event_id: format!("evt_{seq}"),
        sequence: seq,
        kind,
        payment_key: key.as_uuid(),
        provider_payment_id: "pay_1".into(),
        refund_key: refund_key.map(CompensationId::as_uuid),
        failure_reason: matches!(kind, WebhookKind::PaymentFailed).then(|| "card_declined".into()),
        created_at_ms: T0_MS,
    }
}

/// Charged at once: confirmed, booked, the outbox row done, no second call.
pub async fn success(f: StoreFactory) {
    let w = World::new(f).await;
    let order = w.checkout("alice", &["A1", "A2"]).await;
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!((r.claimed, r.confirmed), (1, 1));
    let o = w.order(&order).await;
    assert_eq!(o.status, OrderStatus::Confirmed);
    assert_eq!(w.store.bookings(&"ev".into()).await.unwrap().len(), 2);
    assert_eq!(seat_state(&w, "A1").await, SeatState::Sold);
    assert!(all_outbox_done(&w).await);
    w.clock.advance_ms(60_000);
    assert_eq!(w.wf.dispatch_once().await.unwrap().claimed, 0);
    assert_eq!(w.provider.calls().0, 1, "one create call");
    w.assert_nothing_charged_is_hidden(true).await;
}

/// A definite decline: failed, seats free, nothing charged, row done.
pub async fn provider_declines(f: StoreFactory) {
    let w = World::new(f).await;
    w.provider.script_creates(&[CreateScript::Decline]);
    let order = w.checkout("alice", &["A1"]).await;
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!(r.declined, 1);
    let o = w.order(&order).await;
    assert_eq!(o.status, OrderStatus::Failed);
    assert!(o.resolution_reason.unwrap().contains("card_declined"));
    assert_eq!(seat_state(&w, "A1").await, SeatState::Available);
    assert_eq!(w.store.payment_op(order.payment_op_id).await.unwrap().status, PaymentStatus::Failed);
    assert!(all_outbox_done(&w).await);
    assert!(w.provider.charged().is_empty());
    w.assert_nothing_charged_is_hidden(true).await;
}

/// Charged but the answer lost: reconciling with the seat reserved, then the
/// reconciler learns the success; the outbox row ends without a second charge.
pub async fn unknown_then_success(f: StoreFactory) {
    let w = World::new(f).await;
    w.provider.script_creates(&[CreateScript::ChargedAnswerLost]);
    let order = w.checkout("alice", &["A1"]).await;
    assert_eq!(w.wf.dispatch_once().await.unwrap().unknown, 1);
    assert_eq!(w.order(&order).await.status, OrderStatus::Reconciling);
    assert_eq!(seat_state(&w, "A1").await, SeatState::PaymentPending);
    assert_eq!(w.store.payment_op(order.payment_op_id).await.unwrap().status, PaymentStatus::Unknown);
    // Visible while unknown.
    assert!(w.store.needs_resolution().await.unwrap().orders.iter().any(|o| o.order_id == order.order_id));
    let r = w.wf.reconcile_once().await.unwrap();
    assert_eq!((r.fetched, r.succeeded), (1, 1));
    assert_eq!(w.order(&order).await.status, OrderStatus::Confirmed);
    assert_eq!(seat_state(&w, "A1").await, SeatState::Sold);
    w.clock.advance_ms(test_config().retry_backoff_base_ms);
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!(r.claimed, 1, "the charge row comes back and is completed");
    assert!(all_outbox_done(&w).await);
    assert_eq!(w.provider.calls().0, 1, "no second create once the outcome was known");
    w.assert_nothing_charged_is_hidden(true).await;
}

/// A lost request (never processed) is retried by the dispatcher with the same key.
pub async fn unknown_then_success_on_retry(f: StoreFactory) {
    let w = World::new(f).await;
    w.provider.script_creates(&[CreateScript::LostBeforeProcessing, CreateScript::Succeed]);
    let order = w.checkout("alice", &["A1"]).await;
    assert_eq!(w.wf.dispatch_once().await.unwrap().unknown, 1);
    assert_eq!(w.order(&order).await.status, OrderStatus::Reconciling);
    // Not due before its backoff.
    assert_eq!(w.wf.dispatch_once().await.unwrap().claimed, 0);
    // The reconciler finds no record: not a failure, the seat stays reserved.
    let r = w.wf.reconcile_once().await.unwrap();
    assert_eq!((r.still_unknown, r.released, r.failed), (1, 0, 0));
    assert_eq!(seat_state(&w, "A1").await, SeatState::PaymentPending);
    w.clock.advance_ms(test_config().retry_backoff_base_ms);
    assert_eq!(w.wf.dispatch_once().await.unwrap().confirmed, 1);
    assert_eq!(w.order(&order).await.status, OrderStatus::Confirmed);
    w.assert_nothing_charged_is_hidden(true).await;
}

/// Processing, then declined: the reconciler records the failure and frees the seat.
pub async fn unknown_then_failure(f: StoreFactory) {
    let w = World::new(f).await;
    w.provider.script_creates(&[CreateScript::Processing]);
    let order = w.checkout("alice", &["A1"]).await;
    assert_eq!(w.wf.dispatch_once().await.unwrap().unknown, 1);
    assert_eq!(w.order(&order).await.status, OrderStatus::Reconciling);
    let r = w.wf.reconcile_once().await.unwrap();
    assert_eq!((r.examined, r.fetched, r.still_unknown), (1, 1, 1), "{r:?}");
    w.provider.settle(order.payment_op_id, false);
    assert_eq!(w.wf.reconcile_once().await.unwrap().examined, 0, "not checked again before its backoff");
    w.clock.advance_ms(test_config().reconcile_backoff_base_ms);
    assert_eq!(w.wf.reconcile_once().await.unwrap().failed, 1);
    assert_eq!(w.order(&order).await.status, OrderStatus::Failed);
    assert_eq!(seat_state(&w, "A1").await, SeatState::Available);
    w.clock.advance_ms(test_config().retry_backoff_cap_ms);
    w.wf.dispatch_once().await.unwrap();
    assert!(all_outbox_done(&w).await);
    w.assert_nothing_charged_is_hidden(true).await;
}

/// Never answered: kept until the deadline, then released with the reason;
/// the dispatcher then cancels at the provider, so a late arrival cannot charge.
pub async fn unknown_past_deadline_released(f: StoreFactory) {
    let w = World::new(f).await;
    let lost = [CreateScript::LostBeforeProcessing; 8];
    w.provider.script_creates(&lost);
    let order = w.checkout("alice", &["A1"]).await;
    // Dispatch until the charge attempts are exhausted.
    let mut unknown = 0;
    for _ in 0..6 {
        unknown += w.wf.dispatch_once().await.unwrap().unknown;
        w.clock.advance_ms(test_config().retry_backoff_cap_ms);
        assert_eq!(w.wf.reconcile_once().await.unwrap().released, 0, "before the deadline nothing is released");
        assert_eq!(seat_state(&w, "A1").await, SeatState::PaymentPending);
    }
    assert_eq!(w.provider.calls().0, test_config().max_charge_attempts as u32, "create bounded by max_charge_attempts");
    assert_eq!(
        unknown,
        test_config().max_charge_attempts as u32 + 1,
        "each lost create, then the exhausted row, is an unknown"
    );
    w.clock.set_ms(order.payment_deadline_at_ms);
    let r = w.wf.reconcile_once().await.unwrap();
    assert_eq!(r.released, 1);
    let o = w.order(&order).await;
    assert_eq!(o.status, OrderStatus::Released);
    assert!(o.resolution_reason.as_deref().unwrap().contains("unresolved at its deadline"), "{o:?}");
    assert_eq!(seat_state(&w, "A1").await, SeatState::Available);
    // Released with the outcome unknown (possibly charged): visible to operators until canceled.
    let res = w.store.needs_resolution().await.unwrap();
    assert_eq!(res.orders, vec![o.clone()], "the released order with its payment still unknown");
    // The charge row now cancels; a cancel that times out is an unknown, retried.
    w.provider.fail_cancels(1);
    w.clock.advance_ms(test_config().retry_backoff_cap_ms);
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!((r.claimed, r.unknown, r.declined), (1, 1, 0), "{r:?}");
    assert_eq!(w.store.needs_resolution().await.unwrap().orders, vec![o.clone()], "still to resolve");
    w.clock.advance_ms(test_config().retry_backoff_cap_ms);
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!(r.declined, 1, "canceled = never charged");
    assert_eq!(w.provider.calls().2, 2, "the timed-out cancel, then the one that answered");
    assert_eq!(w.store.payment_op(order.payment_op_id).await.unwrap().status, PaymentStatus::Failed);
    assert_eq!(w.order(&order).await.status, OrderStatus::Released, "a release stays a release");
    assert!(all_outbox_done(&w).await);
    assert_eq!(w.store.needs_resolution().await.unwrap(), Default::default(), "canceled: nothing left to resolve");
    // The in-flight request finally arrives: the provider refuses to charge it.
    let late = booking::payment::provider::CreatePayment {
        idempotency_key: order.payment_op_id,
        amount_cents: 1_500,
        order_id: order.order_id,
    };
    use booking::payment::PaymentProvider;
    let p = w.provider.create_payment(&late).await.unwrap();
    assert!(matches!(p.status, ProviderStatus::Failed { .. }));
    w.assert_nothing_charged_is_hidden(true).await;
}

/// Never dispatched (the charge row's dispatcher is gone): still `pending` at
/// its deadline, the reconciler asks the provider, which never saw it, and
/// releases the seats with the reason (a pending payment past its deadline
/// skipped instead survived the mutation run of 2026-12-03).
pub async fn pending_never_dispatched_released_at_deadline(f: StoreFactory) {
    let w = World::new(f).await;
    let order = w.checkout("alice", &["A1"]).await;
    assert_eq!(w.wf.reconcile_once().await.unwrap().examined, 0, "pending before its deadline: the dispatcher's");
    w.clock.set_ms(order.payment_deadline_at_ms);
    let r = w.wf.reconcile_once().await.unwrap();
    assert_eq!((r.examined, r.fetched, r.released), (1, 1, 1), "{r:?}");
    let o = w.order(&order).await;
    assert_eq!(o.status, OrderStatus::Released);
    assert!(o.resolution_reason.as_deref().unwrap().contains("provider has no record"), "{o:?}");
    assert_eq!(seat_state(&w, "A1").await, SeatState::Available);
    w.assert_nothing_charged_is_hidden(false).await;
}

/// Processing at the deadline: released; the success arrives after (webhook):
/// a compensation, carried out by the dispatcher; never a second ticket.
pub async fn late_success_after_release_refunded(f: StoreFactory) {
    let w = World::new(f).await;
    w.provider.script_creates(&[CreateScript::Processing]);
    let order = w.checkout("alice", &["A1"]).await;
    w.wf.dispatch_once().await.unwrap();
    w.clock.set_ms(order.payment_deadline_at_ms + 1);
    assert_eq!(w.wf.reconcile_once().await.unwrap().released, 1);
    // Bob buys the freed seat.
    let bob = w.checkout("bob", &["A1"]).await;
    w.provider.settle(order.payment_op_id, true); // Alice's payment succeeds late
    let out = w.wf.handle_webhook(&event(WebhookKind::PaymentSucceeded, 1, order.payment_op_id, None)).await.unwrap();
    assert_eq!(out, WebhookOutcome::Compensating { decided_now: true });
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensating);
    let res = w.store.needs_resolution().await.unwrap();
    assert!(res.orders.iter().any(|o| o.order_id == order.order_id));
    assert_eq!(res.compensations.len(), 1);
    w.assert_nothing_charged_is_hidden(true).await;
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!(r.refunds_succeeded, 1);
    assert_eq!(r.confirmed, 1, "bob's charge");
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensated);
    assert_eq!(w.order(&bob).await.status, OrderStatus::Confirmed);
    let bookings = w.store.bookings(&"ev".into()).await.unwrap();
    assert_eq!(bookings.len(), 1);
    assert_eq!(bookings[0].order_id, bob.order_id, "one ticket, bob's");
    let comps = w.store.compensations_for_order(order.order_id).await.unwrap();
    assert_eq!((comps[0].status, comps[0].attempts), (CompensationStatus::Succeeded, 1));
    assert_eq!(w.provider.refunded().get(&order.payment_op_id), Some(&1_500));
    // The charge row of alice ends too (its op is now final).
    w.clock.advance_ms(test_config().retry_backoff_cap_ms);
    w.wf.dispatch_once().await.unwrap();
    assert!(all_outbox_done(&w).await);
    assert_eq!(w.store.needs_resolution().await.unwrap(), Default::default());
    w.assert_nothing_charged_is_hidden(true).await;
}

/// Processing at the deadline, so released; the payment succeeds before the
/// dispatcher's post-release cancel reaches the provider, and no webhook ever
/// comes: the cancel answer discovers the charge and opens a compensation.
pub async fn late_success_found_by_cancel(f: StoreFactory) {
    let w = World::new(f).await;
    w.provider.script_creates(&[CreateScript::Processing]);
    let order = w.checkout("alice", &["A1"]).await;
    w.wf.dispatch_once().await.unwrap();
    w.clock.set_ms(order.payment_deadline_at_ms);
    assert_eq!(w.wf.reconcile_once().await.unwrap().released, 1);
    w.provider.settle(order.payment_op_id, true); // succeeds before the cancel reaches it
    w.clock.advance_ms(test_config().retry_backoff_cap_ms);
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!(r.compensations_opened, 1);
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensating);
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!(r.refunds_succeeded, 1);
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensated);
    assert!(all_outbox_done(&w).await);
    w.assert_nothing_charged_is_hidden(true).await;
}

async fn late_success_world(f: StoreFactory) -> (World, booking::model::Order) {
    let w = World::new(f).await;
    w.provider.script_creates(&[CreateScript::Processing]);
    let order = w.checkout("alice", &["A1"]).await;
    w.wf.dispatch_once().await.unwrap();
    w.clock.set_ms(order.payment_deadline_at_ms);
    w.wf.reconcile_once().await.unwrap();
    w.provider.settle(order.payment_op_id, true);
    w.wf.handle_webhook(&event(WebhookKind::PaymentSucceeded, 1, order.payment_op_id, None)).await.unwrap();
    (w, order)
}

/// The refund fails twice, then succeeds; attempts and errors are tracked, the
/// backoff is honoured.
pub async fn refund_fails_twice_then_succeeds(f: StoreFactory) {
    let (w, order) = late_success_world(f).await;
    w.provider.script_refunds(&[RefundScript::Fail, RefundScript::Unknown]);
    assert_eq!(w.wf.dispatch_once().await.unwrap().refunds_retrying, 1);
    let c = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    assert_eq!((c.status, c.attempts), (CompensationStatus::Requested, 1));
    assert!(c.last_error.as_deref().unwrap().contains("insufficient_balance"));
    assert_eq!(w.wf.dispatch_once().await.unwrap().refunds_retrying, 0, "not before its backoff");
    w.clock.advance_ms(test_config().compensation_backoff_ms(1));
    assert_eq!(w.wf.dispatch_once().await.unwrap().refunds_retrying, 1);
    w.clock.advance_ms(test_config().compensation_backoff_ms(2));
    assert_eq!(w.wf.dispatch_once().await.unwrap().refunds_succeeded, 1);
    let c = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    assert_eq!((c.status, c.attempts), (CompensationStatus::Succeeded, 3));
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensated);
    assert_eq!(w.provider.calls().3, 3);
    w.assert_nothing_charged_is_hidden(true).await;
}

/// The refund fails for good: `failed`, and visible to operators for good.
pub async fn refund_fails_for_good_visible(f: StoreFactory) {
    let (w, order) = late_success_world(f).await;
    w.provider.script_refunds(&[RefundScript::Fail; 10]);
    let (mut retrying, mut failed) = (0, 0);
    for _ in 0..10 {
        let r = w.wf.dispatch_once().await.unwrap();
        (retrying, failed) = (retrying + r.refunds_retrying, failed + r.refunds_failed);
        w.clock.advance_ms(test_config().compensation_backoff_cap_ms);
    }
    assert_eq!(w.provider.calls().3, test_config().max_compensation_attempts as u32, "bounded attempts");
    assert_eq!(
        (retrying, failed),
        (test_config().max_compensation_attempts as u32 - 1, 1),
        "reported once, when it gave up"
    );
    let c = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    assert_eq!(c.status, CompensationStatus::Failed);
    assert_eq!(w.order(&order).await.status, OrderStatus::CompensationFailed);
    let res = w.store.needs_resolution().await.unwrap();
    assert!(res.orders.iter().any(|o| o.order_id == order.order_id && o.status == OrderStatus::CompensationFailed));
    assert!(res.compensations.iter().any(|x| x.compensation_id == c.compensation_id));
    assert!(all_outbox_done(&w).await, "the row ends; the record stays visible");
    w.assert_nothing_charged_is_hidden(true).await;
}

/// Duplicates and every reordering of the webhooks of one payment change
/// nothing after the first that decided it.
pub async fn duplicate_and_reordered_webhooks(f: StoreFactory) {
    let evs = |key: PaymentOpId| {
        vec![
            event(WebhookKind::PaymentSucceeded, 1, key, None),
            event(WebhookKind::PaymentSucceeded, 1, key, None),
            event(WebhookKind::PaymentFailed, 2, key, None),
            event(WebhookKind::RefundFailed, 3, key, None),
        ]
    };
    let perms: Vec<[usize; 4]> = {
        let mut v = Vec::new();
        for a in 0..4 {
            for b in 0..4 {
                for c in 0..4 {
                    for d in 0..4 {
                        let p = [a, b, c, d];
                        if (0..4).all(|i| p.contains(&i)) {
                            v.push(p);
                        }
                    }
                }
            }
        }
        v
    };
    assert_eq!(perms.len(), 24);
    for perm in perms {
        let w = World::new(f).await;
        let order = w.checkout("alice", &["A1"]).await;
        let list = evs(order.payment_op_id);
        let mut after_first: Option<booking::model::Snapshot> = None;
        let mut first_kind = None;
        for i in perm {
            w.wf.handle_webhook(&list[i]).await.unwrap();
            let snap = w.snapshot().await;
            let decisive = matches!(list[i].kind, WebhookKind::PaymentSucceeded | WebhookKind::PaymentFailed);
            match &after_first {
                Some(s) => assert_eq!(&snap, s, "perm {perm:?}: event {i} changed the records"),
                None if decisive => {
                    first_kind = Some(list[i].kind);
                    after_first = Some(snap);
                }
                None => {
                    assert_eq!(w.order(&order).await.status, OrderStatus::Pending, "a refund event decides nothing")
                }
            }
        }
        let expected = if first_kind == Some(WebhookKind::PaymentSucceeded) {
            OrderStatus::Confirmed
        } else {
            OrderStatus::Failed
        };
        assert_eq!(w.order(&order).await.status, expected, "perm {perm:?}");
        // Whichever came first, the booking count matches the outcome.
        let n = w.store.bookings(&"ev".into()).await.unwrap().len();
        assert_eq!(n, usize::from(expected == OrderStatus::Confirmed));
        w.assert_nothing_charged_is_hidden(false).await;
    }
    // After a late success: payment and refund events, duplicated and reordered.
    let (w, order) = late_success_world(f).await;
    w.wf.dispatch_once().await.unwrap();
    let comp = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    let settled = w.snapshot().await;
    let key = order.payment_op_id;
    for e in [
        event(WebhookKind::RefundSucceeded, 3, key, Some(comp.compensation_id)),
        event(WebhookKind::PaymentSucceeded, 1, key, None),
        event(WebhookKind::RefundSucceeded, 3, key, Some(comp.compensation_id)),
        event(WebhookKind::PaymentSucceeded, 1, key, None),
    ] {
        w.wf.handle_webhook(&e).await.unwrap();
        assert_eq!(w.snapshot().await, settled);
    }
    w.assert_nothing_charged_is_hidden(true).await;
}

/// A refund-succeeded webhook ahead of the dispatcher's own answer settles the
/// compensation; the dispatcher then completes its row without refunding twice.
pub async fn refund_webhook_before_answer(f: StoreFactory) {
    let (w, order) = late_success_world(f).await;
    w.provider.script_refunds(&[RefundScript::Unknown]);
    assert_eq!(w.wf.dispatch_once().await.unwrap().refunds_retrying, 1);
    let comp = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    let out =
        w.wf.handle_webhook(&event(WebhookKind::RefundSucceeded, 5, order.payment_op_id, Some(comp.compensation_id)))
            .await
            .unwrap();
    assert_eq!(out, WebhookOutcome::RefundRecorded { status: CompensationStatus::Succeeded });
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensated);
    w.clock.advance_ms(test_config().compensation_backoff_cap_ms);
    w.wf.dispatch_once().await.unwrap();
    assert!(all_outbox_done(&w).await);
    assert_eq!(w.provider.calls().3, 1, "no refund call after the webhook settled it");
}

/// A dispatcher crashed between starting a refund attempt and recording its
/// result: after the row's lease the next dispatcher redoes the attempt (the
/// refund key makes that safe) instead of leaving it `in_flight` forever.
pub async fn interrupted_refund_attempt_is_taken_over(f: StoreFactory) {
    let (w, order) = late_success_world(f).await;
    let comp = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    // The crashed dispatcher: claimed the row and started the attempt, then died.
    let claimed = w.store.claim_outbox(16, test_config().outbox_lease_ms).await.unwrap();
    assert!(claimed.iter().any(|o| o.ref_id == comp.compensation_id.as_uuid()));
    let started =
        w.store.start_compensation_attempt(comp.compensation_id, test_config().outbox_lease_ms).await.unwrap();
    assert_eq!((started.compensation.status, started.took_over), (CompensationStatus::InFlight, None));
    assert_eq!(w.wf.dispatch_once().await.unwrap().claimed, 0, "leased");
    w.clock.advance_ms(test_config().outbox_lease_ms);
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!((r.refunds_succeeded, r.refunds_taken_over), (1, 1));
    let c = w.store.compensation(comp.compensation_id).await.unwrap();
    assert_eq!(c.attempts, 2, "the abandoned attempt counts");
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensated);
    assert!(all_outbox_done(&w).await);
    w.assert_nothing_charged_is_hidden(true).await;
}

/// Unknown refund answers may have refunded, so they get the longer bound:
/// two refusals and two unknowns do not exhaust `max_compensation_attempts`
/// (3), and the record says the outcome was unknown while retrying.
pub async fn refund_unknown_outcomes_get_the_longer_bound(f: StoreFactory) {
    let (w, order) = late_success_world(f).await;
    let cfg = test_config();
    w.provider.script_refunds(&[RefundScript::Fail, RefundScript::Fail, RefundScript::Unknown, RefundScript::Unknown]);
    for n in 1..=4 {
        assert_eq!(w.wf.dispatch_once().await.unwrap().refunds_retrying, 1, "attempt {n}");
        w.clock.advance_ms(cfg.compensation_backoff_cap_ms);
    }
    let c = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    assert_eq!((c.status, c.attempts), (CompensationStatus::Requested, 4));
    assert!(c.attempts > cfg.max_compensation_attempts);
    assert_eq!(c.last_error.as_deref(), Some("outcome unknown: timed out"));
    assert_eq!(w.wf.dispatch_once().await.unwrap().refunds_succeeded, 1);
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensated);
    assert_eq!(w.provider.calls().3, 5);
    w.assert_nothing_charged_is_hidden(true).await;
}

/// Unknown answers for good: bounded by `max_compensation_unknown_attempts`,
/// then `failed`, visible, and saying the money may have gone back.
pub async fn refund_unknown_for_good_fails_saying_unknown(f: StoreFactory) {
    let (w, order) = late_success_world(f).await;
    let cfg = test_config();
    w.provider.script_refunds(&[RefundScript::Unknown; 10]);
    for _ in 0..10 {
        w.wf.dispatch_once().await.unwrap();
        w.clock.advance_ms(cfg.compensation_backoff_cap_ms);
    }
    assert_eq!(w.provider.calls().3, cfg.max_compensation_unknown_attempts as u32, "bounded attempts");
    let c = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    assert_eq!(c.status, CompensationStatus::Failed);
    assert!(c.last_error.as_deref().unwrap().starts_with(booking::store::UNKNOWN_OUTCOME_PREFIX), "{c:?}");
    assert_eq!(w.order(&order).await.status, OrderStatus::CompensationFailed);
    let res = w.store.needs_resolution().await.unwrap();
    assert_eq!((res.orders.len(), res.compensations), (1, vec![c]));
    assert!(all_outbox_done(&w).await);
    w.assert_nothing_charged_is_hidden(true).await;
}

/// The refund went through but its answer was lost: the next attempt, with
/// the same refund key, learns it succeeded; the money went back once.
pub async fn refund_answer_lost_is_found_by_the_next_attempt(f: StoreFactory) {
    let (w, order) = late_success_world(f).await;
    w.provider.script_refunds(&[RefundScript::RefundedAnswerLost]);
    assert_eq!(w.wf.dispatch_once().await.unwrap().refunds_retrying, 1);
    let c = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    assert_eq!(c.last_error.as_deref(), Some("outcome unknown: connection reset after send"));
    w.clock.advance_ms(test_config().compensation_backoff_ms(1));
    assert_eq!(w.wf.dispatch_once().await.unwrap().refunds_succeeded, 1);
    let c = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    assert_eq!((c.status, c.attempts), (CompensationStatus::Succeeded, 2));
    assert_eq!(w.provider.refunded().get(&order.payment_op_id), Some(&1_500), "refunded once");
    w.assert_nothing_charged_is_hidden(true).await;
}

/// Another dispatcher's attempt is still within its lease when the row comes
/// back: no second refund call; the row waits for the lease, then takes over.
pub async fn a_live_refund_attempt_is_not_taken_over(f: StoreFactory) {
    let (w, order) = late_success_world(f).await;
    let comp = w.store.compensations_for_order(order.order_id).await.unwrap().remove(0);
    let lease_ms = test_config().outbox_lease_ms;
    // The other dispatcher claims the row, and starts its attempt 3 ms later.
    w.store.claim_outbox(16, lease_ms).await.unwrap();
    w.clock.advance_ms(3);
    w.store.start_compensation_attempt(comp.compensation_id, lease_ms).await.unwrap();
    w.clock.advance_ms(lease_ms - 3);
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!((r.refunds_taken_over, r.refunds_retrying, r.refunds_succeeded), (0, 0, 0));
    assert_eq!(w.provider.calls().3, 0, "no refund call under a live lease");
    // The row waits out what is left of the attempt's lease (3 ms), no less.
    w.clock.advance_ms(2);
    assert_eq!(w.wf.dispatch_once().await.unwrap().claimed, 0);
    w.clock.advance_ms(1);
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!((r.refunds_taken_over, r.refunds_succeeded), (1, 1));
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensated);
    w.assert_nothing_charged_is_hidden(true).await;
}

/// A webhook for a payment this store never created is a named error.
pub async fn webhook_for_unknown_payment(f: StoreFactory) {
    let w = World::new(f).await;
    let id = PaymentOpId::from_u128(42);
    let err = w.wf.handle_webhook(&event(WebhookKind::PaymentSucceeded, 1, id, None)).await.unwrap_err();
    assert_eq!(err, booking::payment::WorkflowError::UnknownPayment(id));
}

/// A late success's webhook opened a compensation and woke a
/// signal no loop waited on (the workflow's own, beside the service's), so the
/// refund waited for the next dispatch tick. There is one wake signal now,
/// the one the service's dispatch loop waits on.
pub async fn a_late_success_webhook_wakes_the_dispatch_loop(f: StoreFactory) {
    let w = World::new(f).await;
    let signal = w.wf.wake_signal();
    w.provider.script_creates(&[CreateScript::Processing]);
    let order = w.checkout("alice", &["A1"]).await;
    w.wf.dispatch_once().await.unwrap();
    w.clock.set_ms(order.payment_deadline_at_ms);
    w.wf.reconcile_once().await.unwrap();
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(50), signal.notified()).await;
    assert!(quiet.is_err(), "nothing has woken the dispatch loop yet");
    w.provider.settle(order.payment_op_id, true);
    w.wf.handle_webhook(&event(WebhookKind::PaymentSucceeded, 1, order.payment_op_id, None)).await.unwrap();
    assert_eq!(w.order(&order).await.status, OrderStatus::Compensating);
    tokio::time::timeout(std::time::Duration::from_secs(1), signal.notified())
        .await
        .expect("the webhook woke the dispatch loop");
}

/// The liveness bound the simulator's invariants hold the reconciler to: a
/// payment is resolved within this long after its deadline
/// (`invariants::config::DEFAULT_RECONCILE_BOUND_MS`).
const RECONCILE_BOUND_MS: i64 = 30_000;

/// Three replicas' workflows on one store and one provider.
fn replicas(w: &World) -> Vec<booking::payment::Workflow> {
    let mut wfs = vec![];
    for _ in 0..3 {
        wfs.push(booking::payment::Workflow::new(w.store.clone(), w.provider.clone(), test_config()).unwrap());
    }
    wfs
}

/// Every `reconcile_interval_ms` of store time from now until `until_ms`
/// (inclusive) or until `order` no longer owns its seats, every replica runs
/// a reconcile pass. Returns the store times (ms after `T0_MS`) at which the
/// provider was asked, and when the order was resolved (if it was).
async fn run_reconcilers(
    w: &World,
    wfs: &[booking::payment::Workflow],
    order: &booking::model::Order,
    until_ms: i64,
) -> (Vec<i64>, Option<i64>) {
    use booking::clock::Clock;
    let mut fetched_at = vec![];
    while w.clock.now_ms() <= until_ms {
        for wf in wfs {
            let before = w.provider.calls().1;
            wf.reconcile_once().await.unwrap();
            let after = w.provider.calls().1;
            assert!(after - before <= 1, "one fetch per pass at most");
            if after > before {
                fetched_at.push(w.clock.now_ms() - T0_MS);
            }
        }
        if !w.order(order).await.status.owns_seats() {
            return (fetched_at, Some(w.clock.now_ms() - T0_MS));
        }
        w.clock.advance_ms(test_config().reconcile_interval_ms as i64);
    }
    (fetched_at, None)
}

/// The provider keeps saying "processing": three replicas reconciling every
/// `reconcile_interval_ms` fetch the payment once per backoff step in all
/// (1 s doubling to the 8 s cap, the last step cut to the deadline), not three
/// times per pass; at the deadline it is asked once more and released.
pub async fn three_replicas_share_one_reconcile_backoff(f: StoreFactory) {
    let w = World::new(f).await;
    let wfs = replicas(&w);
    w.provider.script_creates(&[CreateScript::Processing]);
    let order = w.checkout("alice", &["A1"]).await;
    assert_eq!(wfs[0].dispatch_once().await.unwrap().unknown, 1);
    assert_eq!(w.order(&order).await.status, OrderStatus::Reconciling);
    let deadline = order.payment_deadline_at_ms - T0_MS;
    let (fetched_at, resolved_at) =
        run_reconcilers(&w, &wfs, &order, order.payment_deadline_at_ms + RECONCILE_BOUND_MS).await;
    assert_eq!(fetched_at, [0, 1_000, 3_000, 7_000, 15_000, 23_000, 31_000, 39_000, 47_000, 55_000, deadline]);
    assert_eq!(resolved_at, Some(deadline), "released at its deadline, not a backoff step later");
    let passes = 3 * (deadline / test_config().reconcile_interval_ms as i64 + 1);
    assert!(fetched_at.len() as i64 * 20 < passes, "{} fetches in {passes} passes", fetched_at.len());
    let o = w.order(&order).await;
    assert_eq!(o.status, OrderStatus::Released);
    assert!(o.resolution_reason.as_deref().unwrap().contains("still processing"), "{o:?}");
    assert_eq!(seat_state(&w, "A1").await, SeatState::Available);
    let op = w.store.payment_op(order.payment_op_id).await.unwrap();
    assert_eq!(op.checks, fetched_at.len() as i32, "every claim was one fetch");
    // The dispatcher then cancels at the provider, as before.
    w.clock.advance_ms(test_config().retry_backoff_cap_ms);
    assert_eq!(wfs[1].dispatch_once().await.unwrap().declined, 1);
    w.assert_nothing_charged_is_hidden(true).await;
}

/// A replica claims the check at the deadline and dies before asking: the
/// claim is simply due again one backoff step later (at most the cap), and
/// another replica then asks and releases, within the liveness bound.
pub async fn a_reconcile_claim_lost_with_its_replica_comes_back(f: StoreFactory) {
    let w = World::new(f).await;
    let wfs = replicas(&w);
    let cfg = test_config();
    w.provider.script_creates(&[CreateScript::Processing]);
    let order = w.checkout("alice", &["A1"]).await;
    wfs[0].dispatch_once().await.unwrap();
    let (before, resolved) = run_reconcilers(&w, &wfs, &order, order.payment_deadline_at_ms - 1).await;
    assert_eq!(resolved, None);
    // The replica that crashes: its claim of the final check, and nothing after.
    w.clock.set_ms(order.payment_deadline_at_ms);
    let claimed = w.store.claim_reconcile(cfg.reconcile_batch, cfg.reconcile_backoff()).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let next_check = claimed[0].1.next_check_at_ms;
    assert_eq!(next_check, order.payment_deadline_at_ms + cfg.reconcile_backoff_cap_ms, "one capped step later");
    let (after, resolved_at) =
        run_reconcilers(&w, &wfs, &order, order.payment_deadline_at_ms + RECONCILE_BOUND_MS).await;
    assert_eq!(after, [next_check - T0_MS], "asked once more, by one replica, when the claim came back");
    assert_eq!(resolved_at, Some(next_check - T0_MS));
    assert!(next_check - order.payment_deadline_at_ms <= RECONCILE_BOUND_MS / 2, "with margin to the bound");
    assert_eq!(w.order(&order).await.status, OrderStatus::Released);
    assert_eq!(w.provider.calls().1 as usize, before.len() + 1);
    w.assert_nothing_charged_is_hidden(true).await;
}

/// A slow provider does not serialize a batch: the dispatcher keeps up to
/// `dispatch_concurrency` calls in flight, and every charge still lands once.
///
/// Postmortem: the dispatcher called the provider one row at a
/// time, so checkout-to-confirmed latency grew with the queue under load.
pub async fn slow_provider_calls_run_concurrently(f: StoreFactory) {
    let w = World::new(f).await;
    w.provider.delay_creates(50);
    let mut orders = Vec::new();
    for (user, seat) in [("alice", "A1"), ("bob", "A2"), ("carol", "A3"), ("dave", "A4")] {
        orders.push(w.checkout(user, &[seat]).await);
    }
    let r = w.wf.dispatch_once().await.unwrap();
    assert_eq!((r.claimed, r.confirmed), (4, 4));
    assert_eq!(w.provider.max_in_flight(), 4, "four rows, concurrency 4: all four calls at once");
    for o in &orders {
        assert_eq!(w.order(o).await.status, OrderStatus::Confirmed);
    }
    assert_eq!(w.provider.calls().0, 4, "one create per order");
    assert!(all_outbox_done(&w).await);
    w.assert_nothing_charged_is_hidden(true).await;
}

/// Records every commit point the fault seam is told of, and never crashes.
#[derive(Default)]
struct CommitLog(std::sync::Mutex<Vec<booking::fault::CommitPoint>>);

impl booking::fault::Injector for CommitLog {
    fn crash_after(&self, point: booking::fault::CommitPoint) -> bool {
        self.0.lock().unwrap().push(point);
        false
    }
}

/// The dispatcher names a commit point only after a commit: an empty claim
/// commits nothing, so a crash injected "after the outbox claim" must follow a
/// claim that took rows (the condition inverted survived the mutation run of
/// 2026-12-03: the simulator's crashes then hit empty claims only).
pub async fn commit_points_follow_commits(f: StoreFactory) {
    use booking::fault::{CommitPoint, FaultSeam};
    let w = World::new(f).await;
    let log = std::sync::Arc::new(CommitLog::default());
    let wf = booking::payment::Workflow::new(w.store.clone(), w.provider.clone(), test_config())
        .unwrap()
        .with_faults(FaultSeam::new(log.clone()));
    assert_eq!(wf.dispatch_once().await.unwrap().claimed, 0);
    assert_eq!(*log.0.lock().unwrap(), vec![], "an empty claim is not a commit point");
    w.checkout("alice", &["A1"]).await;
    assert_eq!(wf.dispatch_once().await.unwrap().confirmed, 1);
    assert_eq!(*log.0.lock().unwrap(), vec![CommitPoint::OutboxClaim, CommitPoint::PaymentOutcome]);
}

macro_rules! payment_scenarios {
    ($store:ident, $factory:path) => {
        mod $store {
            use super::*;
            payment_scenarios!(@each $factory;
                success, provider_declines, unknown_then_success, unknown_then_success_on_retry,
                unknown_then_failure, unknown_past_deadline_released, late_success_after_release_refunded,
                late_success_found_by_cancel, refund_fails_twice_then_succeeds, refund_fails_for_good_visible,
                duplicate_and_reordered_webhooks, refund_webhook_before_answer, interrupted_refund_attempt_is_taken_over, webhook_for_unknown_payment,
                refund_unknown_outcomes_get_the_longer_bound, refund_unknown_for_good_fails_saying_unknown,
                refund_answer_lost_is_found_by_the_next_attempt, a_live_refund_attempt_is_not_taken_over,
                a_late_success_webhook_wakes_the_dispatch_loop, three_replicas_share_one_reconcile_backoff,
                a_reconcile_claim_lost_with_its_replica_comes_back, slow_provider_calls_run_concurrently,
                commit_points_follow_commits, pending_never_dispatched_released_at_deadline);
        }
    };
    (@each $factory:path; $($name:ident),+) => {
        $(
            #[tokio::test]
            async fn $name() {
                super::$name($factory).await;
                super::pg_teardown().await;
            }
        )+
    };
}

thread_local! {
    /// The database of the PgStore test running on this thread. `#[tokio::test]`
    /// runs a current-thread runtime, so each test (and every task it spawns)
    /// sees only its own database, under nextest and under `cargo test` alike.
    static PG_DB: std::cell::RefCell<Option<common::TestDb>> = const { std::cell::RefCell::new(None) };
}

/// A `PgStore` on `clock` (`PgClock::Manual`) with seeded ids, on an empty
/// database of the current test: created and migrated by the test's first
/// world, truncated for each further world (a scenario may build several).
/// Dropped by [`pg_teardown`] when the scenario passes; a failing scenario
/// leaves its `holdfast_test_*` database behind for inspection.
fn pg_store(
    clock: std::sync::Arc<booking::clock::ManualClock>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = std::sync::Arc<dyn booking::store::Store>> + Send>> {
    Box::pin(async move {
        let db = match PG_DB.with(|d| d.borrow_mut().take()) {
            Some(db) => {
                db.clear().await;
                db
            }
            None => common::TestDb::create(8).await,
        };
        let store = std::sync::Arc::new(db.manual_store(clock, 7));
        PG_DB.with(|d| *d.borrow_mut() = Some(db));
        store as std::sync::Arc<dyn booking::store::Store>
    })
}

/// Drops the current test's database, if it made one.
async fn pg_teardown() {
    if let Some(db) = PG_DB.with(|d| d.borrow_mut().take()) {
        db.drop_db().await;
    }
}

payment_scenarios!(mem, payment_support::mem_store);
payment_scenarios!(pg, pg_store);
