//! The answers of the routes that are not typed operations, once the
//! surface ([`super::surface`]) has let them through:
//!
//! - `POST /v1/events` (operator): the store creates the event as listed:
//!   `201`, or the store's refusal.
//! - `PUT /v1/events/{e}/waiting-room` (operator): `opens_at` RFC 3339,
//!   `target_active_sessions` 1..=100,000, `session_ttl_s` 1..=86,400 (600
//!   when absent), else `400`; an unknown event is `404 unknown-event`; a
//!   room with another configuration is `409 waiting-room-conflict`; the
//!   same one again changes nothing: `200`.
//! - The queue: an event without a room is `404 no-waiting-room`; joining a
//!   sold-out event is `409 sold-out` (who joined before reads where they
//!   stand); a lottery's record of a room that is not one is `404
//!   not-a-lottery`; else `200`.
//! - The provider's webhook: a body over 16 KiB is `413`; no valid
//!   `v1=` HMAC-SHA256 signature over `<timestamp>.<body>` within five
//!   minutes of the serving host's clock is `401 bad-webhook-signature`; a
//!   signed body that is not a webhook event is `400 bad-webhook`; then the
//!   payment's outcome (or the refund's success) is recorded: `204`, a
//!   conflicting outcome too; an unknown payment is `404 not-found`; a
//!   refund event without its key `400 bad-request`; other refusals are the
//!   store's own.
//! - `GET /v1/admin/unresolved` (operator): the operators' list, `200`.
//! - `GET /healthz` and `GET /readyz`: `200` while the store answers, else
//!   `503 unavailable`; `GET /livez`: `200`, without asking the store.
//! - `GET /metrics`: `200`; `GET /openapi.json`: `200`, the OpenAPI
//!   document (its `openapi`, `info` and `paths` at least).

use super::Expected;
use super::ops::Linked;
use super::surface::{Raw, Route};
use crate::model::admission::Admissions;
use crate::model::standing::Standing;
use crate::model::{ModelConfig, shown};
use crate::store_call::StoreCall;
use crate::trace::OpResult;
use booking::model::{CompensationId, EventId, PaymentOpId, UserId};
use booking::payment::webhook::{WebhookEvent, WebhookKind};
use booking::problem_kind::ProblemKind;
use booking::store::{CompensationOutcome, CreateEvent};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

/// What a route's answer depends on besides its calls.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The deployment.
    pub cfg: &'a ModelConfig,
    /// The rooms as the trace shows them now.
    pub admissions: &'a Admissions,
    /// The serving host's clock now.
    pub host_now_ms: i64,
}

/// Largest webhook body the service reads, bytes.
pub const MAX_WEBHOOK_BYTES: usize = 16 * 1024;
/// How far a webhook's timestamp may be from the serving host's clock, ms.
pub const WEBHOOK_TOLERANCE_MS: i64 = 5 * 60 * 1000;
/// Longest waiting-room session, s.
const MAX_SESSION_TTL_S: f64 = 86_400.0;
/// Most active sessions a room may target.
const MAX_TARGET: f64 = 100_000.0;
/// An admission's lifetime when none is named, s.
const DEFAULT_SESSION_TTL_S: i64 = 600;

fn ok(status: u16) -> Expected {
    Expected::Answered(status, OpResult::Answered { fields: Vec::new(), body: None })
}

fn no_calls(calls: &[Linked], e: Expected) -> Result<Expected, String> {
    if calls.is_empty() { Ok(e) } else { Err("made store calls it should not have".into()) }
}

