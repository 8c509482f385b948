//! `Store::claim_reconcile`, one path at a time, on MemStore and on PgStore:
//! which payments are due a provider check, the backoff the claim writes
//! (doubling, capped, cut to the payment deadline), the limit and the order.
//! Concurrent claimers on PostgreSQL are in `races.rs`.

use crate::common;

use booking::clock::Clock;
use booking::model::*;
use booking::store::*;
use common::on_both;

const START_MS: i64 = 1_700_000_000_000;
const PAYMENT_TTL_MS: i64 = 60_000;
const BACKOFF: ReconcileBackoff = ReconcileBackoff { base_ms: 1_000, cap_ms: 8_000 };

/// An event with seats `s0..s{n-1}`.
async fn event(store: &dyn Store, n: usize) {
    let seat_ids = (0..n).map(|i| SeatId::from(format!("s{i}"))).collect();
    store.create_event(&CreateEvent { event_id: "ev".into(), seat_ids, price_cents: 1_000 }).await.unwrap();
}

/// Holds seat `s{i}` for user `u{i}` and checks it out with `payment_ttl_ms`.
async fn order(store: &dyn Store, i: usize, payment_ttl_ms: i64) -> Order {
    let g = store
        .acquire_hold(&AcquireHold {
            event_id: "ev".into(),
            seat_ids: vec![SeatId::from(format!("s{i}"))],
            holder_id: UserId::from(format!("u{i}")),
            ttl_ms: 60_000,
            max_held_seats: None,
        })
        .await
        .unwrap();
    store
        .begin_payment(&BeginPayment {
            event_id: "ev".into(),
            holder_id: g.holder_id,
            hold_token: g.hold_token,
            seat_ids: vec![SeatId::from(format!("s{i}"))],
            idempotency_key: format!("k{i}"),
            payment_ttl_ms,
        })
        .await
        .unwrap()
        .order
}

/// The order ids a claim returned, in its order.
fn claimed_orders(claimed: &[(Order, PaymentOp)]) -> Vec<OrderId> {
    claimed.iter().map(|(o, _)| o.order_id).collect()
}

#[tokio::test]
async fn an_unknown_payment_is_claimed_on_a_doubling_capped_backoff_cut_to_its_deadline() {
    on_both(START_MS, 5, |store, clock| async move {
        let store = store.as_ref();
        event(store, 1).await;
        let o = order(store, 0, PAYMENT_TTL_MS).await;
        let fresh = store.payment_op(o.payment_op_id).await.unwrap();
        assert_eq!((fresh.next_check_at_ms, fresh.checks), (START_MS, 0), "due from its creation, no step yet");
        store.record_payment_unknown(o.payment_op_id, "timeout").await.unwrap();
        let unknown = store.payment_op(o.payment_op_id).await.unwrap();
        let order_now = store.order(o.order_id).await.unwrap();
        // Claim it each time it comes due, and once in between (not due).
        let mut claimed_at = vec![];
        let mut next_checks = vec![];
        while clock.now_ms() <= o.payment_deadline_at_ms + BACKOFF.cap_ms {
            let claimed = store.claim_reconcile(10, BACKOFF).await.unwrap();
            assert_eq!(claimed.len(), 1, "due at {}", clock.now_ms() - START_MS);
            let (c_order, c_op) = &claimed[0];
            assert_eq!(c_order, &order_now, "the order is returned as it is, untouched");
            assert_eq!(c_op.checks as usize, claimed_at.len() + 1, "one more check per claim");
            let mut unchanged = c_op.clone();
            (unchanged.next_check_at_ms, unchanged.checks) = (unknown.next_check_at_ms, unknown.checks);
            assert_eq!(unchanged, unknown, "a claim changes the schedule only (not updated_at_ms)");
            assert_eq!(&store.payment_op(o.payment_op_id).await.unwrap(), c_op, "returned as stored");
            claimed_at.push(clock.now_ms() - START_MS);
            next_checks.push(c_op.next_check_at_ms - START_MS);
            clock.set_ms(c_op.next_check_at_ms - 1);
            assert_eq!(store.claim_reconcile(10, BACKOFF).await.unwrap(), vec![], "not due 1 ms early");
            clock.advance_ms(1);
        }
        assert_eq!(
            claimed_at,
            [0, 1_000, 3_000, 7_000, 15_000, 23_000, 31_000, 39_000, 47_000, 55_000, 60_000, 68_000]
        );
        // Doubling from 1 s, capped at 8 s; the step from 55 s is cut to the
        // 60 s deadline; past the deadline the cap applies again.
        assert_eq!(
            next_checks,
            [1_000, 3_000, 7_000, 15_000, 23_000, 31_000, 39_000, 47_000, 55_000, 60_000, 68_000, 76_000]
        );
    })
    .await;
}

#[tokio::test]
async fn a_pending_payment_is_the_dispatchers_until_its_deadline() {
    on_both(START_MS, 5, |store, clock| async move {
        let store = store.as_ref();
        event(store, 1).await;
        let o = order(store, 0, PAYMENT_TTL_MS).await;
        assert_eq!(store.claim_reconcile(10, BACKOFF).await.unwrap(), vec![], "pending, deadline ahead");
        clock.set_ms(o.payment_deadline_at_ms - 1);
        assert_eq!(store.claim_reconcile(10, BACKOFF).await.unwrap(), vec![], "pending, 1 ms before its deadline");
        let before = store.snapshot().await.unwrap();
        assert_eq!(before.payment_ops[0].checks, 0, "looking did not count as a check");
        clock.advance_ms(1);
        let claimed = store.claim_reconcile(10, BACKOFF).await.unwrap();
        assert_eq!(claimed_orders(&claimed), [o.order_id], "at its deadline: the final check");
        assert_eq!(claimed[0].1.status, PaymentStatus::Pending);
        assert_eq!((claimed[0].1.next_check_at_ms, claimed[0].1.checks), (o.payment_deadline_at_ms + 1_000, 1));
        assert_eq!(store.claim_reconcile(10, BACKOFF).await.unwrap(), vec![]);
    })
    .await;
}

