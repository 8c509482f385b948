//! The payment transitions: begin a payment (checkout), and record what the
//! provider said (success, failure, unknown) or release an unresolved payment.
//! Locks are taken in one order everywhere: payment op, then order, then seats
//! (sorted), so these transactions cannot deadlock each other. Every write of
//! a seat, order or payment operation is conditional and returns its rows,
//! which must equal the after-images its state machine decided from the
//! locked before-images.

use super::holds::{lock_seats, require_event};
use super::rows::{self, booking_cols, comp_cols, op_cols, order_cols, seat_cols};
use super::tx::{Fail, TxIds, ensure, ensure_written};
use crate::model::{
    Booking, BookingId, Compensation, CompensationId, EventId, HoldToken, Order, OrderId, OrderStatus, OutboxId,
    OutboxKind, PaymentOp, PaymentOpId, Seat, SeatId,
};
use crate::store::decide::{check_checkout, check_whole_hold, order_refused, payment_refused};
use crate::store::machine::order::{self as order_machine, OrderCause};
use crate::store::machine::payment::{self as payment_machine, PaymentCause};
use crate::store::machine::seat::{self as seat_machine, SeatCause};
use crate::store::rules::{Rules, rule_text};
use crate::store::{BeginPayment, BeginPaymentOutcome, PaymentSuccess, Recorded, SaleOutcome, StoreError};
use sqlx::{PgConnection, Row};
use uuid::Uuid;

/// Reads one order by its key.
pub(super) async fn order_by_key(
    c: &mut PgConnection,
    event_id: &EventId,
    order_id: OrderId,
    for_update: bool,
) -> Result<Order, Fail> {
    let q = if for_update {
        concat!("SELECT ", order_cols!(), " FROM orders WHERE event_id = $1 AND order_id = $2 FOR UPDATE")
    } else {
        concat!("SELECT ", order_cols!(), " FROM orders WHERE event_id = $1 AND order_id = $2")
    };
    let row = sqlx::query(q).bind(event_id).bind(order_id).fetch_optional(&mut *c).await?;
    match row {
        Some(r) => rows::order(&r),
        None => Err(Fail::Broken(format!("order {order_id} of event {event_id} is missing"))),
    }
}

/// Locks a payment operation and its order (in that order).
async fn lock_op_and_order(c: &mut PgConnection, payment_op_id: PaymentOpId) -> Result<(PaymentOp, Order), Fail> {
    let row = sqlx::query(concat!("SELECT ", op_cols!(), " FROM payment_ops WHERE payment_op_id = $1 FOR UPDATE"))
        .bind(payment_op_id)
        .fetch_optional(&mut *c)
        .await?
        .ok_or(StoreError::UnknownPaymentOp(payment_op_id))?;
    let op = rows::payment_op(&row)?;
    let order = order_by_key(c, &op.event_id, op.order_id, true).await?;
    Ok((op, order))
}

/// Moves order `before` (locked) by `cause` at `now_ms`: the order machine
/// decides the after-image, one write guarded by the previous status records
/// its status, reason and update time, and the row it returns must be that
/// after-image. Refusals map onto the store's errors.
pub(super) async fn move_order(
    c: &mut PgConnection,
    before: &Order,
    cause: &OrderCause<'_>,
    now_ms: i64,
    rules: &Rules,
) -> Result<Order, Fail> {
    let after = order_machine::next(before, cause, now_ms, rules).map_err(|r| order_refused(before.order_id, r))?;
    let row = sqlx::query(concat!(
        "UPDATE orders SET status = $3, resolution_reason = $4, updated_at_ms = $5 \
         WHERE event_id = $1 AND order_id = $2 AND status = $6 RETURNING ",
        order_cols!()
    ))
    .bind(&after.event_id)
    .bind(after.order_id)
    .bind(after.status.as_str())
    .bind(&after.resolution_reason)
    .bind(after.updated_at_ms)
    .bind(before.status.as_str())
    .fetch_optional(&mut *c)
    .await?
    .ok_or_else(|| Fail::Broken(format!("order {} changed under its lock", after.order_id)))?;
    ensure_written("order", vec![after.clone()], vec![rows::order(&row)?], |o| o.order_id)?;
    Ok(after)
}

