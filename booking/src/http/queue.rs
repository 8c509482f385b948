//! The waiting room's endpoints: an operator opens an event's room; users
//! join, poll where they stand (told when to ask again, with a
//! `Retry-After` header) and, once admitted, read their admission token;
//! anyone may read a lottery's commitment and, after the draw, its reveal.

use super::authed::Authed;
use super::extract::{ApiJson, ApiPath, check_event_id};
use super::problem::Problem;
use super::state::AppState;
use crate::admission::room::{Policy, RoomSpec};
use crate::admission::token::rfc3339_ms;
use crate::admission::waiting_room::QueueStatus;
use crate::model::EventId;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The header carrying an admission token on holds and checkouts.
pub const ADMISSION_TOKEN: &str = "admission-token";
/// Most active sessions a room may target.
pub const MAX_TARGET_ACTIVE_SESSIONS: u32 = 100_000;
/// Longest admission, s (a day).
pub const MAX_SESSION_TTL_S: u32 = 86_400;
/// An admission's lifetime when the operator names none, s.
pub const DEFAULT_SESSION_TTL_S: u32 = 600;

/// `PUT /v1/events/{event_id}/waiting-room`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitingRoomBody {
    /// The fairness rule.
    pub policy: Policy,
    /// When the sale opens, RFC 3339.
    pub opens_at: String,
    /// Checkout sessions open at once at most (1..=100000).
    #[serde(deserialize_with = "super::api::json_int::de")]
    pub target_active_sessions: u32,
    /// How long an admission lasts unless it ends sooner, s (1..=86400; absent or null: 600).
    #[serde(default, deserialize_with = "super::api::json_int::de_opt")]
    pub session_ttl_s: Option<u32>,
}

/// An event's waiting room, as opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaitingRoomView {
    /// The event.
    pub event_id: EventId,
    /// The fairness rule.
    pub policy: Policy,
    /// When the sale opens, RFC 3339.
    pub opens_at: String,
    /// The target of active sessions.
    pub target_active_sessions: u32,
    /// An admission's lifetime, s.
    pub session_ttl_s: i64,
    /// A lottery's commitment: hex SHA-256 of the seed revealed after the draw.
    pub lottery_commitment: Option<String>,
}

/// `PUT /v1/events/{event_id}/waiting-room` (admin): opens the event's
/// waiting room; the same configuration again is a no-op, another is a 409.
pub async fn open_room(
    State(st): State<Arc<AppState>>,
    Authed(claims): Authed,
    ApiPath(event_id): ApiPath<EventId>,
    ApiJson(body): ApiJson<WaitingRoomBody>,
) -> Result<Response, Problem> {
    check_event_id(&event_id)?;
    st.require_admin(claims)?;
    let opens_at = chrono::DateTime::parse_from_rfc3339(&body.opens_at)
        .map_err(|e| Problem::bad_request(format!("opens_at must be RFC 3339: {e}")))?;
    if !(1..=MAX_TARGET_ACTIVE_SESSIONS).contains(&body.target_active_sessions) {
        return Err(Problem::bad_request(format!("target_active_sessions must be 1..={MAX_TARGET_ACTIVE_SESSIONS}")));
    }
    let ttl_s = body.session_ttl_s.unwrap_or(DEFAULT_SESSION_TTL_S);
    if !(1..=MAX_SESSION_TTL_S).contains(&ttl_s) {
        return Err(Problem::bad_request(format!("session_ttl_s must be 1..={MAX_SESSION_TTL_S}")));
    }
    // The event must exist (404 `unknown-event` otherwise).
    st.store.seat_map_version(&event_id).await?;
    let spec = RoomSpec {
        policy: body.policy,
        opens_at_ms: opens_at.timestamp_millis(),
        target_active_sessions: body.target_active_sessions,
        session_ttl_ms: i64::from(ttl_s) * 1000,
    };
    let commitment = st.waiting_room.open(&event_id, &spec).await?;
    Ok(Json(WaitingRoomView {
        event_id,
        policy: spec.policy,
        opens_at: rfc3339_ms(spec.opens_at_ms),
        target_active_sessions: spec.target_active_sessions,
        session_ttl_s: spec.session_ttl_ms / 1000,
        lottery_commitment: commitment,
    })
    .into_response())
}

fn status_response(status: QueueStatus) -> Response {
    let retry = status.retry_after_s;
    let mut resp = Json(status).into_response();
    let h = resp.headers_mut();
    if let Some(s) = retry {
        h.insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// `POST /v1/events/{event_id}/queue`: the caller joins the event's queue
/// (in their credential's tier, for a priority room); joining again changes nothing.
pub async fn join(
    State(st): State<Arc<AppState>>,
    Authed(claims): Authed,
    ApiPath(event_id): ApiPath<EventId>,
) -> Result<Response, Problem> {
    check_event_id(&event_id)?;
    let user = st.authorize(claims, Some(&event_id))?;
    Ok(status_response(st.waiting_room.join(st.store.as_ref(), &event_id, &user.sub, user.tier).await?))
}

/// `GET /v1/events/{event_id}/queue`: where the caller stands, when to ask
/// again and, once admitted, the admission token.
pub async fn status(
    State(st): State<Arc<AppState>>,
    Authed(claims): Authed,
    ApiPath(event_id): ApiPath<EventId>,
) -> Result<Response, Problem> {
    check_event_id(&event_id)?;
    let user = st.authorize(claims, Some(&event_id))?;
    if let Err(retry_s) = st.poll_limit.check(&format!("{}\n{event_id}", user.sub)) {
        st.metrics.rate_limited.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return Err(Problem::rate_limited_for("queue polls", retry_s));
    }
    Ok(status_response(st.waiting_room.status(st.store.as_ref(), &event_id, &user.sub).await?))
}

/// `GET /v1/events/{event_id}/queue/lottery`: the lottery's commitment and,
/// after the draw, its seed and the joiners it ordered.
pub async fn lottery(
    State(st): State<Arc<AppState>>,
    Authed(claims): Authed,
    ApiPath(event_id): ApiPath<EventId>,
) -> Result<Response, Problem> {
    check_event_id(&event_id)?;
    st.authorize(claims, Some(&event_id))?;
    let record = st.waiting_room.lottery(&event_id).await?;
    let mut resp = Json(record).into_response();
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}
