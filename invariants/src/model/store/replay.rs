//! One store call replayed: the model decides the answer and the writes,
//! taking from the store's answer only the ids it drew; then the two are
//! compared.

use super::ids::Ids;
use super::{StoreModel, Writes};
use crate::Subject;
use crate::model::{Finding, shown};
use crate::store_call::{Answer, Refusal, StoreCall};
use booking::model::{CompensationId, EventId, OrderId, PaymentOpId};
use booking::problem_kind::ProblemKind;
use booking::store::{SaleOutcome, StoreError};
use std::fmt::Debug;

/// What replaying one call found, and what the model says it wrote.
#[derive(Debug, Default)]
pub struct Replay {
    /// Where the store's answer differs from the model's.
    pub findings: Vec<Finding>,
    /// The writes the model made (to compare with the store's reported ones).
    pub writes: Writes,
}

/// Whether a refusal's message must match too: those naming a record or a
/// time do; an input refusal's and an invariant breach's are prose.
fn message_matters(kind: ProblemKind) -> bool {
    !matches!(kind, ProblemKind::InvalidInput | ProblemKind::InvariantBreach | ProblemKind::Backend)
}

/// Compares the model's `expected` answer with the store's `actual` one.
pub(crate) fn compare<T: PartialEq + Debug>(
    call: &str,
    subject: Subject,
    expected: &Result<T, StoreError>,
    actual: &Answer<T>,
) -> Option<Finding> {
    let same = match (expected, actual) {
        (Ok(e), Ok(a)) => e == a,
        (Err(e), Err(a)) => {
            let e = Refusal::from(e);
            e.kind == a.kind && (!message_matters(e.kind) || e.message == a.message)
        }
        _ => false,
    };
    let render = |r: &Result<String, String>| match r {
        Ok(v) => format!("ok {v}"),
        Err(e) => format!("refused {e}"),
    };
    (!same).then(|| {
        let e = expected.as_ref().map(shown).map_err(|e| format!("{} ({e})", e.kind()));
        let a = actual.as_ref().map(shown).map_err(|r| format!("{} ({})", r.kind, r.message));
        Finding::new(subject, format!("{call}: expected {}, the store answered {}", render(&e), render(&a)))
    })
}

fn id_list<T>(answer: &Answer<T>, f: impl FnOnce(&T) -> Vec<uuid::Uuid>) -> Ids {
    Ids::from(answer.as_ref().map(f).unwrap_or_default())
}

/// The ids a sale's answer carries: its bookings', or its compensation's.
fn sale_ids(rec: &booking::store::Recorded<SaleOutcome>) -> Vec<uuid::Uuid> {
    match (&rec.outcome, rec.decided_now) {
        (_, false) => vec![],
        (SaleOutcome::Confirmed { bookings, .. }, true) => bookings.iter().map(|b| b.booking_id.as_uuid()).collect(),
        (SaleOutcome::Compensating { compensation, .. }, true) => vec![compensation.compensation_id.as_uuid()],
    }
}

fn call_subject(name: &str) -> Subject {
    Subject::Call { name: name.to_string() }
}

impl StoreModel {
    /// Replays `call`, made at store time `now_ms`.
    pub fn replay(&mut self, now_ms: i64, call: &StoreCall) -> Replay {
        let mut r = Replay::default();
        let mut ids = Ids::default();
        let found = match self.replay_read(now_ms, call) {
            Some(found) => found,
            None => self.replay_write(now_ms, call, &mut ids, &mut r.writes),
        };
        r.findings.extend(found);
        for id in ids.reused {
            r.findings.push(Finding::new(
                call_subject(call.name()),
                format!("{}: the store drew id {id} again", call.name()),
            ));
        }
        r
    }

