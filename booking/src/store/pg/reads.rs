//! The reads: seat map and its version, one order or payment operation,
//! bookings, the operators' list, and the canonical snapshot. Every ORDER BY
//! is MemStore's BTreeMap order (text is `COLLATE "C"`, UUIDs compare bytewise
//! in both).

use super::rows::{self, booking_cols, comp_cols, op_cols, order_cols, outbox_cols, seat_cols};
use super::tx::{Fail, ensure};
use crate::model::{
    Booking, Compensation, CompensationId, EventId, Order, OrderId, PaymentOp, PaymentOpId, Seat, SeatState, Snapshot,
};
use crate::store::{Resolution, SeatMapVersion, StoreError};
use sqlx::PgConnection;
use sqlx::Row;

/// The seats of an event, sorted (the event may not exist: empty).
pub(super) async fn seats_of_event(c: &mut PgConnection, event_id: &EventId) -> Result<Vec<Seat>, Fail> {
    let rows = sqlx::query(concat!("SELECT ", seat_cols!(), " FROM seats WHERE event_id = $1 ORDER BY seat_id"))
        .bind(event_id)
        .fetch_all(&mut *c)
        .await?;
    rows::all(&rows, rows::seat)
}

/// An event's seats in `state`, sorted by seat id: the primary key's range
/// for the event, filtered (an event has at most `MAX_SEATS_PER_EVENT` seats).
pub(super) async fn seats_of_event_in_state(
    c: &mut PgConnection,
    event_id: &EventId,
    state: SeatState,
) -> Result<Vec<Seat>, Fail> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        seat_cols!(),
        " FROM seats WHERE event_id = $1 AND state = $2 ORDER BY seat_id"
    ))
    .bind(event_id)
    .bind(state.as_str())
    .fetch_all(&mut *c)
    .await?;
    rows::all(&rows, rows::seat)
}

/// The version of an event's seat map, in one aggregate statement (one row
/// back, whatever the seat count): `UnknownEvent` when the event does not
/// exist. One statement is its own snapshot, so count and sum agree.
pub(super) async fn seat_map_version(c: &mut PgConnection, event_id: &EventId) -> Result<SeatMapVersion, Fail> {
    let row = sqlx::query(
        "SELECT count(s.seat_id) AS seats, COALESCE(sum(s.version), 0)::BIGINT AS version_sum \
         FROM events e LEFT JOIN seats s ON s.event_id = e.event_id \
         WHERE e.event_id = $1 GROUP BY e.event_id",
    )
    .bind(event_id)
    .fetch_optional(&mut *c)
    .await?
    .ok_or_else(|| StoreError::UnknownEvent(event_id.into()))?;
    let v = SeatMapVersion { seats: row.try_get("seats")?, version_sum: row.try_get("version_sum")? };
    ensure(v.seats >= 1 && v.version_sum >= 0, || format!("seat map version {v:?} of event {event_id}"))?;
    Ok(v)
}

/// One order by id.
pub(super) async fn order(c: &mut PgConnection, order_id: OrderId) -> Result<Order, Fail> {
    let row = sqlx::query(concat!("SELECT ", order_cols!(), " FROM orders WHERE order_id = $1"))
        .bind(order_id)
        .fetch_optional(&mut *c)
        .await?
        .ok_or(StoreError::UnknownOrder(order_id))?;
    rows::order(&row)
}

/// One payment operation by id.
pub(super) async fn payment_op(c: &mut PgConnection, payment_op_id: PaymentOpId) -> Result<PaymentOp, Fail> {
    let row = sqlx::query(concat!("SELECT ", op_cols!(), " FROM payment_ops WHERE payment_op_id = $1"))
        .bind(payment_op_id)
        .fetch_optional(&mut *c)
        .await?
        .ok_or(StoreError::UnknownPaymentOp(payment_op_id))?;
    rows::payment_op(&row)
}

