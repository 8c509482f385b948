//! What a client was told was decided stays decided: every order a checkout
//! answer acknowledged is in the final tables, and every final status a
//! client saw an order in (confirmed, failed, released, compensated...) is
//! where the order still is, or where that status may only lead. A
//! database crash that loses an acknowledged commit, a failover to a
//! standby that was behind, or a retry that decided an order twice all end
//! here.
//!
//! The facts come from the client history alone (the answers' `order_id`
//! and `status`, kept by [`order_fact`]); the tables are only what is judged.

use super::client::{Op, Outcome};
use booking::model::{OrderStatus, Snapshot};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The invariant this judge reports.
pub const INVARIANT: &str = "acknowledged-kept";

/// What the history keeps of an order answer (a checkout's, an order
/// poll's): its `order_id` and `status`. For [`super::client::Api::send_keeping`].
pub fn order_fact(body: &Value) -> Option<Value> {
    let order_id = body.get("order_id")?.as_str()?;
    Some(json!({ "order_id": order_id, "status": body.get("status")?.as_str()? }))
}

/// The statuses an order seen in `seen` may be in later.
fn may_follow(seen: OrderStatus) -> &'static [OrderStatus] {
    use OrderStatus::*;
    match seen {
        Pending | Reconciling => OrderStatus::ALL,
        Confirmed => &[Confirmed],
        Failed => &[Failed],
        Released => &[Released, Compensating, Compensated, CompensationFailed],
        Compensating => &[Compensating, Compensated, CompensationFailed],
        Compensated => &[Compensated],
        CompensationFailed => &[CompensationFailed],
    }
}

/// Every order status `ops` acknowledged (a 2xx answer carrying an order)
/// that `snap` does not keep, one finding each: `(INVARIANT, what)`.
pub fn judge(ops: &[Op], snap: &Snapshot) -> Vec<(&'static str, String)> {
    let finals: BTreeMap<String, OrderStatus> =
        snap.orders.iter().map(|o| (o.order_id.to_string(), o.status)).collect();
    let mut found = Vec::new();
    for op in ops {
        let Outcome::Status(200..=299) = op.outcome else { continue };
        let Some(fact) = &op.detail else { continue };
        let (Some(id), Some(seen)) = (fact["order_id"].as_str(), fact["status"].as_str().and_then(OrderStatus::parse))
        else {
            continue;
        };
        let what = match finals.get(id) {
            None => format!(
                "{} was told order {id} is {seen} at {} ms; the tables have no such order",
                op.client, op.end_ms
            ),
            Some(now) if !may_follow(seen).contains(now) => format!(
                "{} was told order {id} is {seen} at {} ms; the tables say {now}, which {seen} never leads to",
                op.client, op.end_ms
            ),
            Some(_) => continue,
        };
        found.push((INVARIANT, what));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use booking::model::Order;

    const O1: &str = "00000000-0000-0000-0000-000000000001";
    const O2: &str = "00000000-0000-0000-0000-000000000002";

    fn op(detail: Value) -> Op {
        Op {
            client: "user1".into(),
            request: format!("GET /v1/orders/{O1}"),
            slot: 0,
            start_ms: 1,
            end_ms: 2,
            outcome: Outcome::Status(200),
            problem: None,
            detail: Some(detail),
        }
    }

    fn snap_with(status: OrderStatus) -> Snapshot {
        let order: Order = serde_json::from_value(json!({
            "event_id": "ev", "order_id": O1, "holder_id": "user1", "hold_token": uuid::Uuid::from_u128(8),
            "seat_ids": ["s1"], "amount_cents": 100, "status": status, "payment_op_id": uuid::Uuid::from_u128(9),
            "payment_deadline_at_ms": 0, "idempotency_key": "k", "resolution_reason": null, "created_at_ms": 0, "updated_at_ms": 0
        }))
        .expect("an order");
        Snapshot { orders: vec![order], ..Snapshot::default() }
    }

    #[test]
    fn a_kept_order_passes_and_a_lost_or_undone_one_is_found() {
        let confirmed = op(json!({"order_id": O1, "status": "confirmed"}));
        assert!(judge(std::slice::from_ref(&confirmed), &snap_with(OrderStatus::Confirmed)).is_empty());
        let undone = judge(std::slice::from_ref(&confirmed), &snap_with(OrderStatus::Released));
        assert!(undone[0].1.contains("the tables say released"), "{undone:?}");
        let lost = op(json!({"order_id": O2, "status": "pending"}));
        let found = judge(&[lost], &snap_with(OrderStatus::Confirmed));
        assert!(found[0].1.contains("no such order"), "{found:?}");
        let released = op(json!({"order_id": O1, "status": "released"}));
        assert!(judge(std::slice::from_ref(&released), &snap_with(OrderStatus::Compensated)).is_empty());
        assert_eq!(judge(&[released], &snap_with(OrderStatus::Confirmed)).len(), 1);
    }

    #[test]
    fn what_a_client_was_not_told_is_not_judged() {
        let mut refused = op(json!({"order_id": O2, "status": "confirmed"}));
        refused.outcome = Outcome::Status(409);
        let mut bare = op(json!({}));
        bare.detail = None;
        assert!(judge(&[refused, bare], &snap_with(OrderStatus::Failed)).is_empty());
    }
}
