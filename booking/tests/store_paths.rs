//! The store's paths one at a time, with the outcome spelled out, run on
//! MemStore and on PgStore: where the differential test only says "the same",
//! these say "right".

use crate::common;

use booking::clock::{Clock, ManualClock};
use booking::model::*;
use booking::store::*;
use common::{mem_store, on_both};

const START_MS: i64 = 1_700_000_000_000;

async fn event(store: &dyn Store, seats: &[&str]) {
    store
        .create_event(&CreateEvent {
            event_id: "ev".into(),
            seat_ids: seats.iter().map(|s| SeatId::from(*s)).collect(),
            price_cents: 2_000,
        })
        .await
        .unwrap();
}

async fn hold(store: &dyn Store, seats: &[&str], holder: &str) -> HoldGrant {
    store
        .acquire_hold(&AcquireHold {
            event_id: "ev".into(),
            seat_ids: seats.iter().map(|s| SeatId::from(*s)).collect(),
            holder_id: holder.into(),
            ttl_ms: 60_000,
            max_held_seats: None,
        })
        .await
        .unwrap()
}

fn checkout(g: &HoldGrant, key: &str) -> BeginPayment {
    BeginPayment {
        event_id: g.event_id.clone(),
        holder_id: g.holder_id.clone(),
        hold_token: g.hold_token,
        seat_ids: g.seats.iter().map(|s| s.seat_id.clone()).collect(),
        idempotency_key: key.into(),
        payment_ttl_ms: 10_000,
    }
}

async fn states(store: &dyn Store) -> Vec<(SeatId, SeatState)> {
    store.seat_map(&"ev".into()).await.unwrap().into_iter().map(|s| (s.seat_id, s.state)).collect()
}

#[tokio::test]
async fn release_needs_the_holder_and_a_live_token() {
    on_both(START_MS, 3, |store, _clock| async move {
        let store = store.as_ref();
        event(store, &["2", "1"]).await;
        let g = hold(store, &["2", "1"], "ann").await;
        let release =
            |holder: &str, token| ReleaseHold { event_id: "ev".into(), holder_id: holder.into(), hold_token: token };
        assert_eq!(store.release_hold(&release("bob", g.hold_token)).await, Err(StoreError::NotHolder));
        assert_eq!(store.release_hold(&release("ann", HoldToken::nil())).await, Err(StoreError::HoldNotFound));
        assert_eq!(
            store.release_hold(&release("ann", g.hold_token)).await,
            Ok(vec![SeatId::from("1"), SeatId::from("2")])
        );
        assert_eq!(store.release_hold(&release("ann", g.hold_token)).await, Err(StoreError::HoldNotFound));
        assert_eq!(states(store).await, vec![("1".into(), SeatState::Available), ("2".into(), SeatState::Available)]);
        // A checked-out hold can no longer be released by its token.
        let g = hold(store, &["1"], "ann").await;
        store.begin_payment(&checkout(&g, "k")).await.unwrap();
        assert_eq!(store.release_hold(&release("ann", g.hold_token)).await, Err(StoreError::HoldNotFound));
    })
    .await;
}

