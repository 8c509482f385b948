//! The reconciler's claim: due payments, each pushed to its next backoff step
//! in the statement that picks it.

use super::rows::{self, op_cols, order_cols};
use super::tx::{Fail, ensure};
use crate::model::{Order, PaymentOp};
use crate::store::{RECONCILE_BACKOFF_MAX_SHIFT, ReconcileBackoff};
use sqlx::PgConnection;
use uuid::Uuid;

/// Body of [`Store::claim_reconcile`](crate::store::Store::claim_reconcile);
/// `backoff` is valid.
///
/// One conditional `UPDATE`: the due set is a MATERIALIZED CTE (so the LIMIT
/// holds, see `holds::sweep_expired_holds`) that locks each payment operation
/// and its order `FOR UPDATE ... SKIP LOCKED`: a concurrent claimer, or a
/// transition under way (which locks the operation, then the order), makes
/// this claim skip the payment rather than wait, so two claimers never get
/// the same payment and this statement never waits on a row lock. A
/// transition that committed after this statement's snapshot is seen by the
/// lock's recheck of the due condition on the newest row versions. The next
/// check (`decide::claim_check`) is `now + LEAST(base << checks, cap,
/// deadline - now)`, the last term only while the deadline is ahead (`LEAST`
/// ignores NULL), from `checks` before the claim. The orders, locked by the
/// claim, are read after it in the same transaction.
pub(super) async fn claim_reconcile(
    c: &mut PgConnection,
    now_ms: i64,
    limit: u32,
    backoff: ReconcileBackoff,
) -> Result<Vec<(Order, PaymentOp)>, Fail> {
    let rows = sqlx::query(concat!(
        "WITH d AS MATERIALIZED ( \
             SELECT p.event_id AS d_event_id, p.payment_op_id AS d_payment_op_id, \
                    o.payment_deadline_at_ms AS d_deadline_at_ms \
             FROM orders o \
             JOIN payment_ops p ON p.event_id = o.event_id AND p.payment_op_id = o.payment_op_id \
             WHERE o.status IN ('pending', 'reconciling') AND p.status IN ('pending', 'unknown') \
               AND (p.status = 'unknown' OR o.payment_deadline_at_ms <= $1) \
               AND p.next_check_at_ms <= $1 \
             ORDER BY o.payment_deadline_at_ms, o.event_id, o.order_id LIMIT $5 \
             FOR UPDATE OF p, o SKIP LOCKED) \
         UPDATE payment_ops p \
         SET next_check_at_ms = $1 + LEAST($2 * (1::BIGINT << LEAST(p.checks, $4)), $3, \
                                           CASE WHEN d.d_deadline_at_ms > $1 THEN d.d_deadline_at_ms - $1 END), \
             checks = p.checks + (p.checks < 2147483647)::INTEGER \
         FROM d \
         WHERE p.event_id = d.d_event_id AND p.payment_op_id = d.d_payment_op_id \
           AND p.status IN ('pending', 'unknown') AND p.next_check_at_ms <= $1 \
         RETURNING ",
        op_cols!()
    ))
    .bind(now_ms)
    .bind(backoff.base_ms)
    .bind(backoff.cap_ms)
    .bind(RECONCILE_BACKOFF_MAX_SHIFT)
    .bind(i64::from(limit))
    .fetch_all(&mut *c)
    .await?;
    let ops = rows::all(&rows, rows::payment_op)?;
    ensure(ops.len() <= limit as usize, || format!("claimed {} of at most {limit} payments", ops.len()))?;
    let order_ids: Vec<Uuid> = ops.iter().map(|p| p.order_id).collect();
    let rows = sqlx::query(concat!("SELECT ", order_cols!(), " FROM orders WHERE order_id = ANY($1)"))
        .bind(&order_ids)
        .fetch_all(&mut *c)
        .await?;
    let orders = rows::all(&rows, rows::order)?;
    let mut claimed = ops
        .into_iter()
        .map(|op| {
            let order = orders
                .iter()
                .find(|o| o.event_id == op.event_id && o.order_id == op.order_id)
                .cloned()
                .ok_or_else(|| Fail::Broken(format!("payment op {} without its order", op.payment_op_id)))?;
            Ok((order, op))
        })
        .collect::<Result<Vec<_>, Fail>>()?;
    claimed.sort_by(|(a, _), (b, _)| {
        (a.payment_deadline_at_ms, &a.event_id, a.order_id).cmp(&(b.payment_deadline_at_ms, &b.event_id, b.order_id))
    });
    Ok(claimed)
}
