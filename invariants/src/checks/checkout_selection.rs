//! Checkout takes the whole hold: a checkout is granted only when it names
//! every seat its hold was granted, so a hold is paid all or nothing, as it
//! was taken. Judged twice:
//!
//! - client side: every ok `checked out` answer (first or replayed) to a
//!   request whose seats differ from the seats its hold token was granted;
//! - store side: every order whose seats differ from the seats the store
//!   wrote with cause `hold` under the order's token in the token's first
//!   grant (one grant's writes share the token and the store's clock).
//!
//! The store side reports an order only when the client side did not.

use crate::trace::{ChangeCause, ClientOp, OpId, OpResult};
use crate::{Config, Invariant, Subject, TraceEvent, TraceKind, Violation};
use booking::model::{EventId, HoldToken, OrderId, SeatId, Snapshot};
use std::collections::{BTreeMap, BTreeSet};

/// A hold token's first grant: the seq of its first seat, its store clock, its seats.
struct Grant {
    first_seq: u64,
    store_now_ms: i64,
    seats: BTreeSet<SeatId>,
}

/// A checkout request: its invoke seq, event, token and seats.
struct Request {
    invoke_seq: u64,
    event_id: EventId,
    hold_token: HoldToken,
    seats: BTreeSet<SeatId>,
}

fn list(seats: &BTreeSet<SeatId>) -> String {
    let v: Vec<&str> = seats.iter().map(SeatId::as_str).collect();
    format!("[{}]", v.join(", "))
}

/// The first seat of the hold the checkout left out, else the first seat it named beyond the hold.
fn first_difference<'a>(hold: &'a BTreeSet<SeatId>, named: &'a BTreeSet<SeatId>) -> &'a SeatId {
    hold.difference(named).next().or_else(|| named.difference(hold).next()).expect("the sets differ")
}

/// Checks [`Invariant::CheckoutWholeHold`]. Subject: the first seat of the
/// hold the checkout left out (client side), or the order (store side).
/// Witnesses: the hold's grant, the checkout's invoke and its ok answer.
pub fn check_checkout_selection(snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let mut grants: BTreeMap<HoldToken, Grant> = BTreeMap::new();
    let mut answered_grants: BTreeMap<HoldToken, (u64, BTreeSet<SeatId>)> = BTreeMap::new();
    let mut requests: BTreeMap<OpId, Request> = BTreeMap::new();
    let mut reported_orders: BTreeSet<OrderId> = BTreeSet::new();
    let mut out = Vec::new();
    for e in trace {
        match &e.kind {
            TraceKind::SeatChange(c) if c.cause == ChangeCause::Hold => {
                let Some(token) = c.after.hold_token else { continue };
                let g = grants.entry(token).or_insert_with(|| Grant {
                    first_seq: e.seq,
                    store_now_ms: c.store_now_ms,
                    seats: BTreeSet::new(),
                });
                if g.store_now_ms == c.store_now_ms {
                    g.seats.insert(c.seat_id.clone());
                }
            }
            TraceKind::Ok { result: OpResult::Held { hold_token, seat_ids, .. }, .. } => {
                answered_grants.entry(*hold_token).or_insert_with(|| (e.seq, seat_ids.iter().cloned().collect()));
            }
            TraceKind::Invoke { op_id, op: ClientOp::Checkout { event_id, hold_token, seat_ids, .. }, .. } => {
                let seats = seat_ids.iter().cloned().collect();
                let req = Request { invoke_seq: e.seq, event_id: event_id.clone(), hold_token: *hold_token, seats };
                requests.insert(*op_id, req);
            }
            TraceKind::Ok { op_id, result: OpResult::CheckedOut { order_id, .. }, .. } => {
                let Some(req) = requests.get(op_id) else { continue };
                let hold = answered_grants
                    .get(&req.hold_token)
                    .map(|(seq, seats)| (*seq, seats))
                    .or_else(|| grants.get(&req.hold_token).map(|g| (g.first_seq, &g.seats)));
                let Some((grant_seq, hold_seats)) = hold else { continue };
                if *hold_seats == req.seats || reported_orders.contains(order_id) {
                    continue;
                }
                reported_orders.insert(*order_id);
                let seat = first_difference(hold_seats, &req.seats);
                out.push(Violation::new(
                    Invariant::CheckoutWholeHold,
                    Subject::seat(&req.event_id, seat),
                    format!(
                        "checkout of hold {} named {} of its seats {} and was granted order {order_id}",
                        req.hold_token,
                        list(&req.seats),
                        list(hold_seats)
                    ),
                    vec![grant_seq, req.invoke_seq, e.seq],
                ));
            }
            _ => {}
        }
    }
    out.extend(orders_of_part_holds(snap, &grants, &reported_orders));
    out
}

