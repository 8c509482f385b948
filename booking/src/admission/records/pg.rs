//! [`PgRoomRecords`]: the rooms' record in PostgreSQL (tables `waiting_rooms`
//! and `waiting_room_users`). Every call is one autocommitted statement, so
//! a caller that stops waiting leaves it done or not done, never half-done.

use super::RoomRecords;
use crate::admission::room::image::{JournalUser, RoomJournal};
use crate::admission::room::{Policy, RoomError, RoomSpec, Session, SessionEnd};
use crate::model::{EventId, UserId};
use crate::store::circuit::{Circuit, describe};
use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres, Row};
use std::sync::Arc;
use uuid::Uuid;

/// The rooms' record in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgRoomRecords {
    /// Its connections come through the circuit: none while the database is known down.
    circuit: Arc<Circuit>,
}

impl PgRoomRecords {
    /// The record in `pool`'s database. Precondition: its migrations ran.
    pub fn new(pool: PgPool) -> Self {
        Self { circuit: Arc::new(Circuit::new(pool)) }
    }

    /// The record behind `circuit` (the store's, so that both fail fast together).
    pub fn with_circuit(circuit: Arc<Circuit>) -> Self {
        Self { circuit }
    }

    async fn conn(&self) -> Result<PoolConnection<Postgres>, RoomError> {
        self.circuit.acquire().await.map_err(unavailable)
    }
}

fn unavailable(e: sqlx::Error) -> RoomError {
    RoomError::Unavailable(format!("waiting-room record: {}", describe(&e)))
}

/// A write's error: a row naming a room that is not recorded (a foreign-key
/// violation) is `NoRoom`; anything else `Unavailable`.
fn write_error(event_id: &EventId) -> impl Fn(sqlx::Error) -> RoomError + '_ {
    move |e| match &e {
        sqlx::Error::Database(d) if d.code().as_deref() == Some("23503") => RoomError::NoRoom(event_id.to_string()),
        _ => unavailable(e),
    }
}

fn policy_name(policy: Policy) -> &'static str {
    match policy {
        Policy::Fifo => "fifo",
        Policy::Lottery => "lottery",
        Policy::Priority => "priority",
    }
}

fn spec_of(row: &sqlx::postgres::PgRow) -> Result<RoomSpec, RoomError> {
    let policy = match row.try_get::<String, _>("policy").map_err(unavailable)?.as_str() {
        "fifo" => Policy::Fifo,
        "lottery" => Policy::Lottery,
        "priority" => Policy::Priority,
        other => return Err(RoomError::Unavailable(format!("waiting-room record: policy {other}"))),
    };
    Ok(RoomSpec {
        policy,
        opens_at_ms: row.try_get("opens_at_ms").map_err(unavailable)?,
        target_active_sessions: u32::try_from(row.try_get::<i32, _>("target_active_sessions").map_err(unavailable)?)
            .map_err(|_| RoomError::Unavailable("waiting-room record: target".to_string()))?,
        session_ttl_ms: row.try_get("session_ttl_ms").map_err(unavailable)?,
    })
}

const SPEC: &str = "SELECT policy, opens_at_ms, target_active_sessions, session_ttl_ms, sold_out
    FROM waiting_rooms WHERE event_id = $1";

#[async_trait]
impl RoomRecords for PgRoomRecords {
    async fn record_room(&self, event_id: &EventId, spec: &RoomSpec) -> Result<(), RoomError> {
        let target = i32::try_from(spec.target_active_sessions).map_err(|_| RoomError::BadSpec)?;
        sqlx::query(
            "INSERT INTO waiting_rooms (event_id, policy, opens_at_ms, target_active_sessions, session_ttl_ms)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (event_id) DO NOTHING",
        )
        .bind(event_id.as_str())
        .bind(policy_name(spec.policy))
        .bind(spec.opens_at_ms)
        .bind(target)
        .bind(spec.session_ttl_ms)
        .execute(&mut *self.conn().await?)
        .await
        .map_err(unavailable)?;
        match self.room(event_id).await? {
            Some(recorded) if recorded == *spec => Ok(()),
            Some(_) => Err(RoomError::Conflict(event_id.to_string())),
            None => Err(RoomError::Unavailable(format!("waiting-room record of {event_id} not written"))),
        }
    }

    async fn room(&self, event_id: &EventId) -> Result<Option<RoomSpec>, RoomError> {
        let row = sqlx::query(SPEC)
            .bind(event_id.as_str())
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(unavailable)?;
        row.as_ref().map(spec_of).transpose()
    }

    async fn rooms(&self) -> Result<Vec<EventId>, RoomError> {
        sqlx::query_scalar("SELECT event_id FROM waiting_rooms ORDER BY event_id")
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(unavailable)
    }

    async fn record_join(&self, event_id: &EventId, user_id: &UserId, tier: u8, now_ms: i64) -> Result<(), RoomError> {
        sqlx::query(
            "INSERT INTO waiting_room_users AS u
                 (event_id, user_id, tier, first_joined_at_ms, first_seq, joined_at_ms, seq)
             SELECT $1, $2, $3, $4, s.n, $4, s.n FROM (SELECT nextval('waiting_room_joins') AS n) s
             ON CONFLICT (event_id, user_id) DO UPDATE
                 SET tier = EXCLUDED.tier, joined_at_ms = EXCLUDED.joined_at_ms, seq = EXCLUDED.seq,
                     position = NULL, admitted_at_ms = NULL, expires_at_ms = NULL,
                     purchase_order_id = NULL, purchase_key_id = NULL
                 WHERE u.admitted_at_ms IS NOT NULL",
        )
        .bind(event_id.as_str())
        .bind(user_id.as_str())
        .bind(i16::from(tier))
        .bind(now_ms)
        .execute(&mut *self.conn().await?)
        .await
        .map_err(write_error(event_id))?;
        Ok(())
    }

