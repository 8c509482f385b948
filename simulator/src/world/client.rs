//! The virtual users' HTTP client: hyper over turmoil, every request bounded
//! by a timeout. An answer is a status and a JSON body; no answer is
//! [`Reply::Unknown`] (Jepsen's `:info`), never a failure.

use crate::world::net::SimConnector;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use std::time::Duration;

/// The answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// An HTTP answer arrived.
    Answered {
        /// Its status.
        status: u16,
        /// Its body as JSON (`Null` if empty or not JSON).
        body: Value,
    },
    /// No answer: timeout, connection refused or reset, host down.
    Unknown(String),
}

/// A raw answer: status, the headers the simulator reads, body.
#[derive(Debug, Clone)]
pub struct Raw {
    /// The status.
    pub status: u16,
    /// `ETag`, if any.
    pub etag: Option<String>,
    /// `x-holdfast-source` (where a seat map came from), if any.
    pub source: Option<String>,
    /// The body.
    pub body: Bytes,
}

/// One request.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// `GET`, `POST`, `DELETE`.
    pub method: &'a str,
    /// Path and query.
    pub path: String,
    /// Bearer token.
    pub token: Option<&'a str>,
    /// Idempotency key header.
    pub idempotency_key: Option<&'a str>,
    /// Admission token header (waiting-room events).
    pub admission: Option<&'a str>,
    /// `If-None-Match` header (seat-map revalidation).
    pub if_none_match: Option<&'a str>,
    /// JSON body.
    pub body: Option<Value>,
    /// The trace's op id of this request, sent as `x-holdfast-op` (see [`crate::world::op_scope`]).
    pub op: Option<invariants::trace::OpId>,
}

/// A client bound to one service host (`host:port`).
#[derive(Clone)]
pub struct SimClient {
    client: Client<SimConnector, Full<Bytes>>,
    authority: String,
    timeout: Duration,
}

impl std::fmt::Debug for SimClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimClient").field("authority", &self.authority).finish_non_exhaustive()
    }
}

impl SimClient {
    /// A client for `authority` (`host:port`) whose requests give up after `timeout`.
    pub fn new(authority: impl Into<String>, timeout: Duration) -> Self {
        let client = Client::builder(TokioExecutor::new()).pool_max_idle_per_host(4).build(SimConnector);
        Self { client, authority: authority.into(), timeout }
    }

    /// The service this client talks to.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// Sends `call` and waits at most the timeout for the whole answer.
    pub async fn send(&self, call: Call<'_>) -> Reply {
        match self.send_raw(call).await {
            Ok(raw) => {
                Reply::Answered { status: raw.status, body: serde_json::from_slice(&raw.body).unwrap_or(Value::Null) }
            }
            Err(e) => Reply::Unknown(e),
        }
    }

    /// Sends `call`; the raw answer, or why there is none.
    pub async fn send_raw(&self, call: Call<'_>) -> Result<Raw, String> {
        let mut b = http::Request::builder().method(call.method).uri(format!("http://{}{}", self.authority, call.path));
        if let Some(t) = call.token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        if let Some(k) = call.idempotency_key {
            b = b.header("idempotency-key", k);
        }
        if let Some(a) = call.admission {
            b = b.header("admission-token", a);
        }
        if let Some(v) = call.if_none_match {
            // From bytes: a tag may carry obs-text (bytes past ASCII), which `&str` headers refuse.
            let v = http::HeaderValue::from_bytes(v.as_bytes()).map_err(|e| format!("bad if-none-match: {e}"))?;
            b = b.header("if-none-match", v);
        }
        if let Some(op) = call.op {
            b = b.header(crate::world::op_scope::OP_HEADER, op);
        }
        let body = match &call.body {
            Some(v) => {
                b = b.header("content-type", "application/json");
                Full::new(Bytes::from(v.to_string()))
            }
            None => Full::new(Bytes::new()),
        };
        let req = b.body(body).map_err(|e| format!("bad request: {e}"))?;
        self.send_request(req).await
    }

    /// Sends `req` as built (any method, headers and body: the probes of the
    /// API's surface); the raw answer, or why there is none. `req`'s URI is
    /// a path: the client's authority is put in front of it.
    pub async fn send_request(&self, req: http::Request<Full<Bytes>>) -> Result<Raw, String> {
        let (mut parts, body) = req.into_parts();
        if parts.uri.authority().is_none() {
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            parts.uri = format!("http://{}{path}", self.authority).parse().map_err(|e| format!("bad uri: {e}"))?;
        }
        let req = http::Request::from_parts(parts, body);
        let fut = async {
            let resp = self.client.request(req).await.map_err(|e| format!("transport: {e}"))?;
            let status = resp.status().as_u16();
            let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
            let (etag, source) = (header("etag"), header("x-holdfast-source"));
            let body = resp.into_body().collect().await.map_err(|e| format!("body: {e}"))?.to_bytes();
            Ok::<_, String>(Raw { status, etag, source, body })
        };
        tokio::time::timeout(self.timeout, fut).await.map_err(|_| "timeout".to_string())?
    }
}