/// Returns the seats still reserved by `order` to `available` (seats locked
/// sorted first): the seat machine's `Free` of each locked seat it accepts.
async fn free_order_seats(c: &mut PgConnection, order: &Order, now_ms: i64, rules: &Rules) -> Result<(), Fail> {
    let locked = lock_seats(c, &order.event_id, &order.seat_ids).await?;
    let cause = SeatCause::Free { order_id: order.order_id };
    let expected: Vec<_> = locked.iter().filter_map(|s| seat_machine::next(s, &cause, now_ms, rules).ok()).collect();
    let rows = sqlx::query(concat!(
        "UPDATE seats SET state = 'available', hold_token = NULL, holder_id = NULL, \
                hold_expires_at_ms = NULL, order_id = NULL, booking_id = NULL, version = version + 1 \
         WHERE event_id = $1 AND seat_id = ANY($2) AND state = 'payment_pending' AND order_id = $3 RETURNING ",
        seat_cols!()
    ))
    .bind(&order.event_id)
    .bind(&order.seat_ids)
    .bind(order.order_id)
    .fetch_all(&mut *c)
    .await?;
    ensure_written("freed seat", expected, rows::all(&rows, rows::seat)?, |s| s.seat_id.clone())
}

/// Records `cause` on payment operation `op` (locked): `Ok(None)` when the
/// machine says nothing changes; else one write guarded by the open status,
/// whose returned row must be the machine's after-image.
async fn move_op(
    c: &mut PgConnection,
    op: &PaymentOp,
    cause: &PaymentCause<'_>,
    now_ms: i64,
) -> Result<Option<PaymentOp>, Fail> {
    let Some(after) = payment_machine::next(op, cause, now_ms).map_err(payment_refused)? else {
        return Ok(None);
    };
    let row = sqlx::query(concat!(
        "UPDATE payment_ops SET status = $3, provider_payment_id = $4, last_error = $5, updated_at_ms = $6 \
         WHERE event_id = $1 AND payment_op_id = $2 AND status IN ('pending', 'unknown') RETURNING ",
        op_cols!()
    ))
    .bind(&after.event_id)
    .bind(after.payment_op_id)
    .bind(after.status.as_str())
    .bind(&after.provider_payment_id)
    .bind(&after.last_error)
    .bind(after.updated_at_ms)
    .fetch_optional(&mut *c)
    .await?
    .ok_or_else(|| Fail::Broken("payment op changed under its lock".into()))?;
    ensure_written("payment op", vec![after.clone()], vec![rows::payment_op(&row)?], |p| p.payment_op_id)?;
    Ok(Some(after))
}

