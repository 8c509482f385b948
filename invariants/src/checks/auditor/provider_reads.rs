//! A payment released unresolved names in its reason what the provider last
//! said (`booking::payment::workflow::said`): still processing,
//! or no record of the payment. The provider's own answers to status reads
//! (`PaymentEvent::Read`, traced where it gives them) must include one that
//! said so, for that payment, before the release: a reconciler that took a
//! final answer (charged, declined) for "processing", or any record for
//! none, released seats on an answer the provider never gave.
//! Reasons that quote an error (no answer came) are not judged.

use booking::model::PaymentOpId;
use booking::payment::workflow::said;
use std::collections::{BTreeMap, BTreeSet};

/// What the provider answered each payment's status reads so far.
#[derive(Debug, Default)]
pub(super) struct ProviderReads {
    /// Per payment: the statuses answered (`None`: no record).
    said: BTreeMap<PaymentOpId, BTreeSet<Option<String>>>,
}

impl ProviderReads {
    /// The provider answered a read of `payment_op_id` with `status`.
    pub(super) fn read(&mut self, payment_op_id: PaymentOpId, status: Option<&str>) {
        self.said.entry(payment_op_id).or_default().insert(status.map(str::to_string));
    }

    /// A release of `payment_op_id` for `reason`: what is wrong with it, if anything.
    pub(super) fn release(&self, payment_op_id: PaymentOpId, reason: &str) -> Option<String> {
        let claimed = if reason.contains(said::STILL_PROCESSING) || reason.contains(said::PROCESSING) {
            Some("processing")
        } else {
            None
        };
        let answers = self.said.get(&payment_op_id);
        let gave = |want: Option<&str>| answers.is_some_and(|a| a.contains(&want.map(str::to_string)));
        let shown = || format!("{:?}", answers.map(|a| a.iter().collect::<Vec<_>>()).unwrap_or_default());
        if claimed.is_some() && !gave(claimed) {
            return Some(format!(
                "released for {reason:?}, but the provider never answered a read of it `processing` (it answered {})",
                shown()
            ));
        }
        if reason.contains(said::NO_RECORD) && !gave(None) {
            return Some(format!(
                "released for {reason:?}, but the provider never answered a read of it `404` (it answered {})",
                shown()
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_must_name_an_answer_the_provider_gave() {
        let op = PaymentOpId::from_u128(7);
        let mut r = ProviderReads::default();
        let processing = format!("payment unresolved at its deadline ({}); seats released", said::STILL_PROCESSING);
        let none = format!("payment unresolved at its deadline ({}); seats released", said::NO_RECORD);
        let error = "payment unresolved at its deadline (provider status unknown: timed out); seats released";
        assert!(r.release(op, &processing).is_some(), "no read at all");
        assert!(r.release(op, &none).is_some());
        assert!(r.release(op, error).is_none(), "an error is not judged");
        r.read(op, Some("succeeded"));
        assert!(r.release(op, &processing).is_some(), "a final answer taken for processing");
        r.read(op, Some("processing"));
        assert!(r.release(op, &processing).is_none());
        assert!(r.release(op, &none).is_some(), "a record taken for none");
        r.read(op, None);
        assert!(r.release(op, &none).is_none());
        assert!(r.release(PaymentOpId::from_u128(8), &processing).is_some(), "another payment's reads");
    }
}