/// The confirmed bookings of an event, by (seat, booking id).
pub(super) async fn bookings(c: &mut PgConnection, event_id: &EventId) -> Result<Vec<Booking>, Fail> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        booking_cols!(),
        " FROM bookings WHERE event_id = $1 AND status = 'confirmed' ORDER BY seat_id, booking_id"
    ))
    .bind(event_id)
    .fetch_all(&mut *c)
    .await?;
    rows::all(&rows, rows::booking)
}

/// What operators must see. `released` orders count while their payment
/// operation is still `pending`/`unknown` (possibly charged).
pub(super) async fn needs_resolution(c: &mut PgConnection) -> Result<Resolution, Fail> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        order_cols!(),
        " FROM orders o \
          WHERE o.status IN ('reconciling', 'compensating', 'compensation_failed') \
             OR (o.status = 'released' AND EXISTS ( \
                   SELECT 1 FROM payment_ops p \
                   WHERE p.event_id = o.event_id AND p.payment_op_id = o.payment_op_id \
                     AND p.status IN ('pending', 'unknown'))) \
          ORDER BY o.event_id, o.order_id"
    ))
    .fetch_all(&mut *c)
    .await?;
    let orders = rows::all(&rows, rows::order)?;
    let rows = sqlx::query(concat!(
        "SELECT ",
        comp_cols!(),
        " FROM compensations WHERE status <> 'succeeded' ORDER BY event_id, compensation_id"
    ))
    .fetch_all(&mut *c)
    .await?;
    let compensations: Vec<Compensation> = rows::all(&rows, rows::compensation)?;
    Ok(Resolution { orders, compensations })
}

/// One compensation by id.
pub(super) async fn compensation(c: &mut PgConnection, compensation_id: CompensationId) -> Result<Compensation, Fail> {
    let row = sqlx::query(concat!("SELECT ", comp_cols!(), " FROM compensations WHERE compensation_id = $1"))
        .bind(compensation_id)
        .fetch_optional(&mut *c)
        .await?
        .ok_or(StoreError::UnknownCompensation(compensation_id))?;
    rows::compensation(&row)
}

/// Everything, in canonical order.
pub(super) async fn snapshot(c: &mut PgConnection) -> Result<Snapshot, Fail> {
    macro_rules! all {
        ($cols:ident, $table:literal, $order:literal, $f:path) => {{
            let rows = sqlx::query(concat!("SELECT ", $cols!(), " FROM ", $table, " ORDER BY ", $order))
                .fetch_all(&mut *c)
                .await?;
            rows::all(&rows, $f)?
        }};
    }
    let events = {
        let rows = sqlx::query("SELECT event_id, price_cents, created_at_ms FROM events ORDER BY event_id")
            .fetch_all(&mut *c)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(crate::model::Event {
                    event_id: r.try_get("event_id")?,
                    price_cents: r.try_get("price_cents")?,
                    created_at_ms: r.try_get("created_at_ms")?,
                })
            })
            .collect::<Result<Vec<_>, Fail>>()?
    };
    Ok(Snapshot {
        events,
        seats: all!(seat_cols, "seats", "event_id, seat_id", rows::seat),
        orders: all!(order_cols, "orders", "event_id, order_id", rows::order),
        payment_ops: all!(op_cols, "payment_ops", "event_id, payment_op_id", rows::payment_op),
        bookings: {
            let rows = sqlx::query(concat!(
                "SELECT ",
                booking_cols!(),
                " FROM bookings WHERE status = 'confirmed' ORDER BY event_id, seat_id, booking_id"
            ))
            .fetch_all(&mut *c)
            .await?;
            rows::all(&rows, rows::booking)?
        },
        compensations: all!(comp_cols, "compensations", "event_id, compensation_id", rows::compensation),
        outbox: all!(outbox_cols, "outbox", "event_id, outbox_id", rows::outbox),
    })
}