/// Inserts a pending dispatch event.
async fn insert_outbox(
    c: &mut PgConnection,
    event_id: &EventId,
    outbox_id: OutboxId,
    kind: OutboxKind,
    ref_id: impl Into<Uuid>,
    now_ms: i64,
) -> Result<(), Fail> {
    sqlx::query(
        "INSERT INTO outbox (event_id, outbox_id, kind, ref_id, status, attempts, available_at_ms, last_error, created_at_ms) \
         VALUES ($1, $2, $3, $4, 'pending', 0, $5, NULL, $5)",
    )
    .bind(event_id)
    .bind(outbox_id)
    .bind(kind.as_str())
    .bind(ref_id.into())
    .bind(now_ms)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Body of [`Store::begin_payment`](crate::store::Store::begin_payment).
///
/// The idempotency key is inserted first (`ON CONFLICT DO NOTHING`): a
/// concurrent retry with the same key waits on the unique key, then finds the
/// committed order. A refused checkout rolls the key back with everything else.
pub(super) async fn begin_payment(
    c: &mut PgConnection,
    now_ms: i64,
    ids: &TxIds,
    req: &BeginPayment,
    sorted: &[SeatId],
    rules: &Rules,
) -> Result<BeginPaymentOutcome, Fail> {
    let price_cents = require_event(c, &req.event_id).await?;
    if rules.idempotency_first()
        && let Some(replayed) = claim_key(c, now_ms, req, sorted).await?
    {
        return Ok(replayed);
    }
    let locked = lock_seats(c, &req.event_id, sorted).await?;
    check_checkout(&req.event_id, sorted, &locked, req.hold_token, &req.holder_id, now_ms, rules)?;
    if !rules.idempotency_first()
        && let Some(replayed) = claim_key(c, now_ms, req, sorted).await?
    {
        return Ok(replayed); // only reached when a bug checks the hold first
    }
    if rules.checkout_whole_hold() {
        check_whole_hold(sorted, &held_with_token(c, req).await?)?;
    }
    let order_id = OrderId::from(ids.next_uuid());
    let payment_op_id = PaymentOpId::from(ids.next_uuid());
    let outbox_id = OutboxId::from(ids.next_uuid());
    let amount_cents = price_cents * sorted.len() as i64;
    check_out_seats(c, now_ms, req, sorted, &locked, order_id, rules).await?;
    let order = order_machine::open(req, sorted, order_id, payment_op_id, amount_cents, now_ms);
    insert_order(c, &order).await?;
    insert_payment_op(c, &payment_machine::open(&order, now_ms)).await?;
    insert_outbox(c, &req.event_id, outbox_id, OutboxKind::Charge, payment_op_id, now_ms).await?;
    let n = sqlx::query(
        "UPDATE idempotency_keys SET order_id = $4 \
         WHERE event_id = $1 AND holder_id = $2 AND idempotency_key = $3 AND order_id IS NULL",
    )
    .bind(&req.event_id)
    .bind(&req.holder_id)
    .bind(&req.idempotency_key)
    .bind(order_id)
    .execute(&mut *c)
    .await?
    .rows_affected();
    ensure(n == 1, || "idempotency key changed under its lock".into())?;
    Ok(BeginPaymentOutcome { order, replayed: false })
}

/// The seats of the event held under the request's token, in seat order.
async fn held_with_token(c: &mut PgConnection, req: &BeginPayment) -> Result<Vec<SeatId>, Fail> {
    let rows = sqlx::query(
        "SELECT seat_id FROM seats WHERE event_id = $1 AND hold_token = $2 AND state = 'held' ORDER BY seat_id",
    )
    .bind(&req.event_id)
    .bind(req.hold_token)
    .fetch_all(&mut *c)
    .await?;
    Ok(rows.iter().map(|r| r.try_get("seat_id")).collect::<Result<_, _>>()?)
}

/// The locked seats from held to payment-pending for `order_id`, each row
/// as the seat machine decides.
async fn check_out_seats(
    c: &mut PgConnection,
    now_ms: i64,
    req: &BeginPayment,
    sorted: &[SeatId],
    locked: &[Seat],
    order_id: OrderId,
    rules: &Rules,
) -> Result<(), Fail> {
    let cause = SeatCause::Checkout { token: req.hold_token, holder: &req.holder_id, order_id };
    let expected = locked
        .iter()
        .map(|s| seat_machine::next(s, &cause, now_ms, rules))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|r| Fail::Broken(format!("check_checkout passed a seat its machine refuses: {r}")))?;
    // Built from constant fragments only: nothing user-supplied reaches the text.
    let rows = sqlx::query(sqlx::AssertSqlSafe(checkout_sql(rules)))
        .bind(&req.event_id)
        .bind(sorted)
        .bind(order_id)
        .bind(req.hold_token)
        .bind(&req.holder_id)
        .bind(now_ms)
        .fetch_all(&mut *c)
        .await?;
    ensure(rows.len() == sorted.len(), || format!("checkout moved {} of {} locked seats", rows.len(), sorted.len()))?;
    ensure_written("checked-out seat", expected, rows::all(&rows, rows::seat)?, |s| s.seat_id.clone())
}

