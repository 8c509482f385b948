//! A hold in one round trip: one statement, its own implicit transaction,
//! prepared once per connection (sqlx's statement cache).
//!
//! The statement locks the requested seats in seat order, decides in SQL
//! whether the selection may be held (every seat exists and is holdable, and
//! under a cap the holder stays within it), locks the holder's row when it
//! has a cap, applies the conditional write, and returns the locked rows
//! (before-images), the written rows (after-images) and what it decided
//! from. Rust then decides again from the before-images with the shared
//! decisions and the seat machine ([`check`]), and holds the statement's
//! writes to them: the same answer, the same after-images.
//!
//! That check now runs after the commit: it can no longer stop a wrong hold
//! from being written, only refuse to report it as a grant (the caller gets
//! `StoreError::InvariantBreach`, logged as a broken invariant). A hold
//! confirms nothing: the writes that sell (checkout, a recorded payment)
//! keep their check before `COMMIT`, and the one-booking index stands below
//! both.
//!
//! The cap's count is read in the statement's snapshot, taken before the
//! statement waited on any lock, corrected for the requested seats (counted
//! from their locked rows, the latest). Every granted capped hold moves its
//! holder row's version by one; the statement locks that row and moves it
//! only if it is still the version its snapshot saw. If it is not, another
//! capped hold of the same holder was granted since the snapshot, the count
//! may miss its seats, and this hold writes nothing and is sent again
//! ([`Attempt::Stale`]). A refusal by the count needs no lock: a later
//! count only grows by the grants the snapshot missed.

use super::rows::{self, seat_cols};
use super::tx::{
    Fail, MAX_TX_ATTEMPTS, TxConn, backend, ensure, ensure_written, into_store_error, retry_backoff_ms, retryable,
};
use super::{PgClock, PgStore};
use crate::ids::IdSource;
use crate::model::{HoldToken, Seat, SeatId};
use crate::store::decide::{check_hold_limit, check_holdable, grant_hold};
use crate::store::rules::{Rules, rule_text};
use crate::store::{AcquireHold, HoldGrant, StoreError};
use sqlx::{PgConnection, Row};
use std::borrow::Cow;
use std::sync::LazyLock;

/// Sendings of one hold at most. A hold is stale only when another capped
/// hold of the same holder was granted meanwhile, so this many let a holder's
/// MAX_HOLD_SENDS - 1 concurrent grants land first; transient database
/// failures count too.
const MAX_HOLD_SENDS: u32 = 32;

/// What one sending of the statement came to.
#[derive(Debug)]
pub(super) enum Attempt {
    /// Granted: the seats are held.
    Granted(HoldGrant),
    /// Another capped hold of the same holder committed after the statement's
    /// snapshot: nothing was written; send it again.
    Stale,
}

/// What the statement returned, parsed.
struct Returned {
    now_ms: i64,
    /// The holder's counted seats (cap only).
    held: Option<i64>,
    /// Whether the count can be trusted: the locked holder row was still at
    /// the snapshot's version (or the count refused, needing no lock).
    /// `None` when the statement did not count (no cap, or the seats refused).
    fresh: Option<bool>,
    event_exists: bool,
    /// The locked rows, sorted by seat.
    before: Vec<Seat>,
    /// The rows written.
    after: Vec<Seat>,
}

