//! The order machine, row by row: every allowed transition is reachable by
//! some cause, nothing outside the table is, and each refusal is named.

use super::*;
use crate::model::HoldToken;
use crate::model::OrderStatus as O;
use std::collections::BTreeSet;

const NOW_MS: i64 = 50_000;

fn order(status: O, deadline_at_ms: i64) -> Order {
    let reason = matches!(status, O::Failed | O::Released | O::Compensating | O::Compensated | O::CompensationFailed)
        .then(|| "earlier".to_string());
    Order {
        event_id: "ev".into(),
        order_id: OrderId::from_u128(7),
        holder_id: "alice".into(),
        hold_token: HoldToken::from_u128(1),
        seat_ids: vec!["A1".into(), "A2".into()],
        amount_cents: 2_000,
        status,
        payment_op_id: PaymentOpId::from_u128(8),
        payment_deadline_at_ms: deadline_at_ms,
        idempotency_key: "k".into(),
        resolution_reason: reason,
        created_at_ms: 1_000,
        updated_at_ms: 1_000,
    }
}

const CAUSES: &[OrderCause<'static>] = &[
    OrderCause::Sell,
    OrderCause::LateCharge,
    OrderCause::Decline { reason: "card declined" },
    OrderCause::Unknown { error: "timeout" },
    OrderCause::ReleaseUnresolved { reason: "deadline passed" },
    OrderCause::Compensated,
    OrderCause::CompensationGaveUp,
];

#[test]
fn every_row_of_the_table_is_reachable_and_nothing_else_is() {
    let mut seen = BTreeSet::new();
    for status in O::ALL {
        for deadline_at_ms in [NOW_MS - 1, NOW_MS + 1] {
            let before = order(*status, deadline_at_ms);
            for cause in CAUSES {
                if let Ok(after) = next(&before, cause, NOW_MS, &Rules::SOUND) {
                    assert_eq!(after.updated_at_ms, NOW_MS);
                    assert_eq!(
                        Order {
                            status: before.status,
                            resolution_reason: before.resolution_reason.clone(),
                            updated_at_ms: 1_000,
                            ..after.clone()
                        },
                        before,
                        "only the status, reason and update time change"
                    );
                    seen.insert((before.status, after.status));
                }
            }
        }
    }
    crate::store::machine::assert_table_is_reached(TRANSITIONS, &seen, O::ALL, transition_allowed);
    for status in [O::Confirmed, O::Compensated, O::CompensationFailed] {
        assert!(TRANSITIONS.iter().all(|(from, _)| *from != status), "{status} is final");
    }
}

#[test]
fn refusals_are_named() {
    let sound = Rules::SOUND;
    let cases = [
        (O::Confirmed, OrderCause::Sell, OrderRefusal::NotOpen { status: O::Confirmed }),
        (O::Released, OrderCause::Decline { reason: "x" }, OrderRefusal::NotOpen { status: O::Released }),
        (O::Pending, OrderCause::LateCharge, OrderRefusal::NotReleased { status: O::Pending }),
        (O::Confirmed, OrderCause::LateCharge, OrderRefusal::NotReleased { status: O::Confirmed }),
        (O::Reconciling, OrderCause::Unknown { error: "x" }, OrderRefusal::NoChange { status: O::Reconciling }),
        (O::Released, OrderCause::Unknown { error: "x" }, OrderRefusal::NoChange { status: O::Released }),
        (O::Released, OrderCause::Compensated, OrderRefusal::NotCompensating { status: O::Released }),
        (O::Failed, OrderCause::ReleaseUnresolved { reason: "x" }, OrderRefusal::NotOpen { status: O::Failed }),
    ];
    for (status, cause, refusal) in cases {
        assert_eq!(next(&order(status, NOW_MS - 1), &cause, NOW_MS, &sound), Err(refusal), "{status} {cause:?}");
    }
    let early =
        next(&order(O::Reconciling, NOW_MS + 1), &OrderCause::ReleaseUnresolved { reason: "x" }, NOW_MS, &sound);
    assert_eq!(early, Err(OrderRefusal::DeadlineNotPassed { deadline_at_ms: NOW_MS + 1 }));
    let at_deadline =
        next(&order(O::Reconciling, NOW_MS), &OrderCause::ReleaseUnresolved { reason: "x" }, NOW_MS, &sound);
    assert_eq!(at_deadline.map(|o| o.status), Ok(O::Released), "released once the deadline has come");
}

