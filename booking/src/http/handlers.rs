//! The request handlers: each authenticates (the [`Authed`] extractor comes
//! first, so a caller without a valid token gets 401 before anything is
//! parsed), validates, authorizes, makes one store call
//! (the store decides), and answers. No handler reads "available" and then writes.

use super::api::*;
use super::authed::Authed;
use super::cache::CachedSeatMap;
use super::etag::IfNoneMatch;
use super::extract::{ApiJson, ApiPath, ApiQuery, check_event_id};
use super::problem::Problem;
use super::state::AppState;
use crate::admission::token::AdmissionClaims;
use crate::admission::waiting_room::Use;
use crate::fault::CommitPoint;
use crate::metrics::CheckoutOutcome;
use crate::model::{EventId, HoldToken, OrderId, UserId};
use crate::problem_kind::ProblemKind;
use crate::store::{
    AcquireHold, BeginPayment, BeginPaymentOutcome, CreateEvent, ReleaseHold, SeatMapVersion, StoreError,
};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// `POST /v1/events` (admin): creates an event with its seats.
pub async fn create_event(
    State(st): State<Arc<AppState>>,
    Authed(claims): Authed,
    ApiJson(body): ApiJson<CreateEventBody>,
) -> Result<Response, Problem> {
    st.require_admin(claims)?;
    let seat_ids = body.all_seat_ids().map_err(|e| Problem::bad_request(e.to_string()))?;
    st.store
        .create_event(&CreateEvent { event_id: body.event_id.clone(), seat_ids, price_cents: body.price_cents })
        .await?;
    Ok((StatusCode::CREATED, Json(serde_json::json!({ "event_id": body.event_id }))).into_response())
}

/// `GET /v1/events/{event_id}/seats`: the seat map, from the cache when it
/// has it, with its entity tag (`ETag`) and `Cache-Control: no-cache`.
///
/// Conditional: after validation and authentication, a request whose
/// `If-None-Match` matches the seat map's current tag (weakly; `*` matches any
/// existing event) gets `304 Not Modified` with no body. The current tag
/// comes from [`Store::seat_map_version`](crate::store::Store::seat_map_version)
/// (the authority, one cheap read), never from the cache; no seat is read or
/// serialized. A malformed `If-None-Match` is no condition (a full answer).
///
/// `?state=<seat state>` shows only the seats in that state (read from the
/// store, never the cache), tagged per view; any other query is a 400.
pub async fn seat_map(
    State(st): State<Arc<AppState>>,
    Authed(claims): Authed,
    headers: HeaderMap,
    ApiPath(event_id): ApiPath<EventId>,
    ApiQuery(query): ApiQuery<SeatMapQuery>,
) -> Result<Response, Problem> {
    check_event_id(&event_id)?;
    st.authorize(claims, Some(&event_id))?;
    if let Some(condition) = IfNoneMatch::from_headers(&headers) {
        let etag = st.store.seat_map_version(&event_id).await?.etag_for(query.state);
        if condition.matches(&etag) {
            return Ok(seat_map_response(StatusCode::NOT_MODIFIED, &etag, None, "store"));
        }
    }
    if let Some(state) = query.state {
        // A filtered view is not cached: the cache holds whole maps.
        let (version, seats) = st.store.seats_in_state(&event_id, state).await?;
        let etag = version.etag_for(Some(state));
        let body = SeatMapView::json_of(&event_id, &seats);
        return Ok(seat_map_response(StatusCode::OK, &etag, Some(Bytes::from(body)), "store"));
    }
    let (entry, source) = match st.cache.get(&event_id).await {
        Some(entry) => (entry, "cache"),
        None => {
            let seats = st.store.seat_map(&event_id).await?;
            let entry = CachedSeatMap {
                etag: SeatMapVersion::of_seats(&seats).etag(),
                body: SeatMapView::json_of(&event_id, &seats),
            };
            st.cache.put(&event_id, &entry).await;
            (entry, "store")
        }
    };
    Ok(seat_map_response(StatusCode::OK, &entry.etag, Some(Bytes::from(entry.body)), source))
}