    async fn record_admissions(&self, event_id: &EventId, admitted: &[(UserId, Session)]) -> Result<(), RoomError> {
        if admitted.is_empty() {
            return Ok(());
        }
        let users: Vec<&str> = admitted.iter().map(|(u, _)| u.as_str()).collect();
        let positions: Vec<i64> = admitted.iter().map(|(_, s)| i64::try_from(s.position).unwrap_or(i64::MAX)).collect();
        let at: Vec<i64> = admitted.iter().map(|(_, s)| s.admitted_at_ms).collect();
        let expires: Vec<i64> = admitted.iter().map(|(_, s)| s.expires_at_ms).collect();
        sqlx::query(
            "INSERT INTO waiting_room_users AS u (event_id, user_id, tier, first_joined_at_ms, first_seq,
                 joined_at_ms, seq, position, admitted_at_ms, expires_at_ms)
             SELECT $1, a.user_id, 0, a.at, s.n, a.at, s.n, a.position, a.at, a.expires
             FROM UNNEST($2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) AS a(user_id, position, at, expires),
                  LATERAL (SELECT nextval('waiting_room_joins') AS n) s
             ON CONFLICT (event_id, user_id) DO UPDATE
                 SET position = EXCLUDED.position, admitted_at_ms = EXCLUDED.admitted_at_ms,
                     expires_at_ms = EXCLUDED.expires_at_ms, purchase_order_id = NULL, purchase_key_id = NULL",
        )
        .bind(event_id.as_str())
        .bind(&users)
        .bind(&positions)
        .bind(&at)
        .bind(&expires)
        .execute(&mut *self.conn().await?)
        .await
        .map_err(write_error(event_id))?;
        Ok(())
    }

    async fn record_purchase(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        admitted_at_ms: i64,
        end: Option<SessionEnd>,
    ) -> Result<(), RoomError> {
        let (order, key) = match end {
            Some(SessionEnd::Purchased { order_id, key_id }) => (Some(order_id), Some(key_id)),
            _ => (None, None),
        };
        sqlx::query(
            "UPDATE waiting_room_users SET purchase_order_id = $4, purchase_key_id = $5
             WHERE event_id = $1 AND user_id = $2 AND admitted_at_ms = $3",
        )
        .bind(event_id.as_str())
        .bind(user_id.as_str())
        .bind(admitted_at_ms)
        .bind(order)
        .bind(key)
        .execute(&mut *self.conn().await?)
        .await
        .map_err(unavailable)?;
        Ok(())
    }

    async fn record_sold_out(&self, event_id: &EventId) -> Result<(), RoomError> {
        sqlx::query("UPDATE waiting_rooms SET sold_out = TRUE WHERE event_id = $1")
            .bind(event_id.as_str())
            .execute(&mut *self.conn().await?)
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn journal(&self, event_id: &EventId) -> Result<Option<RoomJournal>, RoomError> {
        let Some(room) = sqlx::query(SPEC)
            .bind(event_id.as_str())
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(unavailable)?
        else {
            return Ok(None);
        };
        let spec = spec_of(&room)?;
        let rows = sqlx::query(
            "SELECT user_id, tier, first_joined_at_ms, first_seq, joined_at_ms, seq, position, admitted_at_ms,
                    expires_at_ms, purchase_order_id, purchase_key_id
             FROM waiting_room_users WHERE event_id = $1 ORDER BY seq",
        )
        .bind(event_id.as_str())
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(unavailable)?;
        let users = rows.iter().map(|r| journal_user(event_id, r)).collect::<Result<_, _>>()?;
        Ok(Some(RoomJournal { spec, sold_out: room.try_get("sold_out").map_err(unavailable)?, users }))
    }
}

fn journal_user(event_id: &EventId, r: &sqlx::postgres::PgRow) -> Result<JournalUser, RoomError> {
    let get_i64 = |c: &str| r.try_get::<i64, _>(c).map_err(unavailable);
    let user_id: UserId = r.try_get("user_id").map_err(unavailable)?;
    let tier = u8::try_from(r.try_get::<i16, _>("tier").map_err(unavailable)?)
        .map_err(|_| RoomError::Unavailable("waiting-room record: tier".to_string()))?;
    let session = match r.try_get::<Option<i64>, _>("admitted_at_ms").map_err(unavailable)? {
        None => None,
        Some(at) => {
            let position = u64::try_from(get_i64("position")?).unwrap_or(0);
            let expires_at_ms = get_i64("expires_at_ms")?;
            let session = Session { expires_at_ms, ..Session::new(event_id, &user_id, position, at, 0) };
            let order: Option<Uuid> = r.try_get("purchase_order_id").map_err(unavailable)?;
            let key: Option<Uuid> = r.try_get("purchase_key_id").map_err(unavailable)?;
            let end =
                order.zip(key).map(|(order_id, key_id)| SessionEnd::Purchased { order_id: order_id.into(), key_id });
            Some((session, end))
        }
    };
    Ok(JournalUser {
        tier,
        first_joined: (get_i64("first_joined_at_ms")?, get_i64("first_seq")?),
        joined: (get_i64("joined_at_ms")?, get_i64("seq")?),
        session,
        user_id,
    })
}
