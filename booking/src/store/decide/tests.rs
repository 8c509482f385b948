//! The shared decisions at their boundaries, without a store: the per-user
//! cap at exactly its limit, all-or-nothing holds, the checkout's error
//! precedence over a selection, the whole-hold rule and the release's answers.

use super::*;
use crate::model::{OrderStatus, PaymentOpId};

const NOW_MS: i64 = 10_000;
const ALICE: &str = "alice";
const BOB: &str = "bob";

/// The event every check here is asked about.
fn ev() -> EventId {
    EventId::new("ev")
}

fn tok(n: u128) -> HoldToken {
    HoldToken::from_u128(n)
}

fn user(name: &str) -> UserId {
    UserId::from(name)
}

fn ids(names: &[&str]) -> Vec<SeatId> {
    names.iter().map(|s| SeatId::from(*s)).collect()
}

fn available(seat_id: impl Into<SeatId>) -> Seat {
    Seat {
        event_id: "ev".into(),
        seat_id: seat_id.into(),
        state: SeatState::Available,
        version: 1,
        hold_token: None,
        holder_id: None,
        hold_expires_at_ms: None,
        order_id: None,
        booking_id: None,
    }
}

fn held(seat_id: impl Into<SeatId>, token: u128, holder: impl Into<UserId>, expires_at_ms: i64) -> Seat {
    Seat {
        state: SeatState::Held,
        hold_token: Some(tok(token)),
        holder_id: Some(holder.into()),
        hold_expires_at_ms: Some(expires_at_ms),
        ..available(seat_id)
    }
}

fn pending(seat_id: impl Into<SeatId>, token: u128, holder: impl Into<UserId>) -> Seat {
    Seat {
        state: SeatState::PaymentPending,
        order_id: Some(OrderId::from_u128(70)),
        ..held(seat_id, token, holder, NOW_MS + 500)
    }
}

#[test]
fn the_hold_cap_admits_exactly_up_to_its_limit() {
    let sound = Rules::SOUND;
    assert_eq!(check_hold_limit(&ev(), 6, 2, Some(8), &sound), Ok(()), "6 + 2 reaches the cap of 8");
    assert_eq!(check_hold_limit(&ev(), 0, 8, Some(8), &sound), Ok(()), "one selection of the whole cap");
    assert_eq!(
        check_hold_limit(&ev(), 7, 2, Some(8), &sound),
        Err(StoreError::HoldLimit { event_id: "ev".into(), limit: 8, held: 7, requested: 2 }),
        "7 + 2 passes the cap"
    );
    assert_eq!(
        check_hold_limit(&ev(), 1, 8, Some(8), &sound),
        Err(StoreError::HoldLimit { event_id: "ev".into(), limit: 8, held: 1, requested: 8 }),
        "1 + 8 passes the cap (a product would not: 1 * 8 = 8)"
    );
    assert!(check_hold_limit(&ev(), 8, 1, Some(8), &sound).is_err(), "a full holder takes nothing more");
    assert_eq!(check_hold_limit(&ev(), 1_000, 1_000, None, &sound), Ok(()), "no cap, no refusal");
}

#[test]
fn the_planted_cap_compares_only_the_seats_already_held() {
    let planted = Rules { hold_limit_counts_request: false, ..Rules::SOUND };
    assert_eq!(check_hold_limit(&ev(), 7, 5, Some(8), &planted), Ok(()), "7 held: below the cap, takes 5 more");
    assert!(check_hold_limit(&ev(), 8, 5, Some(8), &planted).is_err(), "8 held: at the cap");
    assert_eq!(check_hold_limit(&ev(), 0, 0, Some(0), &planted), Ok(()), "an empty request counts nothing");
}

#[test]
fn a_hold_takes_every_requested_seat_or_names_the_first_unavailable() {
    let sound = Rules::SOUND;
    let requested = ids(&["A1", "A2", "A3"]);
    let free = vec![available("A1"), available("A2"), held("A3", 1, BOB, NOW_MS)];
    assert_eq!(
        check_holdable(&ev(), &requested, &free, NOW_MS, &sound),
        Ok(requested.clone()),
        "an expired hold is free"
    );

    let one_taken = vec![available("A1"), held("A2", 1, BOB, NOW_MS + 1), pending("A3", 2, BOB)];
    assert_eq!(
        check_holdable(&ev(), &requested, &one_taken, NOW_MS, &sound),
        Err(StoreError::SeatUnavailable { event_id: "ev".into(), seat_id: "A2".into() }),
        "all or nothing, and the first refusal in seat order"
    );

    let missing = vec![available("A1"), available("A3")];
    assert_eq!(
        check_holdable(&ev(), &requested, &missing, NOW_MS, &sound),
        Err(StoreError::UnknownSeat { event_id: "ev".into(), seat_id: "A2".into() }),
        "a seat that does not exist is named before any availability"
    );
}