    /// A call that writes holds, checkouts or payment outcomes.
    fn replay_write(&mut self, now_ms: i64, call: &StoreCall, ids: &mut Ids, w: &mut Writes) -> Option<Finding> {
        let name = call.name();
        let op = |id: &PaymentOpId| Subject::PaymentOp { payment_op_id: *id };
        match call {
            StoreCall::CreateEvent { req, answer } => {
                compare(name, Subject::SeatMap { event_id: req.event_id.clone() }, &self.create_event(req), answer)
            }
            StoreCall::AcquireHold { req, answer } => {
                *ids = id_list(answer, |g| vec![g.hold_token.as_uuid()]);
                let seat_id = req.seat_ids.iter().min().cloned().unwrap_or_default();
                let subject = Subject::Seat { event_id: req.event_id.clone(), seat_id };
                compare(name, subject, &self.acquire_hold(req, now_ms, ids, w), answer)
            }
            StoreCall::ReleaseHold { req, answer } => {
                let subject = Subject::Hold { event_id: req.event_id.clone(), hold_token: req.hold_token };
                compare(name, subject, &self.release_hold(req, w), answer)
            }
            StoreCall::Sweep { limit_seats, answer } => {
                compare(name, call_subject("sweep"), &Ok(self.sweep(*limit_seats, now_ms, w)), answer)
            }
            StoreCall::BeginPayment { req, answer } => {
                *ids = id_list(answer, |o| {
                    if o.replayed { vec![] } else { vec![o.order.order_id.as_uuid(), o.order.payment_op_id.as_uuid()] }
                });
                let subject = Subject::IdempotencyKey {
                    event_id: req.event_id.clone(),
                    holder_id: req.holder_id.clone(),
                    key: req.idempotency_key.clone(),
                };
                compare(name, subject, &self.begin_payment(req, now_ms, ids, w), answer)
            }
            StoreCall::PaymentSuccess { req, answer } => {
                *ids = id_list(answer, sale_ids);
                compare(name, op(&req.payment_op_id), &self.payment_success(req, now_ms, ids, w), answer)
            }
            StoreCall::PaymentFailure { payment_op_id: id, reason, answer } => {
                compare(name, op(id), &self.payment_failure(*id, reason, now_ms, w), answer)
            }
            StoreCall::PaymentUnknown { payment_op_id: id, error, answer } => {
                compare(name, op(id), &self.payment_unknown(*id, error, now_ms, w), answer)
            }
            StoreCall::ReleaseUnresolved { payment_op_id: id, reason, answer } => {
                compare(name, op(id), &self.release_unresolved(*id, reason, now_ms, w), answer)
            }
            _ => self.replay_work(now_ms, call, w),
        }
    }

    /// A call of the workflow's own: the outbox and compensations.
    fn replay_work(&mut self, now_ms: i64, call: &StoreCall, w: &mut Writes) -> Option<Finding> {
        let name = call.name();
        let comp = |id: &CompensationId| Subject::Compensation { compensation_id: *id };
        match call {
            StoreCall::ClaimOutbox { limit, lease_ms, answer } => {
                self.replay_claim_outbox(*limit, *lease_ms, now_ms, answer)
            }
            StoreCall::CompleteOutbox { event_id, outbox_id, answer } => {
                compare(name, call_subject("outbox"), &self.complete_outbox(event_id, *outbox_id), answer)
            }
            StoreCall::RetryOutbox { event_id, outbox_id, error, retry_after_ms, answer } => {
                let expected = self.retry_outbox(event_id, *outbox_id, error, *retry_after_ms, now_ms);
                compare(name, call_subject("outbox"), &expected, answer)
            }
            StoreCall::StartCompensation { compensation_id: id, attempt_lease_ms, answer } => {
                compare(name, comp(id), &self.start_compensation(*id, *attempt_lease_ms, now_ms, w), answer)
            }
            StoreCall::FinishCompensation { req, answer } => {
                compare(name, comp(&req.compensation_id), &self.finish_compensation(req, now_ms, w), answer)
            }
            StoreCall::ClaimReconcile { limit, backoff, answer } => {
                let expected = self.claim_reconcile(*limit, *backoff, now_ms);
                compare(name, call_subject("claim_reconcile"), &expected, answer)
            }
            other => unreachable!("{} is a read", other.name()),
        }
    }

