//! The workflow's limits, each with its unit.

use crate::store::ReconcileBackoff;
use serde::{Deserialize, Serialize};

/// Limits and intervals of the payment [`Workflow`](super::Workflow).
///
/// Preconditions (checked by [`WorkflowConfig::validate`]): every count and
/// interval > 0, every base <= its cap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowConfig {
    /// Outbox rows claimed per dispatch pass.
    pub dispatch_batch: u32,
    /// Claimed rows handled at once (provider calls in flight per dispatcher),
    /// 1..=`dispatch_batch`: one slow provider answer no longer holds up the
    /// rest of the batch.
    pub dispatch_concurrency: u32,
    /// How long a claim leases an outbox row: a crashed dispatcher's row comes back after it.
    /// Also the lease of a refund attempt (`Store::start_compensation_attempt`): an
    /// attempt whose dispatcher died is taken over once it lapses.
    /// Must exceed the provider call timeout.
    pub outbox_lease_ms: i64,
    /// How many times a charge is sent to the provider (same idempotency key)
    /// while its order owns its seats; after that its outbox row waits for the
    /// payment deadline, and the reconciler decides.
    pub max_charge_attempts: i32,
    /// First retry delay of an outbox row; doubles per attempt.
    pub retry_backoff_base_ms: i64,
    /// Upper bound on an outbox row's retry delay.
    pub retry_backoff_cap_ms: i64,
    /// Due payments claimed per reconcile pass (`Store::claim_reconcile`).
    pub reconcile_batch: u32,
    /// Delay before a payment is checked with the provider again after its
    /// first reconcile check; doubles per check. Shared by every replica (the
    /// schedule is in the store), never past the payment deadline while that
    /// is ahead.
    pub reconcile_backoff_base_ms: i64,
    /// Upper bound on the delay between two reconcile checks of a payment.
    /// Also bounds how long a check claimed by a replica that died is retried
    /// late, so keep it well under the liveness bound on resolving a payment
    /// after its deadline.
    pub reconcile_backoff_cap_ms: i64,
    /// How often the service's dispatch loop (`Service::run_background`) dispatches.
    pub dispatch_interval_ms: u64,
    /// How often the service's reconcile loop (`Service::run_background`) reconciles.
    pub reconcile_interval_ms: u64,
    /// Refund attempts before a compensation is `failed` (visible to operators)
    /// when the last attempt definitely failed (refused, or never reached the provider).
    pub max_compensation_attempts: i32,
    /// Refund attempts before a compensation is `failed` when the last attempt's
    /// outcome is unknown (>= `max_compensation_attempts`). An unknown answer
    /// may mean the money went back, and the next attempt (same refund key)
    /// finds out, so it gets the longer bound; if it is reached anyway the
    /// `failed` record's `last_error` starts with
    /// [`UNKNOWN_OUTCOME_PREFIX`](crate::store::UNKNOWN_OUTCOME_PREFIX): ask the
    /// provider before refunding by hand.
    pub max_compensation_unknown_attempts: i32,
    /// First delay between refund attempts; doubles per attempt.
    pub compensation_backoff_base_ms: i64,
    /// Upper bound on the delay between refund attempts.
    pub compensation_backoff_cap_ms: i64,
}

impl Default for WorkflowConfig {
    fn default() -> Self {
        Self {
            dispatch_batch: 32,
            dispatch_concurrency: 8,
            outbox_lease_ms: 30_000,
            max_charge_attempts: 5,
            retry_backoff_base_ms: 500,
            retry_backoff_cap_ms: 30_000,
            reconcile_batch: 64,
            reconcile_backoff_base_ms: 1_000,
            reconcile_backoff_cap_ms: 8_000,
            dispatch_interval_ms: 200,
            reconcile_interval_ms: 1_000,
            max_compensation_attempts: 8,
            max_compensation_unknown_attempts: 16,
            compensation_backoff_base_ms: 1_000,
            compensation_backoff_cap_ms: 60_000,
        }
    }
}

