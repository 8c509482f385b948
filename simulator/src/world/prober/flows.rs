//! The prober's flows: short stories as two users of its own (`a` and
//! `b`), each putting one field a rule binds in the wrong place, or meeting
//! one boundary of a rule on either side:
//!
//! - an idempotency key reused for another hold;
//! - the map's views by state (`?state=held`, `payment_pending`, `sold`)
//!   read while its own hold stands and its order awaits payment;
//! - another user's hold released and checked out; another user's order read;
//! - a hold token presented on another event;
//! - the per-user cap met exactly, then passed by one;
//! - a selection of the most seats one hold may name, then one more;
//! - checkouts aimed at one tick before, at and after their hold's deadline
//!   (the store's clock; arrival is aimed with the least message latency);
//! - holds aimed at one tick before, at and after another user's deadline
//!   (the takeover of an expired hold);
//! - signed and unsigned provider webhooks, each refused its own way;
//! - the rate limit: more hold attempts than a minute allows, back to back.

use super::{Probe, ProberKit};
use crate::world::recorder::Recorder;
use crate::world::sim_clock::EPOCH_MS;
use crate::world::user::Actor;
use booking::model::{
    CompensationId, EventId, HoldToken, MAX_SEATS_PER_HOLD, OrderId, PaymentOpId, SeatId, SeatState, UserId,
};
use booking::payment::webhook::sign;
use invariants::trace::{ClientOp, Credential, OpResult};
use serde_json::json;
use std::time::Duration;

/// The instants a boundary is met at, in ticks of the simulation from it: one before, at, one after.
pub const BOUNDARY_TICKS: [i64; 3] = [-1, 0, 1];

/// Runs every flow, `a` and `b` taking turns.
pub async fn run_all(a: &mut Actor, b: &mut Actor, kit: &ProberKit) {
    let ev = kit.events[0].0.clone();
    let order = key_reuse(a, &ev).await;
    views_by_state(a, &ev).await;
    other_users(a, b, &ev, order).await;
    other_event(a, kit).await;
    cap(a, &ev).await;
    largest_selection(a, &ev).await;
    for d in BOUNDARY_TICKS {
        checkout_at_deadline(a, kit, &ev, d).await;
        takeover_at_deadline(a, b, kit, &ev, d).await;
    }
}

/// Seats of `ev` the map shows worth trying, from `a`'s look.
async fn free_seats(a: &mut Actor, ev: &EventId) -> Vec<SeatId> {
    a.browse(ev, true).await.unwrap_or_default()
}

fn hold(ev: &EventId, seats: &[SeatId]) -> ClientOp {
    ClientOp::Hold { event_id: EventId::from(ev), seat_ids: seats.to_vec(), admission: None }
}

fn checkout(ev: &EventId, token: HoldToken, seats: &[SeatId], key: &str) -> ClientOp {
    ClientOp::Checkout {
        event_id: EventId::from(ev),
        hold_token: token,
        seat_ids: seats.to_vec(),
        idempotency_key: key.to_string(),
        admission: None,
    }
}

/// A hold of `seats` by `u`: its token, seats and deadline.
async fn held(u: &mut Actor, ev: &EventId, seats: &[SeatId]) -> Option<(HoldToken, Vec<SeatId>, i64)> {
    match u.call(hold(ev, seats), 1).await {
        Ok(OpResult::Held { hold_token, seat_ids, expires_at_ms }) => Some((hold_token, seat_ids, expires_at_ms)),
        _ => None,
    }
}

/// Sleeps until store time `at_ms` (the store's clock is simulated time on the epoch).
async fn until_store_ms(at_ms: i64) {
    let now = EPOCH_MS + Recorder::now_ms();
    if at_ms > now {
        tokio::time::sleep(Duration::from_millis((at_ms - now) as u64)).await;
    }
}

/// More hold attempts than a minute allows, back to back (run it last: for
/// a minute after it, the user's holds are refused).
pub async fn rate_burst(a: &mut Actor, kit: &ProberKit) {
    let body = json!({ "seat_ids": ["s"] }).to_string();
    for _ in 0..kit.hold_attempts_per_minute + 3 {
        let _ = a.probe(Probe::user("POST", "/v1/events/no-such-event/holds").json(body.clone()), kit).await;
    }
}

/// `a` checks out one hold under a key, then presents the same key for
/// another hold and other seats, for the same hold and other seats, and for
/// another hold and the same seats (each a reuse the key's record refuses);
/// answers the first order.
async fn key_reuse(a: &mut Actor, ev: &EventId) -> Option<OrderId> {
    let free = free_seats(a, ev).await;
    let [x, y, ..] = &free[..] else { return None };
    let key = format!("{}-reused", a.user);
    let (t1, s1, _) = held(a, ev, std::slice::from_ref(x)).await?;
    let order = match a.call(checkout(ev, t1, &s1, &key), 1).await {
        Ok(OpResult::CheckedOut { order_id, .. }) => Some(order_id),
        _ => None,
    };
    if let Some((t2, s2, _)) = held(a, ev, std::slice::from_ref(y)).await {
        let _ = a.call(checkout(ev, t2, &s2, &key), 1).await;
        let _ = a.call(checkout(ev, t1, &[x.clone(), y.clone()], &key), 1).await;
        let _ = a.call(checkout(ev, t2, &s1, &key), 1).await;
        let _ = a.call(ClientOp::Release { event_id: EventId::from(ev), hold_token: t2 }, 1).await;
    }
    order
}