async fn insert_order(c: &mut PgConnection, order: &Order) -> Result<(), Fail> {
    sqlx::query(
        "INSERT INTO orders (event_id, order_id, holder_id, hold_token, seat_ids, amount_cents, status, payment_op_id, \
                             payment_deadline_at_ms, idempotency_key, resolution_reason, created_at_ms, updated_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(&order.event_id)
    .bind(order.order_id)
    .bind(&order.holder_id)
    .bind(order.hold_token)
    .bind(&order.seat_ids)
    .bind(order.amount_cents)
    .bind(order.status.as_str())
    .bind(order.payment_op_id)
    .bind(order.payment_deadline_at_ms)
    .bind(&order.idempotency_key)
    .bind(&order.resolution_reason)
    .bind(order.created_at_ms)
    .bind(order.updated_at_ms)
    .execute(&mut *c)
    .await?;
    Ok(())
}

async fn insert_payment_op(c: &mut PgConnection, op: &PaymentOp) -> Result<(), Fail> {
    sqlx::query(
        "INSERT INTO payment_ops (event_id, payment_op_id, order_id, amount_cents, status, provider_payment_id, last_error, \
                                  updated_at_ms, next_check_at_ms, checks) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&op.event_id)
    .bind(op.payment_op_id)
    .bind(op.order_id)
    .bind(op.amount_cents)
    .bind(op.status.as_str())
    .bind(&op.provider_payment_id)
    .bind(&op.last_error)
    .bind(op.updated_at_ms)
    .bind(op.next_check_at_ms)
    .bind(op.checks)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// The checkout's conditional write: `held → payment_pending` where the
/// token, the holder and an unexpired deadline all match (`$1` event, `$2`
/// seats, `$3` order, `$4` token, `$5` holder, `$6` store now). Under
/// `rules` with a planted bug the broken comparison is left out.
fn checkout_sql(rules: &Rules) -> String {
    let mut sql = String::from("UPDATE seats SET state = 'payment_pending', order_id = $3, version = version + 1");
    let returning = concat!(" RETURNING ", seat_cols!());
    // The unconditional write names the presented hold as the seat's; a seat
    // without a deadline (available, sold) gets the checkout's time as its
    // deadline and loses its booking, as in MemStore: the columns the schema
    // requires of a `payment_pending` seat.
    sql.push_str(rule_text!(
        rules.checkout_state(),
        "",
        ", hold_token = $4, holder_id = $5, hold_expires_at_ms = COALESCE(hold_expires_at_ms, $6), booking_id = NULL"
    ));
    sql.push_str(" WHERE event_id = $1 AND seat_id = ANY($2)");
    sql.push_str(rule_text!(rules.checkout_state(), " AND state = 'held'", ""));
    // A comparison left out still names its parameter, so every statement binds the same six.
    sql.push_str(rule_text!(rules.checkout_token(), " AND hold_token = $4", " AND $4::uuid IS NOT NULL"));
    sql.push_str(rule_text!(rules.checkout_holder(), " AND holder_id = $5", " AND $5::text IS NOT NULL"));
    sql.push_str(rule_text!(rules.checkout_deadline(), " AND hold_expires_at_ms > $6", " AND $6::bigint IS NOT NULL"));
    sql.push_str(returning);
    sql
}

/// Inserts the checkout's idempotency key (`ON CONFLICT DO NOTHING`); when
/// the key was committed before, returns its order (a replay), or
/// `IdempotencyKeyReused` when it was committed for another hold or seats.
async fn claim_key(
    c: &mut PgConnection,
    now_ms: i64,
    req: &BeginPayment,
    sorted: &[SeatId],
) -> Result<Option<BeginPaymentOutcome>, Fail> {
    let fresh = sqlx::query(
        "INSERT INTO idempotency_keys (event_id, holder_id, idempotency_key, hold_token, seat_ids, order_id, created_at_ms) \
         VALUES ($1, $2, $3, $4, $5, NULL, $6) ON CONFLICT DO NOTHING RETURNING order_id",
    )
    .bind(&req.event_id)
    .bind(&req.holder_id)
    .bind(&req.idempotency_key)
    .bind(req.hold_token)
    .bind(sorted)
    .bind(now_ms)
    .fetch_optional(&mut *c)
    .await?;
    if fresh.is_none() {
        let rec = sqlx::query(
            "SELECT hold_token, seat_ids, order_id FROM idempotency_keys \
             WHERE event_id = $1 AND holder_id = $2 AND idempotency_key = $3",
        )
        .bind(&req.event_id)
        .bind(&req.holder_id)
        .bind(&req.idempotency_key)
        .fetch_one(&mut *c)
        .await?;
        let token: HoldToken = rec.try_get("hold_token")?;
        let seat_ids: Vec<SeatId> = rec.try_get("seat_ids")?;
        if token != req.hold_token || seat_ids != sorted {
            return Err(StoreError::IdempotencyKeyReused.into());
        }
        let order_id: Option<OrderId> = rec.try_get("order_id")?;
        let order_id = order_id.ok_or_else(|| Fail::Broken("committed idempotency key without an order".into()))?;
        let order = order_by_key(c, &req.event_id, order_id, false).await?;
        return Ok(Some(BeginPaymentOutcome { order, replayed: true }));
    }
    Ok(None)
}

/// The confirmed bookings of an order, sorted by (seat, booking id) (index `bookings_by_order`).
pub(super) async fn bookings_of_order(c: &mut PgConnection, order: &Order) -> Result<Vec<Booking>, Fail> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        booking_cols!(),
        " FROM bookings WHERE event_id = $1 AND order_id = $2 AND status = 'confirmed' ORDER BY seat_id, booking_id"
    ))
    .bind(&order.event_id)
    .bind(order.order_id)
    .fetch_all(&mut *c)
    .await?;
    rows::all(&rows, rows::booking)
}