/// Body of [`Store::acquire_hold`](crate::store::Store::acquire_hold) on
/// `store`; `sorted` is the validated seat list. Sends the statement until it
/// is not stale, at most [`MAX_HOLD_SENDS`] times; a transient database
/// failure is retried as in a transaction ([`MAX_TX_ATTEMPTS`]). A refused
/// hold gives its token back.
pub(super) async fn acquire_hold(
    store: &PgStore,
    req: &AcquireHold,
    sorted: &[SeatId],
) -> Result<HoldGrant, StoreError> {
    let hold_token = HoldToken::from(store.ids.next_uuid());
    let mut failures: u32 = 0;
    for _ in 0..MAX_HOLD_SENDS {
        // (acquire counts its own errors.)
        let mut conn = TxConn::implicit(store.circuit.acquire().await.map_err(backend)?);
        let manual_now_ms = match &store.clock {
            PgClock::Manual(clock) => Some(clock.now_ms()),
            PgClock::Database => None,
        };
        let sent = send(&mut conn, manual_now_ms, hold_token, req, sorted, &store.rules).await;
        conn.finish();
        match sent {
            Ok(Attempt::Granted(grant)) => return Ok(grant),
            Ok(Attempt::Stale) => {}
            Err(Fail::Db(e)) => {
                store.circuit.record(&e);
                failures += 1;
                if !retryable(&e) || failures == MAX_TX_ATTEMPTS {
                    return Err(backend(e));
                }
                tokio::time::sleep(std::time::Duration::from_millis(retry_backoff_ms(failures))).await;
            }
            Err(Fail::Refused(refusal)) => {
                // The statement wrote nothing (`check` asserted it): the token was never used.
                store.ids.give_back(hold_token.into());
                return Err(refusal);
            }
            Err(broken) => return Err(into_store_error(broken)),
        }
    }
    Err(StoreError::Backend(format!(
        "the holder's seat count changed under {MAX_HOLD_SENDS} sendings in a row: concurrent holds of one holder"
    )))
}

/// Sends the hold statement once on `c` (outside any transaction).
/// `manual_now_ms` is the store's clock when it is injected (`None`: the
/// database's); `hold_token` is used only if the hold is granted.
async fn send(
    c: &mut PgConnection,
    manual_now_ms: Option<i64>,
    hold_token: HoldToken,
    req: &AcquireHold,
    sorted: &[SeatId],
    rules: &Rules,
) -> Result<Attempt, Fail> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(hold_sql(rules)))
        .bind(&req.event_id)
        .bind(sorted)
        .bind(hold_token)
        .bind(&req.holder_id)
        .bind(req.ttl_ms)
        .bind(manual_now_ms)
        .bind(req.max_held_seats.map(i64::from))
        .fetch_all(&mut *c)
        .await?;
    let returned = parse(&rows)?;
    check(returned, hold_token, req, sorted, rules)
}

/// Splits the statement's rows into its meta columns and its seat images.
fn parse(rows: &[sqlx::postgres::PgRow]) -> Result<Returned, Fail> {
    let first = rows.first().ok_or_else(|| Fail::Broken("the hold statement returned no row".into()))?;
    let mut out = Returned {
        now_ms: first.try_get("now_ms")?,
        held: first.try_get("held")?,
        fresh: first.try_get("fresh")?,
        event_exists: first.try_get("event_exists")?,
        before: Vec::new(),
        after: Vec::new(),
    };
    for r in rows {
        match r.try_get::<Option<&str>, _>("image")? {
            Some("before") => out.before.push(rows::seat(r)?),
            Some("after") => out.after.push(rows::seat(r)?),
            None if rows.len() == 1 => {}
            other => return Err(Fail::Broken(format!("the hold statement returned an image {other:?}"))),
        }
    }
    out.before.sort_by(|a, b| a.seat_id.cmp(&b.seat_id));
    Ok(out)
}