/// `a` holds a seat while the order [`key_reuse`] made awaits payment, and
/// reads the map's view of each state but `available` (each shows the
/// seats in its state alone); then releases the hold.
async fn views_by_state(a: &mut Actor, ev: &EventId) {
    let free = free_seats(a, ev).await;
    let Some(seat) = free.first() else { return };
    let token = held(a, ev, std::slice::from_ref(seat)).await.map(|(t, _, _)| t);
    for state in [SeatState::Held, SeatState::PaymentPending, SeatState::Sold] {
        let _ = a.view(ev, Some(state)).await;
    }
    if let Some(hold_token) = token {
        let _ = a.call(ClientOp::Release { event_id: EventId::from(ev), hold_token }, 1).await;
    }
}

/// `b`'s hold released and checked out by `a`; `a`'s order read by `b`.
async fn other_users(a: &mut Actor, b: &mut Actor, ev: &EventId, order: Option<OrderId>) {
    let free = free_seats(b, ev).await;
    if let Some((token, seats, _)) = held(b, ev, &free[..free.len().min(1)]).await {
        let _ = a.call(ClientOp::Release { event_id: EventId::from(ev), hold_token: token }, 1).await;
        let _ = a.call(checkout(ev, token, &seats, &format!("{}-borrowed", a.user)), 1).await;
        let _ = b.call(ClientOp::Release { event_id: EventId::from(ev), hold_token: token }, 1).await;
    }
    if let Some(order_id) = order {
        let _ = b.call(ClientOp::OrderStatus { order_id }, 1).await;
    }
}

/// `a`'s hold on the first event, checked out and released on another.
async fn other_event(a: &mut Actor, kit: &ProberKit) {
    let (Some((ev0, _)), Some((ev1, _))) = (kit.events.first(), kit.events.get(1)) else { return };
    let free = free_seats(a, ev0).await;
    if let Some((token, seats, _)) = held(a, ev0, &free[..free.len().min(1)]).await {
        let _ = a.call(checkout(ev1, token, &seats, &format!("{}-other-event", a.user)), 1).await;
        let _ = a.call(ClientOp::Release { event_id: ev1.clone(), hold_token: token }, 1).await;
        let _ = a.call(ClientOp::Release { event_id: ev0.clone(), hold_token: token }, 1).await;
    }
}

/// `a` holds up to the per-user cap (8 seats), exactly, then one more.
async fn cap(a: &mut Actor, ev: &EventId) {
    let free = free_seats(a, ev).await;
    if free.len() < 9 {
        return;
    }
    let mut tokens = Vec::new();
    for run in [&free[0..4], &free[4..7], &free[7..8], &free[8..9]] {
        if let Some((t, _, _)) = held(a, ev, run).await {
            tokens.push(t);
        }
    }
    for t in tokens {
        let _ = a.call(ClientOp::Release { event_id: EventId::from(ev), hold_token: t }, 1).await;
    }
}

/// `a` holds a selection of [`MAX_SEATS_PER_HOLD`] seats (the most one hold
/// may name; the cap is as large), sent last seat first, then one more seat
/// than that (refused as malformed).
async fn largest_selection(a: &mut Actor, ev: &EventId) {
    let free = free_seats(a, ev).await;
    if free.len() <= MAX_SEATS_PER_HOLD {
        return;
    }
    let mut most: Vec<SeatId> = free[..MAX_SEATS_PER_HOLD].to_vec();
    most.reverse();
    if let Some((t, _, _)) = held(a, ev, &most).await {
        let _ = a.call(ClientOp::Release { event_id: EventId::from(ev), hold_token: t }, 1).await;
    }
    let _ = a.call(hold(ev, &free[..=MAX_SEATS_PER_HOLD]), 1).await;
}

/// When to send for a request to reach the store `d` ticks after `at_ms`:
/// a message lands at the first tick after its latency, which is shorter
/// than a tick in the worlds that aim (see `api-surface`).
fn aim(kit: &ProberKit, at_ms: i64, d: i64) -> i64 {
    at_ms + (d - 1) * kit.tick_ms as i64
}

/// `a` holds a seat and checks it out arriving `d` ticks after its deadline.
async fn checkout_at_deadline(a: &mut Actor, kit: &ProberKit, ev: &EventId, d: i64) {
    let free = free_seats(a, ev).await;
    let Some((token, seats, deadline)) = held(a, ev, &free[..free.len().min(1)]).await else { return };
    until_store_ms(aim(kit, deadline, d)).await;
    let _ = a.call(checkout(ev, token, &seats, &format!("{}-deadline{d}", a.user)), 1).await;
}

