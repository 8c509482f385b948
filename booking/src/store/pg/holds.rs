//! The hold transitions: create an event, acquire, release and sweep holds.
//! Each function is the body of one transaction (see [`in_tx`](super::tx::in_tx)).

use super::rows::{self, seat_cols};
use super::tx::{Fail, TxIds, ensure};
use crate::model::{SeatId, SeatState};
use crate::store::decide::{check_hold_limit, check_holdable, diagnose_release};
use crate::store::rules::Rules;
use crate::store::{
    AcquireHold, CreateEvent, ExpiredHold, HeldSeat, HoldGrant, ReclaimedHold, ReleaseHold, StoreError,
};
use sqlx::{PgConnection, Row};

/// `UnknownEvent` unless the event exists.
pub(super) async fn require_event(c: &mut PgConnection, event_id: &str) -> Result<i64, Fail> {
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
    event_id: &str,
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

/// Body of [`Store::acquire_hold`](crate::store::Store::acquire_hold).
pub(super) async fn acquire_hold(
    c: &mut PgConnection,
    now_ms: i64,
    ids: &TxIds,
    req: &AcquireHold,
    sorted: &[SeatId],
    rules: &Rules,
) -> Result<HoldGrant, Fail> {
    let locked = lock_seats(c, &req.event_id, sorted).await?;
    if locked.len() != sorted.len() {
        // A seat is missing, or the whole event: say which (one round trip saved on every grant).
        require_event(c, &req.event_id).await?;
    }
    let take = check_holdable(&req.event_id, sorted, &locked, now_ms, rules)?;
    if let Some(limit) = req.max_held_seats {
        let held = held_by(c, &req.event_id, &req.holder_id, now_ms).await?;
        check_hold_limit(&req.event_id, held, take.len(), Some(limit), rules)?;
    }
    let hold_token = ids.next_uuid();
    let expires_at_ms = now_ms + req.ttl_ms;
    // Built from constant fragments only: nothing user-supplied reaches the text.
    let rows = sqlx::query(sqlx::AssertSqlSafe(hold_sql(rules)))
        .bind(&req.event_id)
        .bind(&take)
        .bind(hold_token)
        .bind(&req.holder_id)
        .bind(expires_at_ms)
        .bind(now_ms)
        .fetch_all(&mut *c)
        .await?;
    ensure(rows.len() == take.len(), || format!("hold took {} of {} locked holdable seats", rows.len(), take.len()))?;
    let mut seats = rows
        .iter()
        .map(|r| Ok(HeldSeat { seat_id: r.try_get("seat_id")?, version: r.try_get("version")? }))
        .collect::<Result<Vec<_>, Fail>>()?;
    seats.sort_by(|a, b| a.seat_id.cmp(&b.seat_id));
    let reclaimed = locked
        .iter()
        .filter(|s| s.state == SeatState::Held && take.contains(&s.seat_id))
        .map(|s| {
            let expired_at_ms =
                s.hold_expires_at_ms.ok_or_else(|| Fail::Broken("held seat without a deadline".into()))?;
            Ok(ReclaimedHold { seat_id: s.seat_id.clone(), expired_at_ms })
        })
        .collect::<Result<Vec<_>, Fail>>()?;
    Ok(HoldGrant {
        event_id: req.event_id.clone(),
        holder_id: req.holder_id.clone(),
        hold_token,
        seats,
        expires_at_ms,
        granted_at_ms: now_ms,
        reclaimed,
    })
}

/// How many seats of `event_id` `holder_id` has at `now_ms` (held and
/// unexpired, or in payment), counted under the holder's row lock: the lock
/// is taken last, after the seats', so it closes no cycle, and it makes one
/// holder's concurrent holds of one event count one after another.
async fn held_by(c: &mut PgConnection, event_id: &str, holder_id: &str, now_ms: i64) -> Result<usize, Fail> {
    sqlx::query(
        "INSERT INTO holders (event_id, holder_id) VALUES ($1, $2) \
         ON CONFLICT (event_id, holder_id) DO UPDATE SET holder_id = EXCLUDED.holder_id",
    )
    .bind(event_id)
    .bind(holder_id)
    .execute(&mut *c)
    .await?;
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM seats WHERE event_id = $1 AND holder_id = $2 \
         AND ((state = 'held' AND hold_expires_at_ms > $3) OR state = 'payment_pending')",
    )
    .bind(event_id)
    .bind(holder_id)
    .bind(now_ms)
    .fetch_one(&mut *c)
    .await?;
    usize::try_from(n).map_err(|_| Fail::Broken(format!("negative seat count {n}")))
}