/// Decides from the before-images as `MemStore` does, and holds the
/// statement's writes to that decision.
fn check(
    r: Returned,
    hold_token: HoldToken,
    req: &AcquireHold,
    sorted: &[SeatId],
    rules: &Rules,
) -> Result<Attempt, Fail> {
    let wrote_nothing = |r: &Returned, refusal: StoreError| -> Fail {
        if r.after.is_empty() {
            Fail::Refused(refusal)
        } else {
            Fail::Broken(format!("the hold statement wrote {} seats the store refuses: {refusal}", r.after.len()))
        }
    };
    if r.before.len() != sorted.len() && !r.event_exists {
        return Err(wrote_nothing(&r, StoreError::UnknownEvent(req.event_id.clone())));
    }
    let take = match check_holdable(&req.event_id, sorted, &r.before, r.now_ms, rules) {
        Ok(take) => take,
        Err(refusal) => return Err(wrote_nothing(&r, refusal)),
    };
    if let Some(limit) = req.max_held_seats {
        match r.fresh {
            Some(true) => {}
            Some(false) => {
                ensure(r.after.is_empty(), || "a stale capped hold wrote seats".into())?;
                return Ok(Attempt::Stale);
            }
            None => return Err(Fail::Broken("the hold statement refused seats the store grants".into())),
        }
        let held = r.held.ok_or_else(|| Fail::Broken("a capped hold returned no count".into()))?;
        let held = usize::try_from(held).map_err(|_| Fail::Broken(format!("negative seat count {held}")))?;
        if let Err(refusal) = check_hold_limit(&req.event_id, held, take.len(), Some(limit), rules) {
            return Err(wrote_nothing(&r, refusal));
        }
    }
    Ok(Attempt::Granted(grant(r, hold_token, req, &take, rules)?))
}

/// The grant, once the written rows are the seat machine's after-images.
fn grant(
    r: Returned,
    hold_token: HoldToken,
    req: &AcquireHold,
    take: &[SeatId],
    rules: &Rules,
) -> Result<HoldGrant, Fail> {
    let (grant, expected) = grant_hold(req, &r.before, take, hold_token, r.now_ms, rules).map_err(Fail::Broken)?;
    ensure_written("held seat", expected, r.after, |s| s.seat_id.clone())?;
    Ok(grant)
}

/// The statement under sound rules, built once.
static SOUND_HOLD_SQL: LazyLock<String> = LazyLock::new(|| build_hold_sql(&Rules::SOUND));

/// The hold statement under sound rules.
pub(super) fn sound_text() -> &'static str {
    SOUND_HOLD_SQL.as_str()
}

/// The hold statement under `rules`.
fn hold_sql(rules: &Rules) -> Cow<'static, str> {
    if *rules == Rules::SOUND { Cow::Borrowed(sound_text()) } else { Cow::Owned(build_hold_sql(rules)) }
}

