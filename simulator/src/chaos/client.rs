//! Real HTTP clients of a chaos run and the client history they record:
//! every request with its start and end wall time and its outcome: a status,
//! or `unknown` (transport error or timeout: Jepsen's `:info`).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// One request's bound: past it the outcome is unknown.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// History entries kept at most.
const MAX_HISTORY: usize = 200_000;

/// What a request came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// An answer with this status.
    Status(u16),
    /// No answer: transport error or timeout. Neither success nor failure.
    Unknown(String),
}

/// One request of the client history.
#[derive(Debug, Clone, Serialize)]
pub struct Op {
    /// Who sent it (`user7`, `storm`).
    pub client: String,
    /// `METHOD /path` (ids included).
    pub request: String,
    /// Which bookingd slot.
    pub slot: usize,
    /// Wall ms since the run began, at send and at answer.
    pub start_ms: u64,
    /// See `start_ms`.
    pub end_ms: u64,
    /// What it came to.
    pub outcome: Outcome,
    /// The problem type of an error answer, if any.
    pub problem: Option<String>,
    /// What the sender kept of the answer's body (a queue answer's state
    /// and admission expiry), when it asked for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

#[cfg(test)]
impl Op {
    /// For the judges' tests: `client`'s `request` on slot 0, sent and
    /// answered `status` at `(start_ms, end_ms)`, with `detail` kept.
    pub fn answered(
        client: &str,
        request: &str,
        (start_ms, end_ms): (u64, u64),
        status: u16,
        detail: Option<Value>,
    ) -> Op {
        Op {
            client: client.into(),
            request: request.into(),
            slot: 0,
            start_ms,
            end_ms,
            outcome: Outcome::Status(status),
            problem: None,
            detail,
        }
    }
}

/// The shared history.
pub struct History {
    start: Instant,
    epoch_start_ms: i64,
    ops: Mutex<Vec<Op>>,
}

impl History {
    /// An empty history whose clock starts at `start`.
    pub fn new(start: Instant) -> Self {
        use booking::clock::Clock;
        let epoch_start_ms = booking::clock::SystemClock.now_ms() - start.elapsed().as_millis() as i64;
        Self { start, epoch_start_ms, ops: Mutex::new(Vec::new()) }
    }

    /// The system clock's epoch ms when the run began (to compare history
    /// times with the service's clock, which is the same machine's).
    pub fn epoch_start_ms(&self) -> i64 {
        self.epoch_start_ms
    }

    /// Wall ms since the run began.
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn push(&self, op: Op) {
        let mut g = self.ops.lock().expect("history poisoned");
        if g.len() < MAX_HISTORY {
            g.push(op);
        }
    }

    /// Every op, in completion order.
    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().expect("history poisoned").clone()
    }
}

/// An answer.
#[derive(Debug)]
pub struct Resp {
    /// HTTP status.
    pub status: u16,
    /// The body as JSON (`Null` when it is not).
    pub body: Value,
}

/// A client of every bookingd slot, recording into a [`History`].
#[derive(Clone)]
pub struct Api {
    client: Client<HttpConnector, Full<Bytes>>,
    slots: Arc<Vec<SocketAddr>>,
    history: Arc<History>,
}

impl Api {
    /// A client of `slots`.
    pub fn new(slots: Vec<SocketAddr>, history: Arc<History>) -> Self {
        let mut conn = HttpConnector::new();
        conn.set_connect_timeout(Some(Duration::from_secs(1)));
        Self { client: Client::builder(TokioExecutor::new()).build(conn), slots: Arc::new(slots), history }
    }

    /// How many slots.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// The address of slot `slot`.
    pub fn addr(&self, slot: usize) -> SocketAddr {
        self.slots[slot % self.slots.len()]
    }

    /// Sends `method path` to slot `slot` with `headers` and a JSON `body`;
    /// records it; `Err` when the outcome is unknown.
    pub async fn send(
        &self,
        client: &str,
        slot: usize,
        method: &'static str,
        path: &str,
        headers: &[(&str, String)],
        body: Option<Value>,
    ) -> Result<Resp, String> {
        self.send_keeping(client, slot, method, path, headers, body, |_| None).await
    }

    /// [`Api::send`], keeping `keep(answer body)` in the history's op (its `detail`).
    #[allow(clippy::too_many_arguments)]
    pub async fn send_keeping(
        &self,
        client: &str,
        slot: usize,
        method: &'static str,
        path: &str,
        headers: &[(&str, String)],
        body: Option<Value>,
        keep: fn(&Value) -> Option<Value>,
    ) -> Result<Resp, String> {
        let slot = slot % self.slots.len();
        let mut b = http::Request::builder().method(method).uri(format!("http://{}{}", self.slots[slot], path));
        for (k, v) in headers {
            b = b.header(*k, v);
        }
        let bytes = match &body {
            Some(v) => {
                b = b.header("content-type", "application/json");
                Bytes::from(v.to_string())
            }
            None => Bytes::new(),
        };
        let req = b.body(Full::new(bytes)).map_err(|e| e.to_string())?;
        let start_ms = self.history.now_ms();
        let call = async {
            let resp = self.client.request(req).await.map_err(|e| format!("{e}"))?;
            let status = resp.status().as_u16();
            let bytes = resp.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
            Ok::<_, String>(Resp { status, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null) })
        };
        let result = match tokio::time::timeout(CALL_TIMEOUT, call).await {
            Ok(r) => r,
            Err(_) => Err("timed out".to_string()),
        };
        let (outcome, problem, detail) = match &result {
            Ok(r) => (
                Outcome::Status(r.status),
                r.body.get("type").and_then(|t| t.as_str()).map(str::to_string),
                keep(&r.body),
            ),
            Err(e) => (Outcome::Unknown(e.clone()), None, None),
        };
        self.history.push(Op {
            client: client.to_string(),
            request: format!("{method} {path}"),
            slot,
            start_ms,
            end_ms: self.history.now_ms(),
            outcome,
            problem,
            detail,
        });
        result
    }
}