/// The compensations of an order, by id.
pub(super) async fn compensations_of_order(c: &mut PgConnection, order_id: OrderId) -> Result<Vec<Compensation>, Fail> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        comp_cols!(),
        " FROM compensations WHERE order_id = $1 ORDER BY event_id, compensation_id"
    ))
    .bind(order_id)
    .fetch_all(&mut *c)
    .await?;
    rows::all(&rows, rows::compensation)
}

/// Body of [`Store::record_payment_success`](crate::store::Store::record_payment_success).
pub(super) async fn record_payment_success(
    c: &mut PgConnection,
    now_ms: i64,
    ids: &TxIds,
    req: &PaymentSuccess,
    rules: &Rules,
) -> Result<Recorded<SaleOutcome>, Fail> {
    let (op, before) = lock_op_and_order(c, req.payment_op_id).await?;
    let cause = PaymentCause::Succeeded { provider_payment_id: &req.provider_payment_id };
    let decided = payment_machine::next(&op, &cause, now_ms).map_err(payment_refused)?.is_some();
    // A planted bug takes a repeated success of a confirmed order for a late one.
    let repeat_refund = !decided && !rules.repeat_success_idempotent() && before.status == OrderStatus::Confirmed;
    if !decided && !repeat_refund {
        return Ok(Recorded { outcome: recorded_sale(c, before).await?, decided_now: false });
    }
    if decided {
        move_op(c, &op, &cause, now_ms).await?;
    }
    let outcome = if before.status.owns_seats() {
        sell_order(c, now_ms, ids, &op, &before, rules).await?
    } else {
        refund_late_charge(c, now_ms, ids, &op, &before, rules).await?
    };
    Ok(Recorded { outcome, decided_now: true })
}

