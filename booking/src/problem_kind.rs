//! The stable names of every refusal: the store's named errors and the API's
//! own. One vocabulary, typed, shared by the service (a problem document's
//! `type` is `urn:holdfast:problem:<kind>`), the simulator's users (which
//! read it back) and the checkers (which judge the trace's `error_kind`).

crate::model::string_enum! {
    /// A kind of problem, by its stable kebab-case name.
    ProblemKind {
        /// The store found the request malformed.
        InvalidInput => "invalid-input",
        /// No such event.
        UnknownEvent => "unknown-event",
        /// The event exists already.
        EventExists => "event-exists",
        /// A requested seat does not exist.
        UnknownSeat => "unknown-seat",
        /// A requested seat is owned by someone else.
        SeatUnavailable => "seat-unavailable",
        /// The hold would pass the per-user cap.
        HoldLimit => "hold-limit",
        /// No seat carries the token (never issued, released, swept, checked out).
        HoldNotFound => "hold-not-found",
        /// Another hold owns the seats now.
        StaleToken => "stale-token",
        /// The hold is another user's.
        NotHolder => "not-holder",
        /// The hold's deadline has passed.
        HoldExpired => "hold-expired",
        /// The idempotency key was used for another request.
        IdempotencyKeyReused => "idempotency-key-reused",
        /// No such order.
        UnknownOrder => "unknown-order",
        /// No such payment operation.
        UnknownPaymentOp => "unknown-payment-op",
        /// The payment already has the other final outcome.
        PaymentConflict => "payment-conflict",
        /// The payment deadline has not passed.
        DeadlineNotPassed => "deadline-not-passed",
        /// The order no longer owns its seats.
        OrderNotOpen => "order-not-open",
        /// No such dispatch event.
        UnknownOutboxEvent => "unknown-outbox-event",
        /// No such compensation.
        UnknownCompensation => "unknown-compensation",
        /// The compensation's next attempt is not due.
        CompensationNotDue => "compensation-not-due",
        /// The store is unavailable: retry.
        Backend => "backend",
        /// A store invariant refused the request: a bug, not an outage.
        InvariantBreach => "invariant-breach",
        /// The request is malformed (syntax, shape, parameters).
        BadRequest => "bad-request",
        /// Missing or invalid credentials.
        Unauthorized => "unauthorized",
        /// Authenticated, not allowed.
        Forbidden => "forbidden",
        /// No such resource or route.
        NotFound => "not-found",
        /// Too many hold attempts: retry later.
        RateLimited => "rate-limited",
        /// The body is larger than the service accepts.
        PayloadTooLarge => "payload-too-large",
        /// The body is not JSON.
        UnsupportedMediaType => "unsupported-media-type",
        /// The method is not allowed on the path.
        MethodNotAllowed => "method-not-allowed",
        /// A checkout without its `Idempotency-Key` header.
        IdempotencyKeyRequired => "idempotency-key-required",
        /// A provider webhook whose body is not a webhook event.
        BadWebhook => "bad-webhook",
        /// A provider webhook whose signature or timestamp does not verify.
        BadWebhookSignature => "bad-webhook-signature",
        /// The service cannot reach its store (health check).
        Unavailable => "unavailable",
        /// A server error the framework raised.
        Internal => "internal",
        /// A hold or checkout on a waiting-room event without an admission token.
        AdmissionRequired => "admission-required",
        /// Not an admission token (length, format, encoding).
        AdmissionMalformed => "admission-malformed",
        /// An admission token whose signature does not verify.
        AdmissionForged => "admission-forged",
        /// An admission token issued for another event.
        AdmissionOtherEvent => "admission-other-event",
        /// An admission token issued to another user.
        AdmissionOtherUser => "admission-other-user",
        /// An admission token past its expiry.
        AdmissionExpired => "admission-expired",
        /// An admission token whose checkout session has ended (a purchase, or its expiry).
        AdmissionSessionEnded => "admission-session-ended",
        /// The event has no waiting room.
        NoWaitingRoom => "no-waiting-room",
        /// The event's waiting room is configured otherwise (or no room is left).
        WaitingRoomConflict => "waiting-room-conflict",
        /// The event sold out: nobody else is admitted.
        SoldOut => "sold-out",
        /// The queue holds as many users as it may.
        QueueFull => "queue-full",
        /// The event's waiting room is not a lottery.
        NotALottery => "not-a-lottery",
        /// An error answer that is not a problem document of this API (seen by a
        /// client only, e.g. from a proxy).
        NotAProblem => "unknown-error",
    }
}

impl ProblemKind {
    /// Whether a refusal of this kind says "try again" rather than "this did
    /// not and will not apply": a retry may still succeed.
    pub fn is_transient(self) -> bool {
        matches!(self, ProblemKind::Backend | ProblemKind::Unavailable | ProblemKind::RateLimited)
    }

    /// Whether the waiting room's gate refused a hold or checkout with this
    /// kind (no, a bad, or a spent admission token).
    pub fn is_admission_refusal(self) -> bool {
        matches!(
            self,
            ProblemKind::AdmissionRequired
                | ProblemKind::AdmissionMalformed
                | ProblemKind::AdmissionForged
                | ProblemKind::AdmissionOtherEvent
                | ProblemKind::AdmissionOtherUser
                | ProblemKind::AdmissionExpired
                | ProblemKind::AdmissionSessionEnded
        )
    }

    /// Whether a checkout or release of this kind refused a stale, borrowed or
    /// expired hold token.
    pub fn refuses_stale_hold(self) -> bool {
        matches!(
            self,
            ProblemKind::StaleToken | ProblemKind::NotHolder | ProblemKind::HoldExpired | ProblemKind::HoldNotFound
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_parse_and_serde() {
        for k in ProblemKind::ALL {
            assert_eq!(ProblemKind::parse(k.as_str()), Some(*k));
            assert_eq!(serde_json::to_string(k).unwrap(), format!("\"{}\"", k.as_str()));
            assert_eq!(serde_json::from_str::<ProblemKind>(&format!("\"{k}\"")).unwrap(), *k);
        }
        assert_eq!(ProblemKind::parse("no-such-kind"), None);
    }
}
