//! The auditor's client side: each request from its sending to its answer,
//! with the store calls it made, judged by [`crate::model::http`]. A raw
//! request is first read by the surface's rules: refused there, a typed
//! operation, or another route.

use super::Auditor;
use crate::Subject;
use crate::model::admission::Admissions;
use crate::model::admission::Use;
use crate::model::http::ops::{Linked, Served, agrees, from_calls};
use crate::model::http::rate::Verdict;
use crate::model::http::routes::{self, Ctx};
use crate::model::http::surface::{self, Class, Raw, Route};
use crate::model::http::{Expected, status_of};
use crate::model::standing::Standing;
use crate::model::{Finding, shown};
use crate::store_call::StoreCall;
use crate::trace::OpResult;
use crate::trace::{ClientOp, OpId, TraceEvent, TraceKind};
use booking::model::{EventId, SessionId, UserId};
use booking::problem_kind::ProblemKind;
use booking::store::BeginPaymentOutcome;

/// Longest `Admission-Token` the service reads, bytes.
pub const MAX_ADMISSION_TOKEN_BYTES: usize = 2048;

/// A request in flight.
#[derive(Debug)]
pub(super) struct OpRecord<'a> {
    client: &'a UserId,
    /// The request as sent.
    sent: &'a ClientOp,
    /// A raw request as the surface read it (`None` for typed operations).
    class: Option<Class>,
    host: Option<u32>,
    invoke: &'a TraceEvent,
    calls: Vec<Linked>,
    seqs: Vec<u64>,
    /// The gate's answer when it was sent (waiting-room holds and checkouts).
    gate_at_send: Option<Result<SessionId, ProblemKind>>,
    /// The room as the sender's queue read found it when sent.
    queue_at_send: Option<QueueAtSend>,
    /// Whether the rooms' store was down when sent, and how many times it had gone down.
    rooms_down_at_send: (bool, u64),
    /// The order that ended the sender's session, when it had come to nothing before this was sent.
    undone_at_send: Option<booking::model::OrderId>,
}

/// A queue or lottery read's room when it was sent.
#[derive(Debug, Clone)]
struct QueueAtSend {
    /// Where the sender stood.
    standing: Option<Standing>,
    /// Whether the lottery was drawn.
    drawn: bool,
    /// How many the room had admitted.
    admitted: usize,
    /// The serving host's clock, ms.
    host_ms: i64,
}

impl OpRecord<'_> {
    /// The typed operation the request is (as sent, or as the surface read it).
    fn op(&self) -> Option<&ClientOp> {
        match (&self.class, self.sent) {
            (Some(Class::Typed(op)), _) => Some(op),
            (Some(_), _) | (None, ClientOp::Request { .. }) => None,
            (None, op) => Some(op),
        }
    }
}

/// What a hold or checkout presents to the gate: event, token, use.
fn gated(op: &ClientOp) -> Option<(&EventId, Option<&str>, Use<'_>)> {
    match op {
        ClientOp::Hold { event_id, admission, .. } => Some((event_id, admission.as_deref(), Use::Hold)),
        ClientOp::Checkout { event_id, admission, hold_token, idempotency_key, .. } => {
            Some((event_id, admission.as_deref(), Use::Checkout { hold_token: *hold_token, key: idempotency_key }))
        }
        _ => None,
    }
}

/// The event whose room reads the sender's session before answering `rec`
/// (a join, a queue read, a hold or checkout the gate meets), if any.
fn session_event<'r>(rec: &'r OpRecord<'_>) -> Option<&'r EventId> {
    match &rec.class {
        Some(Class::Route(Route::Join { event_id } | Route::QueueStatus { event_id })) => Some(event_id),
        Some(Class::Route(_) | Class::Refused(_)) => None,
        _ => rec.op().and_then(gated).map(|(event_id, _, _)| event_id),
    }
}

