//! Row mapping: the column lists every query selects, and the functions that
//! turn a selected row into a model record. State columns hold the stable
//! names of the model's enums (`as_str`/`parse`).

use super::tx::Fail;
use crate::model::{
    Compensation, CompensationKind, CompensationStatus, Order, OrderStatus, OutboxEvent, OutboxKind, OutboxStatus,
    PaymentOp, PaymentStatus, Seat, SeatState,
};
use sqlx::Row;
use sqlx::postgres::PgRow;

/// The columns of a [`Seat`], in the order [`seat`] reads them.
macro_rules! seat_cols {
    () => {
        "event_id, seat_id, state, version, hold_token, holder_id, hold_expires_at_ms, order_id, booking_id"
    };
}
/// The columns of an [`Order`].
macro_rules! order_cols {
    () => {
        "event_id, order_id, holder_id, hold_token, seat_ids, amount_cents, status, payment_op_id, \
         payment_deadline_at_ms, idempotency_key, resolution_reason, created_at_ms, updated_at_ms"
    };
}
/// The columns of a [`PaymentOp`].
macro_rules! op_cols {
    () => {
        "event_id, payment_op_id, order_id, amount_cents, status, provider_payment_id, last_error, updated_at_ms, \
         next_check_at_ms, checks"
    };
}
/// The columns of a [`Booking`](crate::model::Booking).
macro_rules! booking_cols {
    () => {
        "event_id, seat_id, booking_id, order_id, payment_op_id, holder_id, created_at_ms"
    };
}
/// The columns of a [`Compensation`].
macro_rules! comp_cols {
    () => {
        "event_id, compensation_id, order_id, payment_op_id, kind, amount_cents, status, attempts, \
         last_error, next_attempt_at_ms, created_at_ms, updated_at_ms"
    };
}
/// The columns of an [`OutboxEvent`].
macro_rules! outbox_cols {
    () => {
        "event_id, outbox_id, kind, ref_id, status, attempts, available_at_ms, last_error, created_at_ms"
    };
}
pub(super) use {booking_cols, comp_cols, op_cols, order_cols, outbox_cols, seat_cols};

/// Reads a state column through the enum's `parse`; an unknown name is a bug
/// (the CHECK constraints admit only the enum's names).
fn state<T>(row: &PgRow, col: &str, parse: fn(&str) -> Option<T>) -> Result<T, Fail> {
    let s: String = row.try_get(col)?;
    parse(&s).ok_or_else(|| Fail::Broken(format!("column {col} holds unknown state {s:?}")))
}

/// A [`Seat`] from a row of [`seat_cols`].
pub(super) fn seat(r: &PgRow) -> Result<Seat, Fail> {
    Ok(Seat {
        event_id: r.try_get("event_id")?,
        seat_id: r.try_get("seat_id")?,
        state: state(r, "state", SeatState::parse)?,
        version: r.try_get("version")?,
        hold_token: r.try_get("hold_token")?,
        holder_id: r.try_get("holder_id")?,
        hold_expires_at_ms: r.try_get("hold_expires_at_ms")?,
        order_id: r.try_get("order_id")?,
        booking_id: r.try_get("booking_id")?,
    })
}

/// An [`Order`] from a row of [`order_cols`].
pub(super) fn order(r: &PgRow) -> Result<Order, Fail> {
    Ok(Order {
        event_id: r.try_get("event_id")?,
        order_id: r.try_get("order_id")?,
        holder_id: r.try_get("holder_id")?,
        hold_token: r.try_get("hold_token")?,
        seat_ids: r.try_get("seat_ids")?,
        amount_cents: r.try_get("amount_cents")?,
        status: state(r, "status", OrderStatus::parse)?,
        payment_op_id: r.try_get("payment_op_id")?,
        payment_deadline_at_ms: r.try_get("payment_deadline_at_ms")?,
        idempotency_key: r.try_get("idempotency_key")?,
        resolution_reason: r.try_get("resolution_reason")?,
        created_at_ms: r.try_get("created_at_ms")?,
        updated_at_ms: r.try_get("updated_at_ms")?,
    })
}

/// A [`PaymentOp`] from a row of [`op_cols`].
pub(super) fn payment_op(r: &PgRow) -> Result<PaymentOp, Fail> {
    Ok(PaymentOp {
        event_id: r.try_get("event_id")?,
        payment_op_id: r.try_get("payment_op_id")?,
        order_id: r.try_get("order_id")?,
        amount_cents: r.try_get("amount_cents")?,
        status: state(r, "status", PaymentStatus::parse)?,
        provider_payment_id: r.try_get("provider_payment_id")?,
        last_error: r.try_get("last_error")?,
        updated_at_ms: r.try_get("updated_at_ms")?,
        next_check_at_ms: r.try_get("next_check_at_ms")?,
        checks: r.try_get("checks")?,
    })
}

/// A [`Booking`](crate::model::Booking) from a row of [`booking_cols`].
pub(super) fn booking(r: &PgRow) -> Result<crate::model::Booking, Fail> {
    Ok(crate::model::Booking {
        event_id: r.try_get("event_id")?,
        seat_id: r.try_get("seat_id")?,
        booking_id: r.try_get("booking_id")?,
        order_id: r.try_get("order_id")?,
        payment_op_id: r.try_get("payment_op_id")?,
        holder_id: r.try_get("holder_id")?,
        created_at_ms: r.try_get("created_at_ms")?,
    })
}

/// A [`Compensation`] from a row of [`comp_cols`].
pub(super) fn compensation(r: &PgRow) -> Result<Compensation, Fail> {
    Ok(Compensation {
        event_id: r.try_get("event_id")?,
        compensation_id: r.try_get("compensation_id")?,
        order_id: r.try_get("order_id")?,
        payment_op_id: r.try_get("payment_op_id")?,
        kind: state(r, "kind", CompensationKind::parse)?,
        amount_cents: r.try_get("amount_cents")?,
        status: state(r, "status", CompensationStatus::parse)?,
        attempts: r.try_get("attempts")?,
        last_error: r.try_get("last_error")?,
        next_attempt_at_ms: r.try_get("next_attempt_at_ms")?,
        created_at_ms: r.try_get("created_at_ms")?,
        updated_at_ms: r.try_get("updated_at_ms")?,
    })
}

/// An [`OutboxEvent`] from a row of [`outbox_cols`].
pub(super) fn outbox(r: &PgRow) -> Result<OutboxEvent, Fail> {
    Ok(OutboxEvent {
        event_id: r.try_get("event_id")?,
        outbox_id: r.try_get("outbox_id")?,
        kind: state(r, "kind", OutboxKind::parse)?,
        ref_id: r.try_get("ref_id")?,
        status: state(r, "status", OutboxStatus::parse)?,
        attempts: r.try_get("attempts")?,
        available_at_ms: r.try_get("available_at_ms")?,
        last_error: r.try_get("last_error")?,
        created_at_ms: r.try_get("created_at_ms")?,
    })
}

/// Maps every row with `f`.
pub(super) fn all<T>(rows: &[PgRow], f: fn(&PgRow) -> Result<T, Fail>) -> Result<Vec<T>, Fail> {
    rows.iter().map(f).collect()
}
