//! A refusal is a promise that nothing happened: a checkout answered with
//! a 4xx leaves no order behind. The judge takes every hold whose
//! checkouts in the client history were all refused (none answered 2xx,
//! 5xx or not at all) and finds any order the tables keep for it: an
//! order nobody was told of, whose charge the user will see with an
//! answer that said "no". A handler that gives up waiting for the store
//! and answers a refusal while the store's work goes on ends here.
//!
//! Sound because no one else can check a hold out: its token is known to
//! its holder alone (the disconnecting clients send random tokens).

use super::client::{Op, Outcome};
use booking::model::{HoldToken, Snapshot};
use std::collections::BTreeMap;

/// The invariant this judge reports.
pub const INVARIANT: &str = "refusal-changes-nothing";

/// The hold token a checkout request names (`POST /v1/events/E/holds/T/checkout`),
/// when `T` is one.
fn checkout_token(request: &str) -> Option<HoldToken> {
    let path = request.strip_prefix("POST ")?.strip_suffix("/checkout")?;
    let (_, token) = path.rsplit_once("/holds/")?;
    token.parse().ok()
}

/// Whether `op` was answered with a refusal (a 4xx).
fn refused(op: &Op) -> bool {
    matches!(op.outcome, Outcome::Status(400..=499))
}

/// Every order of `snap` whose hold's checkouts in `ops` were all refused:
/// `(INVARIANT, what)`, one each.
pub fn judge(ops: &[Op], snap: &Snapshot) -> Vec<(&'static str, String)> {
    // Per hold token: the refusals seen, or None once any other answer was.
    let mut checkouts: BTreeMap<HoldToken, Option<Vec<&Op>>> = BTreeMap::new();
    for op in ops {
        let Some(token) = checkout_token(&op.request) else { continue };
        let entry = checkouts.entry(token).or_insert_with(|| Some(Vec::new()));
        match entry {
            Some(refusals) if refused(op) => refusals.push(op),
            _ => *entry = None,
        }
    }
    let mut found = Vec::new();
    for order in &snap.orders {
        let token = order.hold_token;
        let Some(Some(refusals)) = checkouts.get(&token) else { continue };
        let told: Vec<String> = refusals.iter().map(|o| format!("{:?} at {} ms", o.outcome, o.end_ms)).collect();
        found.push((
            INVARIANT,
            format!(
                "{} was refused every checkout of hold {token} ({}), yet the tables keep order {} ({}) for it",
                refusals[0].client,
                told.join(", "),
                order.order_id,
                order.status
            ),
        ));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use booking::model::{Order, OrderStatus};
    use serde_json::json;

    const T1: HoldToken = HoldToken::from_u128(1);
    const T2: HoldToken = HoldToken::from_u128(2);

    fn checkout(token: HoldToken, status: Option<u16>) -> Op {
        let mut op = Op::answered("user1", &format!("POST /v1/events/ev/holds/{token}/checkout"), (1, 2), 200, None);
        op.outcome = status.map_or(Outcome::Unknown("timed out".into()), Outcome::Status);
        op
    }

    fn snap_with_order_of(token: HoldToken) -> Snapshot {
        let order: Order = serde_json::from_value(json!({
            "event_id": "ev", "order_id": uuid::Uuid::from_u128(7), "holder_id": "user1", "hold_token": token,
            "seat_ids": ["s1"], "amount_cents": 100, "status": OrderStatus::Pending, "payment_op_id": uuid::Uuid::from_u128(9),
            "payment_deadline_at_ms": 0, "idempotency_key": "k", "resolution_reason": null, "created_at_ms": 0, "updated_at_ms": 0
        }))
        .expect("an order");
        Snapshot { orders: vec![order], ..Snapshot::default() }
    }

    #[test]
    fn an_order_behind_nothing_but_refusals_is_found() {
        let found = judge(&[checkout(T1, Some(409)), checkout(T1, Some(410))], &snap_with_order_of(T1));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1.contains("was refused every checkout of hold"), "{found:?}");
    }

    #[test]
    fn any_answer_but_a_refusal_may_have_made_the_order() {
        for other in [Some(201), Some(503), None] {
            let ops = [checkout(T1, Some(409)), checkout(T1, other)];
            assert!(judge(&ops, &snap_with_order_of(T1)).is_empty(), "{other:?}");
        }
        // A refusal of another hold says nothing about this one.
        assert!(judge(&[checkout(T2, Some(409))], &snap_with_order_of(T1)).is_empty());
        assert_eq!(checkout_token("GET /v1/events/ev/holds/x"), None);
    }
}