fn raw(op: &ClientOp) -> Option<Raw<'_>> {
    match op {
        ClientOp::Request { method, path, credential, headers, body } => {
            Some(Raw { method, path, credential, headers, body: body.as_deref() })
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
    fn gate(&self, client: &UserId, op: Option<&ClientOp>, now_ms: i64) -> Option<Result<SessionId, ProblemKind>> {
        let (event_id, token, what) = gated(op?)?;
        self.admissions
            .has_room(event_id)
            .then(|| self.admissions.gate(&self.cfg.admission_secret, event_id, client, token, &what, now_ms))
    }

    pub(super) fn invoke(
        &mut self,
        e: &'a TraceEvent,
        op_id: OpId,
        client: &'a UserId,
        op: &'a ClientOp,
        host: Option<u32>,
    ) {
        if let Some(host) = host {
            self.laws.sent(op_id, host);
        }
        let class = raw(op).map(|r| surface::classify(&r, self.cfg.max_body_bytes));
        let mut rec = OpRecord {
            client,
            sent: op,
            class,
            host,
            invoke: e,
            calls: Vec::new(),
            seqs: vec![e.seq],
            gate_at_send: None,
            queue_at_send: None,
            rooms_down_at_send: (self.rooms_down, self.rooms_downs),
            undone_at_send: None,
        };
        let now = self.host_clock(host, e.at_ms, self.cfg.min_latency_ms);
        rec.gate_at_send = self.gate(client, rec.op(), now);
        rec.undone_at_send = session_event(&rec).and_then(|ev| self.undone_purchase(ev, client));
        if let Some(Class::Route(
            Route::Join { event_id } | Route::QueueStatus { event_id } | Route::Lottery { event_id },
        )) = &rec.class
        {
            let a = &self.admissions;
            rec.queue_at_send = Some(QueueAtSend {
                standing: a.standing(event_id, client, now),
                drawn: a.drawn(event_id),
                admitted: a.admitted_count(event_id),
                host_ms: now,
            });
        }
        self.ops.insert(op_id, rec);
    }

    /// A store call made by request `op_id`: the gate must have let it through at that moment.
    pub(super) fn link(&mut self, seq: u64, op_id: OpId, now_ms: i64, linked: Linked) {
        let Some(rec) = self.ops.get(&op_id) else { return };
        // The waiting room reads the order that ended the user's session, to
        // learn whether it failed (then the session is open again): part of the gate.
        let room_call = rec.op().and_then(gated).is_some()
            || matches!(&rec.class, Some(Class::Route(Route::Join { .. } | Route::QueueStatus { .. })));
        if let StoreCall::Order { answer: Ok(order), .. } = &linked.call
            && room_call
            && rec.calls.is_empty()
            && order.holder_id == *rec.client
            && self.admissions.ended_by(&order.event_id, rec.client, order.hold_token, &order.idempotency_key)
        {
            let rec = self.ops.get_mut(&op_id).expect("looked up");
            rec.seqs.push(seq);
            return;
        }
        let host_now = rec.host.map_or(now_ms, |h| self.cfg.host_clock_ms(h, now_ms));
        if rec.calls.is_empty()
            && let Some(Err(kind)) = self.gate(rec.client, rec.op(), host_now)
        {
            let subject = Subject::Request { op_id, client: rec.client.clone() };
            let f = Finding::new(
                subject,
                format!("reached the store past the waiting room's gate, which refuses it ({kind})"),
            );
            let mut seqs = rec.seqs.clone();
            seqs.push(seq);
            self.report(f, seqs);
        }
        let rec = self.ops.get(&op_id).expect("looked up");
        if let (
            Some((event_id, _, _)),
            StoreCall::BeginPayment { req, answer: Ok(BeginPaymentOutcome { replayed: false, .. }) },
        ) = (rec.op().and_then(gated), &linked.call)
        {
            let (event_id, client) = (event_id.clone(), rec.client);
            self.admissions.purchased(&event_id, client, req.hold_token, &req.idempotency_key);
        }
        let rec = self.ops.get_mut(&op_id).expect("looked up");
        rec.calls.push(linked);
        rec.seqs.push(seq);
    }

    /// A request's answer (or its absence), judged.
    pub(super) fn complete(&mut self, e: &'a TraceEvent, op_id: OpId) {
        let Some(mut rec) = self.ops.remove(&op_id) else { return };
        rec.seqs.push(e.seq);
        let from = self.host_clock(rec.host, rec.invoke.at_ms, self.cfg.min_latency_ms);
        let to = self.host_clock(rec.host, e.at_ms.max(rec.invoke.at_ms), -self.cfg.min_latency_ms).max(from);
        let got = match &e.kind {
            TraceKind::Ok { result, status, .. } => Some(Expected::Answered(*status, result.clone())),
            TraceKind::Fail { error_kind, status, .. } => Some(Expected::Refused(*status, *error_kind)),
            TraceKind::Unknown { reason, .. } => self.server_error(&rec, reason),
            _ => None,
        };
        let (want, detail) = match (&rec.class, &got) {
            (Some(Class::Refused(_) | Class::Route(_)), None) => (None, None),
            (Some(Class::Refused(k)), Some(g)) => (Some(Expected::refused(*k)), self.judge_refused(&rec, *k, g)),
            (Some(Class::Route(route)), Some(g)) => {
                let raw = raw(rec.sent).expect("a raw request");
                let ctx = Ctx { cfg: self.cfg, admissions: &self.admissions, host_now_ms: to };
                match routes::expect(route, &raw, rec.client, &ctx, &rec.calls) {
                    Err(why) => (None, Some(format!("{} {}: {why}; answered {}", raw.method, raw.path, shown(g)))),
                    Ok(want) if same_route_answer(&want, g) => (Some(want), self.queue_body(&rec, route, g, to)),
                    Ok(want) => {
                        let why =
                            format!("{} {}: expected {}, answered {}", raw.method, raw.path, shown(&want), shown(g));
                        (Some(want), Some(why))
                    }
                }
            }
            _ => self.judge_typed(&rec, from, to, got.as_ref()),
        };
        if let Some(g) = &got {
            self.refusals.answered(g, want.as_ref());
        }
        let reopen = match (rec.undone_at_send, session_event(&rec), &got) {
            (Some(order_id), Some(ev), Some(_)) => self.missed_reopen(ev, rec.client, order_id, to),
            _ => None,
        };
        let detail = detail.or(reopen).or_else(|| retry_hint(&e.kind, from, to));
        if let Some(detail) = detail {
            self.report(Finding::new(Subject::Request { op_id, client: rec.client.clone() }, detail), rec.seqs);
        }
    }

    /// A queue or lottery answer's body, against where the sender stood
    /// when it sent and when it was answered (at host time `to_ms`).
    fn queue_body(&self, rec: &OpRecord<'_>, route: &Route, got: &Expected, to_ms: i64) -> Option<String> {
        let Expected::Answered(200, OpResult::Answered { body: Some(body), .. }) = got else { return None };
        let body: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        let QueueAtSend { standing: at_send, drawn: drawn_at_send, admitted: admitted_at_send, host_ms: sent_ms } =
            rec.queue_at_send.clone()?;
        let a = &self.admissions;
        match route {
            Route::Lottery { event_id } => {
                let ok = a.lottery_states(event_id, &body, drawn_at_send)
                    || a.lottery_states(event_id, &body, a.drawn(event_id));
                (!ok).then(|| format!("the lottery record of {event_id} is not the room's: {}", shown(&body)))
            }
            Route::Join { event_id } | Route::QueueStatus { event_id } => {
                let at_end = a.standing(event_id, rec.client, to_ms);
                let states = |s: &Option<Standing>| {
                    s.as_ref().is_some_and(|s| a.states(&self.cfg.admission_secret, event_id, rec.client, &body, s))
                };
                // A place read while others were admitted (each moves it up
                // one) and, in a priority room, while members joined ahead
                // (each moves it down one): at least where it stood at send
                // less those admissions, at most where it ended plus them.
                let moved = (a.admitted_count(event_id) - admitted_at_send) as u64;
                let between = match (&at_end, body["position"].as_u64()) {
                    (Some(Standing::Waiting(end)), Some(p)) => {
                        let from = match &at_send {
                            Some(Standing::Waiting(sent)) => sent.saturating_sub(moved).min(*end),
                            _ => *end,
                        };
                        body["state"] == "waiting" && (from..=*end + moved).contains(&p)
                    }
                    _ => false,
                };
                // A join that landed before a draw made while it was under way was awaiting it.
                let awaiting_draw = !drawn_at_send && a.drawn(event_id) && states(&Some(Standing::AwaitingDraw));
                if !states(&at_send) && !states(&at_end) && !between && !awaiting_draw {
                    return Some(format!(
                        "{event_id}'s queue answered {}; the rooms had {at_send:?} then {at_end:?}",
                        shown(&body)
                    ));
                }
                if !Admissions::retry_agrees(&body, sent_ms, to_ms, self.cfg.queue_poll_s) {
                    return Some(format!(
                        "{event_id}'s queue told when to ask again otherwise than its state, wait and opening give: {}",
                        shown(&body)
                    ));
                }
                (!Admissions::hints_agree(&body, sent_ms, to_ms)).then(|| {
                    format!(
                        "{event_id}'s queue answered hints its place, rate and opening do not give: {}",
                        shown(&body)
                    )
                })
            }
            _ => None,
        }
    }

    /// A 5xx answer (recorded as unknown, `http <status>`): only a store that
    /// refused with an outage or a breach may cause one.
    fn server_error(&self, rec: &OpRecord<'_>, reason: &str) -> Option<Expected> {
        let (status, _) = crate::answers::server_error(reason)?;
        let excused = rec.calls.iter().any(|l| {
            l.call.refusal().is_some_and(|r| matches!(r.kind, ProblemKind::Backend | ProblemKind::InvariantBreach))
        }) || (status == 503 && self.met_rooms_down(rec));
        (!excused).then_some(Expected::Refused(status, ProblemKind::NotAProblem))
    }

    /// Whether `rec` met a room (a hold, checkout or queue request on an
    /// event with one) while the rooms' store was down: it fails closed, `503`.
    fn met_rooms_down(&self, rec: &OpRecord<'_>) -> bool {
        let (down_at_send, downs_at_send) = rec.rooms_down_at_send;
        let overlapped = down_at_send || self.rooms_down || self.rooms_downs != downs_at_send;
        let event = match &rec.class {
            Some(Class::Route(
                Route::Join { event_id } | Route::QueueStatus { event_id } | Route::Lottery { event_id },
            )) => Some(event_id),
            _ => rec.op().and_then(gated).map(|(event_id, _, _)| event_id),
        };
        overlapped && event.is_some_and(|e| self.admissions.has_room(e))
    }

    fn judge_refused(&self, rec: &OpRecord<'_>, kind: ProblemKind, got: &Expected) -> Option<String> {
        let want = Expected::refused(kind);
        if *got == want && rec.calls.is_empty() {
            return None;
        }
        let raw = raw(rec.sent).expect("a raw request");
        Some(format!(
            "{} {}: expected {}, answered {} after {} store calls",
            raw.method,
            raw.path,
            shown(&want),
            shown(got),
            rec.calls.len()
        ))
    }

    /// A typed operation: the rate limit, the admission header, the gate, then its store calls.
    /// Returns the model's answer (`None`: it names none) and why `got` is not it, if not.
    fn judge_typed(&mut self, rec: &OpRecord<'_>, from: i64, to: i64, got: Option<&Expected>) -> Judged {
        let Some(op) = rec.op() else { return (None, None) };
        let (mut certain, mut possible) = (None, Vec::new());
        if let (ClientOp::Hold { .. }, Some(host)) = (op, rec.host) {
            match self.limiter.judge(host, rec.client, from, to, self.cfg.hold_attempts_per_minute) {
                Verdict::Refused => certain = Some(ProblemKind::RateLimited),
                Verdict::Maybe => possible.push(ProblemKind::RateLimited),
                Verdict::Passes => {}
            }
            if !matches!(got, Some(Expected::Refused(_, ProblemKind::RateLimited))) {
                self.limiter.count(host, rec.client, from, to, got.is_some());
            }
        }
        let admission = gated(op).and_then(|(_, token, _)| token);
        if certain.is_none()
            && admission
                .is_some_and(|t| t.len() > MAX_ADMISSION_TOKEN_BYTES || !t.bytes().all(|b| (0x20..0x7f).contains(&b)))
        {
            certain = Some(ProblemKind::BadRequest);
        }
        if certain.is_none() && rec.calls.is_empty() {
            let at_end = self.gate(rec.client, Some(op), to);
            let ends = [rec.gate_at_send, at_end];
            for kind in ends.iter().flatten().filter_map(|g| g.err()) {
                if !possible.contains(&kind) {
                    possible.push(kind);
                }
            }
            if let ([k], [Some(Err(a)), Some(Err(b))]) = (&possible[..], ends)
                && a == b
                && *k == a
            {
                certain = possible.pop();
            }
        }
        let Some(got) = got else { return (None, None) };
        let served = Served { client: rec.client, op, calls: &rec.calls, certain, possible };
        self.judge(&served, got)
    }

    /// The answer `served` must get (`got`, where the model allows it) and
    /// why `got` is not an answer it may get, if it is not.
    fn judge(&self, s: &Served<'_>, got: &Expected) -> Judged {
        if let Expected::Refused(status, kind) = got
            && *kind != ProblemKind::NotAProblem
            && *status != status_of(*kind)
        {
            let why = format!("answered {kind} with status {status}, the API says {}", status_of(*kind));
            return (Some(Expected::refused(*kind)), Some(why));
        }
        let pre = |k: &ProblemKind| Expected::refused(*k) == *got;
        if s.calls.is_empty() && (s.certain.iter().any(pre) || s.possible.iter().any(pre)) {
            return (Some(got.clone()), None);
        }
        if let Some(k) = s.certain {
            return (
                Some(Expected::refused(k)),
                Some(format!("answered {}, expected {k} before the store", shown(got))),
            );
        }
        match from_calls(self.cfg, s) {
            Err(why) => (None, Some(format!("{}: {why}; answered {}", s.op.name(), shown(got)))),
            Ok(want) if agrees(&want, got) => (Some(want), None),
            Ok(want) => {
                let why = format!("{}: expected {}, answered {}", s.op.name(), shown(&want), shown(got));
                (Some(want), Some(why))
            }
        }
    }
}

/// The model's answer to a request (`None`: it names none) and why the
/// answer got is not one it allows, if it is not.
type Judged = (Option<Expected>, Option<String>);

/// A route's answer: the status and kind; a success's body is not judged.
/// Whether `got` is `want`: the status, and (a success) every top-level field `want` names.
fn same_route_answer(want: &Expected, got: &Expected) -> bool {
    match (want, got) {
        (
            Expected::Answered(a, OpResult::Answered { fields: want_fields, .. }),
            Expected::Answered(b, OpResult::Answered { fields: got_fields, .. }),
        ) => a == b && want_fields.iter().all(|f| got_fields.contains(f)),
        (Expected::Answered(a, _), Expected::Answered(b, _)) => a == b,
        _ => want == got,
    }
}

/// A rate-limit refusal's `retry_after_s` that no moment of its span
/// (`from_ms..=to_ms` on the serving host's clock) gives, if so.
fn retry_hint(answer: &TraceKind, from_ms: i64, to_ms: i64) -> Option<String> {
    let TraceKind::Fail { error_kind: ProblemKind::RateLimited, retry_after_s, .. } = answer else { return None };
    match retry_after_s {
        Some(s) if crate::model::http::rate::retry_agrees(*s, from_ms, to_ms) => None,
        Some(s) => Some(format!("a rate-limit refusal told to retry after {s} s; the next minute began otherwise")),
        None => Some("a rate-limit refusal told no time to retry after".into()),
    }
}
