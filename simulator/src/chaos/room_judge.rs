//! The waiting room's verdict in chaos mode, over the client history and
//! the final tables:
//!
//! - `admission-required`: no request the workload marked as lacking a
//!   valid admission ([`BYPASS`], [`ADMISSION_EXPIRED`], and [`SPENT_AFTER`]
//!   an order that stood) was granted, and every order on a room's event is
//!   a user's who joined its queue (the table `waiting_room_users`).
//! - `admission-order`: users admitted in the room's order. A user whose
//!   join was answered before another's first join attempt was sent, in the
//!   same tier, was admitted no later than the other (real time, as Jepsen
//!   orders operations); a member waiting when a public user was admitted
//!   was admitted no later; a lottery's certain pre-opening joiners before
//!   its certain later arrivals. Each user's first arrival is judged (later
//!   ones are new arrivals, ordered among everyone's). An admission's time is
//!   the service's: the expiry a queue answer names, less the session's lifetime.
//! - `queue-liveness`: every user who waited was in the end admitted or told sold out.

use super::client::{Op, Outcome};
use super::room::ChaosRoom;
use super::room_workload::{ADMISSION_EXPIRED, BYPASS, SPENT_AFTER, epoch_ms};
use booking::admission::room::Policy;
use booking::model::{EventId, Order, OrderStatus, UserId};
use std::collections::{BTreeMap, BTreeSet};

/// One user's first arrival in one room, as the history shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Arrival {
    /// When the first join attempt was sent, epoch ms.
    pub first_sent_ms: i64,
    /// When the first answer placing the user in the room arrived, epoch ms.
    pub joined_ms: Option<i64>,
    /// When the first session was admitted, epoch ms (the service's clock).
    pub admitted_ms: Option<i64>,
    /// The last queue answer's state (`sold_out` for a 409).
    pub last_state: Option<String>,
}

/// What the room judge needs beyond the history.
pub struct RoomFacts<'a> {
    /// The room in front of every event.
    pub room: &'a ChaosRoom,
    /// The events with a room.
    pub events: &'a [EventId],
    /// Each user's tier (absent: the public).
    pub tiers: &'a BTreeMap<UserId, u8>,
    /// The system clock's epoch ms at the history's 0.
    pub epoch_start_ms: i64,
    /// The final orders.
    pub orders: &'a [Order],
    /// Per event, the users the table `waiting_room_users` holds.
    pub joined: &'a BTreeMap<EventId, BTreeSet<UserId>>,
}

