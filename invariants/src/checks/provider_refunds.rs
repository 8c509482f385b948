//! Refund at the provider: every compensation the store records as
//! `succeeded` has a refund under its compensation id (the provider's
//! idempotency key for it) in the provider's ledger (`refunded` events), of
//! the payment operation it compensates. Otherwise the records claim money
//! went back that never did: a charge made invisible.

use super::index::compensation_changes;
use crate::trace::PaymentEvent;
use crate::{Config, Invariant, Subject, TraceEvent, TraceKind, Violation};
use booking::model::{CompensationId, CompensationStatus, PaymentOpId, Snapshot};
use std::collections::BTreeMap;

/// Checks [`Invariant::RefundAtProvider`]. Subject: the compensation.
/// Witnesses: its change to `succeeded` (when the trace has it) and the
/// refund of another payment operation (when that is what the ledger holds).
pub fn check_provider_refunds(snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    // Refunds by compensation id: (seq, payment operation refunded).
    let mut refunds: BTreeMap<CompensationId, Vec<(u64, PaymentOpId)>> = BTreeMap::new();
    for e in trace {
        if let TraceKind::Payment(PaymentEvent::Refunded { compensation_id, payment_op_id, .. }) = &e.kind {
            refunds.entry(*compensation_id).or_default().push((e.seq, *payment_op_id));
        }
    }
    let comp_changes = compensation_changes(trace);
    let mut out = Vec::new();
    for c in &snap.compensations {
        if c.status != CompensationStatus::Succeeded {
            continue;
        }
        let rs = refunds.get(&c.compensation_id).map(Vec::as_slice).unwrap_or_default();
        if rs.iter().any(|(_, op)| *op == c.payment_op_id) {
            continue;
        }
        let mut witnesses: Vec<u64> = comp_changes
            .get(&c.compensation_id)
            .and_then(|cs| cs.iter().find(|(_, ch)| ch.to == CompensationStatus::Succeeded))
            .map(|(seq, _)| *seq)
            .into_iter()
            .collect();
        let detail = match rs.first() {
            None => format!("succeeded, but the provider never refunded payment {}", c.payment_op_id),
            Some((seq, other)) => {
                witnesses.push(*seq);
                format!("succeeded, but the provider refunded payment {other}, not {}", c.payment_op_id)
            }
        };
        out.push(Violation::new(
            Invariant::RefundAtProvider,
            Subject::Compensation { compensation_id: c.compensation_id },
            detail,
            witnesses,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;

    /// A late success: compensation requested, refunded, succeeded; and one
    /// still requested (nothing claimed yet).
    fn late_successes(w: &mut World) -> (CompensationId, CompensationId) {
        let t = w.hold("u1", &["A"], 60_000);
        let o1 = w.checkout("u1", t, "k", 10_000);
        let t = w.hold("u2", &["B"], 60_000);
        let o2 = w.checkout("u2", t, "k", 10_000);
        w.advance(10_000);
        w.release_unresolved(o1);
        w.release_unresolved(o2);
        w.charge(o1);
        w.charge(o2);
        (w.snap.compensations[0].compensation_id, w.snap.compensations[1].compensation_id)
    }

    #[test]
    fn succeeded_compensations_refunded_at_the_provider_are_clean() {
        let mut w = World::new(&["A", "B"]);
        let (comp, _) = late_successes(&mut w);
        w.refund(comp);
        assert_eq!(check_provider_refunds(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    /// The store marks a compensation succeeded; the provider never refunded.
    #[test]
    fn succeeded_without_refund_is_reported() {
        let mut w = World::new(&["A", "B"]);
        let (comp, _) = late_successes(&mut w);
        let succeeded = w.succeed_compensation_without_refund(comp);
        let v = check_provider_refunds(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::RefundAtProvider);
        assert_eq!(v[0].subject, Subject::Compensation { compensation_id: comp });
        assert_eq!(v[0].witnesses, vec![succeeded]);
        assert!(v[0].detail.starts_with("succeeded, but the provider never refunded payment"), "{}", v[0].detail);
    }

    /// The refund under the compensation's key went to another payment.
    #[test]
    fn refund_of_another_payment_is_reported() {
        let mut w = World::new(&["A", "B"]);
        let (comp, _) = late_successes(&mut w);
        let other_op = w.snap.compensations[1].payment_op_id;
        let refunded = w.record(TraceKind::Payment(PaymentEvent::Refunded {
            compensation_id: comp,
            payment_op_id: other_op,
            amount_cents: 1_000,
        }));
        let succeeded = w.succeed_compensation_without_refund(comp);
        let v = check_provider_refunds(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, Subject::Compensation { compensation_id: comp });
        assert_eq!(v[0].witnesses, vec![refunded, succeeded]);
        assert!(v[0].detail.contains(&format!("refunded payment {other_op}, not")), "{}", v[0].detail);
    }
}
