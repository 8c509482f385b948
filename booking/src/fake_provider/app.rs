//! The fake provider's axum [`Router`], listener-free: the caller serves it
//! on a tokio listener (the binary) or a turmoil one (the simulator).

use super::faults::ProviderFaults;
use super::state::{FakeError, FakeProvider};
use crate::payment::wire::{
    CreatePaymentBody, CreateRefundBody, IDEMPOTENCY_KEY_HEADER, PROBLEM_CONTENT_TYPE, Problem,
};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use uuid::Uuid;

/// Upper bound on a request body.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The router: `/v1/payments`, `/v1/payments/{key}`, `/v1/payments/{key}/cancel`,
/// `/v1/refunds`, `GET/POST /admin/faults`, `GET /admin/ledger`.
pub fn app(state: FakeProvider) -> Router {
    Router::new()
        .route("/v1/payments", post(create_payment))
        .route("/v1/payments/{key}", get(fetch_payment))
        .route("/v1/payments/{key}/cancel", post(cancel_payment))
        .route("/v1/refunds", post(create_refund))
        .route("/admin/faults", get(get_faults).post(set_faults))
        .route("/admin/ledger", get(ledger))
        .fallback(|| async { problem(404, "not-found", "no such route".into()) })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

fn problem(status: u16, kind: &str, detail: String) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = Problem { type_: format!("/problems/{kind}"), title: kind.replace('-', " "), status, detail };
    (code, [(http::header::CONTENT_TYPE, PROBLEM_CONTENT_TYPE)], serde_json::to_vec(&body).expect("serializable"))
        .into_response()
}

impl IntoResponse for FakeError {
    fn into_response(self) -> Response {
        problem(self.status(), self.kind(), self.to_string())
    }
}

fn idempotency_key(headers: &HeaderMap) -> Result<Uuid, FakeError> {
    let raw = headers
        .get(IDEMPOTENCY_KEY_HEADER)
        .ok_or_else(|| FakeError::InvalidRequest("Idempotency-Key header required".into()))?;
    raw.to_str()
        .ok()
        .and_then(|s| Uuid::parse_str(s.trim()).ok())
        .ok_or_else(|| FakeError::InvalidRequest("Idempotency-Key must be a UUID".into()))
}

fn parse_key(s: &str) -> Result<Uuid, FakeError> {
    Uuid::parse_str(s).map_err(|_| FakeError::InvalidRequest("the key in the path must be a UUID".into()))
}

fn json_body<T: DeserializeOwned>(body: &Bytes) -> Result<T, FakeError> {
    serde_json::from_slice(body).map_err(|e| FakeError::InvalidRequest(format!("bad JSON body: {e}")))
}

async fn create_payment(State(s): State<FakeProvider>, headers: HeaderMap, body: Bytes) -> Result<Response, FakeError> {
    let key = idempotency_key(&headers)?;
    let body: CreatePaymentBody = json_body(&body)?;
    Ok(Json(s.create_payment(key, body).await?).into_response())
}

async fn fetch_payment(State(s): State<FakeProvider>, Path(key): Path<String>) -> Result<Response, FakeError> {
    Ok(Json(s.fetch_payment(parse_key(&key)?).await?).into_response())
}

async fn cancel_payment(State(s): State<FakeProvider>, Path(key): Path<String>) -> Result<Response, FakeError> {
    Ok(Json(s.cancel_payment(parse_key(&key)?).await?).into_response())
}

async fn create_refund(State(s): State<FakeProvider>, headers: HeaderMap, body: Bytes) -> Result<Response, FakeError> {
    let key = idempotency_key(&headers)?;
    let body: CreateRefundBody = json_body(&body)?;
    Ok(Json(s.refund(key, body).await?).into_response())
}

async fn get_faults(State(s): State<FakeProvider>) -> Json<ProviderFaults> {
    Json(s.faults())
}

async fn set_faults(State(s): State<FakeProvider>, body: Bytes) -> Result<Response, FakeError> {
    let faults: ProviderFaults = json_body(&body)?;
    s.set_faults(faults.clone()).map_err(FakeError::InvalidRequest)?;
    Ok(Json(faults).into_response())
}

async fn ledger(State(s): State<FakeProvider>) -> Response {
    Json(s.ledger()).into_response()
}
