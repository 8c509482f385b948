//! Raw requests, as the OpenAPI document and the handlers' documentation
//! state the service's surface:
//!
//! 1. Routing: a path no route has is `404 not-found` (no credential
//!    needed); a route's path with another method is `405 method-not-allowed`.
//! 2. A route that needs a credential checks it first: none, not a bearer
//!    token, not signed by the service, expired by the serving host's clock
//!    → `401 unauthorized`.
//! 3. Then its path parameters (a hold token or order id that is not a
//!    UUID → `400`), its query (`?state=` a seat state, nothing else → `400`)
//!    and its JSON body: not `application/json` → `415`; larger than the
//!    service reads → `413`; not the documented shape → `400`.
//! 4. Then the handler: an event id outside `[A-Za-z0-9_.-]{1,64}` → `400`;
//!    a credential not scoped to the event → `403 forbidden`; an operator's
//!    route without an operator → `403`; a checkout without
//!    `Idempotency-Key` → `400 idempotency-key-required`.
//!
//! A request that passes all of that as a hold, release, checkout, order
//! status or seat map is that typed operation ([`Class::Typed`]), judged by
//! [`super::ops`]; the other routes' answers are stated in [`super::routes`].

use crate::model::http::ops::state_index;
use crate::trace::{ClientOp, Credential};
use booking::model::{EventId, HoldToken, SeatId, SeatState};
use booking::problem_kind::ProblemKind;
use serde_json::Value;
use uuid::Uuid;

/// What a raw request is, once the surface's rules have read it.
#[derive(Debug, Clone, PartialEq)]
pub enum Class {
    /// Refused by the surface itself, before any store call.
    Refused(ProblemKind),
    /// One of the typed operations, by the credential's user.
    Typed(ClientOp),
    /// Another route that got past the surface, for the route's own rule.
    Route(Route),
}

/// The routes that are not typed operations, as requested (each field is
/// the request's own).
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// `POST /v1/events` by an operator.
    CreateEvent { event_id: EventId, seat_ids: Vec<SeatId>, price_cents: i64 },
    /// `PUT /v1/events/{e}/waiting-room` by an operator, its body valid.
    OpenRoom { event_id: EventId, body: Value },
    /// `POST /v1/events/{e}/queue`.
    Join { event_id: EventId },
    /// `GET /v1/events/{e}/queue`.
    QueueStatus { event_id: EventId },
    /// `GET /v1/events/{e}/queue/lottery`.
    Lottery { event_id: EventId },
    /// `POST /v1/webhooks/provider`.
    Webhook,
    /// `GET /v1/admin/unresolved` by an operator.
    Unresolved,
    /// `GET /healthz` and `GET /readyz` (readiness: the store answers).
    Healthz,
    /// `GET /livez` (liveness: the process serves; never asks the store).
    Livez,
    /// `GET /metrics`.
    Metrics,
    /// `GET /openapi.json`.
    OpenApi,
}

/// A raw request as the surface reads it.
#[derive(Debug, Clone, Copy)]
pub struct Raw<'a> {
    /// The method.
    pub method: &'a str,
    /// Path and query.
    pub path: &'a str,
    /// The credential presented.
    pub credential: &'a Credential,
    /// Further headers (lower-case names).
    pub headers: &'a [(String, String)],
    /// The body.
    pub body: Option<&'a str>,
}

impl Raw<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// What the credential allows: whether an operator; events it may touch (`None`: all).
struct Who {
    admin: bool,
    events: Option<Vec<EventId>>,
}