#[test]
fn the_planted_partial_hold_keeps_what_it_could_get_but_not_nothing() {
    let planted = Rules { hold_all_or_nothing: false, ..Rules::SOUND };
    let requested = ids(&["A1", "A2"]);
    let one_taken = vec![available("A1"), held("A2", 1, BOB, NOW_MS + 1)];
    assert_eq!(check_holdable(&ev(), &requested, &one_taken, NOW_MS, &planted), Ok(ids(&["A1"])));
    let all_taken = vec![held("A1", 1, BOB, NOW_MS + 1), held("A2", 1, BOB, NOW_MS + 1)];
    assert_eq!(
        check_holdable(&ev(), &requested, &all_taken, NOW_MS, &planted),
        Err(StoreError::SeatUnavailable { event_id: "ev".into(), seat_id: "A1".into() }),
        "nothing to take is still a refusal"
    );
}

#[test]
fn checkout_passes_only_for_the_holders_own_live_token_on_every_seat() {
    let sound = Rules::SOUND;
    let alice = user(ALICE);
    let requested = ids(&["A1", "A2"]);
    let mine = vec![held("A1", 1, ALICE, NOW_MS + 1), held("A2", 1, ALICE, NOW_MS + 1)];
    assert_eq!(check_checkout(&ev(), &requested, &mine, tok(1), &alice, NOW_MS, &sound), Ok(()));
    assert_eq!(
        check_checkout(&ev(), &ids(&["A1", "A9"]), &mine[..1], tok(1), &alice, NOW_MS, &sound),
        Err(StoreError::UnknownSeat { event_id: "ev".into(), seat_id: "A9".into() })
    );
}

#[test]
fn checkout_errors_follow_their_precedence_across_the_selection() {
    let sound = Rules::SOUND;
    let alice = user(ALICE);
    let requested = ids(&["A1", "A2"]);
    let check = |locked: &[Seat]| check_checkout(&ev(), &requested, locked, tok(1), &alice, NOW_MS, &sound);

    // Another live hold on one seat, the other expired: stale wins.
    let stale = [held("A1", 1, ALICE, NOW_MS), held("A2", 2, BOB, NOW_MS + 1)];
    assert_eq!(check(&stale), Err(StoreError::StaleToken));
    // The token's seats were swept (available): the hold is gone, not stale.
    let swept = [available("A1"), available("A2")];
    assert_eq!(check(&swept), Err(StoreError::HoldNotFound));
    // One swept, one taken by Bob: stale.
    let retaken = [available("A1"), held("A2", 2, BOB, NOW_MS + 1)];
    assert_eq!(check(&retaken), Err(StoreError::StaleToken));
    // Alice's token, but the seat names Bob: not the holder (before expiry).
    let other_holder = [held("A1", 1, BOB, NOW_MS), held("A2", 1, ALICE, NOW_MS + 1)];
    assert_eq!(check(&other_holder), Err(StoreError::NotHolder));
    // Already checked out (in payment under this token): not found, before expiry.
    let paid = [pending("A1", 1, ALICE), held("A2", 1, ALICE, NOW_MS)];
    assert_eq!(check(&paid), Err(StoreError::HoldNotFound));
    // Expired, at the deadline millisecond: the earliest deadline is reported.
    let expired = [held("A1", 1, ALICE, NOW_MS + 1), held("A2", 1, ALICE, NOW_MS)];
    assert_eq!(check(&expired), Err(StoreError::HoldExpired { expired_at_ms: NOW_MS }));
    let both_expired = [held("A1", 1, ALICE, NOW_MS - 7), held("A2", 1, ALICE, NOW_MS - 3)];
    assert_eq!(check(&both_expired), Err(StoreError::HoldExpired { expired_at_ms: NOW_MS - 7 }));
}

