//! One call of the store, as the trace records it: the request, the store's
//! clock at its transaction and the answer, recorded at the call's
//! linearization point (right after its transaction, before any other task
//! runs), in commit order, refusals and reads included. The auditor replays
//! these through the reference model ([`crate::model`]): it knows the state
//! every answer was decided on.
//!
//! The requests and answers are booking's own data types (what crossed the
//! `Store` trait); a refusal is its problem kind and its message. A seat map
//! is recorded by its version and a digest of its seats ([`SeatsDigest`]),
//! not seat by seat.

use booking::model::{
    Booking, Compensation, CompensationId, EventId, Order, OrderId, OutboxEvent, OutboxId, PaymentOp, PaymentOpId,
    Seat, SeatId, SeatState,
};
use booking::problem_kind::ProblemKind;
use booking::store::{
    AcquireHold, BeginPayment, BeginPaymentOutcome, CompensationAttempt, CompensationResult, CreateEvent, ExpiredHold,
    HoldGrant, OrderDetails, PaymentSuccess, ReconcileBackoff, Recorded, ReleaseHold, Resolution, SaleOutcome,
    SeatMapVersion, StoreError,
};
use serde::{Deserialize, Serialize};

/// A refused call: the error's kind and its message (`StoreError`'s `Display`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// The kind.
    pub kind: ProblemKind,
    /// The message.
    pub message: String,
}

impl From<&StoreError> for Refusal {
    fn from(e: &StoreError) -> Self {
        Self { kind: e.kind(), message: e.to_string() }
    }
}

/// What a call answered: its value, or its refusal.
pub type Answer<T> = Result<T, Refusal>;

/// Records a store result as an [`Answer`], mapping the value with `f`.
pub fn answer_of<T, U>(r: &Result<T, StoreError>, f: impl FnOnce(&T) -> U) -> Answer<U> {
    match r {
        Ok(v) => Ok(f(v)),
        Err(e) => Err(e.into()),
    }
}

/// A seat map, as recorded: its version and a digest of every field of
/// every seat, in seat order. Two maps with equal digests are equal (up to
/// the digest's collisions, which nobody is trying to provoke).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatsDigest {
    /// Seats and the sum of their versions.
    pub version: SeatMapVersion,
    /// FNV-1a over the seats' fields (see [`SeatsDigest::of`]).
    pub digest: u64,
}

impl SeatsDigest {
    /// The digest of `seats` (one event's, in seat order).
    pub fn of<'a>(seats: impl IntoIterator<Item = &'a Seat> + Clone) -> Self {
        let mut h = Fnv::default();
        for s in seats.clone() {
            h.text(&s.event_id);
            h.text(&s.seat_id);
            h.text(s.state.as_str());
            h.num(s.version);
            h.uuid(s.hold_token.map(|t| t.as_uuid()));
            h.text(s.holder_id.as_deref().unwrap_or(""));
            h.num(s.hold_expires_at_ms.unwrap_or(i64::MIN));
            h.uuid(s.order_id.map(|t| t.as_uuid()));
            h.uuid(s.booking_id.map(|t| t.as_uuid()));
        }
        Self { version: SeatMapVersion::of_seats(seats), digest: h.0 }
    }
}

/// FNV-1a, 64 bits, with a field separator.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn byte(&mut self, b: u8) {
        self.0 ^= u64::from(b);
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }
    fn text(&mut self, s: &str) {
        s.bytes().for_each(|b| self.byte(b));
        self.byte(0xff);
    }
    /// A UUID as its text (hyphenated, lower case), none as empty text:
    /// the same bytes as `text(&id.to_string())`, without the allocation.
    fn uuid(&mut self, id: Option<uuid::Uuid>) {
        let mut buf = uuid::Uuid::encode_buffer();
        self.text(id.map_or("", |id| id.hyphenated().encode_lower(&mut buf)));
    }
    fn num(&mut self, n: i64) {
        n.to_le_bytes().into_iter().for_each(|b| self.byte(b));
    }
}