#[tokio::test]
async fn resolved_orders_are_never_claimed() {
    on_both(START_MS, 5, |store, clock| async move {
        let store = store.as_ref();
        event(store, 5).await;
        let confirmed = order(store, 0, PAYMENT_TTL_MS).await;
        let failed = order(store, 1, PAYMENT_TTL_MS).await;
        let released = order(store, 2, PAYMENT_TTL_MS).await;
        let compensating = order(store, 3, PAYMENT_TTL_MS).await;
        let open = order(store, 4, PAYMENT_TTL_MS).await;
        for o in [&confirmed, &failed, &released, &compensating, &open] {
            store.record_payment_unknown(o.payment_op_id, "timeout").await.unwrap();
        }
        let success = |o: &Order| PaymentSuccess { payment_op_id: o.payment_op_id, provider_payment_id: "p".into() };
        store.record_payment_success(&success(&confirmed)).await.unwrap();
        store.record_payment_failure(failed.payment_op_id, "declined").await.unwrap();
        clock.set_ms(released.payment_deadline_at_ms);
        store.release_unresolved_payment(released.payment_op_id, "deadline").await.unwrap();
        store.release_unresolved_payment(compensating.payment_op_id, "deadline").await.unwrap();
        store.record_payment_success(&success(&compensating)).await.unwrap();
        let statuses: Vec<(OrderStatus, PaymentStatus)> = {
            let snap = store.snapshot().await.unwrap();
            [&confirmed, &failed, &released, &compensating]
                .iter()
                .map(|o| {
                    let s = snap.orders.iter().find(|x| x.order_id == o.order_id).unwrap().status;
                    let p = snap.payment_ops.iter().find(|x| x.payment_op_id == o.payment_op_id).unwrap().status;
                    (s, p)
                })
                .collect()
        };
        assert_eq!(
            statuses,
            [
                (OrderStatus::Confirmed, PaymentStatus::Succeeded),
                (OrderStatus::Failed, PaymentStatus::Failed),
                (OrderStatus::Released, PaymentStatus::Unknown),
                (OrderStatus::Compensating, PaymentStatus::Succeeded),
            ]
        );
        // Past every deadline, only the open order is ever claimed; the
        // released one, its payment still unknown, is the dispatcher's to cancel.
        for _ in 0..3 {
            clock.advance_ms(BACKOFF.cap_ms);
            assert_eq!(claimed_orders(&store.claim_reconcile(10, BACKOFF).await.unwrap()), [open.order_id]);
        }
    })
    .await;
}

#[tokio::test]
async fn the_limit_holds_oldest_deadline_first() {
    on_both(START_MS, 5, |store, _clock| async move {
        let store = store.as_ref();
        event(store, 3).await;
        let late = order(store, 0, 30_000).await;
        let early = order(store, 1, 10_000).await;
        let middle = order(store, 2, 20_000).await;
        for o in [&late, &early, &middle] {
            store.record_payment_unknown(o.payment_op_id, "timeout").await.unwrap();
        }
        assert_eq!(store.claim_reconcile(0, BACKOFF).await.unwrap(), vec![], "limit 0 claims nothing");
        assert!(store.snapshot().await.unwrap().payment_ops.iter().all(|p| p.checks == 0));
        let first = store.claim_reconcile(2, BACKOFF).await.unwrap();
        assert_eq!(claimed_orders(&first), [early.order_id, middle.order_id]);
        let second = store.claim_reconcile(2, BACKOFF).await.unwrap();
        assert_eq!(claimed_orders(&second), [late.order_id], "the rest, the claimed ones backed off");
        assert_eq!(store.claim_reconcile(2, BACKOFF).await.unwrap(), vec![]);
    })
    .await;
}

#[tokio::test]
async fn a_bad_backoff_is_a_named_error_and_claims_nothing() {
    on_both(START_MS, 5, |store, _clock| async move {
        let store = store.as_ref();
        event(store, 1).await;
        let o = order(store, 0, PAYMENT_TTL_MS).await;
        store.record_payment_unknown(o.payment_op_id, "timeout").await.unwrap();
        let before = store.snapshot().await.unwrap();
        for (base_ms, cap_ms) in [(0, 8_000), (-1, 8_000), (2_000, 1_000), (1_000, MAX_RETRY_DELAY_MS + 1)] {
            let bad = ReconcileBackoff { base_ms, cap_ms };
            let err = store.claim_reconcile(10, bad).await.unwrap_err();
            assert!(matches!(err, StoreError::InvalidInput(_)), "{bad:?}: {err:?}");
            assert_eq!(store.snapshot().await.unwrap(), before, "{bad:?} wrote nothing");
        }
        let widest = ReconcileBackoff { base_ms: 1, cap_ms: MAX_RETRY_DELAY_MS };
        assert_eq!(store.claim_reconcile(10, widest).await.unwrap().len(), 1, "the bounds themselves are valid");
    })
    .await;
}