#[tokio::test]
async fn checkout_is_idempotent_per_key_and_takes_the_whole_hold() {
    on_both(START_MS, 3, |store, clock| async move {
        let store = store.as_ref();
        event(store, &["a", "b", "c"]).await;
        let g = hold(store, &["a", "b"], "ann").await;
        // Half a hold is not a checkout, and the refusal writes nothing.
        let mut half = checkout(&g, "k1");
        half.seat_ids.truncate(1);
        let before = store.snapshot().await.unwrap();
        assert!(matches!(store.begin_payment(&half).await, Err(StoreError::InvalidInput(_))));
        assert_eq!(store.snapshot().await.unwrap(), before);

        let first = store.begin_payment(&checkout(&g, "k1")).await.unwrap();
        assert!(!first.replayed);
        assert_eq!(first.order.amount_cents, 4_000);
        assert_eq!(first.order.payment_deadline_at_ms, START_MS + 10_000);
        let again = store.begin_payment(&checkout(&g, "k1")).await.unwrap();
        assert!(again.replayed);
        assert_eq!(again.order, first.order);
        let mut other = checkout(&g, "k1");
        other.seat_ids = vec!["a".into(), "c".into()];
        assert_eq!(store.begin_payment(&other).await, Err(StoreError::IdempotencyKeyReused));
        // A new key for the same hold finds it already checked out.
        assert_eq!(store.begin_payment(&checkout(&g, "k2")).await, Err(StoreError::HoldNotFound));
        let snap = store.snapshot().await.unwrap();
        assert_eq!(snap.orders.len(), 1);
        assert_eq!(snap.outbox.len(), 1, "one charge dispatch event");
        assert_eq!(snap.outbox[0].ref_id, first.order.payment_op_id.as_uuid());

        // An expired hold cannot be checked out.
        let g = hold(store, &["c"], "bob").await;
        clock.advance_ms(60_000);
        assert_eq!(
            store.begin_payment(&checkout(&g, "k3")).await,
            Err(StoreError::HoldExpired { expired_at_ms: g.expires_at_ms })
        );
    })
    .await;
}

#[tokio::test]
async fn an_unknown_outcome_keeps_the_seats_until_the_deadline_and_a_late_success_is_refunded() {
    on_both(START_MS, 3, |store, clock| async move {
        let store = store.as_ref();
        event(store, &["a"]).await;
        let g = hold(store, &["a"], "ann").await;
        let order = store.begin_payment(&checkout(&g, "k")).await.unwrap().order;
        let op = order.payment_op_id;
        let o = store.record_payment_unknown(op, "timeout").await.unwrap();
        assert_eq!(o.status, OrderStatus::Reconciling);
        assert_eq!(states(store).await, vec![("a".into(), SeatState::PaymentPending)], "unknown is not failure");
        assert_eq!(store.needs_resolution().await.unwrap().orders, vec![o.clone()]);
        let backoff = ReconcileBackoff { base_ms: 1_000, cap_ms: 8_000 };
        assert_eq!(store.claim_reconcile(10, backoff).await.unwrap().len(), 1, "unknown: due a check");
        assert_eq!(store.claim_reconcile(10, backoff).await.unwrap().len(), 0, "then backed off");
        assert_eq!(
            store.release_unresolved_payment(op, "deadline").await,
            Err(StoreError::DeadlineNotPassed { deadline_at_ms: order.payment_deadline_at_ms })
        );
        clock.advance_ms(10_000);
        let o = store.release_unresolved_payment(op, "deadline").await.unwrap();
        assert_eq!((o.status, o.resolution_reason.as_deref()), (OrderStatus::Released, Some("deadline")));
        assert_eq!(states(store).await, vec![("a".into(), SeatState::Available)]);
        assert_eq!(store.release_unresolved_payment(op, "again").await, Err(StoreError::OrderNotOpen(order.order_id)));

        // The provider charged after all: no ticket, a tracked refund instead.
        let sale = store
            .record_payment_success(&PaymentSuccess { payment_op_id: op, provider_payment_id: "p".into() })
            .await
            .unwrap();
        assert!(sale.decided_now, "the first success decides the payment");
        let SaleOutcome::Compensating { order: o, compensation: c } = sale.outcome.clone() else { panic!("{sale:?}") };
        assert_eq!(o.status, OrderStatus::Compensating);
        assert_eq!(
            (c.kind, c.amount_cents, c.status),
            (CompensationKind::Refund, 2_000, CompensationStatus::Requested)
        );
        assert!(store.bookings(&"ev".into()).await.unwrap().is_empty());
        let repeat = store
            .record_payment_success(&PaymentSuccess { payment_op_id: op, provider_payment_id: "p".into() })
            .await
            .unwrap();
        assert_eq!(
            repeat,
            Recorded { outcome: sale.outcome.clone(), decided_now: false },
            "a repeated success returns the first outcome and did not decide it"
        );
        let res = store.needs_resolution().await.unwrap();
        assert_eq!((res.orders.len(), res.compensations.len()), (1, 1));
        assert_eq!(store.record_payment_failure(op, "late decline").await, Err(StoreError::PaymentConflict(op)));

        // Compensation attempts: tracked, bounded, visible when they fail for good.
        let id = c.compensation_id;
        let started = store.start_compensation_attempt(id, 5_000).await.unwrap();
        assert_eq!(
            (started.compensation.status, started.compensation.attempts, started.took_over),
            (CompensationStatus::InFlight, 1, None)
        );
        assert_eq!(store.start_compensation_attempt(id, 5_000).await, Err(StoreError::CompensationNotDue(id)));
        let fail = |attempt, max_attempts| CompensationResult {
            compensation_id: id,
            outcome: CompensationOutcome::Failed { attempt, error: "503".into() },
            retry_after_ms: 1_000,
            max_attempts,
        };
        let c1 = store.finish_compensation_attempt(&fail(1, 2)).await.unwrap();
        assert_eq!((c1.status, c1.next_attempt_at_ms), (CompensationStatus::Requested, clock.now_ms() + 1_000));
        assert_eq!(store.start_compensation_attempt(id, 5_000).await, Err(StoreError::CompensationNotDue(id)));
        clock.advance_ms(1_000);
        store.start_compensation_attempt(id, 5_000).await.unwrap();
        let c2 = store.finish_compensation_attempt(&fail(2, 2)).await.unwrap();
        assert_eq!((c2.status, c2.attempts, c2.last_error.as_deref()), (CompensationStatus::Failed, 2, Some("503")));
        assert_eq!(store.order(order.order_id).await.unwrap().status, OrderStatus::CompensationFailed);
        assert_eq!(store.needs_resolution().await.unwrap().orders.len(), 1, "operators see it");
        assert_eq!(store.finish_compensation_attempt(&fail(2, 9)).await.unwrap(), c2, "final states are final");
    })
    .await;
}

