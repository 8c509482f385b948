//! The hold transitions: create an event, release and sweep holds (the hold
//! itself is one statement: [`hold_statement`](super::hold_statement)).
//! Each function is the body of one transaction (see [`in_tx`](super::tx::in_tx)).
//! Every seat write is a conditional `UPDATE … RETURNING` whose rows must
//! equal the after-images the seat machine decided from the locked rows.

use super::rows::{self, seat_cols};
use super::tx::{Fail, ensure, ensure_written};
use crate::model::{EventId, SeatId};
use crate::store::decide::releasable;
use crate::store::machine::seat::{self as seat_machine, SeatCause};
use crate::store::rules::{Rules, rule_text};
use crate::store::{CreateEvent, ExpiredHold, ReleaseHold, StoreError};
use sqlx::{PgConnection, Row};

/// `UnknownEvent` unless the event exists.
pub(super) async fn require_event(c: &mut PgConnection, event_id: &EventId) -> Result<i64, Fail> {
    let row = sqlx::query("SELECT price_cents FROM events WHERE event_id = $1")
        .bind(event_id)
        .fetch_optional(&mut *c)
        .await?;
    match row {
        Some(r) => Ok(r.try_get("price_cents")?),
        None => Err(StoreError::UnknownEvent(event_id.into()).into()),
    }
}

/// Locks the requested seats that exist, in sorted seat order, and returns them sorted.
pub(super) async fn lock_seats(
    c: &mut PgConnection,
    event_id: &EventId,
    sorted: &[SeatId],
) -> Result<Vec<crate::model::Seat>, Fail> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        seat_cols!(),
        " FROM seats WHERE event_id = $1 AND seat_id = ANY($2) ORDER BY seat_id FOR UPDATE"
    ))
    .bind(event_id)
    .bind(sorted)
    .fetch_all(&mut *c)
    .await?;
    rows::all(&rows, rows::seat)
}

/// Body of [`Store::create_event`](crate::store::Store::create_event); `sorted` is the validated seat list.
pub(super) async fn create_event(
    c: &mut PgConnection,
    now_ms: i64,
    req: &CreateEvent,
    sorted: &[SeatId],
) -> Result<(), Fail> {
    let inserted = sqlx::query(
        "INSERT INTO events (event_id, price_cents, created_at_ms) VALUES ($1, $2, $3) \
         ON CONFLICT DO NOTHING RETURNING event_id",
    )
    .bind(&req.event_id)
    .bind(req.price_cents)
    .bind(now_ms)
    .fetch_optional(&mut *c)
    .await?;
    if inserted.is_none() {
        return Err(StoreError::EventExists(req.event_id.clone()).into());
    }
    let n = sqlx::query(
        "INSERT INTO seats (event_id, seat_id, state, version) \
         SELECT $1, s, 'available', 0 FROM UNNEST($2::text[]) AS s",
    )
    .bind(&req.event_id)
    .bind(sorted)
    .execute(&mut *c)
    .await?
    .rows_affected();
    ensure(n == sorted.len() as u64, || format!("created {n} of {} seats", sorted.len()))
}

/// Body of [`Store::release_hold`](crate::store::Store::release_hold).
pub(super) async fn release_hold(c: &mut PgConnection, now_ms: i64, req: &ReleaseHold) -> Result<Vec<SeatId>, Fail> {
    require_event(c, &req.event_id).await?;
    let rows = sqlx::query(concat!(
        "SELECT ",
        seat_cols!(),
        " FROM seats WHERE event_id = $1 AND hold_token = $2 ORDER BY seat_id FOR UPDATE"
    ))
    .bind(&req.event_id)
    .bind(req.hold_token)
    .fetch_all(&mut *c)
    .await?;
    let with_token = rows::all(&rows, rows::seat)?;
    let expected = releasable(&with_token, req.hold_token, &req.holder_id, now_ms)?;
    let released: Vec<SeatId> = expected.iter().map(|s| s.seat_id.clone()).collect();
    let rows = sqlx::query(concat!(
        "UPDATE seats SET state = 'available', hold_token = NULL, holder_id = NULL, \
                hold_expires_at_ms = NULL, order_id = NULL, booking_id = NULL, version = version + 1 \
         WHERE event_id = $1 AND seat_id = ANY($2) AND state = 'held' AND hold_token = $3 AND holder_id = $4 \
         RETURNING ",
        seat_cols!()
    ))
    .bind(&req.event_id)
    .bind(&released)
    .bind(req.hold_token)
    .bind(&req.holder_id)
    .fetch_all(&mut *c)
    .await?;
    ensure_written("released seat", expected, rows::all(&rows, rows::seat)?, |s| s.seat_id.clone())?;
    Ok(released)
}