/// A call of the store and its answer. Serialized with a `call` tag in snake_case.
///
/// Each variant is one `Store` method: its fields are the method's
/// parameters under their own names (`req` for a request struct), and
/// `answer` is what it returned.
#[allow(clippy::large_enum_variant, missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum StoreCall {
    /// `create_event`.
    CreateEvent { req: CreateEvent, answer: Answer<()> },
    /// `acquire_hold`.
    AcquireHold { req: AcquireHold, answer: Answer<HoldGrant> },
    /// `release_hold`.
    ReleaseHold { req: ReleaseHold, answer: Answer<Vec<SeatId>> },
    /// `sweep_expired_holds`.
    Sweep { limit_seats: u32, answer: Answer<Vec<ExpiredHold>> },
    /// `begin_payment`.
    BeginPayment { req: BeginPayment, answer: Answer<BeginPaymentOutcome> },
    /// `record_payment_success`.
    PaymentSuccess { req: PaymentSuccess, answer: Answer<Recorded<SaleOutcome>> },
    /// `record_payment_failure`.
    PaymentFailure { payment_op_id: PaymentOpId, reason: String, answer: Answer<Recorded<Order>> },
    /// `record_payment_unknown`.
    PaymentUnknown { payment_op_id: PaymentOpId, error: String, answer: Answer<Order> },
    /// `release_unresolved_payment`.
    ReleaseUnresolved { payment_op_id: PaymentOpId, reason: String, answer: Answer<Order> },
    /// `claim_outbox`.
    ClaimOutbox { limit: u32, lease_ms: i64, answer: Answer<Vec<OutboxEvent>> },
    /// `complete_outbox`.
    CompleteOutbox { event_id: EventId, outbox_id: OutboxId, answer: Answer<()> },
    /// `retry_outbox`.
    RetryOutbox { event_id: EventId, outbox_id: OutboxId, error: String, retry_after_ms: i64, answer: Answer<()> },
    /// `start_compensation_attempt`.
    StartCompensation { compensation_id: CompensationId, attempt_lease_ms: i64, answer: Answer<CompensationAttempt> },
    /// `finish_compensation_attempt`.
    FinishCompensation { req: CompensationResult, answer: Answer<Compensation> },
    /// `compensation`.
    Compensation { compensation_id: CompensationId, answer: Answer<Compensation> },
    /// `seat_map` (recorded by digest).
    SeatMap { event_id: EventId, answer: Answer<SeatsDigest> },
    /// `seat_map_version`.
    SeatMapVersion { event_id: EventId, answer: Answer<SeatMapVersion> },
    /// `seats_in_state` (recorded by the version and the digest of the seats shown).
    SeatsInState { event_id: EventId, state: SeatState, answer: Answer<(SeatMapVersion, SeatsDigest)> },
    /// `order`.
    Order { order_id: OrderId, answer: Answer<Order> },
    /// `payment_op`.
    PaymentOp { payment_op_id: PaymentOpId, answer: Answer<PaymentOp> },
    /// `compensations_for_order`.
    CompensationsForOrder { order_id: OrderId, answer: Answer<Vec<Compensation>> },
    /// `order_details`.
    OrderDetails { order_id: OrderId, answer: Answer<OrderDetails> },
    /// `bookings`.
    Bookings { event_id: EventId, answer: Answer<Vec<Booking>> },
    /// `claim_reconcile`.
    ClaimReconcile { limit: u32, backoff: ReconcileBackoff, answer: Answer<Vec<(Order, PaymentOp)>> },
    /// `needs_resolution`.
    NeedsResolution { answer: Answer<Resolution> },
    /// `now_ms` (the health check's and the workflow's clock reads).
    NowMs { answer: Answer<i64> },
}