/// What an earlier success recorded for `order`: its bookings, or the
/// compensation of a charge that came too late.
async fn recorded_sale(c: &mut PgConnection, order: Order) -> Result<SaleOutcome, Fail> {
    if order.status == OrderStatus::Confirmed {
        let bookings = bookings_of_order(c, &order).await?;
        return Ok(SaleOutcome::Confirmed { order, bookings });
    }
    let compensation = compensations_of_order(c, order.order_id)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| Fail::Broken("charged order without a ticket has no compensation".into()))?;
    Ok(SaleOutcome::Compensating { order, compensation })
}

/// A success for an order that still owns its seats: every seat sold, a
/// booking per seat, the order confirmed.
async fn sell_order(
    c: &mut PgConnection,
    now_ms: i64,
    ids: &TxIds,
    op: &PaymentOp,
    before: &Order,
    rules: &Rules,
) -> Result<SaleOutcome, Fail> {
    let booking_ids: Vec<BookingId> = before.seat_ids.iter().map(|_| BookingId::from(ids.next_uuid())).collect();
    sell_seats(c, now_ms, before, &booking_ids, rules).await?;
    sqlx::query(
        "INSERT INTO bookings (event_id, seat_id, booking_id, order_id, payment_op_id, holder_id, status, created_at_ms) \
         SELECT $1, v.seat_id, v.booking_id, $4, $5, $6, 'confirmed', $7 \
         FROM UNNEST($2::text[], $3::uuid[]) AS v(seat_id, booking_id)",
    )
    .bind(&before.event_id)
    .bind(&before.seat_ids)
    .bind(&booking_ids)
    .bind(before.order_id)
    .bind(op.payment_op_id)
    .bind(&before.holder_id)
    .bind(now_ms)
    .execute(&mut *c)
    .await?;
    let order = move_order(c, before, &OrderCause::Sell, now_ms, rules).await?;
    let bookings = order
        .seat_ids
        .iter()
        .zip(&booking_ids)
        .map(|(seat_id, &booking_id)| Booking {
            event_id: order.event_id.clone(),
            seat_id: seat_id.clone(),
            booking_id,
            order_id: order.order_id,
            payment_op_id: op.payment_op_id,
            holder_id: order.holder_id.clone(),
            created_at_ms: now_ms,
        })
        .collect();
    Ok(SaleOutcome::Confirmed { order, bookings })
}

/// Every seat of `order` from payment-pending to sold under `booking_ids`,
/// each row as the seat machine decides.
async fn sell_seats(
    c: &mut PgConnection,
    now_ms: i64,
    order: &Order,
    booking_ids: &[BookingId],
    rules: &Rules,
) -> Result<(), Fail> {
    let locked = lock_seats(c, &order.event_id, &order.seat_ids).await?;
    let expected = locked
        .iter()
        .zip(booking_ids)
        .filter_map(|(s, &booking_id)| {
            seat_machine::next(s, &SeatCause::Sell { order_id: order.order_id, booking_id }, now_ms, rules).ok()
        })
        .collect();
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE seats s SET state = 'sold', booking_id = v.booking_id, hold_expires_at_ms = NULL, version = s.version + 1 \
         FROM UNNEST($2::text[], $3::uuid[]) AS v(seat_id, booking_id) \
         WHERE s.event_id = $1 AND s.seat_id = v.seat_id AND s.state = 'payment_pending' AND s.order_id = $4 \
         RETURNING {}",
        seat_cols!().split(", ").map(|col| format!("s.{col}")).collect::<Vec<_>>().join(", ")
    )))
    .bind(&order.event_id)
    .bind(&order.seat_ids)
    .bind(booking_ids)
    .bind(order.order_id)
    .fetch_all(&mut *c)
    .await?;
    ensure(rows.len() == order.seat_ids.len(), || {
        format!("an open order owns its seats: sold {} of {}", rows.len(), order.seat_ids.len())
    })?;
    ensure_written("sold seat", expected, rows::all(&rows, rows::seat)?, |s| s.seat_id.clone())
}

