//! What the provider's ledger allows the store to record: the payment
//! workflow may only write down what the provider did.
//!
//! - A payment recorded `succeeded` was charged at the provider, under its
//!   payment operation's key, with the provider's payment id recorded.
//! - A payment recorded `failed` was never charged.
//! - A refund recorded `succeeded` is in the provider's ledger under the
//!   compensation's key.
//! - Every refund in the ledger is keyed by a compensation of that payment
//!   (the refund key is the compensation id), at most one per payment.

use crate::Subject;
use crate::model::Finding;
use crate::store_call::StoreCall;
use crate::trace::{PaymentEvent, TraceEvent, TraceKind};
use booking::model::{CompensationId, PaymentOpId};
use booking::store::CompensationOutcome;
use std::collections::BTreeMap;

/// The provider's ledger at the end of the run.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Charges: payment operation → the provider's payment id.
    pub charged: BTreeMap<PaymentOpId, String>,
    /// Refunds: compensation (refund key) → payment operation refunded.
    pub refunded: BTreeMap<CompensationId, PaymentOpId>,
}

impl Ledger {
    /// The ledger the trace's provider events record.
    pub fn of(trace: &[TraceEvent]) -> Self {
        let mut l = Self::default();
        for e in trace {
            match &e.kind {
                TraceKind::Payment(PaymentEvent::Charged { payment_op_id, provider_payment_id, .. }) => {
                    l.charged.insert(*payment_op_id, provider_payment_id.clone());
                }
                TraceKind::Payment(PaymentEvent::Refunded { compensation_id, payment_op_id, .. }) => {
                    l.refunded.insert(*compensation_id, *payment_op_id);
                }
                _ => {}
            }
        }
        l
    }

    /// Whether the trace carries the ledger at all (a run judged without it says nothing of money).
    pub fn recorded(trace: &[TraceEvent]) -> bool {
        trace.iter().any(|e| matches!(e.kind, TraceKind::Payment(_)))
    }

    /// What the ledger says of a write the store accepted.
    pub fn judge(&self, call: &StoreCall) -> Option<Finding> {
        match call {
            StoreCall::PaymentSuccess { req, answer: Ok(rec) } if rec.decided_now => {
                let subject = Subject::PaymentOp { payment_op_id: req.payment_op_id };
                match self.charged.get(&req.payment_op_id) {
                    None => {
                        Some(Finding::new(subject, "payment recorded succeeded, but the provider never charged it"))
                    }
                    Some(id) if *id != req.provider_payment_id => Some(Finding::new(
                        subject,
                        format!(
                            "payment recorded with provider id {}, the provider charged it as {id}",
                            req.provider_payment_id
                        ),
                    )),
                    Some(_) => None,
                }
            }
            StoreCall::PaymentFailure { payment_op_id, answer: Ok(rec), .. } if rec.decided_now => {
                self.charged.contains_key(payment_op_id).then(|| {
                    Finding::new(
                        Subject::PaymentOp { payment_op_id: *payment_op_id },
                        "payment recorded failed, but the provider charged it",
                    )
                })
            }
            StoreCall::FinishCompensation { req, answer: Ok(after) }
                if req.outcome == CompensationOutcome::Succeeded
                    && after.status == booking::model::CompensationStatus::Succeeded =>
            {
                (!self.refunded.contains_key(&req.compensation_id)).then(|| {
                    Finding::new(
                        Subject::Compensation { compensation_id: req.compensation_id },
                        "refund recorded succeeded, but the provider has no refund under its key",
                    )
                })
            }
            _ => None,
        }
    }

    /// What the ledger's refunds say against the store's compensations at
    /// the end (`compensations`: id → payment operation).
    pub fn judge_refunds(&self, compensations: &BTreeMap<CompensationId, PaymentOpId>) -> Vec<Finding> {
        let mut out = Vec::new();
        let mut per_payment: BTreeMap<PaymentOpId, u32> = BTreeMap::new();
        for (key, op) in &self.refunded {
            *per_payment.entry(*op).or_default() += 1;
            if compensations.get(key) != Some(op) {
                out.push(Finding::new(
                    Subject::PaymentOp { payment_op_id: (*op) },
                    format!("the provider refunded under key {key}, which is not a compensation of this payment"),
                ));
            }
        }
        for (op, n) in per_payment.into_iter().filter(|(_, n)| *n > 1) {
            out.push(Finding::new(
                Subject::PaymentOp { payment_op_id: op },
                format!("the provider refunded this payment {n} times"),
            ));
        }
        out
    }
}