/// The answer `route` must get.
pub fn expect(
    route: &Route,
    raw: &Raw<'_>,
    client: &UserId,
    ctx: &Ctx<'_>,
    calls: &[Linked],
) -> Result<Expected, String> {
    let calls_of: Vec<&StoreCall> = calls.iter().map(|l| &l.call).collect();
    match route {
        Route::CreateEvent { event_id, seat_ids, price_cents } => {
            let [StoreCall::CreateEvent { req, answer }] = calls_of[..] else {
                return Err("no create_event call".into());
            };
            let want =
                CreateEvent { event_id: event_id.clone(), seat_ids: seat_ids.clone(), price_cents: *price_cents };
            if *req != want {
                return Err(format!("created {}, expected {}", shown(req), shown(&want)));
            }
            Ok(answer.as_ref().map_or_else(|e| Expected::refused(e.kind), |_| ok(201)))
        }
        Route::OpenRoom { event_id, body } => open_room(event_id, body, ctx, &calls_of),
        Route::Join { event_id } => no_calls(calls, join(event_id, client, ctx)),
        Route::QueueStatus { event_id } => no_calls(
            calls,
            match ctx.admissions.room(event_id) {
                None => Expected::refused(ProblemKind::NoWaitingRoom),
                Some(_) => ok(200),
            },
        ),
        Route::Lottery { event_id } => no_calls(
            calls,
            match ctx.admissions.room(event_id) {
                None => Expected::refused(ProblemKind::NoWaitingRoom),
                Some(r) if r.policy != booking::admission::room::Policy::Lottery => {
                    Expected::refused(ProblemKind::NotALottery)
                }
                Some(_) => ok(200),
            },
        ),
        Route::Webhook => webhook(raw, ctx, &calls_of),
        Route::Unresolved => match calls_of[..] {
            [StoreCall::NeedsResolution { answer }] => {
                Ok(answer.as_ref().map_or_else(|e| Expected::refused(e.kind), |_| ok(200)))
            }
            _ => Err("no needs_resolution call".into()),
        },
        Route::Healthz => match calls_of[..] {
            [StoreCall::NowMs { answer }] => {
                Ok(if answer.is_ok() { ok(200) } else { Expected::refused(ProblemKind::Unavailable) })
            }
            _ => Err("no clock read of the store".into()),
        },
        Route::Livez => no_calls(calls, ok(200)),
        Route::Metrics => Ok(ok(200)),
        Route::OpenApi => {
            let fields = ["info", "openapi", "paths"].map(String::from).to_vec();
            no_calls(calls, Expected::Answered(200, OpResult::Answered { fields, body: None }))
        }
    }
}

/// The answer `client`'s join of `event_id`'s room must get.
fn join(event_id: &EventId, client: &UserId, ctx: &Ctx<'_>) -> Expected {
    match ctx.admissions.room(event_id) {
        None => Expected::refused(ProblemKind::NoWaitingRoom),
        // A new arrival (never joined, or their session is over) finds the sale sold out.
        Some(r)
            if r.sold_out
                && (!r.joined.contains(client)
                    || ctx.admissions.standing(event_id, client, ctx.host_now_ms) == Some(Standing::SessionEnded)) =>
        {
            Expected::refused(ProblemKind::SoldOut)
        }
        Some(_) => ok(200),
    }
}

fn open_room(event_id: &EventId, body: &Value, ctx: &Ctx<'_>, calls: &[&StoreCall]) -> Result<Expected, String> {
    let bad = || no_calls(&[], Expected::refused(ProblemKind::BadRequest));
    let opens_at = body["opens_at"].as_str().and_then(crate::model::rfc3339_ms);
    let target = body["target_active_sessions"].as_f64().unwrap_or(0.0);
    let ttl_s = body.get("session_ttl_s").and_then(Value::as_f64).unwrap_or(DEFAULT_SESSION_TTL_S as f64);
    let (Some(opens_at_ms), true, true) =
        (opens_at, (1.0..=MAX_TARGET).contains(&target), (1.0..=MAX_SESSION_TTL_S).contains(&ttl_s))
    else {
        return if calls.is_empty() { bad() } else { Err("read the store for a bad body".into()) };
    };
    let [StoreCall::SeatMapVersion { event_id: read, answer }] = calls[..] else {
        return Err("no seat_map_version call".into());
    };
    if read != event_id {
        return Err(format!("read event {read}"));
    }
    if let Err(e) = answer {
        return Ok(Expected::refused(e.kind));
    }
    let policy = body["policy"].as_str().unwrap_or("");
    Ok(match ctx.admissions.room(event_id) {
        Some(r) => {
            let same = serde_json::to_value(r.policy).ok().as_ref().and_then(Value::as_str) == Some(policy)
                && r.opens_at_ms == opens_at_ms
                && f64::from(r.target_active_sessions) == target
                && r.session_ttl_ms == ttl_s as i64 * 1000;
            if same { ok(200) } else { Expected::refused(ProblemKind::WaitingRoomConflict) }
        }
        None => ok(200),
    })
}