/// A [`WorkflowConfig`] field out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid workflow config: {0}")]
pub struct InvalidConfig(pub &'static str);

impl WorkflowConfig {
    /// Checks the preconditions.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let day_ms = super::dispatch::MAX_DELAY_MS;
        let checks: [(bool, &'static str); 12] = [
            (
                self.outbox_lease_ms <= day_ms
                    && self.retry_backoff_cap_ms <= day_ms
                    && self.compensation_backoff_cap_ms <= day_ms
                    && self.reconcile_backoff_cap_ms <= day_ms,
                "lease and backoff caps must be <= a day",
            ),
            (self.dispatch_batch > 0, "dispatch_batch must be > 0"),
            (
                0 < self.dispatch_concurrency && self.dispatch_concurrency <= self.dispatch_batch,
                "0 < dispatch_concurrency <= dispatch_batch",
            ),
            (self.outbox_lease_ms > 0, "outbox_lease_ms must be > 0"),
            (self.max_charge_attempts > 0, "max_charge_attempts must be > 0"),
            (
                0 < self.retry_backoff_base_ms && self.retry_backoff_base_ms <= self.retry_backoff_cap_ms,
                "0 < retry_backoff_base_ms <= retry_backoff_cap_ms",
            ),
            (self.reconcile_batch > 0, "reconcile_batch must be > 0"),
            (
                0 < self.reconcile_backoff_base_ms && self.reconcile_backoff_base_ms <= self.reconcile_backoff_cap_ms,
                "0 < reconcile_backoff_base_ms <= reconcile_backoff_cap_ms",
            ),
            (self.dispatch_interval_ms > 0 && self.reconcile_interval_ms > 0, "intervals must be > 0"),
            (self.max_compensation_attempts > 0, "max_compensation_attempts must be > 0"),
            (
                self.max_compensation_unknown_attempts >= self.max_compensation_attempts,
                "max_compensation_unknown_attempts must be >= max_compensation_attempts",
            ),
            (
                0 < self.compensation_backoff_base_ms
                    && self.compensation_backoff_base_ms <= self.compensation_backoff_cap_ms,
                "0 < compensation_backoff_base_ms <= compensation_backoff_cap_ms",
            ),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, why)) => Err(InvalidConfig(why)),
            None => Ok(()),
        }
    }

    /// Delay before retrying an outbox row claimed `attempts` times (>= 1).
    pub fn retry_backoff_ms(&self, attempts: i32) -> i64 {
        backoff_ms(self.retry_backoff_base_ms, self.retry_backoff_cap_ms, attempts)
    }

    /// The reconciler's backoff between two provider checks of one payment,
    /// as the store applies it. Valid when `self` is.
    pub fn reconcile_backoff(&self) -> ReconcileBackoff {
        ReconcileBackoff { base_ms: self.reconcile_backoff_base_ms, cap_ms: self.reconcile_backoff_cap_ms }
    }

    /// Delay after the `attempts`-th (>= 1) failed refund attempt.
    pub fn compensation_backoff_ms(&self, attempts: i32) -> i64 {
        backoff_ms(self.compensation_backoff_base_ms, self.compensation_backoff_cap_ms, attempts)
    }
}

/// `min(cap, base * 2^(attempts-1))`, without overflow.
fn backoff_ms(base_ms: i64, cap_ms: i64, attempts: i32) -> i64 {
    let shift = attempts.saturating_sub(1).clamp(0, 30) as u32;
    base_ms.saturating_mul(1i64 << shift).min(cap_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let c = WorkflowConfig::default();
        assert_eq!(c.retry_backoff_ms(1), 500);
        assert_eq!(c.retry_backoff_ms(2), 1_000);
        assert_eq!(c.retry_backoff_ms(3), 2_000);
        assert_eq!(c.retry_backoff_ms(1_000), 30_000);
        assert_eq!(c.retry_backoff_ms(0), 500);
        assert!(c.validate().is_ok());
        assert!(WorkflowConfig { retry_backoff_cap_ms: 1, ..c.clone() }.validate().is_err());
        assert!(WorkflowConfig { max_compensation_unknown_attempts: 7, ..c }.validate().is_err());
    }

    /// The bound is a day, in milliseconds: a day is accepted, a millisecond more is not.
    #[test]
    fn lease_and_backoff_caps_may_reach_a_day_and_no_further() {
        let c = WorkflowConfig::default();
        let day_ms = 24 * 60 * 60 * 1_000;
        for ok in [
            WorkflowConfig { outbox_lease_ms: day_ms, ..c.clone() },
            WorkflowConfig { retry_backoff_cap_ms: day_ms, ..c.clone() },
            WorkflowConfig { reconcile_backoff_cap_ms: day_ms, ..c.clone() },
        ] {
            assert_eq!(ok.validate(), Ok(()), "{ok:?}");
        }
        for bad in [
            WorkflowConfig { outbox_lease_ms: day_ms + 1, ..c.clone() },
            WorkflowConfig { retry_backoff_cap_ms: day_ms + 1, ..c.clone() },
            WorkflowConfig { reconcile_backoff_cap_ms: day_ms + 1, ..c.clone() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn reconcile_backoff_is_validated_and_matches_the_store() {
        let c = WorkflowConfig::default();
        let b = c.reconcile_backoff();
        assert_eq!(b.validate(), Ok(()));
        let steps: Vec<i64> = (0..6).map(|checks| b.delay_ms(checks)).collect();
        assert_eq!(steps, [1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
        assert_eq!(b.delay_ms(i32::MAX), 8_000, "no overflow however many checks");
        for bad in [
            WorkflowConfig { reconcile_backoff_base_ms: 0, ..c.clone() },
            WorkflowConfig { reconcile_backoff_cap_ms: 999, ..c.clone() },
            WorkflowConfig { reconcile_backoff_cap_ms: super::super::dispatch::MAX_DELAY_MS + 1, ..c.clone() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
            assert!(bad.reconcile_backoff().validate().is_err(), "the store refuses it too: {bad:?}");
        }
    }
}
