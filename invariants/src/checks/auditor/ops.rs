//! The auditor's client side: each request from its sending to its answer,
//! with the store calls it made, judged by [`crate::model::http`].

use super::Auditor;
use crate::Subject;
use crate::model::admission::Use;
use crate::model::http::ops::{Linked, Served, agrees, from_calls};
use crate::model::http::rate::Verdict;
use crate::model::http::{Expected, status_of};
use crate::model::{Finding, shown};
use crate::store_call::StoreCall;
use crate::trace::{ClientOp, OpId, TraceEvent, TraceKind};
use booking::problem_kind::ProblemKind;
use booking::store::BeginPaymentOutcome;

/// A request in flight.
#[derive(Debug)]
pub(super) struct OpRecord<'a> {
    client: &'a str,
    op: &'a ClientOp,
    host: Option<u32>,
    invoke: &'a TraceEvent,
    calls: Vec<Linked>,
    seqs: Vec<u64>,
    /// The gate's answer when it was sent (waiting-room holds and checkouts).
    gate_at_send: Option<Result<uuid::Uuid, ProblemKind>>,
}

/// What a hold or checkout presents to the gate: event, token, use.
fn gated(op: &ClientOp) -> Option<(&str, Option<&str>, Use<'_>)> {
    match op {
        ClientOp::Hold { event_id, admission, .. } => Some((event_id, admission.as_deref(), Use::Hold)),
        ClientOp::Checkout { event_id, admission, hold_token, idempotency_key, .. } => {
            Some((event_id, admission.as_deref(), Use::Checkout { hold_token: *hold_token, key: idempotency_key }))
        }
        _ => None,
    }
}

impl<'a> Auditor<'a> {
    /// The serving host's clock at simulated `at_ms`, moved by `latency_ms` (signed).
    fn host_clock(&self, host: Option<u32>, at_ms: i64, latency_ms: i64) -> i64 {
        let store_ms = self.cfg.epoch_ms + at_ms + latency_ms;
        host.map_or(store_ms, |h| self.cfg.host_clock_ms(h, store_ms))
    }

    /// The gate's answer for `op` at host time `now_ms`, if `op` meets the gate.
    fn gate(&self, client: &str, op: &ClientOp, now_ms: i64) -> Option<Result<uuid::Uuid, ProblemKind>> {
        let (event_id, token, what) = gated(op)?;
        self.admissions
            .has_room(event_id)
            .then(|| self.admissions.gate(&self.cfg.admission_secret, event_id, client, token, &what, now_ms))
    }

    pub(super) fn invoke(
        &mut self,
        e: &'a TraceEvent,
        op_id: OpId,
        client: &'a str,
        op: &'a ClientOp,
        host: Option<u32>,
    ) {
        let now = self.host_clock(host, e.at_ms, self.cfg.min_latency_ms);
        let gate_at_send = self.gate(client, op, now);
        let rec = OpRecord { client, op, host, invoke: e, calls: Vec::new(), seqs: vec![e.seq], gate_at_send };
        self.ops.insert(op_id, rec);
    }

    /// A store call made by request `op_id`: the gate must have let it through at that moment.
    pub(super) fn link(&mut self, seq: u64, op_id: OpId, now_ms: i64, linked: Linked) {
        let Some(rec) = self.ops.get(&op_id) else { return };
        let (client, op) = (rec.client, rec.op);
        let host_now = rec.host.map_or(now_ms, |h| self.cfg.host_clock_ms(h, now_ms));
        if rec.calls.is_empty()
            && let Some(Err(kind)) = self.gate(client, op, host_now)
        {
            let subject = Subject::Request { op_id, client: client.to_string() };
            let f = Finding::new(
                subject,
                format!("reached the store past the waiting room's gate, which refuses it ({kind})"),
            );
            let mut seqs = rec.seqs.clone();
            seqs.push(seq);
            self.report(f, seqs);
        }
        if let (
            Some((event_id, _, _)),
            StoreCall::BeginPayment { req, answer: Ok(BeginPaymentOutcome { replayed: false, .. }) },
        ) = (gated(op), &linked.call)
        {
            self.admissions.purchased(event_id, client, req.hold_token, &req.idempotency_key);
        }
        let rec = self.ops.get_mut(&op_id).expect("looked up");
        rec.calls.push(linked);
        rec.seqs.push(seq);
    }