/// A seat-map answer: `status`, the JSON `body` (none for a 304), the entity
/// tag `etag`, `no-cache` (intermediaries must revalidate) and where the
/// answer came from.
fn seat_map_response(status: StatusCode, etag: &str, body: Option<Bytes>, source: &'static str) -> Response {
    let mut resp = match body {
        Some(body) => {
            let mut resp = (status, body).into_response();
            resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            resp
        }
        None => (status, axum::body::Body::empty()).into_response(),
    };
    let h = resp.headers_mut();
    // A tag that is not a header value (a poisoned cache entry) is left off, never an error.
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-holdfast-source", HeaderValue::from_static(source));
    resp
}

/// The admission token a request presents (`Admission-Token`), if any.
/// Malformed on any event (not printable ASCII, or longer than the document's
/// `maxLength`): a 400, whether or not the event has a waiting room.
fn admission_token(headers: &HeaderMap) -> Result<Option<&str>, Problem> {
    use crate::admission::token::MAX_ADMISSION_TOKEN_LEN;
    let Some(v) = headers.get(super::queue::ADMISSION_TOKEN) else { return Ok(None) };
    if v.len() > MAX_ADMISSION_TOKEN_LEN {
        return Err(Problem::bad_request(format!("Admission-Token is longer than {MAX_ADMISSION_TOKEN_LEN} bytes")));
    }
    v.to_str().map(Some).map_err(|_| Problem::bad_request("Admission-Token must be printable ASCII"))
}

/// On a waiting-room event, the gate: the caller's admission token must
/// admit `what`, checked before the store is touched. Answers the token's
/// claims, `None` when the event has no waiting room.
async fn admit(
    st: &AppState,
    headers: &HeaderMap,
    event_id: &EventId,
    user_id: &UserId,
    what: Use,
) -> Result<Option<AdmissionClaims>, Problem> {
    match st.waiting_room.gate(st.store.as_ref(), event_id, user_id, admission_token(headers)?, what).await {
        Ok(admitted) => Ok(admitted),
        Err(e) => {
            st.metrics.admission_refused.fetch_add(1, Ordering::Relaxed);
            Err(e.into())
        }
    }
}

/// `POST /v1/events/{event_id}/holds`: holds seats for the caller, all or
/// nothing. On a waiting-room event, only with an admission token of an open session.
pub async fn hold(
    State(st): State<Arc<AppState>>,
    Authed(claims): Authed,
    headers: HeaderMap,
    ApiPath(event_id): ApiPath<EventId>,
    ApiJson(body): ApiJson<HoldBody>,
) -> Result<Response, Problem> {
    check_event_id(&event_id)?;
    let user = st.authorize(claims, Some(&event_id))?;
    if let Err(retry_s) = st.rate_limit.check(&user.sub) {
        st.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
        return Err(Problem::rate_limited(retry_s));
    }
    let room = admit(&st, &headers, &event_id, &user.sub, Use::Hold).await?.is_some();
    if crate::planted!(st.faults, HoldNeedsSortedSeats) && !body.seat_ids.is_sorted() {
        return Err(StoreError::InvalidInput("seat_ids must be in ascending order".into()).into());
    }
    let req = AcquireHold {
        event_id: event_id.clone(),
        seat_ids: body.seat_ids,
        holder_id: user.sub,
        ttl_ms: st.config.hold_ttl_ms,
        max_held_seats: st.config.max_held_seats_per_user,
    };
    let answer = st.store.acquire_hold(&req).await;
    let refused = matches!(answer, Err(StoreError::SeatUnavailable { .. }));
    if room {
        st.waiting_room.hold_attempted(&event_id, refused);
    }
    let grant = match answer {
        Ok(g) => g,
        Err(e) => {
            if refused {
                st.metrics.holds_refused_contention.fetch_add(1, Ordering::Relaxed);
            }
            return Err(e.into());
        }
    };
    st.metrics.holds_acquired.fetch_add(1, Ordering::Relaxed);
    for r in &grant.reclaimed {
        st.metrics.hold_expired(grant.granted_at_ms - r.expired_at_ms);
    }
    st.faults.after_commit(CommitPoint::Hold).await;
    Ok((StatusCode::CREATED, Json(HoldView::from(&grant))).into_response())
}

/// `DELETE /v1/events/{event_id}/holds/{hold_token}`: the holder gives seats back.
pub async fn release(
    State(st): State<Arc<AppState>>,
    Authed(claims): Authed,
    ApiPath((event_id, hold_token)): ApiPath<(EventId, HoldToken)>,
) -> Result<Response, Problem> {
    check_event_id(&event_id)?;
    let user = st.authorize(claims, Some(&event_id))?;
    let released = st
        .store
        .release_hold(&ReleaseHold { event_id: event_id.clone(), holder_id: user.sub.clone(), hold_token })
        .await?;
    st.faults.after_commit(CommitPoint::Release).await;
    // A release leaves the holder's waiting-room session open: they may hold other seats until it expires.
    Ok(Json(ReleaseView { released }).into_response())
}