/// The hold's conditional write (`$1` event, `$2` seats, `$3` new token, `$4`
/// holder, `$5` deadline, `$6` store now): available seats, or held ones
/// past their deadline. Under `rules` with a planted bug the deadline
/// comparison is left out, or a taken-over seat keeps its token.
fn hold_sql(rules: &Rules) -> String {
    let token = if rules.hold_fresh_token { "$3" } else { "COALESCE(hold_token, $3)" };
    let held = if rules.hold_deadline { "(state = 'held' AND hold_expires_at_ms <= $6)" } else { "state = 'held'" };
    format!(
        "UPDATE seats SET state = 'held', hold_token = {token}, holder_id = $4, hold_expires_at_ms = $5, \
                order_id = NULL, booking_id = NULL, version = version + 1 \
         WHERE event_id = $1 AND seat_id = ANY($2) AND (state = 'available' OR {held}) AND $6::bigint IS NOT NULL \
         RETURNING seat_id, version"
    )
}

/// Body of [`Store::release_hold`](crate::store::Store::release_hold).
pub(super) async fn release_hold(c: &mut PgConnection, req: &ReleaseHold) -> Result<Vec<SeatId>, Fail> {
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
    let releasable: Vec<SeatId> = with_token
        .iter()
        .filter(|s| s.state == SeatState::Held && s.holder_id.as_ref() == Some(&req.holder_id))
        .map(|s| s.seat_id.clone())
        .collect();
    if releasable.is_empty() {
        return Err(diagnose_release(&with_token, &req.holder_id).into());
    }
    let n = sqlx::query(
        "UPDATE seats SET state = 'available', hold_token = NULL, holder_id = NULL, \
                hold_expires_at_ms = NULL, order_id = NULL, booking_id = NULL, version = version + 1 \
         WHERE event_id = $1 AND seat_id = ANY($2) AND state = 'held' AND hold_token = $3 AND holder_id = $4",
    )
    .bind(&req.event_id)
    .bind(&releasable)
    .bind(req.hold_token)
    .bind(&req.holder_id)
    .execute(&mut *c)
    .await?
    .rows_affected();
    ensure(n == releasable.len() as u64, || format!("released {n} of {} locked seats", releasable.len()))?;
    Ok(releasable)
}

/// Body of [`Store::sweep_expired_holds`](crate::store::Store::sweep_expired_holds):
/// skips seats another transaction has locked (they are being changed anyway).
/// The due set is a MATERIALIZED CTE: as a plain subquery in FROM the planner
/// may rescan it, and a rescan past the rows this statement already updated
/// finds more of them, breaking the LIMIT (the differential test caught it).
pub(super) async fn sweep_expired_holds(
    c: &mut PgConnection,
    now_ms: i64,
    limit_seats: u32,
    rules: &Rules,
) -> Result<Vec<ExpiredHold>, Fail> {
    // Sound: held seats whose deadline has passed. A planted bug widens either.
    let states = if rules.sweep_held_only { "('held')" } else { "('held', 'payment_pending')" };
    // Built from constant fragments only: nothing user-supplied reaches the text.
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "WITH d AS MATERIALIZED ( \
             SELECT event_id, seat_id, hold_expires_at_ms FROM seats \
             WHERE state IN {states} AND hold_expires_at_ms <= $1 \
             ORDER BY hold_expires_at_ms, event_id, seat_id LIMIT $2 \
             FOR UPDATE SKIP LOCKED) \
         UPDATE seats s SET state = 'available', hold_token = NULL, holder_id = NULL, \
                hold_expires_at_ms = NULL, order_id = NULL, booking_id = NULL, version = s.version + 1 \
         FROM d \
         WHERE s.event_id = d.event_id AND s.seat_id = d.seat_id \
           AND s.state IN {states} AND s.hold_expires_at_ms <= $1 \
         RETURNING s.event_id, s.seat_id, d.hold_expires_at_ms AS expired_at_ms"
    )))
    .bind(now_ms + rules.sweep_ahead_ms)
    .bind(i64::from(limit_seats))
    .fetch_all(&mut *c)
    .await?;
    let mut out = rows
        .iter()
        .map(|r| {
            Ok(ExpiredHold {
                event_id: r.try_get("event_id")?,
                seat_id: r.try_get("seat_id")?,
                expired_at_ms: r.try_get("expired_at_ms")?,
                reclaimed_at_ms: now_ms,
            })
        })
        .collect::<Result<Vec<_>, Fail>>()?;
    out.sort_by(|a, b| (a.expired_at_ms, &a.event_id, &a.seat_id).cmp(&(b.expired_at_ms, &b.event_id, &b.seat_id)));
    Ok(out)
}