fn webhook(raw: &Raw<'_>, ctx: &Ctx<'_>, calls: &[&StoreCall]) -> Result<Expected, String> {
    let body = raw.body.unwrap_or("");
    let header = |n: &str| raw.headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let refused = |k| {
        if calls.is_empty() { Ok(Expected::refused(k)) } else { Err("made store calls for a refused webhook".into()) }
    };
    if body.len() > ctx.cfg.max_body_bytes || body.len() > MAX_WEBHOOK_BYTES {
        return refused(ProblemKind::PayloadTooLarge);
    }
    if !signed(ctx, header("x-provider-timestamp"), header("x-provider-signature"), body) {
        return refused(ProblemKind::BadWebhookSignature);
    }
    let Ok(event) = serde_json::from_str::<WebhookEvent>(body) else { return refused(ProblemKind::BadWebhook) };
    let mapped = |e: &crate::store_call::Refusal| match e.kind {
        ProblemKind::UnknownPaymentOp => Expected::refused(ProblemKind::NotFound),
        ProblemKind::PaymentConflict => ok(204),
        k => Expected::refused(k),
    };
    match (event.kind, calls) {
        (WebhookKind::PaymentSucceeded, [StoreCall::PaymentSuccess { req, answer }])
            if req.payment_op_id == PaymentOpId::from(event.payment_key) =>
        {
            Ok(answer.as_ref().map_or_else(mapped, |_| ok(204)))
        }
        (WebhookKind::PaymentFailed, [StoreCall::PaymentFailure { payment_op_id, answer, .. }])
            if *payment_op_id == PaymentOpId::from(event.payment_key) =>
        {
            Ok(answer.as_ref().map_or_else(mapped, |_| ok(204)))
        }
        (WebhookKind::RefundSucceeded, []) if event.refund_key.is_none() => {
            Ok(Expected::refused(ProblemKind::BadRequest))
        }
        (WebhookKind::RefundSucceeded, [StoreCall::FinishCompensation { req, answer }])
            if Some(req.compensation_id) == event.refund_key.map(CompensationId::from)
                && req.outcome == CompensationOutcome::Succeeded =>
        {
            Ok(answer.as_ref().map_or_else(|e| Expected::refused(e.kind), |_| ok(204)))
        }
        (WebhookKind::RefundFailed, []) => Ok(ok(204)),
        _ => Err(format!(
            "a {:?} webhook made the store calls {}",
            event.kind,
            shown(&calls.iter().map(|c| c.name()).collect::<Vec<_>>())
        )),
    }
}

/// Whether the webhook headers sign `body` with the provider's secret, fresh by the host's clock.
fn signed(ctx: &Ctx<'_>, timestamp: Option<&str>, signature: Option<&str>, body: &str) -> bool {
    let (Some(ts), Some(sig)) = (timestamp, signature) else { return false };
    let Ok(ts_ms) = ts.trim().parse::<i64>() else { return false };
    if (ctx.host_now_ms - ts_ms).abs() > WEBHOOK_TOLERANCE_MS {
        return false;
    }
    let Some(Ok(tag)) = sig.trim().strip_prefix("v1=").map(hex::decode) else { return false };
    let mut mac = Hmac::<Sha256>::new_from_slice(&ctx.cfg.webhook_secret).expect("any key length");
    mac.update(format!("{ts_ms}.").as_bytes());
    mac.update(body.as_bytes());
    mac.verify_slice(&tag).is_ok()
}