#[tokio::test]
async fn a_live_success_books_each_seat_once_and_contradictions_are_named() {
    on_both(START_MS, 3, |store, _clock| async move {
        let store = store.as_ref();
        event(store, &["b", "a"]).await;
        let g = hold(store, &["b", "a"], "ann").await;
        let order = store.begin_payment(&checkout(&g, "k")).await.unwrap().order;
        let ok = PaymentSuccess { payment_op_id: order.payment_op_id, provider_payment_id: "p1".into() };
        let sale = store.record_payment_success(&ok).await.unwrap();
        assert!(sale.decided_now, "the first success decides the payment");
        let SaleOutcome::Confirmed { order: o, bookings } = sale.outcome.clone() else { panic!("{sale:?}") };
        assert_eq!(o.status, OrderStatus::Confirmed);
        assert_eq!(bookings.iter().map(|b| b.seat_id.as_str()).collect::<Vec<_>>(), vec!["a", "b"]);
        // A repeat (another reporter of the same charge) returns the first outcome; it decided nothing.
        for _ in 0..2 {
            let repeat = store.record_payment_success(&ok).await.unwrap();
            assert_eq!(repeat, Recorded { outcome: sale.outcome.clone(), decided_now: false });
        }
        assert_eq!(store.bookings(&"ev".into()).await.unwrap(), bookings);
        assert_eq!(states(store).await, vec![("a".into(), SeatState::Sold), ("b".into(), SeatState::Sold)]);
        assert_eq!(
            store.record_payment_failure(order.payment_op_id, "no").await,
            Err(StoreError::PaymentConflict(order.payment_op_id))
        );
        // An unknown after a success changes nothing.
        assert_eq!(
            store.record_payment_unknown(order.payment_op_id, "late timeout").await.unwrap().status,
            OrderStatus::Confirmed
        );
        let op = store.payment_op(order.payment_op_id).await.unwrap();
        assert_eq!((op.status, op.provider_payment_id.as_deref()), (PaymentStatus::Succeeded, Some("p1")));

        // A decline frees the seats; a success after it is a contradiction.
        event2(store).await;
        let g = store
            .acquire_hold(&AcquireHold {
                event_id: "ev2".into(),
                seat_ids: vec!["x".into()],
                holder_id: "bob".into(),
                ttl_ms: 1_000,
                max_held_seats: None,
            })
            .await
            .unwrap();
        let order = store.begin_payment(&checkout(&g, "k")).await.unwrap().order;
        let declined = store.record_payment_failure(order.payment_op_id, "card\0declined").await.unwrap();
        assert!(declined.decided_now, "the first decline decides the payment");
        let o = declined.outcome;
        assert_eq!(
            (o.status, o.resolution_reason.as_deref()),
            (OrderStatus::Failed, Some("payment declined: carddeclined"))
        );
        for _ in 0..2 {
            assert_eq!(
                store.record_payment_failure(order.payment_op_id, "again").await.unwrap(),
                Recorded { outcome: o.clone(), decided_now: false },
                "idempotent: the first outcome, decided by the first call only"
            );
        }
        let late = PaymentSuccess { payment_op_id: order.payment_op_id, provider_payment_id: "p2".into() };
        assert_eq!(store.record_payment_success(&late).await, Err(StoreError::PaymentConflict(order.payment_op_id)));
        assert_eq!(store.seat_map(&"ev2".into()).await.unwrap()[0].state, SeatState::Available);
    })
    .await;
}

