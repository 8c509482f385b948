//! The auditor's goodput side: how many refusals of each kind clients got,
//! next to how many of each kind the model says those same requests must
//! get. The model's answer for a request comes from its own rules (the
//! surface's, the rate limit's, the gate's) and the store calls the request
//! made; where a rule's moment cannot be known (a refusal before the
//! store), the answer the client got counts as predicted when the model
//! allows it. The provider's genuine webhooks are tallied too: refused, and
//! refused with cause (the serving host's clock past the signature's
//! tolerance).
//!
//! In a run whose answers all agree with the model the two tallies are
//! equal; a service that refuses good requests (`invalid-input` for a well-
//! formed hold, say) shows there as more refusals of that kind than
//! predicted, whatever else the run did.

use crate::model::http::Expected;
use booking::problem_kind::ProblemKind;
use std::collections::BTreeMap;

/// Refusals per kind, as answered and as the model predicted them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefusalTally {
    /// Refusals clients got, per problem kind.
    pub observed: BTreeMap<ProblemKind, u64>,
    /// Refusals the model says those requests must get, per problem kind.
    pub predicted: BTreeMap<ProblemKind, u64>,
    /// Answers the model could name no answer for (an impossible store
    /// call sequence, already a finding of its own).
    pub unpredicted: u64,
    /// The provider's genuine webhooks the service refused.
    pub webhooks_refused: u64,
    /// Of those, the refusals due: the serving host's clock past the
    /// signature's tolerance.
    pub webhooks_refusal_due: u64,
}

impl RefusalTally {
    /// Counts an answer `got` and the model's answer `want` for the same
    /// request (`None`: the model names none).
    pub(super) fn answered(&mut self, got: &Expected, want: Option<&Expected>) {
        if let Expected::Refused(_, kind) = got {
            *self.observed.entry(*kind).or_default() += 1;
        }
        match want {
            Some(Expected::Refused(_, kind)) => *self.predicted.entry(*kind).or_default() += 1,
            Some(Expected::Answered(..)) => {}
            None => self.unpredicted += 1,
        }
    }

    /// Counts a refusal of the provider's genuine webhook; `due` when the
    /// serving host's clock was past the signature's tolerance.
    pub(super) fn webhook_refused(&mut self, due: bool) {
        self.webhooks_refused += 1;
        self.webhooks_refusal_due += u64::from(due);
    }

    /// Whether every kind was refused as often as predicted, every answer
    /// had a prediction, and every refused webhook was due.
    pub fn agrees(&self) -> bool {
        self.observed == self.predicted && self.unpredicted == 0 && self.webhooks_refused == self.webhooks_refusal_due
    }

    /// Each kind refused otherwise than predicted: the kind, observed, predicted.
    pub fn differences(&self) -> Vec<(ProblemKind, u64, u64)> {
        let mut kinds: Vec<ProblemKind> = self.observed.keys().chain(self.predicted.keys()).copied().collect();
        kinds.sort();
        kinds.dedup();
        kinds
            .into_iter()
            .map(|k| (k, self.observed.get(&k).copied().unwrap_or(0), self.predicted.get(&k).copied().unwrap_or(0)))
            .filter(|(_, observed, predicted)| observed != predicted)
            .collect()
    }

    /// All refusals observed.
    pub fn total_observed(&self) -> u64 {
        self.observed.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::OpResult;

    #[test]
    fn a_refusal_the_model_did_not_predict_shows_as_a_difference_of_its_kind() {
        let mut t = RefusalTally::default();
        let taken = Expected::refused(ProblemKind::SeatUnavailable);
        t.answered(&taken, Some(&taken));
        assert!(t.agrees(), "{t:?}");
        let granted = Expected::Answered(201, OpResult::Answered { fields: vec![], body: None });
        t.answered(&Expected::refused(ProblemKind::InvalidInput), Some(&granted));
        assert!(!t.agrees());
        assert_eq!(t.differences(), vec![(ProblemKind::InvalidInput, 1, 0)]);
        t.answered(&granted, Some(&taken));
        assert_eq!(t.differences(), vec![(ProblemKind::InvalidInput, 1, 0), (ProblemKind::SeatUnavailable, 1, 2)]);
        assert_eq!(t.total_observed(), 2);
    }

    #[test]
    fn only_a_webhook_refusal_with_cause_agrees() {
        let mut t = RefusalTally::default();
        t.webhook_refused(true);
        assert!(t.agrees());
        t.webhook_refused(false);
        assert!(!t.agrees());
        let mut unknown = RefusalTally::default();
        unknown.answered(&Expected::refused(ProblemKind::Backend), None);
        assert!(!unknown.agrees(), "an answer without a prediction is not agreement");
    }
}
