use super::*;
use serde_json::json;

const TTL_MS: i64 = 2_000;

fn room(policy: Policy, opens_at_ms: i64) -> ChaosRoom {
    ChaosRoom {
        policy,
        opens_at_ms,
        target_active_sessions: 2,
        session_ttl_ms: TTL_MS,
        bypass_share: 0.0,
        member_share: 0.0,
    }
}

fn op(client: &str, request: &str, start_ms: u64, end_ms: u64, status: u16, detail: Option<serde_json::Value>) -> Op {
    Op::answered(client, request, (start_ms, end_ms), status, detail)
}

/// A queue answer at `at`: `state`, and for an admission the expiry of one admitted at `admitted_ms`.
fn queue(user: &UserId, method: &str, (start, end): (u64, u64), state: &str, admitted_ms: Option<i64>) -> Op {
    let expires = admitted_ms.map(|a| booking::admission::token::rfc3339_ms(a + TTL_MS));
    op(
        user.as_str(),
        &format!("{method} /v1/events/ev/queue"),
        start,
        end,
        200,
        Some(json!({"state": state, "admission_expires_at": expires})),
    )
}

fn judge_ops(ops: &[Op], room: &ChaosRoom, tiers: &BTreeMap<UserId, u8>) -> Vec<Finding> {
    let events = vec![booking::model::EventId::from("ev")];
    let joined = BTreeMap::new();
    let facts = RoomFacts { room, events: &events, tiers, epoch_start_ms: 0, orders: &[], joined: &joined };
    let arrivals = arrivals(ops, &facts);
    let mut found = bypasses(ops, &[]);
    found.extend(order(&arrivals, &facts));
    found.extend(liveness(&arrivals));
    found
}

fn invariants(found: &[Finding]) -> Vec<&'static str> {
    found.iter().map(|(i, _)| *i).collect()
}

#[test]
fn a_granted_hold_without_an_admission_is_a_bypass_and_a_refused_one_is_not() {
    let granted = op("intruder0:bypass", "POST /v1/events/ev/holds", 10, 20, 201, None);
    let refused = op("user1:bypass", "POST /v1/events/ev/holds", 10, 20, 403, None);
    let unavailable = op("user1:admission-expired", "POST /v1/events/ev/holds", 10, 20, 503, None);
    assert_eq!(invariants(&bypasses(&[granted, refused.clone(), unavailable.clone()], &[])), ["admission-required"]);
    assert!(bypasses(&[refused, unavailable], &[]).is_empty());
}

#[test]
fn fifo_joiners_are_admitted_in_real_time_order() {
    let r = room(Policy::Fifo, 0);
    let tiers = BTreeMap::new();
    // a's join was answered (at 20) before b's was sent (30): a goes first.
    let in_order = [
        queue(&"a".into(), "POST", (10, 20), "waiting", None),
        queue(&"b".into(), "POST", (30, 40), "waiting", None),
        queue(&"a".into(), "GET", (100, 110), "admitted", Some(90)),
        queue(&"b".into(), "GET", (200, 210), "admitted", Some(190)),
    ];
    assert!(judge_ops(&in_order, &r, &tiers).is_empty());
    let out_of_order = [
        queue(&"a".into(), "POST", (10, 20), "waiting", None),
        queue(&"b".into(), "POST", (30, 40), "waiting", None),
        queue(&"b".into(), "GET", (100, 110), "admitted", Some(90)),
        queue(&"a".into(), "GET", (200, 210), "admitted", Some(190)),
    ];
    assert_eq!(invariants(&judge_ops(&out_of_order, &r, &tiers)), ["admission-order"]);
    // Overlapping joins may go either way.
    let concurrent = [
        queue(&"a".into(), "POST", (10, 40), "waiting", None),
        queue(&"b".into(), "POST", (30, 50), "waiting", None),
        queue(&"b".into(), "GET", (100, 110), "admitted", Some(90)),
        queue(&"a".into(), "GET", (200, 210), "admitted", Some(190)),
    ];
    assert!(judge_ops(&concurrent, &r, &tiers).is_empty());
}

