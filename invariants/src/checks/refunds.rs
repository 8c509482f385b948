//! Refunds: never more refunded than charged, and no refund twice. Judged on
//! the provider's ledger in the trace (`charged` / `refunded` events) and on
//! the final compensation records (succeeded compensations against the
//! payment operation they give back).

use super::index::{charges, compensation_changes, refunds};
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::model::{
    CompensationId, CompensationStatus, CompensationStatus as CS, PaymentOpId, PaymentStatus, Snapshot,
};
use std::collections::{BTreeMap, BTreeSet};

/// Checks [`Invariant::RefundBounded`] and [`Invariant::NoDoubleRefund`].
pub fn check_refunds(snap: &Snapshot, trace: &[TraceEvent], _cfg: &Config) -> Vec<Violation> {
    let charges = charges(trace);
    let mut out = Vec::new();
    let mut reported: BTreeSet<(Invariant, PaymentOpId)> = BTreeSet::new();
    // The provider's ledger.
    for (op_id, rs) in &refunds(trace) {
        let cs = charges.get(op_id).map(Vec::as_slice).unwrap_or_default();
        for v in judge_ledger(*op_id, cs, rs) {
            reported.insert((v.invariant, *op_id));
            out.push(v);
        }
    }
    // The final records: succeeded compensations per operation.
    let comp_changes = compensation_changes(trace);
    let success_seq = |id: CompensationId| -> Option<u64> {
        comp_changes.get(&id)?.iter().find(|(_, c)| c.to == CS::Succeeded).map(|(s, _)| *s)
    };
    let mut succeeded: BTreeMap<PaymentOpId, Vec<&booking::model::Compensation>> = BTreeMap::new();
    for c in snap.compensations.iter().filter(|c| c.status == CompensationStatus::Succeeded) {
        succeeded.entry(c.payment_op_id).or_default().push(c);
    }
    for (op_id, comps) in &succeeded {
        let subject = Subject::PaymentOp { payment_op_id: *op_id };
        let seqs = || comps.iter().filter_map(|c| success_seq(c.compensation_id));
        if comps.len() > 1 && !reported.contains(&(Invariant::NoDoubleRefund, *op_id)) {
            let detail = format!("{} succeeded compensations", comps.len());
            out.push(Violation::new(Invariant::NoDoubleRefund, subject.clone(), detail, seqs().take(2).collect()));
        }
        if reported.contains(&(Invariant::RefundBounded, *op_id)) {
            continue;
        }
        let refunded: i64 = comps.iter().map(|c| c.amount_cents).sum();
        let op = snap.payment_ops.iter().find(|p| p.payment_op_id == *op_id);
        let charged = op.filter(|p| p.status == PaymentStatus::Succeeded).map_or(0, |p| p.amount_cents);
        if refunded > charged {
            let detail = format!("compensations gave back {refunded} cents of {charged} charged");
            out.push(Violation::new(Invariant::RefundBounded, subject, detail, seqs().collect()));
        }
    }
    out
}

