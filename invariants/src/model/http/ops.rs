//! The typed operations: hold, release, checkout, order status, seat map.
//!
//! - A hold asks the store for the seats as sent, for the caller, with the
//!   service's hold lifetime and per-user cap: `201` and the hold (token,
//!   seats sorted, deadline) or the store's refusal.
//! - A release asks the store to release the token for the caller: `200`
//!   and the seats freed, or the store's refusal.
//! - A checkout asks the store to begin the payment of the hold for the
//!   caller with the service's payment deadline, then reads the order:
//!   `201` (`200` when the key replayed an order) and the order as that read
//!   shows it, or the first refusal.
//! - An order's status reads the order; another user's order is `404
//!   not-found`, as a missing one is; else the order as its details show it.
//! - A seat map: with an `If-None-Match` that states a condition (see
//!   [`super::conditional`]), the map's version is read and a matching tag
//!   is `304`; `?state=` reads the seats in that state; else
//!   the map comes from the cache, or from the store (and is then exactly
//!   the store's).

use super::conditional::Condition;
use super::{Expected, status_of};
use crate::model::{ModelConfig, shown};
use crate::store_call::StoreCall;
use crate::trace::{ClientOp, OpResult};
use booking::model::{EventId, OrderId, SeatState, UserId};
use booking::problem_kind::ProblemKind;
use booking::store::{AcquireHold, BeginPayment, ReleaseHold, SeatMapVersion};

/// A store call a request made, with what the model knew at that moment.
#[derive(Debug, Clone)]
pub struct Linked {
    /// The call and its answer.
    pub call: StoreCall,
    /// The event's seats by state (available, held, payment pending, sold)
    /// in the model at the call (seat-map reads).
    pub counts: [u32; 4],
}

/// A request as served: who sent it, what, and the store calls it made.
#[derive(Debug)]
pub struct Served<'a> {
    /// The client.
    pub client: &'a str,
    /// The request.
    pub op: &'a ClientOp,
    /// The store calls it made, in order.
    pub calls: &'a [Linked],
    /// A refusal before the store that must come (rate limit, the gate).
    pub certain: Option<ProblemKind>,
    /// Refusals before the store that may come (the moment is not known exactly).
    pub possible: Vec<ProblemKind>,
}

/// The index of `state` in a `counts` array.
pub fn state_index(state: SeatState) -> usize {
    match state {
        SeatState::Available => 0,
        SeatState::Held => 1,
        SeatState::PaymentPending => 2,
        SeatState::Sold => 3,
    }
}

/// A map version's entity tag, for the whole map or one state's view.
pub fn etag(v: &SeatMapVersion, state: Option<SeatState>) -> String {
    match state {
        None => format!("\"sm-{}-{}\"", v.seats, v.version_sum),
        Some(s) => format!("\"sm-{}-{}-{}\"", v.seats, v.version_sum, s.as_str()),
    }
}

fn refused<T>(r: &crate::store_call::Answer<T>) -> Option<Expected> {
    r.as_ref().err().map(|e| Expected::refused(e.kind))
}

/// The answers `served` may get from its store calls (its pre-store refusals aside).
/// `Err` names a call the request should not have made, or one it should have.
pub fn from_calls(cfg: &ModelConfig, s: &Served<'_>) -> Result<Expected, String> {
    let calls: Vec<&StoreCall> = s.calls.iter().map(|l| &l.call).collect();
    let wrong = || format!("made the store calls [{}]", calls.iter().map(|c| c.name()).collect::<Vec<_>>().join(", "));
    match s.op {
        ClientOp::Hold { event_id, seat_ids, .. } => {
            let [StoreCall::AcquireHold { req, answer }] = calls[..] else { return Err(wrong()) };
            let want = AcquireHold {
                event_id: event_id.clone(),
                seat_ids: seat_ids.clone(),
                holder_id: UserId::from(s.client),
                ttl_ms: cfg.hold_ttl_ms,
                max_held_seats: cfg.max_held_seats_per_user,
            };
            asked(req, &want)?;
            Ok(refused(answer).unwrap_or_else(|| {
                let g = answer.as_ref().expect("granted");
                let seat_ids = g.seats.iter().map(|h| h.seat_id.clone()).collect();
                Expected::Answered(
                    201,
                    OpResult::Held { hold_token: g.hold_token, seat_ids, expires_at_ms: g.expires_at_ms },
                )
            }))
        }
        ClientOp::Release { event_id, hold_token } => {
            let [StoreCall::ReleaseHold { req, answer }] = calls[..] else { return Err(wrong()) };
            asked(
                req,
                &ReleaseHold { event_id: event_id.clone(), holder_id: UserId::from(s.client), hold_token: *hold_token },
            )?;
            Ok(refused(answer).unwrap_or_else(|| {
                Expected::Answered(200, OpResult::Released { seat_ids: answer.clone().expect("released") })
            }))
        }
        ClientOp::Checkout { .. } => checkout(cfg, s, &calls).map_err(|e| e.unwrap_or_else(wrong)),
        ClientOp::OrderStatus { order_id } => order_status(s, *order_id, &calls).ok_or_else(wrong),
        ClientOp::SeatMap { event_id, state, if_none_match } => {
            seat_map(s, event_id, *state, if_none_match.as_deref()).ok_or_else(wrong)
        }
        ClientOp::Request { .. } => Err("is not a typed operation".into()),
    }
}

/// Whether the store was asked `req`, as the request should have asked `want`.
fn asked<T: PartialEq + std::fmt::Debug>(req: &T, want: &T) -> Result<(), String> {
    if req == want { Ok(()) } else { Err(format!("asked the store for {}, expected {}", shown(req), shown(want))) }
}

