//! The seat machine, row by row: every allowed transition is reachable by
//! some cause, nothing outside the table is, and each refusal is named.

use super::*;
use crate::model::SeatState as S;
use std::collections::BTreeSet;

const NOW_MS: i64 = 10_000;
const ALICE: &str = "alice";
const BOB: &str = "bob";

fn tok(n: u128) -> HoldToken {
    HoldToken::from_u128(n)
}

fn oid(n: u128) -> OrderId {
    OrderId::from_u128(n)
}

fn bid(n: u128) -> BookingId {
    BookingId::from_u128(n)
}

fn available() -> Seat {
    Seat {
        event_id: "ev".into(),
        seat_id: "A1".into(),
        state: S::Available,
        version: 3,
        hold_token: None,
        holder_id: None,
        hold_expires_at_ms: None,
        order_id: None,
        booking_id: None,
    }
}

fn held(token: u128, holder: impl Into<UserId>, expires_at_ms: i64) -> Seat {
    Seat {
        state: S::Held,
        hold_token: Some(tok(token)),
        holder_id: Some(holder.into()),
        hold_expires_at_ms: Some(expires_at_ms),
        ..available()
    }
}

fn pending(order: u128) -> Seat {
    Seat { state: S::PaymentPending, order_id: Some(oid(order)), ..held(1, ALICE, NOW_MS + 1) }
}

fn sold(order: u128) -> Seat {
    Seat { state: S::Sold, booking_id: Some(bid(99)), hold_expires_at_ms: None, ..pending(order) }
}

/// One seat of every state, and of every relation to the causes below.
fn befores() -> Vec<Seat> {
    vec![
        available(),
        held(1, ALICE, NOW_MS + 1),
        held(1, ALICE, NOW_MS),
        held(2, BOB, NOW_MS - 5),
        pending(7),
        pending(8),
        sold(7),
    ]
}

/// Every cause, with tokens, holders and orders that match some seats of [`befores`] and not others.
fn causes<'a>(alice: &'a UserId, bob: &'a UserId) -> Vec<SeatCause<'a>> {
    let mut out = vec![SeatCause::Expire];
    for holder in [alice, bob] {
        out.push(SeatCause::Hold { token: tok(50), holder, expires_at_ms: NOW_MS + 5_000 });
        for token in [tok(1), tok(2), tok(3)] {
            out.push(SeatCause::Release { token, holder });
            out.push(SeatCause::Checkout { token, holder, order_id: oid(60) });
        }
    }
    for order in [oid(7), oid(8), oid(9)] {
        out.push(SeatCause::Sell { order_id: order, booking_id: bid(61) });
        out.push(SeatCause::Free { order_id: order });
    }
    out
}

#[test]
fn every_row_of_the_table_is_reachable_and_nothing_else_is() {
    let (alice, bob) = (UserId::from(ALICE), UserId::from(BOB));
    let mut seen = BTreeSet::new();
    for before in befores() {
        for cause in causes(&alice, &bob) {
            if let Ok(after) = next(&before, &cause, NOW_MS, &Rules::SOUND) {
                assert_eq!(after.version, before.version + 1, "{cause:?}");
                assert!(fields_fit(&after), "{cause:?}: {after:?}");
                seen.insert((before.state, after.state));
            }
        }
    }
    crate::store::machine::assert_table_is_reached(TRANSITIONS, &seen, S::ALL, transition_allowed);
}

#[test]
fn a_hold_takes_a_free_or_expired_seat_with_a_fresh_token_and_refuses_a_live_one() {
    let bob = UserId::from(BOB);
    let cause = SeatCause::Hold { token: tok(50), holder: &bob, expires_at_ms: NOW_MS + 5_000 };
    for before in [available(), held(1, ALICE, NOW_MS), held(1, ALICE, NOW_MS - 1)] {
        let after = next(&before, &cause, NOW_MS, &Rules::SOUND).expect("holdable");
        assert_eq!(after, Seat { version: 4, ..held(50, BOB, NOW_MS + 5_000) });
    }
    for before in [held(1, ALICE, NOW_MS + 1), pending(7), sold(7)] {
        assert_eq!(next(&before, &cause, NOW_MS, &Rules::SOUND), Err(SeatRefusal::Owned), "{before:?}");
    }
}

#[test]
fn a_planted_takeover_keeps_the_old_token_and_a_planted_hold_ignores_the_deadline() {
    let bob = UserId::from(BOB);
    let cause = SeatCause::Hold { token: tok(50), holder: &bob, expires_at_ms: NOW_MS + 5_000 };
    let keeps = Rules { hold_fresh_token: false, ..Rules::SOUND };
    let after = next(&held(1, ALICE, NOW_MS - 1), &cause, NOW_MS, &keeps).expect("expired");
    assert_eq!(after.hold_token, Some(tok(1)), "the planted bug keeps the previous token");
    let blind = Rules { hold_deadline: false, ..Rules::SOUND };
    assert!(next(&held(1, ALICE, NOW_MS + 1), &cause, NOW_MS, &blind).is_ok(), "a live hold taken");
}