impl StoreCall {
    /// The call's stable name (`acquire_hold`, ...), as serialized.
    pub fn name(&self) -> &'static str {
        match self {
            StoreCall::CreateEvent { .. } => "create_event",
            StoreCall::AcquireHold { .. } => "acquire_hold",
            StoreCall::ReleaseHold { .. } => "release_hold",
            StoreCall::Sweep { .. } => "sweep",
            StoreCall::BeginPayment { .. } => "begin_payment",
            StoreCall::PaymentSuccess { .. } => "payment_success",
            StoreCall::PaymentFailure { .. } => "payment_failure",
            StoreCall::PaymentUnknown { .. } => "payment_unknown",
            StoreCall::ReleaseUnresolved { .. } => "release_unresolved",
            StoreCall::ClaimOutbox { .. } => "claim_outbox",
            StoreCall::CompleteOutbox { .. } => "complete_outbox",
            StoreCall::RetryOutbox { .. } => "retry_outbox",
            StoreCall::StartCompensation { .. } => "start_compensation",
            StoreCall::FinishCompensation { .. } => "finish_compensation",
            StoreCall::Compensation { .. } => "compensation",
            StoreCall::SeatMap { .. } => "seat_map",
            StoreCall::SeatMapVersion { .. } => "seat_map_version",
            StoreCall::SeatsInState { .. } => "seats_in_state",
            StoreCall::Order { .. } => "order",
            StoreCall::PaymentOp { .. } => "payment_op",
            StoreCall::CompensationsForOrder { .. } => "compensations_for_order",
            StoreCall::OrderDetails { .. } => "order_details",
            StoreCall::Bookings { .. } => "bookings",
            StoreCall::ClaimReconcile { .. } => "claim_reconcile",
            StoreCall::NeedsResolution { .. } => "needs_resolution",
            StoreCall::NowMs { .. } => "now_ms",
        }
    }

    /// The kind of the call's refusal, if it was refused.
    pub fn refusal(&self) -> Option<&Refusal> {
        fn r<T>(a: &Answer<T>) -> Option<&Refusal> {
            a.as_ref().err()
        }
        match self {
            StoreCall::CreateEvent { answer, .. } => r(answer),
            StoreCall::AcquireHold { answer, .. } => r(answer),
            StoreCall::ReleaseHold { answer, .. } => r(answer),
            StoreCall::Sweep { answer, .. } => r(answer),
            StoreCall::BeginPayment { answer, .. } => r(answer),
            StoreCall::PaymentSuccess { answer, .. } => r(answer),
            StoreCall::PaymentFailure { answer, .. } => r(answer),
            StoreCall::PaymentUnknown { answer, .. } => r(answer),
            StoreCall::ReleaseUnresolved { answer, .. } => r(answer),
            StoreCall::ClaimOutbox { answer, .. } => r(answer),
            StoreCall::CompleteOutbox { answer, .. } => r(answer),
            StoreCall::RetryOutbox { answer, .. } => r(answer),
            StoreCall::StartCompensation { answer, .. } => r(answer),
            StoreCall::FinishCompensation { answer, .. } => r(answer),
            StoreCall::Compensation { answer, .. } => r(answer),
            StoreCall::SeatMap { answer, .. } => r(answer),
            StoreCall::SeatMapVersion { answer, .. } => r(answer),
            StoreCall::SeatsInState { answer, .. } => r(answer),
            StoreCall::Order { answer, .. } => r(answer),
            StoreCall::PaymentOp { answer, .. } => r(answer),
            StoreCall::CompensationsForOrder { answer, .. } => r(answer),
            StoreCall::OrderDetails { answer, .. } => r(answer),
            StoreCall::Bookings { answer, .. } => r(answer),
            StoreCall::ClaimReconcile { answer, .. } => r(answer),
            StoreCall::NeedsResolution { answer, .. } => r(answer),
            StoreCall::NowMs { answer, .. } => r(answer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use booking::model::HoldToken;

    fn seat(id: &str, version: i64) -> Seat {
        Seat {
            event_id: "ev".into(),
            seat_id: id.into(),
            state: SeatState::Available,
            version,
            hold_token: None,
            holder_id: None,
            hold_expires_at_ms: None,
            order_id: None,
            booking_id: None,
        }
    }

    #[test]
    fn a_digest_tells_maps_apart_by_any_field() {
        let a = vec![seat("1A", 0), seat("1B", 2)];
        let d = SeatsDigest::of(&a);
        assert_eq!(d.version, SeatMapVersion { seats: 2, version_sum: 2 });
        assert_eq!(d, SeatsDigest::of(&a.clone()));
        let mut b = a.clone();
        b[1].holder_id = Some("u".into());
        assert_ne!(SeatsDigest::of(&b).digest, d.digest);
        let mut c = a.clone();
        c[0].state = SeatState::Held;
        assert_ne!(SeatsDigest::of(&c).digest, d.digest);
        // Field boundaries count: "1A"+"B" is not "1"+"AB".
        let (x, y) = (vec![seat("1A", 0)], vec![seat("1", 0)]);
        assert_ne!(SeatsDigest::of(&x).digest, SeatsDigest::of(&y).digest);
    }

    #[test]
    fn a_uuid_hashes_as_its_text() {
        let id = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let (mut by_id, mut by_text) = (Fnv::default(), Fnv::default());
        by_id.uuid(Some(id));
        by_text.text(&id.to_string());
        assert_eq!(by_id.0, by_text.0);
        by_id.uuid(None);
        by_text.text("");
        assert_eq!(by_id.0, by_text.0);
    }

    #[test]
    fn calls_round_trip_through_json() {
        let call = StoreCall::ReleaseHold {
            req: ReleaseHold { event_id: "ev".into(), holder_id: "u".into(), hold_token: HoldToken::from_u128(7) },
            answer: Err(Refusal::from(&StoreError::NotHolder)),
        };
        let text = serde_json::to_string(&call).unwrap();
        assert!(text.starts_with(r#"{"call":"release_hold""#), "{text}");
        assert_eq!(serde_json::from_str::<StoreCall>(&text).unwrap(), call);
        assert_eq!(call.name(), "release_hold");
        assert_eq!(call.refusal().map(|r| r.kind), Some(ProblemKind::NotHolder));
    }
}
