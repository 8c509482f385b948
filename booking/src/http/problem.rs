//! RFC 9457 problem details: every error the API returns, with a stable
//! `type` per domain error. Bad input is a 4xx; only the store failing is a 5xx.

use crate::problem_kind::ProblemKind;
use crate::store::StoreError;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

/// The media type of a problem document.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// A problem document (RFC 9457).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// A stable URI naming the kind of problem: `urn:holdfast:problem:<kind>`.
    #[serde(rename = "type")]
    pub type_uri: String,
    /// A short human summary of the kind.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// This occurrence, in words.
    pub detail: String,
    /// Seconds to wait before retrying (429 and 503).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
}

impl Problem {
    /// A problem of `kind` with `status` and `detail`.
    pub fn new(status: StatusCode, kind: ProblemKind, detail: impl Into<String>) -> Self {
        Self {
            type_uri: format!("urn:holdfast:problem:{kind}"),
            title: kind.as_str().replace('-', " "),
            status: status.as_u16(),
            detail: detail.into(),
            retry_after_s: None,
        }
    }

    /// 400 with kind `bad-request`.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ProblemKind::BadRequest, detail)
    }

    /// 401: missing or invalid credentials.
    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, ProblemKind::Unauthorized, detail)
    }

    /// 403: authenticated, not allowed.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, ProblemKind::Forbidden, detail)
    }

    /// 404 with kind `not-found`.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, ProblemKind::NotFound, detail)
    }

    /// 429 with a retry delay: too many hold attempts.
    pub fn rate_limited(retry_after_s: u64) -> Self {
        Self::rate_limited_for("hold attempts", retry_after_s)
    }

    /// 429 with a retry delay: too many `what` (a plural noun).
    pub fn rate_limited_for(what: &str, retry_after_s: u64) -> Self {
        let mut p =
            Self::new(StatusCode::TOO_MANY_REQUESTS, ProblemKind::RateLimited, format!("too many {what}; retry later"));
        p.retry_after_s = Some(retry_after_s);
        p
    }

    /// The kind: the last segment of the `type` URI, when it is one of this
    /// API's (`urn:holdfast:problem:<kind>`); `None` for any other document.
    pub fn kind(&self) -> Option<ProblemKind> {
        ProblemKind::parse(self.type_uri.strip_prefix("urn:holdfast:problem:")?)
    }
}

