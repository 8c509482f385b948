//! The compensation machine, row by row: every allowed transition is
//! reachable, nothing outside the table is, stale results change nothing,
//! and giving up moves the order.

use super::*;
use crate::model::CompensationStatus as C;
use crate::model::{CompensationId, EventId, OrderId, PaymentOpId};
use std::collections::BTreeSet;

const NOW_MS: i64 = 50_000;
const LEASE_MS: i64 = 2_000;

fn comp(status: C, attempts: i32, next_attempt_at_ms: i64) -> Compensation {
    let mut c = Compensation::requested_refund(
        &EventId::from("ev"),
        CompensationId::from_u128(5),
        OrderId::from_u128(7),
        PaymentOpId::from_u128(8),
        1_000,
        1_000,
    );
    c.status = status;
    c.attempts = attempts;
    c.next_attempt_at_ms = next_attempt_at_ms;
    c.last_error = (status == C::Failed).then(|| "gave up".into());
    c
}

fn result(outcome: CompensationOutcome) -> CompensationResult {
    CompensationResult { compensation_id: CompensationId::from_u128(5), outcome, max_attempts: 3, retry_after_ms: 500 }
}

fn outcomes() -> Vec<CompensationOutcome> {
    let mut out = vec![CompensationOutcome::Succeeded];
    for attempt in 1..=3 {
        out.push(CompensationOutcome::Failed { attempt, error: "503".into() });
        out.push(CompensationOutcome::Unknown { attempt, error: "timeout".into() });
    }
    out
}

#[test]
fn every_row_of_the_table_is_reachable_and_nothing_else_is() {
    let mut seen = BTreeSet::new();
    for status in C::ALL {
        for attempts in [0, 1, 3] {
            for next_at in [NOW_MS - 1, NOW_MS + 1] {
                let before = comp(*status, attempts, next_at);
                if !fields_fit(&before) {
                    continue;
                }
                if let Ok(a) = start_attempt(&before, NOW_MS, LEASE_MS, &Rules::SOUND) {
                    seen.insert((before.status, a.compensation.status));
                }
                for outcome in outcomes() {
                    if let Some((after, _)) = finish_attempt(&before, &result(outcome), NOW_MS) {
                        seen.insert((before.status, after.status));
                    }
                }
            }
        }
    }
    crate::store::machine::assert_table_is_reached(TRANSITIONS, &seen, C::ALL, transition_allowed);
}

#[test]
fn an_attempt_starts_when_due_and_a_takeover_only_past_the_lease() {
    let a = start_attempt(&comp(C::Requested, 0, NOW_MS), NOW_MS, LEASE_MS, &Rules::SOUND).expect("due");
    assert_eq!(
        (a.compensation.status, a.compensation.attempts, a.compensation.next_attempt_at_ms),
        (C::InFlight, 1, NOW_MS + LEASE_MS)
    );
    assert_eq!(a.took_over, None);
    let not_due = start_attempt(&comp(C::Requested, 1, NOW_MS + 1), NOW_MS, LEASE_MS, &Rules::SOUND);
    assert_eq!(not_due.map(|_| ()), Err(StoreError::CompensationNotDue(CompensationId::from_u128(5))));
    let leased = start_attempt(&comp(C::InFlight, 1, NOW_MS + 1), NOW_MS, LEASE_MS, &Rules::SOUND);
    assert!(leased.is_err(), "a live attempt keeps its lease");
    let ignore = Rules { attempt_lease: false, ..Rules::SOUND };
    assert!(start_attempt(&comp(C::InFlight, 1, NOW_MS + 1), NOW_MS, LEASE_MS, &ignore).is_ok(), "the planted bug");
    let taken = start_attempt(&comp(C::InFlight, 1, NOW_MS), NOW_MS, LEASE_MS, &Rules::SOUND).expect("expired lease");
    assert_eq!(taken.took_over, Some(ExpiredAttempt { attempt: 1, lease_expired_at_ms: NOW_MS }));
    assert_eq!(taken.compensation.attempts, 2);
    for status in [C::Succeeded, C::Failed] {
        assert!(start_attempt(&comp(status, 1, 0), NOW_MS, LEASE_MS, &Rules::SOUND).is_err(), "{status} is final");
    }
}

#[test]
fn a_result_moves_the_current_attempt_only_and_giving_up_moves_the_order() {
    let flying = comp(C::InFlight, 2, NOW_MS + 1);
    let stale = finish_attempt(&flying, &result(CompensationOutcome::Failed { attempt: 1, error: "x".into() }), NOW_MS);
    assert_eq!(stale, None, "a result of an abandoned attempt changes nothing");
    let (retry, order) =
        finish_attempt(&flying, &result(CompensationOutcome::Failed { attempt: 2, error: "x".into() }), NOW_MS)
            .expect("current attempt");
    assert_eq!((retry.status, retry.next_attempt_at_ms, order), (C::Requested, NOW_MS + 500, None));
    let last = comp(C::InFlight, 3, NOW_MS + 1);
    let (gave_up, order) =
        finish_attempt(&last, &result(CompensationOutcome::Unknown { attempt: 3, error: "t".into() }), NOW_MS)
            .expect("current attempt");
    assert_eq!((gave_up.status, order), (C::Failed, Some(OrderCause::CompensationGaveUp)));
    assert_eq!(gave_up.last_error.as_deref(), Some("outcome unknown: t"));
    let (done, order) = finish_attempt(&comp(C::Requested, 1, 0), &result(CompensationOutcome::Succeeded), NOW_MS)
        .expect("a success between attempts");
    assert_eq!((done.status, order), (C::Succeeded, Some(OrderCause::Compensated)));
    assert_eq!(finish_attempt(&done, &result(CompensationOutcome::Succeeded), NOW_MS), None, "final");
}

#[test]
fn field_rules_hold_for_every_status() {
    assert!(fields_fit(&comp(C::Requested, 0, 0)));
    assert!(fields_fit(&comp(C::InFlight, 1, 0)));
    assert!(fields_fit(&comp(C::Failed, 3, 0)));
    assert!(!fields_fit(&comp(C::InFlight, 0, 0)));
    assert!(!fields_fit(&Compensation { last_error: None, ..comp(C::Failed, 3, 0) }));
    assert!(!fields_fit(&comp(C::Requested, -1, 0)));
}

// The machine's own guard, which sound transitions never trip: each
// assertion of `assert_moved` is shown to fire (a guard replaced by nothing
// survived the mutation run of 2026-12-03).

#[test]
#[should_panic(expected = "is not in the compensation table")]
fn the_guard_refuses_a_move_outside_the_table() {
    assert_moved(&comp(C::Succeeded, 1, 0), &comp(C::Requested, 1, 0));
}

#[test]
#[should_panic(expected = "breaks its status's field rules")]
fn the_guard_refuses_an_after_image_that_breaks_its_field_rules() {
    assert_moved(&comp(C::Requested, 0, 0), &comp(C::InFlight, 0, 0));
}

#[test]
#[should_panic(expected = "a compensation keeps what it gives back")]
fn the_guard_refuses_a_changed_amount() {
    let before = comp(C::Requested, 0, 0);
    let after = Compensation { amount_cents: before.amount_cents + 1, ..comp(C::InFlight, 1, 0) };
    assert_moved(&before, &after);
}
