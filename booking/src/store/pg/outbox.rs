//! The dispatcher's and the compensator's transitions: claim, complete and
//! retry dispatch events; start and finish compensation attempts.

use super::rows::{self, comp_cols};
use super::tx::{Fail, ensure};
use crate::model::{Compensation, CompensationStatus, EventId, OutboxEvent};
use crate::store::decide::{finish_attempt, start_attempt};
use crate::store::rules::Rules;
use crate::store::{CompensationAttempt, CompensationResult, StoreError};
use sqlx::{PgConnection, Row};
use uuid::Uuid;

/// Body of [`Store::claim_outbox`](crate::store::Store::claim_outbox): skips
/// events another dispatcher has locked right now. The due set is a
/// MATERIALIZED CTE so the LIMIT holds (see `holds::sweep_expired_holds`).
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
pub(super) async fn complete_outbox(c: &mut PgConnection, event_id: &EventId, outbox_id: Uuid) -> Result<(), Fail> {
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
    outbox_id: Uuid,
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
async fn lock_compensation(c: &mut PgConnection, compensation_id: Uuid) -> Result<Compensation, Fail> {
    let row =
        sqlx::query(concat!("SELECT ", comp_cols!(), " FROM compensations WHERE compensation_id = $1 FOR UPDATE"))
            .bind(compensation_id)
            .fetch_optional(&mut *c)
            .await?
            .ok_or(StoreError::UnknownCompensation(compensation_id))?;
    rows::compensation(&row)
}

/// Writes a compensation's mutable columns, guarded by its previous status.
async fn update_compensation(
    c: &mut PgConnection,
    before: CompensationStatus,
    after: &Compensation,
) -> Result<(), Fail> {
    let n = sqlx::query(
        "UPDATE compensations SET status = $3, attempts = $4, last_error = $5, next_attempt_at_ms = $6, updated_at_ms = $7 \
         WHERE event_id = $1 AND compensation_id = $2 AND status = $8",
    )
    .bind(&after.event_id)
    .bind(after.compensation_id)
    .bind(after.status.as_str())
    .bind(after.attempts)
    .bind(&after.last_error)
    .bind(after.next_attempt_at_ms)
    .bind(after.updated_at_ms)
    .bind(before.as_str())
    .execute(&mut *c)
    .await?
    .rows_affected();
    ensure(n == 1, || format!("compensation {} changed under its lock", after.compensation_id))
}

/// Body of [`Store::start_compensation_attempt`](crate::store::Store::start_compensation_attempt).
/// The lock makes the due check and the write one decision; the write is
/// still guarded by the status it was decided on.
pub(super) async fn start_compensation_attempt(
    c: &mut PgConnection,
    now_ms: i64,
    compensation_id: Uuid,
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
    let Some((comp, order_to)) = finish_attempt(&before, req, now_ms, rules) else {
        return Ok(before);
    };
    if let Some(order_after) = order_to {
        let row = sqlx::query("SELECT status FROM orders WHERE event_id = $1 AND order_id = $2 FOR UPDATE")
            .bind(&before.event_id)
            .bind(before.order_id)
            .fetch_optional(&mut *c)
            .await?
            .ok_or_else(|| Fail::Broken(format!("compensation {} without its order", before.compensation_id)))?;
        let order_status: String = row.try_get("status")?;
        let n = sqlx::query(
            "UPDATE orders SET status = $3, updated_at_ms = $4 WHERE event_id = $1 AND order_id = $2 AND status = $5",
        )
        .bind(&comp.event_id)
        .bind(comp.order_id)
        .bind(order_after.as_str())
        .bind(now_ms)
        .bind(&order_status)
        .execute(&mut *c)
        .await?
        .rows_affected();
        ensure(n == 1, || "order changed under its lock".into())?;
    }
    update_compensation(c, before.status, &comp).await?;
    Ok(comp)
}