/// The header carrying a checkout's idempotency key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// How long the planted `slow-checkout-refused` handler waits for the store, ms.
pub const SLOW_CHECKOUT_MS: u64 = 300;

/// The store's answer to `req`; with the planted bug `slow-checkout-refused`,
/// a store slower than [`SLOW_CHECKOUT_MS`] is taken for a lost hold while
/// its work goes on in the background.
async fn begin_payment(st: &AppState, req: BeginPayment) -> Result<BeginPaymentOutcome, StoreError> {
    if !crate::planted!(st.faults, SlowCheckoutRefused) {
        return st.store.begin_payment(&req).await;
    }
    let store = st.store.clone();
    let work = tokio::spawn(async move { store.begin_payment(&req).await });
    match tokio::time::timeout(std::time::Duration::from_millis(SLOW_CHECKOUT_MS), work).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => Err(StoreError::Backend(format!("checkout task: {e}"))),
        Err(_) => Err(StoreError::StaleToken),
    }
}

/// `POST /v1/events/{event_id}/holds/{hold_token}/checkout`: begins payment.
/// A retry with the same `Idempotency-Key` returns the same order, whatever
/// happened since. On a waiting-room event, only with an admission token of
/// an open session (or of the session this checkout ended: a retry).
pub async fn checkout(
    State(st): State<Arc<AppState>>,
    Authed(claims): Authed,
    headers: HeaderMap,
    ApiPath((event_id, hold_token)): ApiPath<(EventId, HoldToken)>,
    ApiJson(body): ApiJson<CheckoutBody>,
) -> Result<Response, Problem> {
    check_event_id(&event_id)?;
    let user = st.authorize(claims, Some(&event_id))?;
    let key = headers
        .get(IDEMPOTENCY_KEY)
        .ok_or_else(|| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                ProblemKind::IdempotencyKeyRequired,
                "checkout requires an Idempotency-Key header",
            )
        })?
        .to_str()
        .map_err(|_| Problem::bad_request("Idempotency-Key must be printable ASCII"))?
        .to_string();
    let key_id = crate::admission::room::key_id(hold_token, &key);
    let admission = admit(&st, &headers, &event_id, &user.sub, Use::Checkout { key_id }).await?;
    let req = BeginPayment {
        event_id: event_id.clone(),
        holder_id: user.sub.clone(),
        hold_token,
        seat_ids: body.seat_ids,
        idempotency_key: key,
        payment_ttl_ms: st.config.payment_ttl_ms,
    };
    let outcome = match begin_payment(&st, req).await {
        Ok(o) => o,
        Err(e) => {
            st.metrics.checkout(CheckoutOutcome::Refused);
            return Err(Problem::of_checkout(e));
        }
    };
    if outcome.replayed {
        st.metrics.checkout(CheckoutOutcome::Replayed);
    } else {
        st.metrics.checkout(CheckoutOutcome::Created);
        st.dispatch_wake.notify_one();
        st.faults.after_commit(CommitPoint::Checkout).await;
        if let Some(claims) = admission {
            // The purchase ends the session the gate admitted it with; a
            // failure is logged, never answered (the session then expires).
            let ended = st.waiting_room.purchased(&event_id, &claims, outcome.order.order_id, key_id);
            if let Err(e) = ended.await {
                tracing::warn!(error = %e, event_id = %event_id, "waiting-room session not ended; it will expire");
            }
        }
    }
    let view = order_view(&st, outcome.order.order_id, outcome.replayed).await?;
    let status = if outcome.replayed { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(view)).into_response())
}

/// The buyer's view of `order_id`, from one store read of that order (its
/// bookings and compensation with it; never the event's other bookings).
async fn order_view(st: &AppState, order_id: OrderId, replayed: bool) -> Result<OrderView, Problem> {
    let d = st.store.order_details(order_id).await?;
    let compensation = d.compensations.into_iter().next().map(|c| CompensationView {
        kind: c.kind,
        status: c.status,
        attempts: c.attempts,
        last_error: c.last_error,
    });
    Ok(OrderView::new(&d.order, &d.bookings, compensation, replayed))
}

