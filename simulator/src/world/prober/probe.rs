//! One raw request of a prober (or a room user): what it sends, and how it
//! is sent to the user's home host and traced.

use crate::world::client::Raw;
use crate::world::user::Actor;
use bytes::Bytes;
use http_body_util::Full;
use invariants::trace::{ClientOp, Credential, OpResult};
use serde_json::Value;

/// A raw request: method, path, credential, further headers, body.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The method.
    pub method: &'static str,
    /// Path and query.
    pub path: String,
    /// The credential presented.
    pub credential: Credential,
    /// Further headers (lower-case names).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Option<String>,
}

impl Probe {
    /// A probe of `method` `path` with the user's own credential, no body.
    pub fn user(method: &'static str, path: impl Into<String>) -> Self {
        Self { method, path: path.into(), credential: Credential::User, headers: Vec::new(), body: None }
    }

    /// This probe with `credential`.
    pub fn as_(mut self, credential: Credential) -> Self {
        self.credential = credential;
        self
    }

    /// This probe with a JSON body.
    pub fn json(mut self, body: impl Into<String>) -> Self {
        self.headers.push(("content-type".into(), "application/json".into()));
        self.body = Some(body.into());
        self
    }

    /// This probe with header `name: value`.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_string(), value.into()));
        self
    }
}

impl Actor {
    /// Sends `p` with this user's own credential (whatever `p.credential` says) as a traced operation.
    pub(crate) async fn request(&mut self, p: Probe) -> Option<(u16, Value)> {
        let auth = Some(format!("Bearer {}", self.token));
        self.send_probe(Probe { credential: Credential::User, ..p }, auth).await
    }

    /// Sends `p` with `authorization` to the home host as a traced operation.
    pub(crate) async fn send_probe(&mut self, p: Probe, authorization: Option<String>) -> Option<(u16, Value)> {
        let host = self.home;
        let op = ClientOp::Request {
            method: p.method.to_string(),
            path: p.path.clone(),
            credential: p.credential.clone(),
            headers: p.headers.clone(),
            body: p.body.clone(),
        };
        let op_id = self.recorder.invoke(&self.user, op, Some(host as u32));
        let mut b = http::Request::builder().method(p.method).uri(p.path.as_str());
        if let Some(auth) = authorization {
            b = b.header("authorization", auth);
        }
        for (n, v) in &p.headers {
            b = b.header(n.as_str(), v.as_str());
        }
        b = b.header(crate::world::op_scope::OP_HEADER, op_id);
        let req = b.body(Full::new(Bytes::from(p.body.unwrap_or_default()))).expect("a probe is a valid request");
        let answer = self.services[host].send_request(req).await;
        let read = p.path.ends_with("/queue") || p.path.ends_with("/queue/lottery");
        self.record_probe(op_id, answer, read)
    }

    /// Records a probe's answer (its body too when `keep_body`: an answer the auditor reads).
    fn record_probe(&mut self, op_id: u64, answer: Result<Raw, String>, keep_body: bool) -> Option<(u16, Value)> {
        match answer {
            Ok(raw) => {
                let body: Value = serde_json::from_slice(&raw.body).unwrap_or(Value::Null);
                match raw.status {
                    200..=299 | 304 => {
                        let fields = body.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
                        let kept = keep_body.then(|| String::from_utf8_lossy(&raw.body).into_owned());
                        self.recorder.ok(op_id, OpResult::Answered { fields, body: kept }, raw.status);
                    }
                    400..=499 => {
                        let kind = crate::world::user::kind_of(&body);
                        self.recorder.fail(op_id, kind, raw.status, &body);
                    }
                    s => self.recorder.unknown(op_id, &format!("http {s} {}", crate::world::user::kind_of(&body))),
                }
                Some((raw.status, body))
            }
            Err(e) => {
                self.recorder.unknown(op_id, &e);
                self.fail_over();
                None
            }
        }
    }
}