/// A checkout: the payment begun, then the order read. `Err(None)`: the calls are not those.
fn checkout(cfg: &ModelConfig, s: &Served<'_>, calls: &[&StoreCall]) -> Result<Expected, Option<String>> {
    let ClientOp::Checkout { event_id, hold_token, seat_ids, idempotency_key, .. } = s.op else { return Err(None) };
    let Some(StoreCall::BeginPayment { req, answer }) = calls.first() else { return Err(None) };
    let want = BeginPayment {
        event_id: event_id.clone(),
        holder_id: UserId::from(s.client),
        hold_token: *hold_token,
        seat_ids: seat_ids.clone(),
        idempotency_key: idempotency_key.clone(),
        payment_ttl_ms: cfg.payment_ttl_ms,
    };
    asked(req, &want).map_err(Some)?;
    if let Some(e) = refused(answer) {
        return if calls.len() == 1 { Ok(e) } else { Err(None) };
    }
    let began = answer.as_ref().expect("began");
    let [_, StoreCall::OrderDetails { order_id, answer: details }] = calls[..] else { return Err(None) };
    if *order_id != began.order.order_id {
        return Err(Some(format!("read order {order_id}, not the order {} it made", began.order.order_id)));
    }
    Ok(refused(details).unwrap_or_else(|| {
        let d = details.as_ref().expect("read");
        Expected::Answered(
            if began.replayed { 200 } else { 201 },
            OpResult::CheckedOut {
                order_id: d.order.order_id,
                status: d.order.status,
                booking_ids: d.bookings.iter().map(|b| b.booking_id).collect(),
                replayed: began.replayed,
            },
        )
    }))
}

fn order_status(s: &Served<'_>, id: OrderId, calls: &[&StoreCall]) -> Option<Expected> {
    let Some(StoreCall::Order { order_id, answer }) = calls.first() else { return None };
    if *order_id != id {
        return None;
    }
    match answer {
        Err(e) if e.kind == ProblemKind::UnknownOrder => {
            (calls.len() == 1).then(|| Expected::refused(ProblemKind::NotFound))
        }
        Err(e) => (calls.len() == 1).then(|| Expected::refused(e.kind)),
        Ok(order) if order.holder_id != s.client => {
            (calls.len() == 1).then(|| Expected::refused(ProblemKind::NotFound))
        }
        Ok(_) => {
            let [_, StoreCall::OrderDetails { order_id, answer }] = calls[..] else { return None };
            (*order_id == id).then(|| match answer {
                Err(e) => Expected::refused(e.kind),
                Ok(d) => Expected::Answered(
                    200,
                    OpResult::OrderStatus {
                        order_id: id,
                        status: d.order.status,
                        booking_ids: d.bookings.iter().map(|b| b.booking_id).collect(),
                    },
                ),
            })
        }
    }
}

fn seat_map(s: &Served<'_>, event: &EventId, state: Option<SeatState>, inm: Option<&str>) -> Option<Expected> {
    let mut calls = s.calls.iter();
    let mut next = calls.next();
    if let Some(condition) = inm.and_then(Condition::of) {
        let Some(Linked { call: StoreCall::SeatMapVersion { event_id, answer }, .. }) = next else { return None };
        if event_id != event {
            return None;
        }
        match answer {
            Err(e) => return (calls.next().is_none()).then(|| Expected::refused(e.kind)),
            Ok(v) if condition.matches(&etag(v, state)) => {
                let result = OpResult::SeatMap { etag: Some(etag(v, state)), source: "store".into(), counts: [0; 4] };
                return calls.next().is_none().then_some(Expected::Answered(304, result));
            }
            Ok(_) => next = calls.next(),
        }
    }
    let answer = match (state, next) {
        (Some(want), Some(Linked { call: StoreCall::SeatsInState { event_id, state, answer }, counts })) => {
            if event_id != event || *state != want {
                return None;
            }
            match answer {
                Err(e) => Expected::refused(e.kind),
                Ok((v, _)) => {
                    let mut shown = [0; 4];
                    shown[state_index(want)] = counts[state_index(want)];
                    Expected::Answered(
                        200,
                        OpResult::SeatMap { etag: Some(etag(v, Some(want))), source: "store".into(), counts: shown },
                    )
                }
            }
        }
        (None, Some(Linked { call: StoreCall::SeatMap { event_id, answer }, counts })) => {
            if event_id != event {
                return None;
            }
            match answer {
                Err(e) => Expected::refused(e.kind),
                Ok(d) => Expected::Answered(
                    200,
                    OpResult::SeatMap { etag: Some(etag(&d.version, None)), source: "store".into(), counts: *counts },
                ),
            }
        }
        // A whole map from the cache: judged by the cached-read checker, not here.
        (None, None) => {
            Expected::Answered(200, OpResult::SeatMap { etag: None, source: "cache".into(), counts: [0; 4] })
        }
        _ => return None,
    };
    calls.next().is_none().then_some(answer)
}

/// Whether the answer `got` is `want` (a cached map only by its source; a
/// raw request's success, whose body was not read as a view, by its status).
pub fn agrees(want: &Expected, got: &Expected) -> bool {
    match (want, got) {
        (Expected::Answered(w, _), Expected::Answered(g, OpResult::Answered { .. })) => w == g,
        (
            Expected::Answered(200, OpResult::SeatMap { source: ws, etag: None, .. }),
            Expected::Answered(200, OpResult::SeatMap { source: gs, .. }),
        ) if ws == "cache" => gs == "cache",
        _ => want == got,
    }
}

/// The status a refusal of `kind` must carry (see [`status_of`]).
pub fn refusal_status(kind: ProblemKind) -> u16 {
    status_of(kind)
}