/// A violation found: the invariant's name and what happened.
pub type Finding = (&'static str, String);

fn granted(op: &Op) -> bool {
    matches!(op.outcome, Outcome::Status(s) if (200..300).contains(&s))
}

/// The event of a `/v1/events/{event}/...` request.
fn event_of(request: &str) -> Option<&str> {
    request.split_once("/v1/events/")?.1.split('/').next()
}

/// Holds and checkouts marked as lacking a valid admission that were granted.
pub fn bypasses(ops: &[Op], orders: &[Order]) -> Vec<Finding> {
    let confirmed: BTreeSet<String> =
        orders.iter().filter(|o| o.status == OrderStatus::Confirmed).map(|o| o.order_id.to_string()).collect();
    let mut found = Vec::new();
    for op in ops.iter().filter(|o| granted(o)) {
        let why = if op.client.ends_with(BYPASS) {
            "without a valid admission of its own"
        } else if op.client.ends_with(ADMISSION_EXPIRED) {
            "with an admission past its expiry"
        } else if let Some((_, order)) = op.client.split_once(SPENT_AFTER)
            && confirmed.contains(order)
        {
            "with an admission whose session the purchase of a confirmed order ended"
        } else {
            continue;
        };
        found.push((
            "admission-required",
            format!("{} was answered {:?} to {} {why}, at {} ms", op.client, op.outcome, op.request, op.end_ms),
        ));
    }
    found
}

/// Orders on a room's event by a user the room's table never saw join.
pub fn unqueued_orders(facts: &RoomFacts) -> Vec<Finding> {
    let empty = BTreeSet::new();
    facts
        .orders
        .iter()
        .filter(|o| facts.events.contains(&o.event_id))
        .filter(|o| !facts.joined.get(&o.event_id).unwrap_or(&empty).contains(&o.holder_id))
        .map(|o| {
            (
                "admission-required",
                format!("order {} on {} is {}'s, who never joined its queue", o.order_id, o.event_id, o.holder_id),
            )
        })
        .collect()
}

/// Each (event, user)'s first arrival, from the plain users' queue requests.
pub fn arrivals(ops: &[Op], facts: &RoomFacts) -> BTreeMap<(EventId, UserId), Arrival> {
    let mut out: BTreeMap<(EventId, UserId), Arrival> = BTreeMap::new();
    let queue = |o: &&Op| o.request.ends_with("/queue") && !o.client.contains(':');
    let mut by_start: Vec<&Op> = ops.iter().filter(queue).collect();
    by_start.sort_by_key(|o| (o.start_ms, o.end_ms));
    for op in by_start {
        let Some(event) = event_of(&op.request) else { continue };
        let a = out.entry((EventId::from(event), UserId::from(op.client.as_str()))).or_insert_with(|| Arrival {
            first_sent_ms: facts.epoch_start_ms + op.start_ms as i64,
            ..Arrival::default()
        });
        let end_ms = facts.epoch_start_ms + op.end_ms as i64;
        let state = match (&op.outcome, &op.detail) {
            (Outcome::Status(200), Some(d)) => d["state"].as_str().unwrap_or_default().to_string(),
            (Outcome::Status(409), _) => "sold_out".to_string(),
            _ => continue,
        };
        if matches!(state.as_str(), "waiting" | "awaiting_draw" | "admitted") && a.joined_ms.is_none() {
            a.joined_ms = Some(end_ms);
        }
        if matches!(state.as_str(), "admitted" | "session_ended") && a.admitted_ms.is_none() {
            let expires = op.detail.as_ref().and_then(|d| d["admission_expires_at"].as_str()).and_then(epoch_ms);
            a.admitted_ms = expires.map(|e| e - facts.room.session_ttl_ms);
        }
        a.last_state = Some(state);
    }
    out
}

/// Whether `u` must be admitted no later than `v` is, by the room's rule.
fn must_precede(policy: Policy, opens_at_ms: i64, u: (&Arrival, u8), v: (&Arrival, u8), v_admitted_ms: i64) -> bool {
    let ((u, u_tier), (v, v_tier)) = (u, v);
    let Some(u_joined) = u.joined_ms else { return false };
    let before = u_joined < v.first_sent_ms;
    match policy {
        Policy::Fifo => before,
        Policy::Priority => (u_tier == v_tier && before) || (u_tier < v_tier && u_joined < v_admitted_ms),
        Policy::Lottery => {
            let pre = |a: &Arrival| a.joined_ms.is_some_and(|j| j < opens_at_ms);
            let post = |a: &Arrival| a.first_sent_ms >= opens_at_ms;
            (pre(u) && post(v)) || (post(u) && post(v) && before)
        }
    }
}

/// Admissions out of the room's order.
pub fn order(arrivals: &BTreeMap<(EventId, UserId), Arrival>, facts: &RoomFacts) -> Vec<Finding> {
    let mut found = Vec::new();
    let tier = |user: &UserId| facts.tiers.get(user).copied().unwrap_or(u8::MAX);
    for event in facts.events {
        let here: Vec<(&UserId, &Arrival)> =
            arrivals.iter().filter(|((e, _), _)| e == event).map(|((_, u), a)| (u, a)).collect();
        for (v_user, v) in &here {
            let Some(v_admitted) = v.admitted_ms else { continue };
            for (u_user, u) in &here {
                if u_user == v_user || u.admitted_ms.is_some_and(|a| a <= v_admitted) {
                    continue;
                }
                let (r, opens) = (facts.room.policy, facts.room.opens_at_ms);
                if must_precede(r, opens, (u, tier(u_user)), (v, tier(v_user)), v_admitted) {
                    found.push((
                        "admission-order",
                        format!(
                            "on {event}, {v_user} was admitted at {v_admitted} ms though {u_user}, ahead by the {:?} rule, was {}",
                            facts.room.policy,
                            u.admitted_ms.map(|a| format!("admitted only at {a} ms")).unwrap_or("never admitted".into())
                        ),
                    ));
                    break; // one witness per admitted user
                }
            }
        }
    }
    found
}

/// Users whose last queue answer left them waiting (or who were never answered).
pub fn liveness(arrivals: &BTreeMap<(EventId, UserId), Arrival>) -> Vec<Finding> {
    arrivals
        .iter()
        .filter(|(_, a)| !matches!(a.last_state.as_deref(), Some("admitted" | "sold_out" | "session_ended")))
        .map(|((event, user), a)| {
            let last = a.last_state.as_deref().unwrap_or("no answer");
            (
                "queue-liveness",
                format!("{user} on {event} was neither admitted nor told sold out (last answer: {last})"),
            )
        })
        .collect()
}

/// Every room finding of a run.
pub fn judge(ops: &[Op], facts: &RoomFacts) -> Vec<Finding> {
    let arrivals = arrivals(ops, facts);
    let mut found = bypasses(ops, facts.orders);
    found.extend(unqueued_orders(facts));
    found.extend(order(&arrivals, facts));
    found.extend(liveness(&arrivals));
    found
}

#[cfg(test)]
mod tests;