    /// A request's answer (or its absence), judged.
    pub(super) fn complete(&mut self, e: &'a TraceEvent, op_id: OpId) {
        let Some(mut rec) = self.ops.remove(&op_id) else { return };
        rec.seqs.push(e.seq);
        let (from, to) = (
            self.host_clock(rec.host, rec.invoke.at_ms, self.cfg.min_latency_ms),
            self.host_clock(rec.host, e.at_ms.max(rec.invoke.at_ms), -self.cfg.min_latency_ms),
        );
        let to = to.max(from);
        let got = match &e.kind {
            TraceKind::Ok { result, status, .. } => Some(Expected::Answered(*status, result.clone())),
            TraceKind::Fail { error_kind, status, .. } => Some(Expected::Refused(*status, *error_kind)),
            _ => None,
        };
        let (mut certain, mut possible) = (None, Vec::new());
        if let (ClientOp::Hold { .. }, Some(host)) = (rec.op, rec.host) {
            match self.limiter.judge(host, rec.client, from, to, self.cfg.hold_attempts_per_minute) {
                Verdict::Refused => certain = Some(ProblemKind::RateLimited),
                Verdict::Maybe => possible.push(ProblemKind::RateLimited),
                Verdict::Passes => {}
            }
            let limited = matches!(got, Some(Expected::Refused(_, ProblemKind::RateLimited)));
            if !limited {
                self.limiter.count(host, rec.client, from, to, got.is_some());
            }
        }
        if certain.is_none() && rec.calls.is_empty() {
            let at_end = self.gate(rec.client, rec.op, to);
            for g in [rec.gate_at_send, at_end].into_iter().flatten() {
                if let Err(kind) = g
                    && !possible.contains(&kind)
                {
                    possible.push(kind);
                }
            }
            if let ([k], [Some(Err(a)), Some(Err(b))]) = (&possible[..], [rec.gate_at_send, at_end])
                && a == b
                && *k == a
            {
                certain = possible.pop();
            }
        }
        let Some(got) = got else { return };
        let served = Served { client: rec.client, op: rec.op, calls: &rec.calls, certain, possible };
        if let Some(detail) = self.judge(&served, &got) {
            self.report(Finding::new(Subject::Request { op_id, client: rec.client.to_string() }, detail), rec.seqs);
        }
    }

    /// Why `got` is not an answer `served` may get, if it is not.
    fn judge(&self, s: &Served<'_>, got: &Expected) -> Option<String> {
        if let Expected::Refused(status, kind) = got
            && *status != status_of(*kind)
        {
            return Some(format!("answered {kind} with status {status}, the API says {}", status_of(*kind)));
        }
        let pre = |k: &ProblemKind| Expected::refused(*k) == *got;
        if s.calls.is_empty() && (s.certain.iter().any(pre) || s.possible.iter().any(pre)) {
            return None;
        }
        if let Some(k) = s.certain {
            return Some(format!("answered {}, expected {k} before the store", shown(got)));
        }
        match from_calls(self.cfg, s) {
            Err(why) => Some(format!("{}: {why}; answered {}", op_name(s.op), shown(got))),
            Ok(want) if agrees(&want, got) => None,
            Ok(want) => Some(format!("{}: expected {}, answered {}", op_name(s.op), shown(&want), shown(got))),
        }
    }
}

fn op_name(op: &ClientOp) -> &'static str {
    match op {
        ClientOp::Hold { .. } => "hold",
        ClientOp::Release { .. } => "release",
        ClientOp::Checkout { .. } => "checkout",
        ClientOp::OrderStatus { .. } => "order status",
        ClientOp::SeatMap { .. } => "seat map",
        ClientOp::Request { .. } => "request",
    }
}