async fn event2(store: &dyn Store) {
    store
        .create_event(&CreateEvent { event_id: "ev2".into(), seat_ids: vec!["x".into()], price_cents: 0 })
        .await
        .unwrap();
}

#[tokio::test]
async fn outbox_claims_lease_and_retries_are_due_later() {
    on_both(START_MS, 3, |store, clock| async move {
        let store = store.as_ref();
        event(store, &["a", "b"]).await;
        for (seat, key) in [("a", "k1"), ("b", "k2")] {
            let g = hold(store, &[seat], "ann").await;
            store.begin_payment(&checkout(&g, key)).await.unwrap();
            clock.advance_ms(1);
        }
        assert!(matches!(store.claim_outbox(10, 0).await, Err(StoreError::InvalidInput(_))));
        assert!(matches!(store.claim_outbox(10, MAX_RETRY_DELAY_MS + 1).await, Err(StoreError::InvalidInput(_))));
        let first = store.claim_outbox(1, 5_000).await.unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!((first[0].attempts, first[0].available_at_ms), (1, clock.now_ms() + 5_000));
        let second = store.claim_outbox(10, 5_000).await.unwrap();
        assert_eq!(second.len(), 1, "the leased one is not claimed twice");
        assert!(first[0].created_at_ms < second[0].created_at_ms, "oldest first");
        assert!(store.claim_outbox(10, 5_000).await.unwrap().is_empty());
        let (ev, id) = (first[0].event_id.clone(), first[0].outbox_id);
        store.retry_outbox(&ev, id, "provider 503", 100).await.unwrap();
        assert!(matches!(store.retry_outbox(&ev, id, "x", -1).await, Err(StoreError::InvalidInput(_))));
        assert_eq!(store.retry_outbox(&"no such".into(), id, "x", 1).await, Err(StoreError::UnknownOutboxEvent(id)));
        clock.advance_ms(100);
        let again = store.claim_outbox(10, 5_000).await.unwrap();
        assert_eq!((again.len(), again[0].attempts, again[0].last_error.as_deref()), (1, 2, Some("provider 503")));
        store.complete_outbox(&ev, id).await.unwrap();
        store.complete_outbox(&ev, id).await.unwrap();
        clock.advance_ms(10_000);
        let rest = store.claim_outbox(10, 5_000).await.unwrap();
        assert_eq!(
            rest.iter().map(|o| o.outbox_id).collect::<Vec<_>>(),
            vec![second[0].outbox_id],
            "done is never claimed again"
        );
    })
    .await;
}

