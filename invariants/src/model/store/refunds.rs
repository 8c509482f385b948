//! Compensations (refunds of charges without a ticket) and the dispatch outbox.
//!
//! - A refund attempt starts only when due: `requested` once its backoff
//!   has passed, or `in_flight` once the running attempt's lease has expired
//!   (a takeover, reported with the abandoned attempt's number and lease).
//!   It becomes `in_flight`, counts the attempt and is leased until
//!   `now + lease`. Otherwise `compensation-not-due`.
//! - A refund's result: a success ends it (`succeeded`, the order
//!   `compensated`) from any open state, whoever reports it. A failure or an
//!   unknown outcome counts only for the running attempt (same number,
//!   still `in_flight`); then, with attempts left, back to `requested` due
//!   after the delay, else `failed` and the order `compensation_failed`. An
//!   unknown outcome's error is recorded as "outcome unknown: <error>".
//!   Anything on a final refund, and any stale result, changes nothing.
//! - A dispatch event is claimed when pending and due, earliest due first
//!   (then the earliest created): the claim counts an attempt and leases it
//!   for `lease_ms`. Completed, it is done for good; retried, a pending
//!   event records its error and is due again after the delay.

use super::{StoreModel, Writes};
use crate::model::validate;
use booking::model::{
    Compensation, CompensationId, CompensationStatus, EventId, Order, OrderStatus, OutboxEvent, OutboxId, OutboxStatus,
};
use booking::store::{CompensationAttempt, CompensationOutcome, CompensationResult, ExpiredAttempt, StoreError};

/// The prefix of an unknown refund outcome's recorded error.
pub const UNKNOWN_PREFIX: &str = "outcome unknown: ";

impl StoreModel {
    fn comp(&self, id: CompensationId) -> Result<Compensation, StoreError> {
        self.compensation(id).cloned().ok_or(StoreError::UnknownCompensation(id))
    }

    /// Moves the order of `c` from `compensating` to `to`.
    fn settle_order(
        &mut self,
        c: &Compensation,
        to: OrderStatus,
        now_ms: i64,
        w: &mut Writes,
    ) -> Result<(), StoreError> {
        let order = self.order(c.order_id).expect("a refund's order exists").clone();
        if order.status != OrderStatus::Compensating {
            return Err(StoreError::InvariantBreach(format!(
                "model: order {} is {}, not compensating",
                order.order_id, order.status
            )));
        }
        self.put_order(Order { status: to, updated_at_ms: now_ms, ..order }, w);
        Ok(())
    }

    /// `start_compensation_attempt` at `now_ms`.
    pub(crate) fn start_compensation(
        &mut self,
        id: CompensationId,
        lease_ms: i64,
        now_ms: i64,
        w: &mut Writes,
    ) -> Result<CompensationAttempt, StoreError> {
        validate::lease(lease_ms)?;
        let c = self.comp(id)?;
        let open = matches!(c.status, CompensationStatus::Requested | CompensationStatus::InFlight);
        if !open || c.next_attempt_at_ms > now_ms {
            return Err(StoreError::CompensationNotDue(id));
        }
        let took_over = (c.status == CompensationStatus::InFlight)
            .then_some(ExpiredAttempt { attempt: c.attempts, lease_expired_at_ms: c.next_attempt_at_ms });
        let after = Compensation {
            status: CompensationStatus::InFlight,
            attempts: c.attempts + 1,
            next_attempt_at_ms: now_ms + lease_ms,
            updated_at_ms: now_ms,
            ..c
        };
        self.put_compensation(after.clone(), w);
        Ok(CompensationAttempt { compensation: after, took_over })
    }