/// The documented routes: (method, path template).
const ROUTES: &[(&str, &str)] = &[
    ("POST", "/v1/events"),
    ("GET", "/v1/events/{e}/seats"),
    ("POST", "/v1/events/{e}/holds"),
    ("DELETE", "/v1/events/{e}/holds/{t}"),
    ("POST", "/v1/events/{e}/holds/{t}/checkout"),
    ("PUT", "/v1/events/{e}/waiting-room"),
    ("POST", "/v1/events/{e}/queue"),
    ("GET", "/v1/events/{e}/queue"),
    ("GET", "/v1/events/{e}/queue/lottery"),
    ("GET", "/v1/orders/{o}"),
    ("POST", "/v1/webhooks/provider"),
    ("GET", "/v1/admin/unresolved"),
    ("GET", "/healthz"),
    ("GET", "/livez"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
];

/// The route template `path` matches, with its parameters.
fn template(path: &str) -> Option<(&'static str, Vec<String>)> {
    let segs: Vec<&str> = path.split('/').collect();
    ROUTES.iter().find_map(|(_, t)| {
        let tsegs: Vec<&str> = t.split('/').collect();
        if tsegs.len() != segs.len() {
            return None;
        }
        let mut params = Vec::new();
        for (ts, s) in tsegs.iter().zip(&segs) {
            if ts.starts_with('{') {
                if s.is_empty() {
                    return None;
                }
                params.push(s.to_string());
            } else if ts != s {
                return None;
            }
        }
        Some((*t, params))
    })
}

/// Whether `id` is an event, seat or user id.
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

/// What the credential allows, or why it is refused (`401`).
fn who(credential: &Credential) -> Result<Who, ProblemKind> {
    match credential {
        Credential::User => Ok(Who { admin: false, events: None }),
        Credential::Admin => Ok(Who { admin: true, events: None }),
        Credential::Scoped(events) => Ok(Who { admin: false, events: Some(events.clone()) }),
        Credential::None
        | Credential::Expired
        | Credential::Forged
        | Credential::Garbage(_)
        | Credential::Header(_) => Err(ProblemKind::Unauthorized),
    }
}

/// The body as JSON of the documented content type, or the refusal (415, 413, 400).
fn json_body(raw: &Raw<'_>, max_body_bytes: usize) -> Result<Value, ProblemKind> {
    let json_type = raw.header("content-type").is_some_and(|t| {
        let essence = t.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
    });
    if !json_type {
        return Err(ProblemKind::UnsupportedMediaType);
    }
    let body = raw.body.unwrap_or("");
    if body.len() > max_body_bytes {
        return Err(ProblemKind::PayloadTooLarge);
    }
    serde_json::from_str(body).map_err(|_| ProblemKind::BadRequest)
}

/// `{"seat_ids": [strings]}` and nothing else.
fn seat_ids(body: &Value) -> Result<Vec<SeatId>, ProblemKind> {
    let obj = body.as_object().filter(|o| o.len() == 1).ok_or(ProblemKind::BadRequest)?;
    let list = obj.get("seat_ids").and_then(Value::as_array).ok_or(ProblemKind::BadRequest)?;
    list.iter().map(|v| v.as_str().map(SeatId::from).ok_or(ProblemKind::BadRequest)).collect()
}

/// `?state=<seat state>` or no query; anything else is a 400.
fn seat_query(query: Option<&str>) -> Result<Option<SeatState>, ProblemKind> {
    let Some(q) = query.filter(|q| !q.is_empty()) else { return Ok(None) };
    let (k, v) = q.split_once('=').ok_or(ProblemKind::BadRequest)?;
    if k != "state" || q.contains('&') {
        return Err(ProblemKind::BadRequest);
    }
    let state = SeatState::parse(v).ok_or(ProblemKind::BadRequest)?;
    let _ = state_index(state);
    Ok(Some(state))
}

/// Reads `raw` as the service's surface does (the credential's user is the sender).
pub fn classify(raw: &Raw<'_>, max_body_bytes: usize) -> Class {
    match read(raw, max_body_bytes) {
        Ok(c) => c,
        Err(kind) => Class::Refused(kind),
    }
}

fn read(raw: &Raw<'_>, max_body_bytes: usize) -> Result<Class, ProblemKind> {
    let (path, query) = match raw.path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (raw.path, None),
    };
    let (t, params) = template(path).ok_or(ProblemKind::NotFound)?;
    if !ROUTES.contains(&(raw.method, t)) {
        return Err(ProblemKind::MethodNotAllowed);
    }
    match (raw.method, t) {
        ("GET", "/healthz" | "/readyz") => return Ok(Class::Route(Route::Healthz)),
        ("GET", "/livez") => return Ok(Class::Route(Route::Livez)),
        ("GET", "/metrics") => return Ok(Class::Route(Route::Metrics)),
        ("GET", "/openapi.json") => return Ok(Class::Route(Route::OpenApi)),
        ("POST", "/v1/webhooks/provider") => return Ok(Class::Route(Route::Webhook)),
        _ => {}
    }
    let who = who(raw.credential)?;
    let params = Params { event: EventId::new(params.first().cloned().unwrap_or_default()), all: params, query };
    authed_route(raw, t, &params, &who, max_body_bytes)
}

/// A route's path parameters (the event first, when it has one) and query.
struct Params<'a> {
    event: EventId,
    all: Vec<String>,
    query: Option<&'a str>,
}

impl Params<'_> {
    fn uuid<T: From<Uuid>>(&self, i: usize) -> Result<T, ProblemKind> {
        Uuid::parse_str(&self.all[i]).map(T::from).map_err(|_| ProblemKind::BadRequest)
    }
}

impl Who {
    /// `400` for an event id that is not one; `403` for an event outside the credential's scope.
    fn scoped(&self, ev: &EventId) -> Result<(), ProblemKind> {
        if !valid_id(ev) {
            return Err(ProblemKind::BadRequest);
        }
        match &self.events {
            Some(list) if !list.iter().any(|e| e == ev || e == "*") => Err(ProblemKind::Forbidden),
            _ => Ok(()),
        }
    }