#[test]
fn a_first_attempt_that_went_unanswered_still_counts_as_sent() {
    let r = room(Policy::Fifo, 0);
    let mut lost = queue(&"b".into(), "POST", (15, 5_015), "waiting", None);
    lost.outcome = Outcome::Unknown("timed out".into());
    let ops = [
        lost,
        queue(&"a".into(), "POST", (10, 20), "waiting", None),
        queue(&"b".into(), "POST", (5_100, 5_110), "waiting", None),
        queue(&"b".into(), "GET", (5_200, 5_210), "admitted", Some(90)),
        queue(&"a".into(), "GET", (5_300, 5_310), "admitted", Some(190)),
    ];
    // b's first attempt (sent at 15) may have joined before a's answer (20).
    assert!(judge_ops(&ops, &r, &BTreeMap::new()).is_empty());
}

#[test]
fn members_waiting_go_before_the_public() {
    let r = room(Policy::Priority, 0);
    let tiers: BTreeMap<UserId, u8> = [(UserId::from("m"), 0)].into();
    let ops = [
        queue(&"p".into(), "POST", (10, 20), "waiting", None),
        queue(&"m".into(), "POST", (30, 40), "waiting", None),
        queue(&"p".into(), "GET", (100, 110), "admitted", Some(90)),
        queue(&"m".into(), "GET", (200, 210), "admitted", Some(190)),
    ];
    assert_eq!(invariants(&judge_ops(&ops, &r, &tiers)), ["admission-order"], "m waited when p was admitted");
    let ops = [
        queue(&"p".into(), "POST", (10, 20), "waiting", None),
        queue(&"p".into(), "GET", (100, 110), "admitted", Some(90)),
        queue(&"m".into(), "POST", (130, 140), "waiting", None),
        queue(&"m".into(), "GET", (200, 210), "admitted", Some(190)),
    ];
    assert!(judge_ops(&ops, &r, &tiers).is_empty(), "m joined after p's admission");
}

#[test]
fn a_lottery_orders_pre_opening_joiners_freely_and_ahead_of_later_arrivals() {
    let r = room(Policy::Lottery, 1_000);
    let tiers = BTreeMap::new();
    let drawn_freely = [
        queue(&"a".into(), "POST", (10, 20), "awaiting_draw", None),
        queue(&"b".into(), "POST", (30, 40), "awaiting_draw", None),
        queue(&"b".into(), "GET", (1_100, 1_110), "admitted", Some(1_050)),
        queue(&"a".into(), "GET", (1_300, 1_310), "admitted", Some(1_250)),
    ];
    assert!(judge_ops(&drawn_freely, &r, &tiers).is_empty());
    let late_first = [
        queue(&"a".into(), "POST", (10, 20), "awaiting_draw", None),
        queue(&"c".into(), "POST", (1_030, 1_040), "waiting", None),
        queue(&"c".into(), "GET", (1_100, 1_110), "admitted", Some(1_050)),
        queue(&"a".into(), "GET", (1_300, 1_310), "admitted", Some(1_250)),
    ];
    assert_eq!(invariants(&judge_ops(&late_first, &r, &tiers)), ["admission-order"]);
}

#[test]
fn a_user_left_waiting_breaks_liveness_and_one_told_sold_out_does_not() {
    let r = room(Policy::Fifo, 0);
    let ops =
        [queue(&"a".into(), "POST", (10, 20), "waiting", None), queue(&"b".into(), "POST", (10, 20), "sold_out", None)];
    let found = judge_ops(&ops, &r, &BTreeMap::new());
    assert_eq!(invariants(&found), ["queue-liveness"]);
    assert!(found[0].1.contains("a on ev"), "{found:?}");
}

#[test]
fn a_hold_after_a_purchase_is_a_bypass_only_when_the_purchase_stood() {
    let order_id = uuid::Uuid::from_u128(7);
    let hold = op(&format!("user1{SPENT_AFTER}{order_id}"), "POST /v1/events/ev/holds", 10, 20, 201, None);
    let order = |status: &str| -> Order {
        serde_json::from_value(json!({
            "event_id": "ev", "order_id": order_id, "holder_id": "user1", "hold_token": uuid::Uuid::from_u128(8),
            "seat_ids": ["s1"], "amount_cents": 100, "status": status, "payment_op_id": uuid::Uuid::from_u128(9),
            "payment_deadline_at_ms": 0, "idempotency_key": "k", "resolution_reason": null, "created_at_ms": 0, "updated_at_ms": 0
        }))
        .expect("an order")
    };
    assert_eq!(invariants(&bypasses(std::slice::from_ref(&hold), &[order("confirmed")])), ["admission-required"]);
    assert!(bypasses(&[hold], &[order("failed")]).is_empty(), "a failed purchase reopens the session");
}