impl From<StoreError> for Problem {
    fn from(e: StoreError) -> Self {
        let status = match &e {
            StoreError::InvalidInput(_) => StatusCode::BAD_REQUEST,
            StoreError::UnknownEvent(_)
            | StoreError::UnknownSeat { .. }
            | StoreError::UnknownOrder(_)
            | StoreError::UnknownPaymentOp(_)
            | StoreError::UnknownOutboxEvent(_)
            | StoreError::UnknownCompensation(_)
            | StoreError::HoldNotFound => StatusCode::NOT_FOUND,
            StoreError::EventExists(_)
            | StoreError::SeatUnavailable { .. }
            | StoreError::HoldLimit { .. }
            | StoreError::StaleToken
            | StoreError::PaymentConflict(_)
            | StoreError::DeadlineNotPassed { .. }
            | StoreError::OrderNotOpen(_)
            | StoreError::CompensationNotDue(_) => StatusCode::CONFLICT,
            StoreError::NotHolder => StatusCode::FORBIDDEN,
            StoreError::HoldExpired { .. } => StatusCode::GONE,
            StoreError::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            StoreError::Backend(_) => StatusCode::SERVICE_UNAVAILABLE,
            StoreError::InvariantBreach(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let detail = match &e {
            // Never leak backend internals to clients. (A checkout's adds
            // its idempotency key: `Problem::checkout_outage`.)
            StoreError::Backend(_) => "the booking store is unavailable; retry later".to_string(),
            // Not an outage: a bug above the store. Loud, and not worth a retry.
            StoreError::InvariantBreach(what) => {
                tracing::error!(breach = %what, "invariant violated: a store invariant refused the request");
                "a store invariant refused this request and nothing was written; this is a bug, not an outage: do not retry".to_string()
            }
            other => other.to_string(),
        };
        let mut p = Problem::new(status, e.kind(), detail);
        if status == StatusCode::SERVICE_UNAVAILABLE {
            p.retry_after_s = Some(STORE_RETRY_AFTER_S);
        }
        p
    }
}

/// The `Retry-After` of a `503` from the store, s.
pub const STORE_RETRY_AFTER_S: u64 = crate::store::circuit::OPEN_RETRY_AFTER_S;

impl Problem {
    /// A checkout's problem from `e`: a store outage also says to retry with
    /// the same `Idempotency-Key` (the order may have been committed).
    pub fn of_checkout(e: StoreError) -> Self {
        let outage = matches!(e, StoreError::Backend(_));
        let mut p = Problem::from(e);
        if outage {
            p.detail = "the booking store is unavailable; retry later with the same Idempotency-Key".to_string();
        }
        p
    }
}

impl From<crate::admission::waiting_room::WaitingRoomError> for Problem {
    fn from(e: crate::admission::waiting_room::WaitingRoomError) -> Self {
        use crate::admission::queue::QueueError;
        use crate::admission::room::RoomError;
        use crate::admission::token::AdmissionError as A;
        use crate::admission::waiting_room::WaitingRoomError as W;
        let (status, kind) = match &e {
            W::Admission(a) => (
                StatusCode::FORBIDDEN,
                match a {
                    A::Missing => ProblemKind::AdmissionRequired,
                    A::Malformed(_) => ProblemKind::AdmissionMalformed,
                    A::Forged => ProblemKind::AdmissionForged,
                    A::OtherEvent { .. } => ProblemKind::AdmissionOtherEvent,
                    A::OtherUser => ProblemKind::AdmissionOtherUser,
                    A::Expired { .. } => ProblemKind::AdmissionExpired,
                    A::SessionEnded => ProblemKind::AdmissionSessionEnded,
                },
            ),
            W::Room(RoomError::NoRoom(_)) => (StatusCode::NOT_FOUND, ProblemKind::NoWaitingRoom),
            W::Room(RoomError::Conflict(_)) => (StatusCode::CONFLICT, ProblemKind::WaitingRoomConflict),
            W::Room(RoomError::BadSpec) => (StatusCode::BAD_REQUEST, ProblemKind::BadRequest),
            W::Room(RoomError::NotALottery(_)) => (StatusCode::NOT_FOUND, ProblemKind::NotALottery),
            W::Room(RoomError::TooManyRooms) => (StatusCode::CONFLICT, ProblemKind::WaitingRoomConflict),
            W::Room(RoomError::Queue(QueueError::BadTier(_))) => (StatusCode::BAD_REQUEST, ProblemKind::BadRequest),
            W::Room(RoomError::Queue(QueueError::SoldOut)) => (StatusCode::CONFLICT, ProblemKind::SoldOut),
            W::Room(RoomError::Queue(QueueError::Full)) => (StatusCode::TOO_MANY_REQUESTS, ProblemKind::QueueFull),
            W::Room(RoomError::Queue(QueueError::NotDrawn)) => (StatusCode::CONFLICT, ProblemKind::NotALottery),
            W::Room(RoomError::Unavailable(_)) => (StatusCode::SERVICE_UNAVAILABLE, ProblemKind::Unavailable),
            W::Record(_) => (StatusCode::SERVICE_UNAVAILABLE, ProblemKind::Backend),
        };
        let detail = match &e {
            // Never leak backend internals to clients.
            W::Room(RoomError::Unavailable(_)) => "the waiting room is unavailable; retry".to_string(),
            W::Record(_) => "the store is unavailable; retry".to_string(),
            other => other.to_string(),
        };
        let mut p = Problem::new(status, kind, detail);
        p.retry_after_s = match &e {
            // The record is PostgreSQL's: asked again as soon as the store is.
            W::Record(_) => Some(STORE_RETRY_AFTER_S),
            _ if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE => Some(5),
            _ => None,
        };
        p
    }
}

impl From<JsonRejection> for Problem {
    fn from(r: JsonRejection) -> Self {
        // One status for every body that is not the JSON the operation
        // takes (syntax or shape): 400 `bad-request`, never axum's 422.
        let status = r.status();
        let (status, kind) = match status {
            StatusCode::PAYLOAD_TOO_LARGE => (status, ProblemKind::PayloadTooLarge),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => (status, ProblemKind::UnsupportedMediaType),
            _ => (StatusCode::BAD_REQUEST, ProblemKind::BadRequest),
        };
        Problem::new(status, kind, r.body_text())
    }
}

impl From<PathRejection> for Problem {
    fn from(r: PathRejection) -> Self {
        Problem::bad_request(r.body_text())
    }
}

impl From<QueryRejection> for Problem {
    fn from(r: QueryRejection) -> Self {
        Problem::bad_request(r.body_text())
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry = self.retry_after_s;
        let body = serde_json::to_vec(&self).expect("problem serializes");
        let mut resp = (status, body).into_response();
        resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(s) = retry {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ONE_BOOKING_BREACH;

    /// The one-booking index firing reached the client as `503 …
    /// retry`, an outage to retry. A breach is a bug: 500, its own kind, no
    /// retry advice, and the backend's words stay inside.
    #[test]
    fn a_breach_is_a_500_of_its_own_kind_and_an_outage_a_503() {
        let breach = Problem::from(StoreError::InvariantBreach(ONE_BOOKING_BREACH.into()));
        assert_eq!((breach.status, breach.kind()), (500, Some(ProblemKind::InvariantBreach)));
        assert!(breach.detail.contains("do not retry") && !breach.detail.contains("bookings_one"), "{}", breach.detail);
        let outage = Problem::from(StoreError::Backend("connection reset".into()));
        assert_eq!((outage.status, outage.kind()), (503, Some(ProblemKind::Backend)));
        assert!(outage.detail.contains("retry later") && !outage.detail.contains("reset"));
        assert_eq!(outage.retry_after_s, Some(STORE_RETRY_AFTER_S), "a 503 says when to ask again");
        assert!(breach.retry_after_s.is_none());
    }

    /// A `503` on a GET told the reader to "retry with the same idempotency
    /// key", which no GET carries: only a checkout's outage says so now.
    #[test]
    fn only_a_checkout_outage_mentions_the_idempotency_key() {
        let read = Problem::from(StoreError::Backend("pool timed out".into()));
        assert!(!read.detail.to_lowercase().contains("idempotency"), "{}", read.detail);
        let checkout = Problem::of_checkout(StoreError::Backend("pool timed out".into()));
        assert!(checkout.detail.contains("same Idempotency-Key"), "{}", checkout.detail);
        assert_eq!(checkout.retry_after_s, Some(STORE_RETRY_AFTER_S));
        let refused = Problem::of_checkout(StoreError::StaleToken);
        assert_eq!(refused, Problem::from(StoreError::StaleToken), "only an outage is reworded");
    }
}