/// Body of [`Store::sweep_expired_holds`](crate::store::Store::sweep_expired_holds):
/// locks the due seats, oldest deadline first, skipping seats another
/// transaction has locked (they are being changed anyway), then returns them
/// with one conditional write whose rows must be the seat machine's
/// after-images of the locked ones.
pub(super) async fn sweep_expired_holds(
    c: &mut PgConnection,
    now_ms: i64,
    limit_seats: u32,
    rules: &Rules,
) -> Result<Vec<ExpiredHold>, Fail> {
    // Sound: held seats whose deadline has passed. A planted bug widens either.
    let states = rule_text!(rules.sweep_held_only(), "('held')", "('held', 'payment_pending')");
    // Built from constant fragments only: nothing user-supplied reaches the text.
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {} FROM seats WHERE state IN {states} AND hold_expires_at_ms <= $1 \
         ORDER BY hold_expires_at_ms, event_id, seat_id LIMIT $2 FOR UPDATE SKIP LOCKED",
        seat_cols!()
    )))
    .bind(now_ms + rules.sweep_ahead_ms())
    .bind(i64::from(limit_seats))
    .fetch_all(&mut *c)
    .await?;
    let due = rows::all(&rows, rows::seat)?;
    if due.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity(due.len());
    let mut expected = Vec::with_capacity(due.len());
    for before in &due {
        let after = seat_machine::next(before, &SeatCause::Expire, now_ms, rules).map_err(|r| {
            Fail::Broken(format!("the sweeper locked seat {} its machine refuses: {r}", before.seat_id))
        })?;
        let expired_at_ms =
            before.hold_expires_at_ms.ok_or_else(|| Fail::Broken("due seat without a deadline".into()))?;
        out.push(ExpiredHold {
            event_id: before.event_id.clone(),
            seat_id: before.seat_id.clone(),
            expired_at_ms,
            reclaimed_at_ms: now_ms,
        });
        expected.push(after);
    }
    let event_ids: Vec<&str> = due.iter().map(|s| s.event_id.as_str()).collect();
    let seat_ids: Vec<&str> = due.iter().map(|s| s.seat_id.as_str()).collect();
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE seats s SET state = 'available', hold_token = NULL, holder_id = NULL, \
                hold_expires_at_ms = NULL, order_id = NULL, booking_id = NULL, version = s.version + 1 \
         FROM UNNEST($2::text[], $3::text[]) AS d(event_id, seat_id) \
         WHERE s.event_id = d.event_id AND s.seat_id = d.seat_id \
           AND s.state IN {states} AND s.hold_expires_at_ms <= $1 \
         RETURNING {}",
        seat_cols!().split(", ").map(|col| format!("s.{col}")).collect::<Vec<_>>().join(", ")
    )))
    .bind(now_ms + rules.sweep_ahead_ms())
    .bind(&event_ids)
    .bind(&seat_ids)
    .fetch_all(&mut *c)
    .await?;
    ensure_written("swept seat", expected, rows::all(&rows, rows::seat)?, |s| (s.event_id.clone(), s.seat_id.clone()))?;
    Ok(out)
}