    /// `403` unless an operator.
    fn admin(&self) -> Result<(), ProblemKind> {
        if self.admin { Ok(()) } else { Err(ProblemKind::Forbidden) }
    }
}

/// A route that needs a credential, the credential verified.
fn authed_route(
    raw: &Raw<'_>,
    t: &str,
    p: &Params<'_>,
    who: &Who,
    max_body_bytes: usize,
) -> Result<Class, ProblemKind> {
    let ev = p.event.clone();
    match t {
        "/v1/events" => {
            let (event_id, seat_ids, price_cents) = create_event_body(&json_body(raw, max_body_bytes)?)?;
            who.admin()?;
            Ok(Class::Route(Route::CreateEvent { event_id: EventId::from(event_id), seat_ids, price_cents }))
        }
        "/v1/events/{e}/seats" => {
            let state = seat_query(p.query)?;
            who.scoped(&ev)?;
            let if_none_match = raw.header("if-none-match").map(str::to_string);
            Ok(Class::Typed(ClientOp::SeatMap { event_id: ev, state, if_none_match }))
        }
        "/v1/events/{e}/holds" => {
            let seat_ids = seat_ids(&json_body(raw, max_body_bytes)?)?;
            who.scoped(&ev)?;
            let admission = raw.header("admission-token").map(str::to_string);
            Ok(Class::Typed(ClientOp::Hold { event_id: ev, seat_ids, admission }))
        }
        "/v1/events/{e}/holds/{t}" => {
            let hold_token: HoldToken = p.uuid(1)?;
            who.scoped(&ev)?;
            Ok(Class::Typed(ClientOp::Release { event_id: ev, hold_token }))
        }
        "/v1/events/{e}/holds/{t}/checkout" => checkout(raw, p, who, max_body_bytes),
        "/v1/events/{e}/waiting-room" => {
            let body = json_body(raw, max_body_bytes)?;
            room_body(&body)?;
            if !valid_id(&ev) {
                return Err(ProblemKind::BadRequest);
            }
            who.admin()?;
            Ok(Class::Route(Route::OpenRoom { event_id: ev, body }))
        }
        "/v1/events/{e}/queue" | "/v1/events/{e}/queue/lottery" => {
            who.scoped(&ev)?;
            Ok(Class::Route(match (raw.method, t) {
                ("POST", _) => Route::Join { event_id: ev },
                (_, "/v1/events/{e}/queue") => Route::QueueStatus { event_id: ev },
                _ => Route::Lottery { event_id: ev },
            }))
        }
        "/v1/orders/{o}" => Ok(Class::Typed(ClientOp::OrderStatus { order_id: p.uuid(0)? })),
        "/v1/admin/unresolved" => {
            who.admin()?;
            Ok(Class::Route(Route::Unresolved))
        }
        _ => unreachable!("every route template is handled"),
    }
}

/// A checkout: the hold token, the body, the event, then its `Idempotency-Key`.
fn checkout(raw: &Raw<'_>, p: &Params<'_>, who: &Who, max_body_bytes: usize) -> Result<Class, ProblemKind> {
    let hold_token: HoldToken = p.uuid(1)?;
    let seat_ids = seat_ids(&json_body(raw, max_body_bytes)?)?;
    who.scoped(&p.event)?;
    let key = raw.header("idempotency-key").ok_or(ProblemKind::IdempotencyKeyRequired)?;
    if !key.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
        return Err(ProblemKind::BadRequest);
    }
    let admission = raw.header("admission-token").map(str::to_string);
    let op =
        ClientOp::Checkout { event_id: p.event.clone(), hold_token, seat_ids, idempotency_key: key.into(), admission };
    Ok(Class::Typed(op))
}

/// The documented `CreateEvent` body: (event, its seats listed and ranged, price).
fn create_event_body(body: &Value) -> Result<(String, Vec<SeatId>, i64), ProblemKind> {
    let obj = body.as_object().ok_or(ProblemKind::BadRequest)?;
    if obj.keys().any(|k| !["event_id", "seat_ids", "seat_ranges", "price_cents"].contains(&k.as_str())) {
        return Err(ProblemKind::BadRequest);
    }
    let event_id = obj.get("event_id").and_then(Value::as_str).ok_or(ProblemKind::BadRequest)?.to_string();
    let price = obj.get("price_cents").and_then(super::integer::of_type::<i64>).ok_or(ProblemKind::BadRequest)?;
    let seats = match obj.get("seat_ids") {
        None => Vec::new(),
        Some(v) => seat_ids(&serde_json::json!({ "seat_ids": v }))?,
    };
    let seats = super::seat_ranges::expand(seats, obj.get("seat_ranges"))?;
    Ok((event_id, seats, price))
}