    /// A read (it writes nothing): `None` when `call` is not one.
    fn replay_read(&self, now_ms: i64, call: &StoreCall) -> Option<Option<Finding>> {
        let name = call.name();
        let map = |e: &str| Subject::SeatMap { event_id: EventId::from(e) };
        let order = |id: &OrderId| Subject::Order { order_id: *id };
        Some(match call {
            StoreCall::Compensation { compensation_id: id, answer } => {
                compare(name, Subject::Compensation { compensation_id: *id }, &self.read_compensation(*id), answer)
            }
            StoreCall::SeatMap { event_id, answer } => compare(name, map(event_id), &self.seat_map(event_id), answer),
            StoreCall::SeatMapVersion { event_id, answer } => {
                compare(name, map(event_id), &self.seat_map_version(event_id), answer)
            }
            StoreCall::SeatsInState { event_id, state, answer } => {
                compare(name, map(event_id), &self.seats_in_state(event_id, *state), answer)
            }
            StoreCall::Order { order_id, answer } => {
                compare(name, order(order_id), &self.read_order(*order_id), answer)
            }
            StoreCall::PaymentOp { payment_op_id: id, answer } => {
                compare(name, Subject::PaymentOp { payment_op_id: *id }, &self.read_op(*id), answer)
            }
            StoreCall::CompensationsForOrder { order_id, answer } => {
                compare(name, order(order_id), &Ok(self.compensations_of(*order_id)), answer)
            }
            StoreCall::OrderDetails { order_id, answer } => {
                compare(name, order(order_id), &self.order_details(*order_id), answer)
            }
            StoreCall::Bookings { event_id, answer } => {
                compare(name, map(event_id), &Ok(self.event_bookings(event_id)), answer)
            }
            StoreCall::NeedsResolution { answer } => {
                compare(name, call_subject("needs_resolution"), &Ok(self.needs_resolution()), answer)
            }
            StoreCall::NowMs { answer } => compare(name, call_subject("now_ms"), &Ok(now_ms), answer),
            _ => return None,
        })
    }

    /// `claim_outbox`: the events claimed must be the due ones, earliest due
    /// first, as many as the limit allows; the model learns their ids here.
    fn replay_claim_outbox(
        &mut self,
        limit: u32,
        lease_ms: i64,
        now_ms: i64,
        answer: &Answer<Vec<booking::model::OutboxEvent>>,
    ) -> Option<Finding> {
        let subject = call_subject("claim_outbox");
        if let Err(e) = crate::model::validate::lease(lease_ms) {
            return compare("claim_outbox", subject, &Err::<Vec<booking::model::OutboxEvent>, _>(e), answer);
        }
        let due = self.due_outbox(now_ms);
        let Ok(claimed) = answer else {
            return Some(Finding::new(subject, format!("claim_outbox: refused {}", shown(answer))));
        };
        let want = due.len().min(limit as usize);
        let mut taken = Vec::new();
        for row in claimed {
            let Some(&i) = due.iter().find(|&&i| {
                let o = &self.outbox[i];
                o.kind == row.kind && o.ref_id == row.ref_id && (o.outbox_id.is_nil() || o.outbox_id == row.outbox_id)
            }) else {
                return Some(Finding::new(subject, format!("claim_outbox: claimed {} which is not due", shown(row))));
            };
            taken.push(i);
        }
        // Whatever was left out must not be due earlier than what was taken.
        let key = |i: usize| (self.outbox[i].available_at_ms, self.outbox[i].created_at_ms);
        let latest_taken = taken.iter().map(|&i| key(i)).max();
        let skipped_earlier =
            due.iter().filter(|i| !taken.contains(i)).any(|&i| latest_taken.is_some_and(|l| key(i) < l));
        if claimed.len() != want || skipped_earlier {
            return Some(Finding::new(
                subject,
                format!(
                    "claim_outbox: {} of {} due events claimed (limit {limit}), earliest first expected",
                    claimed.len(),
                    due.len()
                ),
            ));
        }
        for (row, i) in claimed.iter().zip(taken) {
            let expected = self.claim_outbox_event(i, row.outbox_id, lease_ms, now_ms);
            if &expected != row {
                return Some(Finding::new(
                    subject,
                    format!("claim_outbox: expected {}, claimed {}", shown(&expected), shown(row)),
                ));
            }
        }
        None
    }
}