/// The store side: each order (not already reported from its answer) pays
/// for exactly the seats its hold was granted.
fn orders_of_part_holds(
    snap: &Snapshot,
    grants: &BTreeMap<HoldToken, Grant>,
    reported_orders: &BTreeSet<OrderId>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for order in snap.orders.iter().filter(|o| !reported_orders.contains(&o.order_id)) {
        let Some(g) = grants.get(&order.hold_token) else { continue };
        let paid: BTreeSet<SeatId> = order.seat_ids.iter().cloned().collect();
        if paid != g.seats {
            out.push(Violation::new(
                Invariant::CheckoutWholeHold,
                Subject::Order { order_id: order.order_id },
                format!(
                    "order pays for {} of hold {} granted {} (seat {})",
                    list(&paid),
                    order.hold_token,
                    list(&g.seats),
                    first_difference(&g.seats, &paid)
                ),
                vec![g.first_seq],
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;
    use booking::model::OrderStatus;

    #[test]
    fn whole_holds_checked_out_are_clean() {
        let mut w = World::new(&["1A", "1B", "2A"]);
        let t = w.hold("alice", &["1A", "1B"], 5_000);
        w.checkout("alice", t, "k", 10_000);
        let u = w.hold("bob", &["2A"], 5_000);
        w.checkout("bob", u, "k", 10_000);
        assert_eq!(check_checkout_selection(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    /// A checkout naming half a hold answered ok: reported once, on the client side.
    #[test]
    fn half_a_hold_checked_out_is_reported() {
        let mut w = World::new(&["1A", "1B"]);
        let t = w.hold("alice", &["1A", "1B"], 5_000);
        let half = ClientOp::Checkout {
            event_id: "ev".into(),
            hold_token: t,
            seat_ids: vec!["1A".into()],
            idempotency_key: "half".into(),
            admission: None,
        };
        let order_id = OrderId::from(w.uuid());
        let ok = OpResult::CheckedOut { order_id, status: OrderStatus::Pending, booking_ids: vec![], replayed: false };
        let (invoke, answer) = w.client("alice", half, Ok(ok));
        let v = check_checkout_selection(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::CheckoutWholeHold);
        assert_eq!(v[0].subject, Subject::seat(&"ev".into(), &"1B".into()));
        assert!(v[0].witnesses.ends_with(&[invoke, answer]), "{v:?}");
    }

    /// The store's order pays for part of the hold (no client saw it).
    #[test]
    fn an_order_for_part_of_a_hold_is_reported_from_the_records() {
        let mut w = World::new(&["1A", "1B"]);
        let t = w.hold("alice", &["1A", "1B"], 5_000);
        let o = w.checkout("alice", t, "k", 10_000);
        let order = w.snap.orders.iter_mut().find(|x| x.order_id == o).expect("order");
        order.seat_ids.retain(|s| s == "1A");
        let v = check_checkout_selection(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, Subject::Order { order_id: o });
        assert!(v[0].detail.contains("(seat 1B)"), "{}", v[0].detail);
    }
}
