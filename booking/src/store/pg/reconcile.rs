//! The reconciler's claim: due payments, each pushed to its next backoff step
//! in the statement that picks it.

use super::rows::{self, op_cols, order_cols};
use super::tx::{Fail, ensure, ensure_written};
use crate::model::{Order, OrderId, PaymentOp};
use crate::store::decide::payment_refused;
use crate::store::machine::payment::{self as payment_machine, PaymentCause};
use crate::store::{RECONCILE_BACKOFF_MAX_SHIFT, ReconcileBackoff};
use sqlx::{PgConnection, Row};

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
/// check is `now + LEAST(base << checks, cap, deadline - now)`, the last
/// term only while the deadline is ahead (`LEAST` ignores NULL), from
/// `checks` before the claim. The orders, locked by the claim, are read after
/// it in the same transaction, and every claimed row must be the payment
/// machine's `Claim` after-image of the row as it was locked (its
/// `checks` and `next_check_at_ms` are returned from the due set).
pub(super) async fn claim_reconcile(
    c: &mut PgConnection,
    now_ms: i64,
    limit: u32,
    backoff: ReconcileBackoff,
) -> Result<Vec<(Order, PaymentOp)>, Fail> {
    let rows = sqlx::query(concat!(
        "WITH d AS MATERIALIZED ( \
             SELECT p.event_id AS d_event_id, p.payment_op_id AS d_payment_op_id, \
                    o.payment_deadline_at_ms AS d_deadline_at_ms, \
                    p.checks AS d_checks, p.next_check_at_ms AS d_next_check_at_ms \
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
         RETURNING d.d_checks, d.d_next_check_at_ms, ",
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
    let mut befores = Vec::with_capacity(ops.len());
    for (row, op) in rows.iter().zip(&ops) {
        let mut before = op.clone();
        before.checks = row.try_get("d_checks")?;
        before.next_check_at_ms = row.try_get("d_next_check_at_ms")?;
        befores.push(before);
    }
    ensure(ops.len() <= limit as usize, || format!("claimed {} of at most {limit} payments", ops.len()))?;
    let mut claimed = with_orders(c, ops).await?;
    let mut expected = Vec::with_capacity(befores.len());
    for (before, (order, _)) in befores.iter().zip(&claimed) {
        let cause = PaymentCause::Claim { order, backoff };
        let after = payment_machine::next(before, &cause, now_ms)
            .map_err(payment_refused)?
            .ok_or_else(|| Fail::Broken(format!("claim of payment {} changed nothing", before.payment_op_id)))?;
        expected.push(after);
    }
    let written: Vec<PaymentOp> = claimed.iter().map(|(_, op)| op.clone()).collect();
    ensure_written("claimed payment", expected, written, |p| p.payment_op_id)?;
    claimed.sort_by(|(a, _), (b, _)| {
        (a.payment_deadline_at_ms, &a.event_id, a.order_id).cmp(&(b.payment_deadline_at_ms, &b.event_id, b.order_id))
    });
    Ok(claimed)
}

/// Each claimed payment operation with its order.
async fn with_orders(c: &mut PgConnection, ops: Vec<PaymentOp>) -> Result<Vec<(Order, PaymentOp)>, Fail> {
    let order_ids: Vec<OrderId> = ops.iter().map(|p| p.order_id).collect();
    let rows = sqlx::query(concat!("SELECT ", order_cols!(), " FROM orders WHERE order_id = ANY($1)"))
        .bind(&order_ids)
        .fetch_all(&mut *c)
        .await?;
    let orders = rows::all(&rows, rows::order)?;
    ops.into_iter()
        .map(|op| {
            let order = orders
                .iter()
                .find(|o| o.event_id == op.event_id && o.order_id == op.order_id)
                .cloned()
                .ok_or_else(|| Fail::Broken(format!("payment op {} without its order", op.payment_op_id)))?;
            Ok((order, op))
        })
        .collect()
}