/// One payment operation's refunds in the provider's ledger (`rs`: seq,
/// compensation, cents) against its charges (`cs`: seq, cents): no
/// compensation refunded twice, no more refunds than charges, never more
/// cents back than taken.
fn judge_ledger(op_id: PaymentOpId, cs: &[(u64, i64)], rs: &[(u64, CompensationId, i64)]) -> Vec<Violation> {
    let subject = Subject::PaymentOp { payment_op_id: op_id };
    let mut out = Vec::new();
    let mut seen: BTreeMap<CompensationId, u64> = BTreeMap::new();
    let twice = rs.iter().find_map(|(seq, comp, _)| seen.insert(*comp, *seq).map(|first| (first, *seq, comp)));
    if let Some((first, seq, comp)) = twice {
        let detail = format!("compensation {comp} refunded twice");
        out.push(Violation::new(Invariant::NoDoubleRefund, subject.clone(), detail, vec![first, seq]));
    } else if !cs.is_empty() && rs.len() > cs.len() {
        let detail = format!("{} refunds of {} charge(s)", rs.len(), cs.len());
        let witnesses = rs.iter().take(cs.len() + 1).map(|r| r.0).collect();
        out.push(Violation::new(Invariant::NoDoubleRefund, subject.clone(), detail, witnesses));
    }
    let charged: i64 = cs.iter().map(|c| c.1).sum();
    let mut refunded = 0i64;
    for (seq, _, amount) in rs {
        refunded += amount;
        if refunded > charged {
            let mut witnesses: Vec<u64> = cs.iter().map(|c| c.0).collect();
            witnesses.push(*seq);
            let detail = format!("refunded {refunded} cents of {charged} charged");
            out.push(Violation::new(Invariant::RefundBounded, subject, detail, witnesses));
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TraceKind;
    use crate::testkit::World;
    use crate::trace::PaymentEvent;

    fn late_success(w: &mut World) -> (PaymentOpId, CompensationId, u64) {
        let t = w.hold("u1", &["A"], 60_000);
        let o = w.checkout("u1", t, "k", 10_000);
        w.advance(10_000);
        w.release_unresolved(o);
        let charged = w.charge(o);
        (w.order(o).payment_op_id, w.snap.compensations[0].compensation_id, charged)
    }

    #[test]
    fn one_refund_of_one_late_charge_is_clean() {
        let mut w = World::new(&["A"]);
        let (_, comp, _) = late_success(&mut w);
        w.refund(comp);
        assert_eq!(check_refunds(&w.snap, w.trace.events(), &w.config()), vec![]);
    }

    #[test]
    fn refund_twice_is_reported() {
        let mut w = World::new(&["A"]);
        let (op, comp, _) = late_success(&mut w);
        let first = w.refund(comp);
        let second = w.record(TraceKind::Payment(PaymentEvent::Refunded {
            compensation_id: comp,
            payment_op_id: op,
            amount_cents: 1_000,
        }));
        let v = check_refunds(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::NoDoubleRefund);
        assert_eq!(v[0].subject, Subject::PaymentOp { payment_op_id: op });
        assert_eq!(v[0].witnesses, vec![first, second]);
        assert_eq!(v[0].detail, format!("compensation {comp} refunded twice"));
        assert_eq!(v[1].invariant, Invariant::RefundBounded);
        assert_eq!(v[1].detail, "refunded 2000 cents of 1000 charged");
    }

    #[test]
    fn refund_larger_than_charge_is_reported() {
        let mut w = World::new(&["A"]);
        let (op, comp, charged) = late_success(&mut w);
        let refund = w.record(TraceKind::Payment(PaymentEvent::Refunded {
            compensation_id: comp,
            payment_op_id: op,
            amount_cents: 1_500,
        }));
        let v = check_refunds(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::RefundBounded);
        assert_eq!(v[0].subject, Subject::PaymentOp { payment_op_id: op });
        assert_eq!(v[0].witnesses, vec![charged, refund]);
    }

    #[test]
    fn two_succeeded_compensations_in_the_records_are_reported() {
        let mut w = World::new(&["A"]);
        let (op, comp, _) = late_success(&mut w);
        w.refund(comp);
        let first = w.last_seq() - 1; // the compensation's change to succeeded precedes the order's
        let mut dup = w.snap.compensations[0].clone();
        dup.compensation_id = CompensationId::from(w.uuid());
        w.snap.compensations.push(dup);
        let v = check_refunds(&w.snap, w.trace.events(), &w.config());
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::NoDoubleRefund);
        assert_eq!(v[0].subject, Subject::PaymentOp { payment_op_id: op });
        assert_eq!(v[0].witnesses, vec![first]);
        assert_eq!(v[1].invariant, Invariant::RefundBounded);
        assert_eq!(v[1].detail, "compensations gave back 2000 cents of 1000 charged");
    }
}