#[test]
fn a_checkout_names_the_first_failing_comparison() {
    let (alice, bob) = (UserId::from(ALICE), UserId::from(BOB));
    let checkout = |token, holder| SeatCause::Checkout { token, holder, order_id: oid(60) };
    let live = held(1, ALICE, NOW_MS + 1);
    let after = next(&live, &checkout(tok(1), &alice), NOW_MS, &Rules::SOUND).expect("live hold");
    assert_eq!((after.state, after.order_id, after.hold_token), (S::PaymentPending, Some(oid(60)), Some(tok(1))));
    let cases = [
        (live.clone(), checkout(tok(2), &alice), SeatRefusal::OtherToken { state: S::Held }),
        (available(), checkout(tok(1), &alice), SeatRefusal::OtherToken { state: S::Available }),
        (live.clone(), checkout(tok(1), &bob), SeatRefusal::OtherHolder),
        (pending(7), checkout(tok(1), &alice), SeatRefusal::NotHeld),
        (held(1, ALICE, NOW_MS), checkout(tok(1), &alice), SeatRefusal::Expired { expired_at_ms: NOW_MS }),
    ];
    for (before, cause, refusal) in cases {
        assert_eq!(next(&before, &cause, NOW_MS, &Rules::SOUND), Err(refusal), "{before:?} {cause:?}");
    }
}

#[test]
fn each_switched_off_checkout_comparison_lets_its_case_through() {
    let (alice, bob) = (UserId::from(ALICE), UserId::from(BOB));
    let checkout = |token, holder| SeatCause::Checkout { token, holder, order_id: oid(60) };
    let cases = [
        (Rules { checkout_token: false, ..Rules::SOUND }, held(2, ALICE, NOW_MS + 1), checkout(tok(1), &alice)),
        (Rules { checkout_holder: false, ..Rules::SOUND }, held(1, BOB, NOW_MS + 1), checkout(tok(1), &alice)),
        (Rules { checkout_deadline: false, ..Rules::SOUND }, held(1, ALICE, NOW_MS), checkout(tok(1), &alice)),
    ];
    for (rules, before, cause) in cases {
        assert!(next(&before, &cause, NOW_MS, &rules).is_ok(), "{rules:?}");
    }
    // The unconditional checkout writes the presented hold onto whatever it finds.
    let unconditional = Rules {
        checkout_token: false,
        checkout_holder: false,
        checkout_deadline: false,
        checkout_state: false,
        ..Rules::SOUND
    };
    let after = next(&sold(7), &checkout(tok(1), &bob), NOW_MS, &unconditional).expect("unconditional");
    assert_eq!(after.state, S::PaymentPending);
    assert_eq!((after.hold_token, after.holder_id.as_deref(), after.booking_id), (Some(tok(1)), Some(BOB), None));
    assert!(fields_fit(&after));
}

#[test]
fn release_expire_sell_and_free_guard_their_seat() {
    let (alice, bob) = (UserId::from(ALICE), UserId::from(BOB));
    let live = held(1, ALICE, NOW_MS + 1);
    let rel = |token, holder| SeatCause::Release { token, holder };
    assert_eq!(next(&live, &rel(tok(1), &alice), NOW_MS, &Rules::SOUND).map(|s| s.state), Ok(S::Available));
    assert_eq!(next(&live, &rel(tok(1), &bob), NOW_MS, &Rules::SOUND), Err(SeatRefusal::OtherHolder));
    assert_eq!(
        next(&live, &rel(tok(2), &alice), NOW_MS, &Rules::SOUND),
        Err(SeatRefusal::OtherToken { state: S::Held })
    );
    assert_eq!(next(&pending(7), &rel(tok(1), &alice), NOW_MS, &Rules::SOUND), Err(SeatRefusal::NotHeld));

    assert_eq!(next(&live, &SeatCause::Expire, NOW_MS, &Rules::SOUND), Err(SeatRefusal::NotDue));
    assert!(next(&held(1, ALICE, NOW_MS), &SeatCause::Expire, NOW_MS, &Rules::SOUND).is_ok());
    assert_eq!(next(&pending(7), &SeatCause::Expire, NOW_MS + 10, &Rules::SOUND), Err(SeatRefusal::NotDue));
    let early = Rules { sweep_ahead_ms: 1_000, ..Rules::SOUND };
    assert!(next(&live, &SeatCause::Expire, NOW_MS, &early).is_ok(), "the planted early sweeper");

    let sell = |o| SeatCause::Sell { order_id: oid(o), booking_id: bid(61) };
    let after = next(&pending(7), &sell(7), NOW_MS, &Rules::SOUND).expect("reserved by 7");
    assert_eq!((after.state, after.booking_id, after.hold_expires_at_ms), (S::Sold, Some(bid(61)), None));
    assert_eq!(next(&pending(7), &sell(8), NOW_MS, &Rules::SOUND), Err(SeatRefusal::NotReservedByOrder));
    assert_eq!(next(&sold(7), &sell(7), NOW_MS, &Rules::SOUND), Err(SeatRefusal::NotReservedByOrder));
    let free = |o| SeatCause::Free { order_id: oid(o) };
    assert_eq!(next(&pending(7), &free(7), NOW_MS, &Rules::SOUND), Ok(Seat { version: 4, ..available() }));
    assert_eq!(next(&pending(7), &free(8), NOW_MS, &Rules::SOUND), Err(SeatRefusal::NotReservedByOrder));
}

#[test]
fn field_rules_are_the_migrations_checks() {
    for seat in befores() {
        assert!(fields_fit(&seat), "{seat:?}");
    }
    let broken = [
        Seat { hold_token: Some(tok(1)), ..available() },
        Seat { hold_expires_at_ms: None, ..held(1, ALICE, 0) },
        Seat { order_id: Some(oid(7)), ..held(1, ALICE, 0) },
        Seat { order_id: None, ..pending(7) },
        Seat { booking_id: Some(bid(9)), ..pending(7) },
        Seat { booking_id: None, ..sold(7) },
        Seat { version: -1, ..available() },
    ];
    for seat in broken {
        assert!(!fields_fit(&seat), "{seat:?}");
    }
}
