//! How the fake provider delivers webhooks: a [`WebhookTransport`] trait and
//! its HTTP implementation over hyper-util's legacy client, generic over the
//! connector (a turmoil connector inside the simulator, [`HttpConnector`] otherwise).

use crate::payment::webhook::{SIGNATURE_HEADER, TIMESTAMP_HEADER};
use async_trait::async_trait;
use bytes::Bytes;
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::time::Duration;

/// Why one delivery of a webhook did not land.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// The endpoint answered with this 4xx status: it refused the webhook.
    #[error("webhook refused with {0}")]
    Refused(u16),
    /// No answer in time, a transport error, or another non-2xx status.
    #[error("webhook delivery failed: {0}")]
    Failed(String),
}

/// Delivers one signed webhook body. A non-2xx answer or a transport error is an `Err`.
#[async_trait]
pub trait WebhookTransport: Send + Sync + 'static {
    /// POSTs `body` with the [`TIMESTAMP_HEADER`] and [`SIGNATURE_HEADER`] values.
    async fn deliver(&self, timestamp_ms: i64, signature: &str, body: Bytes) -> Result<(), DeliveryError>;
}

/// Webhooks over HTTP to one URL.
pub struct HttpWebhookTransport<C> {
    client: Client<C, Full<Bytes>>,
    url: Uri,
    timeout: Duration,
}

impl<C> std::fmt::Debug for HttpWebhookTransport<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpWebhookTransport").field("url", &self.url).finish_non_exhaustive()
    }
}

impl HttpWebhookTransport<HttpConnector> {
    /// Webhooks to `url` over real TCP.
    pub fn with_http(url: &str, timeout: Duration) -> Result<Self, String> {
        Self::new(HttpConnector::new(), url, timeout)
    }
}

impl<C> HttpWebhookTransport<C>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    /// Webhooks to `url` (an `http://` URL with a path) through `connector`,
    /// each delivery bounded by `timeout` (> 0).
    pub fn new(connector: C, url: &str, timeout: Duration) -> Result<Self, String> {
        let url: Uri = url.parse().map_err(|e| format!("bad webhook url {url:?}: {e}"))?;
        if url.scheme_str() != Some("http") || url.authority().is_none() {
            return Err(format!("webhook url must be http://host[:port]/path, got {url}"));
        }
        if timeout.is_zero() {
            return Err("webhook timeout must be > 0".into());
        }
        let client = Client::builder(TokioExecutor::new()).pool_timer(TokioTimer::new()).build(connector);
        Ok(Self { client, url, timeout })
    }
}

#[async_trait]
impl<C> WebhookTransport for HttpWebhookTransport<C>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    async fn deliver(&self, timestamp_ms: i64, signature: &str, body: Bytes) -> Result<(), DeliveryError> {
        let req = Request::builder()
            .method(Method::POST)
            .uri(self.url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(TIMESTAMP_HEADER, timestamp_ms.to_string())
            .header(SIGNATURE_HEADER, signature)
            .body(Full::new(body))
            .map_err(|e| DeliveryError::Failed(e.to_string()))?;
        let call = async {
            let resp = self.client.request(req).await.map_err(|e| DeliveryError::Failed(e.to_string()))?;
            let status = resp.status();
            // Drain (bounded by the timeout) so the connection can be reused.
            let _ = resp.into_body().collect().await;
            match status {
                s if s.is_success() => Ok(()),
                s if s.is_client_error() => Err(DeliveryError::Refused(s.as_u16())),
                s => Err(DeliveryError::Failed(format!("answered {s}"))),
            }
        };
        tokio::time::timeout(self.timeout, call).await.map_err(|_| DeliveryError::Failed("timed out".into()))?
    }
}
