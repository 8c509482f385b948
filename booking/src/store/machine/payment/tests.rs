//! The payment machine, row by row: every allowed transition is reachable by
//! some cause, nothing outside the table is, repeats change nothing, and a
//! contradiction is refused.

use super::*;
use crate::model::{HoldToken, OrderId, OrderStatus, PaymentStatus as P};
use std::collections::BTreeSet;

const NOW_MS: i64 = 50_000;
const BACKOFF: ReconcileBackoff = ReconcileBackoff { base_ms: 100, cap_ms: 1_600 };

fn order(status: OrderStatus, deadline_at_ms: i64) -> Order {
    Order {
        event_id: "ev".into(),
        order_id: OrderId::from_u128(7),
        holder_id: "alice".into(),
        hold_token: HoldToken::from_u128(1),
        seat_ids: vec!["A1".into()],
        amount_cents: 1_000,
        status,
        payment_op_id: PaymentOpId::from_u128(8),
        payment_deadline_at_ms: deadline_at_ms,
        idempotency_key: "k".into(),
        resolution_reason: None,
        created_at_ms: 0,
        updated_at_ms: 0,
    }
}

fn op(status: P) -> PaymentOp {
    let mut op = open(&order(OrderStatus::Pending, NOW_MS), 1_000);
    op.status = status;
    op.last_error = matches!(status, P::Unknown | P::Failed).then(|| "earlier".into());
    op.provider_payment_id = (status == P::Succeeded).then(|| "pay_1".into());
    op
}

#[test]
fn every_row_of_the_table_is_reachable_and_nothing_else_is() {
    let due_order = order(OrderStatus::Reconciling, NOW_MS - 1);
    let causes = [
        PaymentCause::Succeeded { provider_payment_id: "pay_2" },
        PaymentCause::Failed { reason: "declined" },
        PaymentCause::Unknown { error: "timeout" },
        PaymentCause::Claim { order: &due_order, backoff: BACKOFF },
    ];
    let mut seen = BTreeSet::new();
    for status in P::ALL {
        for cause in &causes {
            if let Ok(Some(after)) = next(&op(*status), cause, NOW_MS) {
                seen.insert((*status, after.status));
            }
        }
    }
    crate::store::machine::assert_table_is_reached(TRANSITIONS, &seen, P::ALL, transition_allowed);
}

#[test]
fn final_outcomes_repeat_idempotently_and_never_flip() {
    let ok = PaymentCause::Succeeded { provider_payment_id: "pay_2" };
    let no = PaymentCause::Failed { reason: "declined" };
    assert_eq!(next(&op(P::Succeeded), &ok, NOW_MS), Ok(None));
    assert_eq!(next(&op(P::Failed), &no, NOW_MS), Ok(None));
    assert_eq!(next(&op(P::Succeeded), &no, NOW_MS), Err(PaymentRefusal::Conflict(PaymentOpId::from_u128(8))));
    assert_eq!(next(&op(P::Failed), &ok, NOW_MS), Err(PaymentRefusal::Conflict(PaymentOpId::from_u128(8))));
    assert_eq!(next(&op(P::Succeeded), &PaymentCause::Unknown { error: "t" }, NOW_MS), Ok(None));
    let after = next(&op(P::Unknown), &ok, NOW_MS).expect("open").expect("changes");
    assert_eq!(
        (after.status, after.provider_payment_id.as_deref(), after.updated_at_ms),
        (P::Succeeded, Some("pay_2"), NOW_MS)
    );
}

#[test]
fn a_claim_counts_a_check_and_backs_off_but_never_past_the_deadline() {
    let mut before = op(P::Unknown);
    before.checks = 2;
    before.next_check_at_ms = NOW_MS;
    let far = order(OrderStatus::Reconciling, NOW_MS + 100_000);
    let after =
        next(&before, &PaymentCause::Claim { order: &far, backoff: BACKOFF }, NOW_MS).expect("due").expect("moves");
    assert_eq!((after.checks, after.next_check_at_ms, after.updated_at_ms), (3, NOW_MS + 400, before.updated_at_ms));
    let near = order(OrderStatus::Reconciling, NOW_MS + 50);
    let after =
        next(&before, &PaymentCause::Claim { order: &near, backoff: BACKOFF }, NOW_MS).expect("due").expect("moves");
    assert_eq!(after.next_check_at_ms, NOW_MS + 50, "the last check before release is never delayed");
    // At the deadline itself (and past it) the backoff alone decides: a check
    // "no later than now" would never move forward (`<=` for `<` survived the
    // mutation run of 2026-12-03; it trips the claim's assertion here).
    for deadline_at_ms in [NOW_MS, NOW_MS - 1] {
        let due = order(OrderStatus::Reconciling, deadline_at_ms);
        let after =
            next(&before, &PaymentCause::Claim { order: &due, backoff: BACKOFF }, NOW_MS).expect("due").expect("moves");
        assert_eq!(after.next_check_at_ms, NOW_MS + 400, "deadline {deadline_at_ms}");
    }
    // Not due: backing off, a pending payment before its deadline, a closed order.
    let mut backing_off = before.clone();
    backing_off.next_check_at_ms = NOW_MS + 1;
    let pending = op(P::Pending);
    let closed = order(OrderStatus::Released, NOW_MS - 1);
    for (p, o) in [(&backing_off, &far), (&pending, &far), (&before, &closed)] {
        let refused = next(p, &PaymentCause::Claim { order: o, backoff: BACKOFF }, NOW_MS);
        assert_eq!(refused, Err(PaymentRefusal::NotDue(PaymentOpId::from_u128(8))), "{p:?} {o:?}");
    }
}

#[test]
fn field_rules_hold_for_every_status() {
    for status in P::ALL {
        assert!(fields_fit(&op(*status)), "{status}");
    }
    let broken = [
        PaymentOp { provider_payment_id: None, ..op(P::Succeeded) },
        PaymentOp { last_error: None, ..op(P::Failed) },
        PaymentOp { last_error: None, ..op(P::Unknown) },
        PaymentOp { checks: -1, ..op(P::Pending) },
    ];
    for p in broken {
        assert!(!fields_fit(&p), "{p:?}");
    }
}