#[tokio::test]
async fn the_seat_map_version_counts_every_seat_write() {
    on_both(START_MS, 3, |store, clock| async move {
        let store = store.as_ref();
        let ev: EventId = "ev".into();
        let version = async || {
            let v = store.seat_map_version(&ev).await.unwrap();
            assert_eq!(v, SeatMapVersion::of_seats(&store.seat_map(&ev).await.unwrap()));
            v
        };
        event(store, &["b", "a", "c"]).await;
        assert_eq!(version().await, SeatMapVersion { seats: 3, version_sum: 0 });
        assert_eq!(version().await.etag(), "\"sm-3-0\"");
        let g = hold(store, &["a", "b"], "ann").await;
        assert_eq!(version().await, SeatMapVersion { seats: 3, version_sum: 2 });
        // A refused write changes nothing.
        let taken = AcquireHold {
            event_id: ev.clone(),
            seat_ids: vec!["a".into()],
            holder_id: "bob".into(),
            ttl_ms: 1,
            max_held_seats: None,
        };
        assert!(store.acquire_hold(&taken).await.is_err());
        assert_eq!(version().await.version_sum, 2);
        store.begin_payment(&checkout(&g, "k")).await.unwrap();
        assert_eq!(version().await.version_sum, 4);
        hold(store, &["c"], "bob").await;
        clock.advance_ms(60_000);
        assert_eq!(store.sweep_expired_holds(10).await.unwrap().len(), 1);
        assert_eq!(version().await, SeatMapVersion { seats: 3, version_sum: 6 });
        assert_eq!(version().await.etag(), "\"sm-3-6\"");
    })
    .await;
}

#[tokio::test]
async fn bad_input_is_a_named_error_and_writes_nothing() {
    on_both(START_MS, 3, |store, _clock| async move {
        let store = store.as_ref();
        event(store, &["a"]).await;
        let before = store.snapshot().await.unwrap();
        let bad_hold = |seats: Vec<&str>, ttl_ms| AcquireHold {
            event_id: "ev".into(),
            seat_ids: seats.into_iter().map(SeatId::from).collect(),
            holder_id: "ann".into(),
            ttl_ms,
            max_held_seats: None,
        };
        for req in [bad_hold(vec![], 1), bad_hold(vec!["a", "a"], 1), bad_hold(vec!["a"], 0), bad_hold(vec!["a b"], 1)]
        {
            assert!(matches!(store.acquire_hold(&req).await, Err(StoreError::InvalidInput(_))), "{req:?}");
        }
        assert_eq!(
            store.acquire_hold(&bad_hold(vec!["a", "zz"], 1)).await,
            Err(StoreError::UnknownSeat { event_id: "ev".into(), seat_id: "zz".into() })
        );
        let nul = PaymentSuccess { payment_op_id: PaymentOpId::nil(), provider_payment_id: "a\0b".into() };
        assert!(matches!(store.record_payment_success(&nul).await, Err(StoreError::InvalidInput(_))));
        assert_eq!(store.seat_map(&"bad\0id".into()).await, Err(StoreError::UnknownEvent("bad\0id".into())));
        assert_eq!(store.seat_map_version(&"bad\0id".into()).await, Err(StoreError::UnknownEvent("bad\0id".into())));
        assert_eq!(store.seat_map_version(&"nope".into()).await, Err(StoreError::UnknownEvent("nope".into())));
        assert_eq!(store.bookings(&"bad\0id".into()).await, Ok(vec![]));
        assert_eq!(store.snapshot().await.unwrap(), before);
    })
    .await;
}