    /// `finish_compensation_attempt` at `now_ms`.
    pub(crate) fn finish_compensation(
        &mut self,
        req: &CompensationResult,
        now_ms: i64,
        w: &mut Writes,
    ) -> Result<Compensation, StoreError> {
        if req.max_attempts < 1 {
            return Err(StoreError::InvalidInput("model: max_attempts".into()));
        }
        validate::delay(req.retry_after_ms)?;
        let c = self.comp(req.compensation_id)?;
        if matches!(c.status, CompensationStatus::Succeeded | CompensationStatus::Failed) {
            return Ok(c);
        }
        let (attempt, error) = match &req.outcome {
            CompensationOutcome::Succeeded => {
                let done = Compensation { status: CompensationStatus::Succeeded, updated_at_ms: now_ms, ..c };
                self.settle_order(&done, OrderStatus::Compensated, now_ms, w)?;
                self.put_compensation(done.clone(), w);
                return Ok(done);
            }
            CompensationOutcome::Failed { attempt, error } => (*attempt, validate::stored_text(error)),
            CompensationOutcome::Unknown { attempt, error } => {
                (*attempt, validate::stored_text(&format!("{UNKNOWN_PREFIX}{error}")))
            }
        };
        if c.status != CompensationStatus::InFlight || c.attempts != attempt {
            return Ok(c);
        }
        let after = if c.attempts >= req.max_attempts {
            let failed = Compensation {
                status: CompensationStatus::Failed,
                last_error: Some(error),
                updated_at_ms: now_ms,
                ..c
            };
            self.settle_order(&failed, OrderStatus::CompensationFailed, now_ms, w)?;
            failed
        } else {
            Compensation {
                status: CompensationStatus::Requested,
                last_error: Some(error),
                next_attempt_at_ms: now_ms + req.retry_after_ms,
                updated_at_ms: now_ms,
                ..c
            }
        };
        self.put_compensation(after.clone(), w);
        Ok(after)
    }

    /// `compensation` (a read).
    pub(crate) fn read_compensation(&self, id: CompensationId) -> Result<Compensation, StoreError> {
        self.comp(id)
    }

    /// `claim_outbox` at `now_ms`: the events the claim must take, before the
    /// claim (indexes into the outbox), and whether the limit left due ones out.
    pub(crate) fn due_outbox(&self, now_ms: i64) -> Vec<usize> {
        let mut due: Vec<usize> = (0..self.outbox.len())
            .filter(|&i| self.outbox[i].status == OutboxStatus::Pending && self.outbox[i].available_at_ms <= now_ms)
            .collect();
        due.sort_by_key(|&i| (self.outbox[i].available_at_ms, self.outbox[i].created_at_ms));
        due
    }

    /// Claims outbox event `i` at `now_ms` for `lease_ms`, naming it `outbox_id`.
    pub(crate) fn claim_outbox_event(
        &mut self,
        i: usize,
        outbox_id: OutboxId,
        lease_ms: i64,
        now_ms: i64,
    ) -> OutboxEvent {
        let o = &mut self.outbox[i];
        o.outbox_id = outbox_id;
        o.attempts += 1;
        o.available_at_ms = now_ms + lease_ms;
        o.clone()
    }

    fn outbox_index(&self, event_id: &EventId, outbox_id: OutboxId) -> Result<usize, StoreError> {
        self.outbox
            .iter()
            .position(|o| o.outbox_id == outbox_id && o.event_id == *event_id && !outbox_id.is_nil())
            .ok_or(StoreError::UnknownOutboxEvent(outbox_id))
    }

    /// `complete_outbox`.
    pub(crate) fn complete_outbox(&mut self, event_id: &EventId, outbox_id: OutboxId) -> Result<(), StoreError> {
        let i = self.outbox_index(event_id, outbox_id)?;
        self.outbox[i].status = OutboxStatus::Done;
        Ok(())
    }

    /// `retry_outbox` at `now_ms`.
    pub(crate) fn retry_outbox(
        &mut self,
        event_id: &EventId,
        outbox_id: OutboxId,
        error: &str,
        retry_after_ms: i64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        validate::delay(retry_after_ms)?;
        let i = self.outbox_index(event_id, outbox_id)?;
        let o = &mut self.outbox[i];
        if o.status == OutboxStatus::Pending {
            o.last_error = Some(validate::stored_text(error));
            o.available_at_ms = now_ms + retry_after_ms;
        }
        Ok(())
    }
}
