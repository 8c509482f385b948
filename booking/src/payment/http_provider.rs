//! [`HttpProvider`]: the [`PaymentProvider`] over HTTP/1 (hyper 1 +
//! hyper-util's legacy client), generic over the connector so that the
//! simulator can pass a turmoil connector. Production uses [`HttpConnector`].
//!
//! Every call is bounded by `timeout` via `tokio::time::timeout` (simulated
//! time under turmoil). Classification: a connect failure is `Unreachable`
//! (never sent); a timeout, a reset after sending, a 5xx or an unreadable
//! body is `Unknown`; any other 4xx is `Refused`.

use super::provider::{CreatePayment, PaymentProvider, ProviderError, ProviderPayment, RefundStatus};
use super::wire::{CreatePaymentBody, CreateRefundBody, IDEMPOTENCY_KEY_HEADER, PaymentRecord, Problem};
use crate::model::{CompensationId, PaymentOpId};
use async_trait::async_trait;
use bytes::Bytes;
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::time::Duration;
use uuid::Uuid;

/// Upper bound on a provider response body.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Why an [`HttpProvider`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpProviderConfigError {
    /// The base URL is not `http://host[:port]` (no path, query or https).
    #[error("invalid provider base url {0:?}: expected http://host[:port]")]
    BadBaseUrl(String),
    /// The timeout is zero.
    #[error("request timeout must be > 0")]
    ZeroTimeout,
}

/// A payment provider reached over HTTP.
pub struct HttpProvider<C> {
    client: Client<C, Full<Bytes>>,
    base_url: String,
    timeout: Duration,
}

impl<C> std::fmt::Debug for HttpProvider<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider").field("base_url", &self.base_url).field("timeout", &self.timeout).finish()
    }
}

impl HttpProvider<HttpConnector> {
    /// A provider at `base_url` (`http://host:port`) over real TCP.
    pub fn with_http(base_url: &str, timeout: Duration) -> Result<Self, HttpProviderConfigError> {
        Self::new(HttpConnector::new(), base_url, timeout)
    }
}

impl<C> HttpProvider<C>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    /// A provider at `base_url` (`http://host[:port]`, no trailing path) reached
    /// through `connector`; each call (request and body) is bounded by `timeout` (> 0).
    pub fn new(connector: C, base_url: &str, timeout: Duration) -> Result<Self, HttpProviderConfigError> {
        let trimmed = base_url.trim_end_matches('/');
        let uri: Uri = trimmed.parse().map_err(|_| HttpProviderConfigError::BadBaseUrl(base_url.into()))?;
        let path_ok = uri.path().is_empty() || uri.path() == "/";
        if uri.scheme_str() != Some("http") || uri.authority().is_none() || !path_ok || uri.query().is_some() {
            return Err(HttpProviderConfigError::BadBaseUrl(base_url.into()));
        }
        if timeout.is_zero() {
            return Err(HttpProviderConfigError::ZeroTimeout);
        }
        let client = Client::builder(TokioExecutor::new()).pool_timer(TokioTimer::new()).build(connector);
        Ok(Self { client, base_url: trimmed.to_string(), timeout })
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<Uuid>,
        body: Option<Vec<u8>>,
    ) -> Result<(StatusCode, Bytes), ProviderError> {
        let mut builder = Request::builder().method(method).uri(format!("{}{}", self.base_url, path));
        if let Some(key) = key {
            builder = builder.header(IDEMPOTENCY_KEY_HEADER, key.to_string());
        }
        if body.is_some() {
            builder = builder.header(http::header::CONTENT_TYPE, "application/json");
        }
        let req = builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| ProviderError::Refused { status: 400, detail: format!("cannot build request: {e}") })?;
        let sent = async {
            let resp = self.client.request(req).await.map_err(|e| {
                if e.is_connect() {
                    ProviderError::Unreachable(e.to_string())
                } else {
                    ProviderError::Unknown(format!("transport: {e}"))
                }
            })?;
            let status = resp.status();
            let limited = http_body_util::Limited::new(resp.into_body(), MAX_RESPONSE_BYTES);
            let bytes = limited
                .collect()
                .await
                .map_err(|e| ProviderError::Unknown(format!("reading response: {e}")))?
                .to_bytes();
            Ok((status, bytes))
        };
        match tokio::time::timeout(self.timeout, sent).await {
            Ok(r) => r,
            Err(_) => Err(ProviderError::Unknown(format!("timed out after {} ms", self.timeout.as_millis()))),
        }
    }
}

fn problem_detail(status: StatusCode, body: &Bytes) -> String {
    match serde_json::from_slice::<Problem>(body) {
        Ok(p) => format!("{}: {}", p.type_, p.detail),
        Err(_) => format!("http {status}"),
    }
}

/// Maps a non-2xx answer: 5xx (and anything odd) unknown, 4xx refused.
fn error_for(status: StatusCode, body: &Bytes) -> ProviderError {
    if status.is_client_error() {
        ProviderError::Refused { status: status.as_u16(), detail: problem_detail(status, body) }
    } else {
        ProviderError::Unknown(problem_detail(status, body))
    }
}

fn parse_payment(body: &Bytes) -> Result<ProviderPayment, ProviderError> {
    let rec: PaymentRecord =
        serde_json::from_slice(body).map_err(|e| ProviderError::Unknown(format!("unreadable payment record: {e}")))?;
    rec.to_provider_payment().ok_or_else(|| ProviderError::Unknown(format!("unknown payment status {:?}", rec.status)))
}

#[async_trait]
impl<C> PaymentProvider for HttpProvider<C>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    async fn create_payment(&self, req: &CreatePayment) -> Result<ProviderPayment, ProviderError> {
        let body = serde_json::to_vec(&CreatePaymentBody { amount_cents: req.amount_cents, order_id: req.order_id })
            .expect("serializable");
        let (status, bytes) =
            self.call(Method::POST, "/v1/payments", Some(req.idempotency_key.as_uuid()), Some(body)).await?;
        if status.is_success() { parse_payment(&bytes) } else { Err(error_for(status, &bytes)) }
    }

    async fn fetch_payment(&self, idempotency_key: PaymentOpId) -> Result<Option<ProviderPayment>, ProviderError> {
        let (status, bytes) = self.call(Method::GET, &format!("/v1/payments/{idempotency_key}"), None, None).await?;
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if status.is_success() { parse_payment(&bytes).map(Some) } else { Err(error_for(status, &bytes)) }
    }

    async fn cancel_payment(&self, idempotency_key: PaymentOpId) -> Result<ProviderPayment, ProviderError> {
        let (status, bytes) = self
            .call(Method::POST, &format!("/v1/payments/{idempotency_key}/cancel"), None, Some(b"{}".to_vec()))
            .await?;
        if status.is_success() { parse_payment(&bytes) } else { Err(error_for(status, &bytes)) }
    }

    async fn refund(
        &self,
        refund_key: CompensationId,
        payment_key: PaymentOpId,
        amount_cents: i64,
    ) -> Result<RefundStatus, ProviderError> {
        let body = serde_json::to_vec(&CreateRefundBody { payment_key: payment_key.as_uuid(), amount_cents })
            .expect("serializable");
        let (status, bytes) = self.call(Method::POST, "/v1/refunds", Some(refund_key.as_uuid()), Some(body)).await?;
        if status.is_success() {
            return Ok(RefundStatus::Succeeded);
        }
        if status == StatusCode::PAYMENT_REQUIRED {
            return Ok(RefundStatus::Failed { reason: problem_detail(status, &bytes) });
        }
        Err(error_for(status, &bytes))
    }
}
