//! The dispatcher's and the compensator's transitions: claim, complete and
//! retry dispatch events; start and finish compensation attempts.

use super::payments::{move_order, order_by_key};
use super::rows::{self, comp_cols};
use super::tx::{Fail, ensure_written};
use crate::model::{Compensation, CompensationId, CompensationStatus, EventId, OutboxEvent, OutboxId};
use crate::store::machine::compensation::{finish_attempt, start_attempt};
use crate::store::rules::Rules;
use crate::store::{CompensationAttempt, CompensationResult, StoreError};
use sqlx::{PgConnection, Row};

/// Body of [`Store::claim_outbox`](crate::store::Store::claim_outbox): skips
/// events another dispatcher has locked right now. The due set is a
/// MATERIALIZED CTE: as a plain subquery in FROM the planner may rescan it,
/// and a rescan past the rows this statement already updated finds more of
/// them, breaking the LIMIT (the differential test caught it in the sweeper).
pub(super) async fn claim_outbox(
    c: &mut PgConnection,
    now_ms: i64,
    limit: u32,
    lease_ms: i64,
) -> Result<Vec<OutboxEvent>, Fail> {
    let rows = sqlx::query(
        "WITH d AS MATERIALIZED ( \
             SELECT event_id, outbox_id, available_at_ms FROM outbox \
             WHERE status = 'pending' AND available_at_ms <= $1 \
             ORDER BY available_at_ms, created_at_ms, event_id, outbox_id LIMIT $3 \
             FOR UPDATE SKIP LOCKED) \
         UPDATE outbox o SET attempts = o.attempts + 1, available_at_ms = $2 \
         FROM d \
         WHERE o.event_id = d.event_id AND o.outbox_id = d.outbox_id \
           AND o.status = 'pending' AND o.available_at_ms <= $1 \
         RETURNING o.event_id, o.outbox_id, o.kind, o.ref_id, o.status, o.attempts, o.available_at_ms, \
                   o.last_error, o.created_at_ms, d.available_at_ms AS due_at_ms",
    )
    .bind(now_ms)
    .bind(now_ms + lease_ms)
    .bind(i64::from(limit))
    .fetch_all(&mut *c)
    .await?;
    let mut claimed = rows
        .iter()
        .map(|r| Ok((r.try_get::<i64, _>("due_at_ms")?, rows::outbox(r)?)))
        .collect::<Result<Vec<_>, Fail>>()?;
    claimed.sort_by(|(a_due, a), (b_due, b)| {
        (a_due, a.created_at_ms, &a.event_id, a.outbox_id).cmp(&(b_due, b.created_at_ms, &b.event_id, b.outbox_id))
    });
    Ok(claimed.into_iter().map(|(_, o)| o).collect())
}

/// Body of [`Store::complete_outbox`](crate::store::Store::complete_outbox).
pub(super) async fn complete_outbox(c: &mut PgConnection, event_id: &EventId, outbox_id: OutboxId) -> Result<(), Fail> {
    let row =
        sqlx::query("UPDATE outbox SET status = 'done' WHERE event_id = $1 AND outbox_id = $2 RETURNING outbox_id")
            .bind(event_id)
            .bind(outbox_id)
            .fetch_optional(&mut *c)
            .await?;
    match row {
        Some(_) => Ok(()),
        None => Err(StoreError::UnknownOutboxEvent(outbox_id).into()),
    }
}

/// Body of [`Store::retry_outbox`](crate::store::Store::retry_outbox); `error` is bounded.
pub(super) async fn retry_outbox(
    c: &mut PgConnection,
    now_ms: i64,
    event_id: &EventId,
    outbox_id: OutboxId,
    error: &str,
    retry_after_ms: i64,
) -> Result<(), Fail> {
    sqlx::query("SELECT status FROM outbox WHERE event_id = $1 AND outbox_id = $2 FOR UPDATE")
        .bind(event_id)
        .bind(outbox_id)
        .fetch_optional(&mut *c)
        .await?
        .ok_or(StoreError::UnknownOutboxEvent(outbox_id))?;
    sqlx::query(
        "UPDATE outbox SET last_error = $3, available_at_ms = $4 \
         WHERE event_id = $1 AND outbox_id = $2 AND status = 'pending'",
    )
    .bind(event_id)
    .bind(outbox_id)
    .bind(error)
    .bind(now_ms + retry_after_ms)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Locks a compensation by id.
async fn lock_compensation(c: &mut PgConnection, compensation_id: CompensationId) -> Result<Compensation, Fail> {
    let row =
        sqlx::query(concat!("SELECT ", comp_cols!(), " FROM compensations WHERE compensation_id = $1 FOR UPDATE"))
            .bind(compensation_id)
            .fetch_optional(&mut *c)
            .await?
            .ok_or(StoreError::UnknownCompensation(compensation_id))?;
    rows::compensation(&row)
}

/// Writes a compensation's mutable columns, guarded by its previous status;
/// the row written must be `after` (the machine's after-image).
async fn update_compensation(
    c: &mut PgConnection,
    before: CompensationStatus,
    after: &Compensation,
) -> Result<(), Fail> {
    let row = sqlx::query(concat!(
        "UPDATE compensations SET status = $3, attempts = $4, last_error = $5, next_attempt_at_ms = $6, updated_at_ms = $7 \
         WHERE event_id = $1 AND compensation_id = $2 AND status = $8 RETURNING ",
        comp_cols!()
    ))
    .bind(&after.event_id)
    .bind(after.compensation_id)
    .bind(after.status.as_str())
    .bind(after.attempts)
    .bind(&after.last_error)
    .bind(after.next_attempt_at_ms)
    .bind(after.updated_at_ms)
    .bind(before.as_str())
    .fetch_optional(&mut *c)
    .await?
    .ok_or_else(|| Fail::Broken(format!("compensation {} changed under its lock", after.compensation_id)))?;
    ensure_written("compensation", vec![after.clone()], vec![rows::compensation(&row)?], |c| c.compensation_id)
}

/// Body of [`Store::start_compensation_attempt`](crate::store::Store::start_compensation_attempt).
/// The lock makes the due check and the write one decision; the write is
/// still guarded by the status it was decided on.
pub(super) async fn start_compensation_attempt(
    c: &mut PgConnection,
    now_ms: i64,
    compensation_id: CompensationId,
    attempt_lease_ms: i64,
    rules: &Rules,
) -> Result<CompensationAttempt, Fail> {
    let before = lock_compensation(c, compensation_id).await?;
    let attempt = start_attempt(&before, now_ms, attempt_lease_ms, rules)?;
    update_compensation(c, before.status, &attempt.compensation).await?;
    Ok(attempt)
}

/// Body of [`Store::finish_compensation_attempt`](crate::store::Store::finish_compensation_attempt).
/// Locks the compensation, then its order.
pub(super) async fn finish_compensation_attempt(
    c: &mut PgConnection,
    now_ms: i64,
    req: &CompensationResult,
    rules: &Rules,
) -> Result<Compensation, Fail> {
    let before = lock_compensation(c, req.compensation_id).await?;
    let Some((comp, order_cause)) = finish_attempt(&before, req, now_ms) else {
        return Ok(before);
    };
    if let Some(cause) = order_cause {
        let order = order_by_key(c, &before.event_id, before.order_id, true).await?;
        move_order(c, &order, &cause, now_ms, rules).await?;
    }
    update_compensation(c, before.status, &comp).await?;
    Ok(comp)
}