#[test]
fn reasons_are_recorded_where_seats_go_back_without_a_sale() {
    let declined = next(&order(O::Pending, NOW_MS), &OrderCause::Decline { reason: "card" }, NOW_MS, &Rules::SOUND);
    assert_eq!(declined.map(|o| o.resolution_reason), Ok(Some("payment declined: card".into())));
    let released =
        next(&order(O::Reconciling, NOW_MS), &OrderCause::ReleaseUnresolved { reason: "late" }, NOW_MS, &Rules::SOUND);
    assert_eq!(released.map(|o| o.resolution_reason), Ok(Some("late".into())));
    let sold = next(&order(O::Reconciling, NOW_MS), &OrderCause::Sell, NOW_MS, &Rules::SOUND).expect("open");
    assert_eq!((sold.status, sold.resolution_reason), (O::Confirmed, None));
}

#[test]
fn planted_rules_break_the_table_the_way_their_bug_does() {
    let unknown_releases = Rules { unknown_keeps_seats: false, ..Rules::SOUND };
    let after = next(&order(O::Pending, NOW_MS + 1), &OrderCause::Unknown { error: "t" }, NOW_MS, &unknown_releases);
    assert_eq!(
        after.map(|o| (o.status, o.resolution_reason)),
        Ok((O::Released, Some("payment outcome unknown: t".into())))
    );
    let repeat = Rules { repeat_success_idempotent: false, ..Rules::SOUND };
    let after = next(&order(O::Confirmed, NOW_MS), &OrderCause::LateCharge, NOW_MS, &repeat);
    assert_eq!(after.map(|o| o.status), Ok(O::Compensating));
    let hides = Rules { give_up_flags_order: false, ..Rules::SOUND };
    let after = next(&order(O::Compensating, NOW_MS), &OrderCause::CompensationGaveUp, NOW_MS, &hides);
    assert_eq!(after.map(|o| o.status), Ok(O::Failed));
    let sound = next(&order(O::Compensating, NOW_MS), &OrderCause::CompensationGaveUp, NOW_MS, &Rules::SOUND);
    assert_eq!(sound.map(|o| o.status), Ok(O::CompensationFailed));
}

#[test]
fn field_rules_hold_for_every_status() {
    for status in O::ALL {
        assert!(fields_fit(&order(*status, 0)), "{status}");
    }
    let broken = [
        Order { resolution_reason: Some("x".into()), ..order(O::Pending, 0) },
        Order { resolution_reason: None, ..order(O::Released, 0) },
        Order { seat_ids: vec![], ..order(O::Pending, 0) },
        Order { seat_ids: vec!["B".into(), "A".into()], ..order(O::Pending, 0) },
        // A seat twice is not a sorted selection (`<=` for `<` survived the mutation run).
        Order { seat_ids: vec!["A".into(), "A".into()], ..order(O::Pending, 0) },
        Order { amount_cents: -1, ..order(O::Pending, 0) },
    ];
    for o in broken {
        assert!(!fields_fit(&o), "{o:?}");
    }
}

#[test]
fn a_new_order_is_pending_on_its_sorted_seats_until_now_plus_the_payment_ttl() {
    let req = BeginPayment {
        event_id: "ev".into(),
        holder_id: "alice".into(),
        hold_token: HoldToken::from_u128(1),
        seat_ids: vec!["A2".into(), "A1".into()],
        idempotency_key: "k".into(),
        payment_ttl_ms: 30_000,
    };
    let sorted: Vec<SeatId> = vec!["A1".into(), "A2".into()];
    let o = open(&req, &sorted, OrderId::from_u128(7), PaymentOpId::from_u128(8), 2_000, NOW_MS);
    assert_eq!(o, Order { created_at_ms: NOW_MS, updated_at_ms: NOW_MS, ..order(O::Pending, NOW_MS + 30_000) });
}