/// `b` holds a seat; `a` holds it arriving `d` ticks after `b`'s deadline.
async fn takeover_at_deadline(a: &mut Actor, b: &mut Actor, kit: &ProberKit, ev: &EventId, d: i64) {
    let free = free_seats(b, ev).await;
    let Some((_, seats, deadline)) = held(b, ev, &free[..free.len().min(1)]).await else { return };
    until_store_ms(aim(kit, deadline, d)).await;
    if let Some((t, _, _)) = held(a, ev, &seats).await {
        let _ = a.call(ClientOp::Release { event_id: EventId::from(ev), hold_token: t }, 1).await;
    }
}

/// An operator's look at the unresolved orders, then, for each order charged
/// without a ticket, a signed webhook saying its payment failed: a provider
/// contradicting itself, which the service must acknowledge and ignore.
pub async fn conflicting_webhooks(a: &mut Actor, kit: &ProberKit) {
    let list = a.probe(Probe::user("GET", "/v1/admin/unresolved").as_(Credential::Admin), kit).await;
    let Some((200, body)) = list else { return };
    let charged: Vec<PaymentOpId> = body["orders"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| matches!(o["status"].as_str(), Some("compensating" | "compensation_failed")))
        .filter_map(|o| o["payment_op_id"].as_str().and_then(|id| id.parse::<PaymentOpId>().ok()))
        .take(2)
        .collect();
    for payment in charged {
        let now = EPOCH_MS + Recorder::now_ms();
        let body = webhook_event(&a.user, "payment_failed", payment, None, "pi_conflict", now);
        let _ = a.probe(signed(kit, body, now), kit).await;
    }
}

/// A webhook event's JSON.
fn webhook_event(
    user: &UserId,
    kind: &str,
    payment: PaymentOpId,
    refund: Option<CompensationId>,
    provider_id: &str,
    now: i64,
) -> String {
    json!({
        "provider_event_id": format!("evt_probe_{user}_{kind}_{payment}"),
        "sequence": 1,
        "kind": kind,
        "payment_key": payment,
        "provider_payment_id": provider_id,
        "refund_key": refund,
        "failure_reason": null,
        "created_at_ms": now,
    })
    .to_string()
}

/// A webhook signature's age the service must accept (its tolerance is 5 minutes), ms.
const WEBHOOK_WITHIN_MS: i64 = 270_000;
/// A webhook signature's age the service must refuse, ms.
const WEBHOOK_BEYOND_MS: i64 = 330_000;

/// A webhook probe carrying `body` signed at `at_ms` with the provider's secret.
fn signed(kit: &ProberKit, body: String, at_ms: i64) -> Probe {
    Probe::user("POST", "/v1/webhooks/provider")
        .as_(Credential::None)
        .json(body.clone())
        .header("x-provider-timestamp", at_ms.to_string())
        .header("x-provider-signature", sign(&kit.webhook_secret, at_ms, body.as_bytes()))
}

/// Webhook probes: unsigned, stale, oversized, and signed ones the service must refuse (or accept and ignore).
pub fn webhooks(kit: &ProberKit, user: &UserId) -> Vec<Probe> {
    let now = EPOCH_MS + Recorder::now_ms();
    let event = |kind: &str, payment: PaymentOpId, refund: Option<CompensationId>, provider_id: &str| {
        webhook_event(user, kind, payment, refund, provider_id, now)
    };
    let signed = |body: String, at_ms: i64| signed(kit, body, at_ms);
    // A payment and a refund no order made.
    let (unknown, unknown_refund) = (PaymentOpId::from_u128(0x0bad_f00d), CompensationId::from_u128(0x0bad_f00d));
    vec![
        Probe::user("POST", "/v1/webhooks/provider").as_(Credential::None).json(event(
            "payment_succeeded",
            unknown,
            None,
            "pi_x",
        )),
        signed(event("payment_succeeded", unknown, None, "pi_x"), now - 10 * 60 * 1000),
        // Half a minute inside and outside the 5-minute tolerance, either
        // side of the serving host's clock (latency and skew are seconds).
        signed(event("payment_succeeded", unknown, None, "pi_x"), now - WEBHOOK_WITHIN_MS),
        signed(event("payment_succeeded", unknown, None, "pi_x"), now + WEBHOOK_WITHIN_MS),
        signed(event("payment_succeeded", unknown, None, "pi_x"), now - WEBHOOK_BEYOND_MS),
        signed(event("payment_succeeded", unknown, None, "pi_x"), now + WEBHOOK_BEYOND_MS),
        signed("{}".into(), now),
        signed(event("payment_succeeded", unknown, None, "pi_x"), now),
        signed(event("payment_succeeded", unknown, None, ""), now),
        signed(event("payment_failed", unknown, None, "pi_x"), now),
        signed(event("refund_succeeded", unknown, Some(unknown_refund), "pi_x"), now),
        signed(event("refund_succeeded", unknown, None, "pi_x"), now),
        signed(event("refund_failed", unknown, Some(unknown_refund), "pi_x"), now),
        signed(format!("{{\"pad\":\"{}\"}}", "x".repeat(20 * 1024)), now),
    ]
}
