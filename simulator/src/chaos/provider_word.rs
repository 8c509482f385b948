//! The provider's word against bookingd's, judged on the final tables and
//! the provider's ledger (its books and counters):
//!
//! - `decline-from-provider`: every payment operation the tables record
//!   `failed` is one the provider recorded failed under the same key (a
//!   decline, or the tombstone of a cancel). A failure nobody at the
//!   provider decided (a charge that never reached it, taken for a
//!   decline) cost a buyer the seats without a reason; the brief allows a
//!   decline, and nothing else, to end a payment early.
//! - `webhook-accepted`: bookingd refused (answered 4xx) none of the
//!   provider's webhooks. They are the provider's own, signed with the
//!   shared secret, for payments bookingd asked for: a refusal is a lost
//!   outcome, and a real provider disables an endpoint that keeps refusing.
//!
//! Sound because the harness's workload sends only valid charges (no
//! charge is refused by the provider without a record) and the fake
//! provider signs every webhook it sends with the daemon's secret.

use booking::fake_provider::Ledger;
use booking::model::{PaymentStatus, Snapshot};
use std::collections::BTreeSet;
use uuid::Uuid;

/// Every failed payment is one the provider failed.
pub const DECLINE: &str = "decline-from-provider";
/// No webhook of the provider's was refused.
pub const WEBHOOK: &str = "webhook-accepted";

/// `(invariant, what)` per finding: one per failed payment the provider has
/// no failure for, and one when any webhook delivery was refused.
pub fn judge(snap: &Snapshot, ledger: &Ledger) -> Vec<(&'static str, String)> {
    let failed_at_provider: BTreeSet<Uuid> =
        ledger.payments.iter().filter(|p| p.status == "failed").map(|p| p.idempotency_key).collect();
    let mut out: Vec<(&'static str, String)> = snap
        .payment_ops
        .iter()
        .filter(|op| op.status == PaymentStatus::Failed && !failed_at_provider.contains(&op.payment_op_id.as_uuid()))
        .map(|op| {
            let why = op.last_error.as_deref().unwrap_or("no error recorded");
            let what = format!(
                "payment {} of order {} is failed in the tables ({why}), but the provider recorded no failure under its key",
                op.payment_op_id, op.order_id
            );
            (DECLINE, what)
        })
        .collect();
    let refused = ledger.stats.webhooks_refused;
    if refused > 0 {
        out.push((WEBHOOK, format!("{refused} deliveries of the provider's webhooks were refused with a 4xx")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use booking::model::{EventId, OrderId, PaymentOp, PaymentOpId};
    use booking::payment::wire::PaymentRecord;

    fn op(key: u128, status: PaymentStatus) -> PaymentOp {
        PaymentOp {
            event_id: EventId::new("e"),
            payment_op_id: PaymentOpId::from_u128(key),
            order_id: OrderId::from_u128(key + 100),
            amount_cents: 100,
            status,
            provider_payment_id: None,
            last_error: Some("provider unreachable".into()),
            updated_at_ms: 0,
            next_check_at_ms: 0,
            checks: 0,
        }
    }

    fn record(key: u128, status: &str) -> PaymentRecord {
        PaymentRecord {
            id: format!("pay_{key}"),
            idempotency_key: Uuid::from_u128(key),
            order_id: OrderId::from_u128(key + 100),
            amount_cents: 100,
            status: status.into(),
            failure_reason: (status == "failed").then(|| "card_declined".into()),
        }
    }

    #[test]
    fn a_failure_the_provider_recorded_passes_and_one_it_did_not_is_named() {
        let snap = Snapshot {
            payment_ops: vec![
                op(1, PaymentStatus::Failed),
                op(2, PaymentStatus::Failed),
                op(3, PaymentStatus::Succeeded),
            ],
            ..Snapshot::default()
        };
        let ledger = Ledger {
            payments: vec![record(1, "failed"), record(2, "succeeded"), record(3, "succeeded")],
            ..Ledger::default()
        };
        let found = judge(&snap, &ledger);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, DECLINE);
        assert!(found[0].1.contains(&PaymentOpId::from_u128(2).to_string()), "{}", found[0].1);
    }

    #[test]
    fn any_refused_webhook_is_a_finding() {
        let mut ledger = Ledger::default();
        assert!(judge(&Snapshot::default(), &ledger).is_empty());
        ledger.stats.webhooks_refused = 3;
        let found = judge(&Snapshot::default(), &ledger);
        assert_eq!(
            found,
            vec![(WEBHOOK, "3 deliveries of the provider's webhooks were refused with a 4xx".to_string())]
        );
    }
}