#[test]
fn planted_checkout_rules_skip_exactly_their_comparison() {
    let alice = user(ALICE);
    let requested = ids(&["A1"]);
    let check =
        |locked: Seat, rules: Rules| check_checkout(&ev(), &requested, &[locked], tok(1), &alice, NOW_MS, &rules);
    let no_token = Rules { checkout_token: false, ..Rules::SOUND };
    assert_eq!(check(held("A1", 2, ALICE, NOW_MS + 1), no_token), Ok(()), "another token of Alice's passes");
    let no_holder = Rules { checkout_holder: false, ..Rules::SOUND };
    assert_eq!(check(held("A1", 1, BOB, NOW_MS + 1), no_holder), Ok(()));
    let no_deadline = Rules { checkout_deadline: false, ..Rules::SOUND };
    assert_eq!(check(held("A1", 1, ALICE, NOW_MS - 1), no_deadline), Ok(()));
    let no_state = Rules { checkout_state: false, ..Rules::SOUND };
    assert_eq!(check(pending("A1", 1, ALICE), no_state), Ok(()), "a seat in payment is checked out again");
    assert_eq!(check(held("A1", 2, ALICE, NOW_MS + 1), no_state), Err(StoreError::StaleToken), "the others stay");
}

#[test]
fn a_checkout_must_name_the_whole_hold() {
    assert_eq!(check_whole_hold(&ids(&["A1", "A2"]), &ids(&["A1", "A2"])), Ok(()));
    assert_eq!(
        check_whole_hold(&ids(&["A1", "A2", "A3"]), &ids(&["A2"])),
        Ok(()),
        "seats no longer held are not asked for"
    );
    match check_whole_hold(&ids(&["A1", "A3"]), &ids(&["A1", "A2", "A3"])) {
        Err(StoreError::InvalidInput(msg)) => assert!(msg.contains("A2 is missing"), "{msg}"),
        other => panic!("half a hold is not a checkout: {other:?}"),
    }
}

#[test]
fn a_release_frees_the_holders_held_seats_and_otherwise_says_why_not() {
    let alice = user(ALICE);
    let mine = vec![held("A1", 1, ALICE, NOW_MS + 1), pending("A2", 1, ALICE), held("A3", 1, ALICE, NOW_MS - 1)];
    let freed = releasable(&mine, tok(1), &alice, NOW_MS).expect("the held seats are freed");
    assert_eq!(freed.iter().map(|s| s.seat_id.as_str()).collect::<Vec<_>>(), ["A1", "A3"], "not the seat in payment");
    assert!(freed.iter().all(|s| s.state == SeatState::Available && s.hold_token.is_none() && s.version == 2));

    let bobs = vec![held("A1", 1, BOB, NOW_MS + 1)];
    assert_eq!(releasable(&bobs, tok(1), &alice, NOW_MS), Err(StoreError::NotHolder));
    let in_payment = vec![pending("A1", 1, ALICE)];
    assert_eq!(releasable(&in_payment, tok(1), &alice, NOW_MS), Err(StoreError::HoldNotFound));
    assert_eq!(releasable(&[], tok(1), &alice, NOW_MS), Err(StoreError::HoldNotFound), "no seat carries the token");
}

#[test]
fn machine_refusals_map_to_the_stores_named_errors() {
    let order = OrderId::from_u128(5);
    assert_eq!(
        order_refused(order, OrderRefusal::NotOpen { status: OrderStatus::Confirmed }),
        StoreError::OrderNotOpen(order)
    );
    assert_eq!(
        order_refused(order, OrderRefusal::DeadlineNotPassed { deadline_at_ms: 42 }),
        StoreError::DeadlineNotPassed { deadline_at_ms: 42 }
    );
    assert!(matches!(
        order_refused(order, OrderRefusal::NoChange { status: OrderStatus::Reconciling }),
        StoreError::InvariantBreach(msg) if msg.contains(&order.to_string())
    ));
    let op = PaymentOpId::from_u128(5);
    assert_eq!(payment_refused(PaymentRefusal::Conflict(op)), StoreError::PaymentConflict(op));
    assert!(matches!(payment_refused(PaymentRefusal::NotDue(op)), StoreError::InvariantBreach(_)));
}