/// The hold statement (`$1` event, `$2` sorted seats, `$3` new token, `$4`
/// holder, `$5` lifetime in ms, `$6` injected clock in ms or NULL for the
/// database's, `$7` cap or NULL). Every CTE reads the statement's snapshot;
/// `locked` is the latest row of each requested seat, locked in seat order
/// before the holder's row (`holder` reads `verdict`, which reads `locked`),
/// so the locks close no cycle. `written` picks its rows by the seat ids
/// `locked` found holdable, never by a condition on a column that can change:
/// its scan judges such a condition on the snapshot's row, so a seat
/// released while the statement waited on its lock would be judged holdable
/// from the locked row and skipped by the write (half a selection held).
/// Built from constant fragments only: nothing
/// user-supplied reaches the text. Under `rules` with a planted bug the
/// deadline comparison is left out, a taken-over seat keeps its token, a
/// partial selection is taken, or the cap counts one seat of a request.
fn build_hold_sql(rules: &Rules) -> String {
    let holdable = rule_text!(
        rules.hold_deadline(),
        "(state = 'available' OR (state = 'held' AND hold_expires_at_ms <= (SELECT ms FROM clock)))",
        "state IN ('available', 'held')"
    );
    let all_taken = rule_text!(rules.hold_all_or_nothing(), "v.holdable = v.found", "v.holdable > 0");
    let counted = rule_text!(rules.hold_limit_counts_request(), "v.holdable", "LEAST(v.holdable, 1)");
    let token = rule_text!(rules.hold_fresh_token(), "$3", "COALESCE(hold_token, $3)");
    // What counts toward the cap (`counts_toward_hold_limit`); `seen` counts
    // the holder's other seats by the same predicate split in two, so each
    // part is a range of `seats_by_holder_state`.
    let counts = "holder_id = $4 AND ((state = 'held' AND hold_expires_at_ms > (SELECT ms FROM clock)) \
                  OR state = 'payment_pending')";
    let cols = seat_cols!();
    format!(
        "WITH clock AS MATERIALIZED ( \
           SELECT COALESCE($6::bigint, (EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000)::bigint) AS ms), \
         locked AS MATERIALIZED ( \
           SELECT {cols} FROM seats WHERE event_id = $1 AND seat_id = ANY($2::text[]) ORDER BY seat_id FOR UPDATE), \
         verdict AS MATERIALIZED ( \
           SELECT v.found, v.counted_here, v.found = cardinality($2::text[]) AND {all_taken} AS seats_ok, {counted} AS taking \
           FROM (SELECT count(*) AS found, count(*) FILTER (WHERE {holdable}) AS holdable, \
                        count(*) FILTER (WHERE {counts}) AS counted_here FROM locked) v), \
         seen AS MATERIALIZED ( \
           SELECT w.version, w.held_elsewhere + v.counted_here AS held, \
                  w.held_elsewhere + v.counted_here + v.taking <= $7::bigint AS under_cap \
           FROM verdict v CROSS JOIN ( \
             SELECT COALESCE((SELECT version FROM holders WHERE event_id = $1 AND holder_id = $4), -1) AS version, \
                    (SELECT count(*) FROM seats WHERE event_id = $1 AND holder_id = $4 AND state = 'held' \
                       AND hold_expires_at_ms > (SELECT ms FROM clock) AND NOT (seat_id = ANY($2::text[]))) \
                    + (SELECT count(*) FROM seats WHERE event_id = $1 AND holder_id = $4 \
                       AND state = 'payment_pending' AND NOT (seat_id = ANY($2::text[]))) AS held_elsewhere \
             OFFSET 0) w \
           WHERE $7::bigint IS NOT NULL AND v.seats_ok), \
         holder AS ( \
           INSERT INTO holders (event_id, holder_id) SELECT $1, $4 FROM seen WHERE seen.under_cap \
           ON CONFLICT (event_id, holder_id) DO UPDATE SET version = holders.version + 1 \
             WHERE holders.version = (SELECT version FROM seen) \
           RETURNING version), \
         decision AS MATERIALIZED ( \
           SELECT seen.held, \
                  CASE WHEN seen.held IS NULL THEN NULL WHEN seen.under_cap THEN EXISTS (SELECT 1 FROM holder) \
                       ELSE true END AS fresh, \
                  v.seats_ok AND ($7::bigint IS NULL OR EXISTS (SELECT 1 FROM holder)) AS go \
           FROM verdict v LEFT JOIN seen ON true), \
         written AS ( \
           UPDATE seats SET state = 'held', hold_token = {token}, holder_id = $4, \
                  hold_expires_at_ms = (SELECT ms FROM clock) + $5, order_id = NULL, booking_id = NULL, \
                  version = version + 1 \
           WHERE event_id = $1 AND seat_id = ANY(ARRAY(SELECT seat_id FROM locked WHERE {holdable})) \
             AND (SELECT go FROM decision) \
           RETURNING {cols}) \
         SELECT (SELECT ms FROM clock) AS now_ms, d.held, d.fresh, \
                CASE WHEN v.found = cardinality($2::text[]) THEN true \
                     ELSE EXISTS (SELECT 1 FROM events WHERE event_id = $1) END AS event_exists, \
                i.* \
         FROM decision d CROSS JOIN verdict v LEFT JOIN ( \
           SELECT 'before' AS image, {cols} FROM locked UNION ALL SELECT 'after', {cols} FROM written) i ON true"
    )
}