/// A success for an order that no longer owns its seats: a refund to start
/// (a compensation and its outbox row), the order marked late-charged.
async fn refund_late_charge(
    c: &mut PgConnection,
    now_ms: i64,
    ids: &TxIds,
    op: &PaymentOp,
    before: &Order,
    rules: &Rules,
) -> Result<SaleOutcome, Fail> {
    let compensation_id = CompensationId::from(ids.next_uuid());
    let outbox_id = OutboxId::from(ids.next_uuid());
    let compensation = Compensation::requested_refund(
        &before.event_id,
        compensation_id,
        before.order_id,
        op.payment_op_id,
        op.amount_cents,
        now_ms,
    );
    sqlx::query(
        "INSERT INTO compensations (event_id, compensation_id, order_id, payment_op_id, kind, amount_cents, status, \
                                    attempts, last_error, next_attempt_at_ms, created_at_ms, updated_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 0, NULL, $8, $8, $8)",
    )
    .bind(&compensation.event_id)
    .bind(compensation_id)
    .bind(compensation.order_id)
    .bind(compensation.payment_op_id)
    .bind(compensation.kind.as_str())
    .bind(compensation.amount_cents)
    .bind(compensation.status.as_str())
    .bind(now_ms)
    .execute(&mut *c)
    .await?;
    insert_outbox(c, &before.event_id, outbox_id, OutboxKind::Compensate, compensation_id, now_ms).await?;
    let order = move_order(c, before, &OrderCause::LateCharge, now_ms, rules).await?;
    Ok(SaleOutcome::Compensating { order, compensation })
}

/// Body of [`Store::record_payment_failure`](crate::store::Store::record_payment_failure); `reason` is bounded.
pub(super) async fn record_payment_failure(
    c: &mut PgConnection,
    now_ms: i64,
    payment_op_id: PaymentOpId,
    reason: &str,
    rules: &Rules,
) -> Result<Recorded<Order>, Fail> {
    let (op, before) = lock_op_and_order(c, payment_op_id).await?;
    // The guarded update (status still pending/unknown) is the decision's write.
    if move_op(c, &op, &PaymentCause::Failed { reason }, now_ms).await?.is_none() {
        return Ok(Recorded { outcome: before, decided_now: false });
    }
    if !before.status.owns_seats() {
        return Ok(Recorded { outcome: before, decided_now: true });
    }
    let order = move_order(c, &before, &OrderCause::Decline { reason }, now_ms, rules).await?;
    free_order_seats(c, &before, now_ms, rules).await?;
    Ok(Recorded { outcome: order, decided_now: true })
}

/// Body of [`Store::record_payment_unknown`](crate::store::Store::record_payment_unknown); `error` is bounded.
pub(super) async fn record_payment_unknown(
    c: &mut PgConnection,
    now_ms: i64,
    payment_op_id: PaymentOpId,
    error: &str,
    rules: &Rules,
) -> Result<Order, Fail> {
    let (op, before) = lock_op_and_order(c, payment_op_id).await?;
    if move_op(c, &op, &PaymentCause::Unknown { error }, now_ms).await?.is_none() {
        return Ok(before);
    }
    let cause = OrderCause::Unknown { error };
    if order_machine::next(&before, &cause, now_ms, rules).is_err() {
        return Ok(before); // nothing to change on this order
    }
    let order = move_order(c, &before, &cause, now_ms, rules).await?;
    if !order.status.owns_seats() {
        // The planted bug: an unknown outcome taken for a failure.
        free_order_seats(c, &before, now_ms, rules).await?;
    }
    Ok(order)
}

/// Body of [`Store::release_unresolved_payment`](crate::store::Store::release_unresolved_payment); `reason` is bounded.
pub(super) async fn release_unresolved_payment(
    c: &mut PgConnection,
    now_ms: i64,
    payment_op_id: PaymentOpId,
    reason: &str,
    rules: &Rules,
) -> Result<Order, Fail> {
    let (_op, before) = lock_op_and_order(c, payment_op_id).await?;
    let order = move_order(c, &before, &OrderCause::ReleaseUnresolved { reason }, now_ms, rules).await?;
    free_order_seats(c, &before, now_ms, rules).await?;
    Ok(order)
}