/// A hold checked out, its payment deadline passed and its seats released
/// with the outcome open, then charged: returns the order and its compensation.
async fn charged_after_release(
    store: &dyn Store,
    clock: &ManualClock,
    seat: &str,
    holder: &str,
) -> (Order, Compensation) {
    let g = hold(store, &[seat], holder).await;
    let order = store.begin_payment(&checkout(&g, &format!("k-{seat}"))).await.unwrap().order;
    clock.set_ms(clock.now_ms().max(order.payment_deadline_at_ms));
    store.release_unresolved_payment(order.payment_op_id, "deadline").await.unwrap();
    let late = PaymentSuccess { payment_op_id: order.payment_op_id, provider_payment_id: "late".into() };
    match store.record_payment_success(&late).await.unwrap() {
        Recorded { outcome: SaleOutcome::Compensating { order, compensation }, decided_now: true } => {
            (order, compensation)
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_abandoned_refund_attempt_is_taken_over_once_its_lease_expires() {
    on_both(START_MS, 3, |store, clock| async move {
        let store = store.as_ref();
        event(store, &["a"]).await;
        let (order, c) = charged_after_release(store, &clock, "a", "ann").await;
        let id = c.compensation_id;
        for bad in [0, MAX_RETRY_DELAY_MS + 1] {
            assert!(matches!(store.start_compensation_attempt(id, bad).await, Err(StoreError::InvalidInput(_))));
        }
        let nobody = CompensationId::from_u128(7);
        assert_eq!(store.start_compensation_attempt(nobody, 5_000).await, Err(StoreError::UnknownCompensation(nobody)));
        assert_eq!(store.compensation(nobody).await, Err(StoreError::UnknownCompensation(nobody)));

        // The first dispatcher starts attempt 1 and dies.
        let first = store.start_compensation_attempt(id, 5_000).await.unwrap();
        let lease_end_ms = clock.now_ms() + 5_000;
        assert_eq!(first.took_over, None);
        assert_eq!(
            (first.compensation.status, first.compensation.attempts, first.compensation.next_attempt_at_ms),
            (CompensationStatus::InFlight, 1, lease_end_ms)
        );
        assert_eq!(store.compensation(id).await.unwrap(), first.compensation);
        clock.advance_ms(4_999);
        assert_eq!(
            store.start_compensation_attempt(id, 5_000).await,
            Err(StoreError::CompensationNotDue(id)),
            "leased"
        );

        // Its lease expires: the next dispatcher takes the attempt over, counting it.
        clock.advance_ms(1);
        let second = store.start_compensation_attempt(id, 5_000).await.unwrap();
        assert_eq!(second.took_over, Some(ExpiredAttempt { attempt: 1, lease_expired_at_ms: lease_end_ms }));
        assert_eq!(
            (second.compensation.status, second.compensation.attempts, second.compensation.next_attempt_at_ms),
            (CompensationStatus::InFlight, 2, clock.now_ms() + 5_000)
        );

        // The first dispatcher was only slow: its failure is stale and changes nothing,
        // even one that would have exhausted the attempts.
        let before = store.snapshot().await.unwrap();
        for outcome in [
            CompensationOutcome::Failed { attempt: 1, error: "503".into() },
            CompensationOutcome::Unknown { attempt: 1, error: "timeout".into() },
            CompensationOutcome::Failed { attempt: 3, error: "from the future".into() },
        ] {
            let stale = CompensationResult { compensation_id: id, outcome, retry_after_ms: 0, max_attempts: 1 };
            assert_eq!(store.finish_compensation_attempt(&stale).await.unwrap(), second.compensation);
        }
        assert_eq!(store.snapshot().await.unwrap(), before);

        // The current attempt fails: backing off; its own result again is stale too.
        let fail = CompensationResult {
            compensation_id: id,
            outcome: CompensationOutcome::Failed { attempt: 2, error: "503".into() },
            retry_after_ms: 1_000,
            max_attempts: 5,
        };
        let backing_off = store.finish_compensation_attempt(&fail).await.unwrap();
        assert_eq!(
            (backing_off.status, backing_off.next_attempt_at_ms, backing_off.last_error.as_deref()),
            (CompensationStatus::Requested, clock.now_ms() + 1_000, Some("503"))
        );
        assert_eq!(store.finish_compensation_attempt(&fail).await.unwrap(), backing_off, "recorded once");

        // A success applies whichever attempt (or webhook) reports it.
        let ok = CompensationResult {
            compensation_id: id,
            outcome: CompensationOutcome::Succeeded,
            retry_after_ms: 0,
            max_attempts: 1,
        };
        let done = store.finish_compensation_attempt(&ok).await.unwrap();
        assert_eq!((done.status, done.attempts), (CompensationStatus::Succeeded, 2));
        assert_eq!(store.order(order.order_id).await.unwrap().status, OrderStatus::Compensated);
        clock.advance_ms(60_000);
        assert_eq!(store.start_compensation_attempt(id, 5_000).await, Err(StoreError::CompensationNotDue(id)), "final");
        assert_eq!(store.needs_resolution().await.unwrap(), Resolution::default());
    })
    .await;
}

#[tokio::test]
async fn an_unknown_refund_outcome_is_recorded_as_unknown() {
    on_both(START_MS, 3, |store, clock| async move {
        let store = store.as_ref();
        event(store, &["a"]).await;
        let (order, c) = charged_after_release(store, &clock, "a", "ann").await;
        let id = c.compensation_id;
        let unknown = |attempt| CompensationResult {
            compensation_id: id,
            outcome: CompensationOutcome::Unknown { attempt, error: "timed out".into() },
            retry_after_ms: 1_000,
            max_attempts: 2,
        };
        store.start_compensation_attempt(id, 5_000).await.unwrap();
        let c1 = store.finish_compensation_attempt(&unknown(1)).await.unwrap();
        assert_eq!(
            (c1.status, c1.last_error.as_deref()),
            (CompensationStatus::Requested, Some("outcome unknown: timed out"))
        );
        clock.advance_ms(1_000);
        store.start_compensation_attempt(id, 5_000).await.unwrap();
        let c2 = store.finish_compensation_attempt(&unknown(2)).await.unwrap();
        assert_eq!(c2.status, CompensationStatus::Failed);
        assert!(c2.last_error.as_deref().unwrap().starts_with(UNKNOWN_OUTCOME_PREFIX), "{c2:?}");
        let res = store.needs_resolution().await.unwrap();
        assert_eq!(
            res.orders.iter().map(|o| (o.order_id, o.status)).collect::<Vec<_>>(),
            vec![(order.order_id, OrderStatus::CompensationFailed)]
        );
        assert_eq!(res.compensations, vec![c2]);
    })
    .await;
}

#[tokio::test]
async fn released_orders_still_possibly_charged_are_listed_for_operators() {
    on_both(START_MS, 3, |store, clock| async move {
        let store = store.as_ref();
        event(store, &["a", "b", "c", "d"]).await;
        let mut orders = Vec::new();
        for (seat, holder) in [("a", "ann"), ("b", "bob"), ("c", "cat"), ("d", "dan")] {
            let g = hold(store, &[seat], holder).await;
            orders.push(store.begin_payment(&checkout(&g, "k")).await.unwrap().order);
        }
        let [never_answered, unknown, declined, charged] = [0, 1, 2, 3].map(|i| orders[i].clone());
        store.record_payment_unknown(unknown.payment_op_id, "timeout").await.unwrap();
        store.record_payment_failure(declined.payment_op_id, "card_declined").await.unwrap();
        let ok = PaymentSuccess { payment_op_id: charged.payment_op_id, provider_payment_id: "p".into() };
        store.record_payment_success(&ok).await.unwrap();
        clock.advance_ms(10_000);
        let mut released = Vec::new();
        for o in [&never_answered, &unknown] {
            released.push(store.release_unresolved_payment(o.payment_op_id, "deadline").await.unwrap());
        }
        // Pending and unknown payments released at their deadline may still charge: listed,
        // in canonical (event, order id) order; the declined and the booked ones are not.
        released.sort_by_key(|o| (o.event_id.clone(), o.order_id));
        let res = store.needs_resolution().await.unwrap();
        assert_eq!(res, Resolution { orders: released.clone(), compensations: vec![] });
        assert!(res.orders.iter().all(|o| o.status == OrderStatus::Released));

        // The dispatcher's cancel finds one never charged: off the list.
        let canceled = store.record_payment_failure(never_answered.payment_op_id, "canceled").await.unwrap();
        assert!(canceled.decided_now, "a decline after release still decides the payment");
        assert_eq!(canceled.outcome.status, OrderStatus::Released, "the released order is left as it is");
        let res = store.needs_resolution().await.unwrap();
        assert_eq!(res.orders.iter().map(|o| o.order_id).collect::<Vec<_>>(), vec![unknown.order_id]);
        // The other was charged after all: still listed, now as compensating, with its refund.
        let late = PaymentSuccess { payment_op_id: unknown.payment_op_id, provider_payment_id: "p2".into() };
        store.record_payment_success(&late).await.unwrap();
        let res = store.needs_resolution().await.unwrap();
        assert_eq!(
            res.orders.iter().map(|o| (o.order_id, o.status)).collect::<Vec<_>>(),
            vec![(unknown.order_id, OrderStatus::Compensating)]
        );
        assert_eq!(res.compensations.len(), 1);
    })
    .await;
}

/// One reported compensation write: (status before, status after, attempts, store clock).
type CompensationWrite = (Option<CompensationStatus>, CompensationStatus, i32, i64);

/// Records the compensation writes a MemStore reports.
#[derive(Default)]
struct CompensationLog(std::sync::Mutex<Vec<CompensationWrite>>);

impl StoreObserver for CompensationLog {
    fn seat_written(&self, _: SeatWriteCause, _: i64, _: &Presented, _: &Seat, _: &Seat) {}
    fn order_written(&self, _: Option<&Order>, _: &Order, _: i64) {}
    fn compensation_written(&self, before: Option<&Compensation>, after: &Compensation, now_ms: i64) {
        self.0.lock().unwrap().push((before.map(|c| c.status), after.status, after.attempts, now_ms));
    }
}

#[tokio::test]
async fn mem_store_reports_a_takeover_and_not_a_stale_result() {
    let (mem, clock) = mem_store(START_MS, 3);
    let log = std::sync::Arc::new(CompensationLog::default());
    let store = mem.with_observer(log.clone());
    event(&store, &["a"]).await;
    let (_, c) = charged_after_release(&store, &clock, "a", "ann").await;
    let id = c.compensation_id;
    store.start_compensation_attempt(id, 1_000).await.unwrap();
    clock.advance_ms(1_000);
    store.start_compensation_attempt(id, 1_000).await.unwrap();
    let stale = CompensationResult {
        compensation_id: id,
        outcome: CompensationOutcome::Failed { attempt: 1, error: "late".into() },
        retry_after_ms: 0,
        max_attempts: 1,
    };
    store.finish_compensation_attempt(&stale).await.unwrap();
    let t = clock.now_ms();
    assert_eq!(
        *log.0.lock().unwrap(),
        vec![
            (None, CompensationStatus::Requested, 0, t - 1_000),
            (Some(CompensationStatus::Requested), CompensationStatus::InFlight, 1, t - 1_000),
            (Some(CompensationStatus::InFlight), CompensationStatus::InFlight, 2, t),
        ]
    );
}

/// A checkout whose token's seats are merely free (the hold lapsed and was
/// swept, or was released) says the hold is gone (`HoldNotFound`), not that
/// another hold owns the seats; once someone else holds them it is `StaleToken`.
#[tokio::test]
async fn a_checkout_of_a_swept_hold_says_hold_not_found_and_of_a_taken_one_stale_token() {
    on_both(START_MS, 3, |store, clock| async move {
        event(&*store, &["1A", "1B"]).await;
        let alice = hold(&*store, &["1A"], "alice").await;
        clock.advance_ms(60_000);
        assert_eq!(store.sweep_expired_holds(10).await.unwrap().len(), 1);
        assert_eq!(store.begin_payment(&checkout(&alice, "a1")).await.unwrap_err(), StoreError::HoldNotFound);
        let released = hold(&*store, &["1B"], "alice").await;
        store
            .release_hold(&ReleaseHold {
                event_id: "ev".into(),
                holder_id: "alice".into(),
                hold_token: released.hold_token,
            })
            .await
            .unwrap();
        assert_eq!(store.begin_payment(&checkout(&released, "a2")).await.unwrap_err(), StoreError::HoldNotFound);
        hold(&*store, &["1A"], "bob").await;
        assert_eq!(store.begin_payment(&checkout(&alice, "a3")).await.unwrap_err(), StoreError::StaleToken);
    })
    .await;
}