/// The documented waiting-room body's shape.
fn room_body(body: &Value) -> Result<(), ProblemKind> {
    let obj = body.as_object().ok_or(ProblemKind::BadRequest)?;
    let known = ["policy", "opens_at", "target_active_sessions", "session_ttl_s"];
    if obj.keys().any(|k| !known.contains(&k.as_str())) {
        return Err(ProblemKind::BadRequest);
    }
    let policy_ok =
        obj.get("policy").and_then(Value::as_str).is_some_and(|p| ["fifo", "lottery", "priority"].contains(&p));
    let opens_ok = obj.get("opens_at").is_some_and(Value::is_string);
    let int = |v: &Value| super::integer::of_type::<u32>(v).is_some();
    let target_ok = obj.get("target_active_sessions").is_some_and(int);
    let ttl_ok = obj.get("session_ttl_s").is_none_or(|v| v.is_null() || int(v));
    if policy_ok && opens_ok && target_ok && ttl_ok { Ok(()) } else { Err(ProblemKind::BadRequest) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw<'a>(
        method: &'a str,
        path: &'a str,
        c: &'a Credential,
        h: &'a [(String, String)],
        body: Option<&'a str>,
    ) -> Raw<'a> {
        Raw { method, path, credential: c, headers: h, body }
    }

    #[test]
    fn the_surface_refuses_in_the_documented_order() {
        let json = vec![("content-type".to_string(), "application/json".to_string())];
        let (user, none) = (Credential::User, Credential::None);
        let k = |r: Raw<'_>| match classify(&r, 64 * 1024) {
            Class::Refused(k) => Some(k),
            _ => None,
        };
        assert_eq!(
            k(raw("GET", "/v1/nope", &none, &[], None)),
            Some(ProblemKind::NotFound),
            "routing before credentials"
        );
        assert_eq!(k(raw("PUT", "/v1/events/ev/seats", &none, &[], None)), Some(ProblemKind::MethodNotAllowed));
        assert_eq!(k(raw("GET", "/v1/events/ev/seats", &none, &[], None)), Some(ProblemKind::Unauthorized));
        assert_eq!(
            k(raw("POST", "/v1/events/ev/holds", &user, &[], Some("{}"))),
            Some(ProblemKind::UnsupportedMediaType)
        );
        assert_eq!(k(raw("POST", "/v1/events/ev/holds", &user, &json, Some("{"))), Some(ProblemKind::BadRequest));
        let big = "x".repeat(70_000);
        assert_eq!(k(raw("POST", "/v1/events/ev/holds", &user, &json, Some(&big))), Some(ProblemKind::PayloadTooLarge));
        assert_eq!(
            k(raw("POST", "/v1/events/b!d/holds", &user, &json, Some(r#"{"seat_ids":[]}"#))),
            Some(ProblemKind::BadRequest)
        );
        let scoped = Credential::Scoped(vec!["other".into()]);
        assert_eq!(
            k(raw("POST", "/v1/events/ev/holds", &scoped, &json, Some(r#"{"seat_ids":["a"]}"#))),
            Some(ProblemKind::Forbidden)
        );
        assert_eq!(k(raw("GET", "/v1/events/ev/seats?state=nope", &user, &[], None)), Some(ProblemKind::BadRequest));
        assert_eq!(k(raw("DELETE", "/v1/events/ev/holds/not-a-uuid", &user, &[], None)), Some(ProblemKind::BadRequest));
        let t = Uuid::nil().to_string();
        let path = format!("/v1/events/ev/holds/{t}/checkout");
        assert_eq!(
            k(raw("POST", &path, &user, &json, Some(r#"{"seat_ids":["a"]}"#))),
            Some(ProblemKind::IdempotencyKeyRequired)
        );
        assert_eq!(k(raw("GET", "/v1/admin/unresolved", &user, &[], None)), Some(ProblemKind::Forbidden));
        let body = r#"{"event_id":"ev","seat_ids":["a"],"price_cents":100}"#;
        assert_eq!(
            k(raw("POST", "/v1/events", &user, &json, Some(body))),
            Some(ProblemKind::Forbidden),
            "the body is read first"
        );
        assert_eq!(
            classify(&raw("POST", "/v1/events/ev/holds", &user, &json, Some(r#"{"seat_ids":["a"]}"#)), 64 * 1024),
            Class::Typed(ClientOp::Hold { event_id: "ev".into(), seat_ids: vec!["a".into()], admission: None })
        );
        assert_eq!(classify(&raw("GET", "/healthz", &none, &[], None), 1), Class::Route(Route::Healthz));
    }
}