/// `GET /v1/orders/{order_id}`: the order's status, for its buyer (or an operator).
pub async fn order(
    State(st): State<Arc<AppState>>,
    Authed(user): Authed,
    ApiPath(order_id): ApiPath<OrderId>,
) -> Result<Response, Problem> {
    let order = match st.store.order(order_id).await {
        Ok(o) => o,
        Err(StoreError::UnknownOrder(_)) => return Err(Problem::not_found("no such order")),
        Err(e) => return Err(e.into()),
    };
    if order.holder_id != user.sub && !user.admin {
        // Do not reveal other users' orders.
        return Err(Problem::not_found("no such order"));
    }
    Ok(Json(order_view(&st, order.order_id, false).await?).into_response())
}

/// `POST /v1/webhooks/provider`: the payment provider's signed callbacks.
pub async fn webhook(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Result<Response, Problem> {
    st.webhooks.receive(&headers, &body).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /v1/admin/unresolved` (admin): charged-but-unfulfilled orders, reconciling orders and open compensations.
pub async fn unresolved(State(st): State<Arc<AppState>>, Authed(claims): Authed) -> Result<Response, Problem> {
    st.require_admin(claims)?;
    let r = st.store.needs_resolution().await?;
    st.metrics.unresolved.store((r.orders.len() + r.compensations.len()) as i64, Ordering::Relaxed);
    Ok(Json(r).into_response())
}

/// `GET /livez`: the process serves requests (liveness: restart it when this fails).
pub async fn livez() -> Response {
    (StatusCode::OK, "ok").into_response()
}

/// `GET /readyz` (and `GET /healthz`, its older name): the store answers
/// (readiness: send traffic elsewhere while this is `503`). With the
/// database's circuit (`bookingd`) the answer is the circuit's, at once,
/// without I/O; without one (the simulator's in-memory store) the store is asked.
pub async fn readyz(State(st): State<Arc<AppState>>) -> Response {
    let ready = match &st.db {
        Some(circuit) => !circuit.is_open(),
        None => st.store.now_ms().await.is_ok(),
    };
    if ready {
        return (StatusCode::OK, "ok").into_response();
    }
    let mut p =
        Problem::new(StatusCode::SERVICE_UNAVAILABLE, ProblemKind::Unavailable, "the booking store does not answer");
    p.retry_after_s = Some(super::problem::STORE_RETRY_AFTER_S);
    p.into_response()
}

/// How long `/metrics` waits for the store to count unresolved records; on
/// timeout or error it shows the last count (a scrape never fails on the store).
pub const METRICS_STORE_TIMEOUT_MS: u64 = 1_000;

/// `GET /metrics`: Prometheus text. The unresolved gauge is counted from the
/// store at each scrape (bounded by [`METRICS_STORE_TIMEOUT_MS`]).
pub async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    let count = st.store.needs_resolution();
    if let Ok(Ok(r)) = tokio::time::timeout(std::time::Duration::from_millis(METRICS_STORE_TIMEOUT_MS), count).await {
        st.metrics.unresolved.store((r.orders.len() + r.compensations.len()) as i64, Ordering::Relaxed);
    }
    let mut text = st.metrics.render();
    if let Some(circuit) = &st.db {
        circuit.render(&mut text);
    }
    let mut resp = text.into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
    resp
}

/// `GET /openapi.json`: the API description.
pub async fn openapi() -> Response {
    let mut resp = super::OPENAPI_JSON.into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// Any other route: a problem document, not an empty 404.
pub async fn fallback(State(st): State<Arc<AppState>>) -> Problem {
    st.metrics.response("", "unmatched", StatusCode::NOT_FOUND.as_u16());
    Problem::not_found("no such route")
}

/// Counts every answer of a matched route by method, route and status
/// (`holdfast_http_responses_total`); unmatched paths count in [`fallback`].
pub async fn count_responses(
    State(st): State<Arc<AppState>>,
    route: Option<axum::extract::MatchedPath>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let method = req.method().clone();
    let resp = next.run(req).await;
    let known = route
        .and_then(|r| super::ROUTES.iter().find(|(m, p)| *p == r.as_str() && method.as_str().eq_ignore_ascii_case(m)));
    if let Some((m, p)) = known {
        st.metrics.response(m, p, resp.status().as_u16());
    }
    resp
}
