//! The run's history, Jepsen style: every client operation as invoked and
//! then ok / fail / unknown, every store transition with the store's clock and
//! the authority it was made with, every money movement at the provider, every
//! injected fault and the phase markers. No wall-clock field anywhere: the
//! same seed gives the same trace byte for byte (see [`crate::hash`]).
//!
//! Times: `at_ms` is simulated time (ms since the simulation's epoch) when the
//! event was recorded; every `store_now_ms` is the store's clock at the write,
//! the clock that decides expiry. Checkers judge by `store_now_ms`.

use crate::path::Path;
use booking::model::{
    BookingId, Compensation, CompensationId, CompensationStatus, EventId, HoldToken, Order, OrderId, OrderStatus,
    PaymentOpId, Seat, SeatId, SeatState, UserId,
};
use booking::problem_kind::ProblemKind;
use serde::{Deserialize, Serialize};

/// Identifies one client operation: its `Invoke` and its one completion share it.
pub type OpId = u64;

/// One line of the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEvent {
    /// Position in the trace: 0, 1, 2, ... (assigned by [`Trace::record`]).
    pub seq: u64,
    /// Simulated time when it was recorded, in ms since the simulation's epoch.
    pub at_ms: i64,
    /// What happened.
    pub kind: TraceKind,
}

/// What happened. Serialized with a `type` tag in snake_case.
// The largest payloads (a seat change's images, a store call with its
// answer, the service's counters) are boxed: a waiting room's polls make up
// most of a large on-sale's events, and each event is as large as the
// largest variant (432 bytes with these unboxed, 184 boxed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TraceKind {
    /// A client sent a request.
    Invoke {
        /// The operation's id.
        op_id: OpId,
        /// The user (virtual client) sending it.
        client: UserId,
        /// The request.
        op: ClientOp,
        /// The service host it was sent to (`svc<host>`), when a simulated client sent it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<u32>,
    },
    /// The request's answer arrived and says it applied (or answered a query).
    Ok {
        /// The operation's id.
        op_id: OpId,
        /// The answer.
        result: OpResult,
        /// The answer's HTTP status (0: not recorded).
        #[serde(default)]
        status: u16,
    },
    /// The request's answer arrived and says it did not apply.
    Fail {
        /// The operation's id.
        op_id: OpId,
        /// The problem's kind (`StoreError::kind`, the problem `type` on HTTP).
        error_kind: ProblemKind,
        /// The answer's HTTP status (0: not recorded).
        #[serde(default)]
        status: u16,
        /// The problem's `retry_after_s`, when it carried one (a `429`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_s: Option<u64>,
    },
    /// No answer (timeout, connection lost, host crashed): neither ok nor fail.
    Unknown {
        /// The operation's id.
        op_id: OpId,
        /// Why the answer is unknown.
        reason: String,
    },
    /// A seat record changed in the store.
    SeatChange(Box<SeatChange>),
    /// An order was created or changed status in the store.
    OrderChange(OrderChange),
    /// A compensation was created or changed status in the store.
    CompensationChange(CompensationChange),
    /// The provider moved money or answered about it.
    Payment(PaymentEvent),
    /// A fault was injected (or lifted).
    Fault {
        /// Which fault.
        kind: FaultEvent,
        /// Where and how (host, user, link, duration): free text, deterministic.
        detail: String,
    },
    /// A phase of the run ended.
    Phase {
        /// Which phase.
        phase: PhaseMark,
        /// The store's clock at that moment.
        store_now_ms: i64,
    },
    /// A seat map was served from the seat-map cache (recorded only in worlds
    /// with cache faults): the version of the store's map the entry was
    /// cached from (the `version_sum` of its entity tag: the number of seat
    /// changes of the event it shows), or a poisoned entry.
    SeatMapCached {
        /// The event.
        event_id: EventId,
        /// The store's seat-map version the entry shows (`None` when poisoned).
        version_sum: Option<i64>,
    },
    /// The waiting room did something, or a waiting user learnt where they
    /// stand (recorded only in worlds with a waiting room).
    Room(RoomEvent),
    /// A call of the store at its linearization point, with its answer
    /// (recorded in simulated worlds: the auditor replays them in commit order).
    Store {
        /// The client operation whose request made the call (`None`: background
        /// work, the harness, or a request the client did not number).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        op_id: Option<OpId>,
        /// The store's clock at the call.
        store_now_ms: i64,
        /// The call and its answer.
        call: Box<crate::store_call::StoreCall>,
    },
    /// The service's counters (what `GET /metrics` renders), summed over
    /// every service host and life, read once the run settled.
    ServiceCounters(Box<crate::service_counters::ServiceCounters>),
    /// A fact the world made itself (the harness's own record of what it
    /// created or sent, never the service's word): checkers and the model
    /// take these facts from here and hold the service's account of them
    /// to it.
    World(WorldFact),
    /// The operators' list (`Store::needs_resolution`, what
    /// `GET /v1/admin/unresolved` serves) as read at the end of the run.
    OperatorList {
        /// The orders listed, in the store's order.
        order_ids: Vec<OrderId>,
        /// The compensations listed, in the store's order.
        compensation_ids: Vec<CompensationId>,
    },
}

/// A client request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ClientOp {
    /// Hold seats.
    Hold {
        /// The event.
        event_id: EventId,
        /// The selection.
        seat_ids: Vec<SeatId>,
        /// The `Admission-Token` presented (waiting-room events).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        admission: Option<String>,
    },
    /// Release a hold.
    Release {
        /// The event.
        event_id: EventId,
        /// The hold's token.
        hold_token: HoldToken,
    },
    /// Check out a hold: begin its payment.
    Checkout {
        /// The event.
        event_id: EventId,
        /// The hold's token (possibly stale, possibly another user's).
        hold_token: HoldToken,
        /// The seats.
        seat_ids: Vec<SeatId>,
        /// The client's idempotency key; a retry reuses it.
        idempotency_key: String,
        /// The `Admission-Token` presented (waiting-room events).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        admission: Option<String>,
    },
    /// Ask where an order is.
    OrderStatus {
        /// The order.
        order_id: OrderId,
    },
    /// Read an event's seat map (`?state=`, `If-None-Match`).
    SeatMap {
        /// The event.
        event_id: EventId,
        /// Only the seats in this state (`?state=`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<SeatState>,
        /// The entity tag presented as `If-None-Match`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        if_none_match: Option<String>,
    },
    /// A request sent as written: the probes of the API's surface (every
    /// refusal, every boundary), judged by what the API documents.
    Request {
        /// The method.
        method: String,
        /// The path and query.
        path: String,
        /// The credential presented as `Authorization: Bearer`.
        credential: Credential,
        /// Further headers, as sent (names in lower case).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        headers: Vec<(String, String)>,
        /// The body, as sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
    },
}

impl ClientOp {
    /// The operation's name: `hold`, `release`, `checkout`, `order-status`,
    /// `seat-map`, or `request` (a raw request, whatever its route).
    pub fn name(&self) -> &'static str {
        match self {
            ClientOp::Hold { .. } => "hold",
            ClientOp::Release { .. } => "release",
            ClientOp::Checkout { .. } => "checkout",
            ClientOp::OrderStatus { .. } => "order-status",
            ClientOp::SeatMap { .. } => "seat-map",
            ClientOp::Request { .. } => "request",
        }
    }
}

/// The bearer credential a [`ClientOp::Request`] presents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Credential {
    /// No `Authorization` header.
    None,
    /// The user's own token (every event).
    User,
    /// An operator's token.
    Admin,
    /// The user's token, scoped to these events only.
    Scoped(Vec<EventId>),
    /// The user's token, expired.
    Expired,
    /// A token signed with another secret.
    Forged,
    /// Not a token: this text after `Bearer `.
    Garbage(String),
    /// The header as written (another scheme, say).
    Header(String),
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum OpResult {
    /// The hold was granted.
    Held {
        /// The new token.
        hold_token: HoldToken,
        /// The seats, sorted.
        seat_ids: Vec<SeatId>,
        /// The deadline by the store's clock.
        expires_at_ms: i64,
    },
    /// The hold was released.
    Released {
        /// The seats it freed.
        seat_ids: Vec<SeatId>,
    },
    /// The checkout was accepted (or replayed by its idempotency key).
    CheckedOut {
        /// The order.
        order_id: OrderId,
        /// Its status in the answer.
        status: OrderStatus,
        /// Its bookings, when the answer already carries them.
        booking_ids: Vec<BookingId>,
        /// True when the idempotency key found an order committed earlier.
        replayed: bool,
    },
    /// An order's status.
    OrderStatus {
        /// The order.
        order_id: OrderId,
        /// Its status.
        status: OrderStatus,
        /// Its bookings (confirmed orders).
        booking_ids: Vec<BookingId>,
    },
    /// A seat map (or `304 Not Modified`: no seats).
    SeatMap {
        /// The entity tag answered (`None`: none, as a poisoned cache entry's).
        etag: Option<String>,
        /// Where the answer came from (`x-holdfast-source`: `store` or `cache`).
        source: String,
        /// The seats shown, by state: available, held, payment pending, sold.
        counts: [u32; 4],
    },
    /// Any other 2xx answer (a [`ClientOp::Request`]): its problem-free body, summarized.
    Answered {
        /// The body's top-level fields, sorted (`[]` when it is not a JSON object).
        fields: Vec<String>,
        /// The body itself, for the answers the auditor reads (the waiting room's queue and lottery).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
    },
}

/// Why a seat changed: which store operation made the write (the store's own
/// name for it, so the store's observer and the trace cannot drift apart).
pub use booking::store::SeatWriteCause as ChangeCause;

/// What the writer presented to justify a seat change. Fields not relevant to
/// the cause are `None` (the sweeper presents nothing; a new hold presents
/// only its holder).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Authority {
    /// The hold token presented (release, checkout; sale: the order's token).
    pub token: Option<HoldToken>,
    /// The user on whose behalf the write was made.
    pub holder: Option<UserId>,
    /// The order presented (sale, payment declined, unresolved release).
    pub order_id: Option<OrderId>,
    /// The order's payment deadline (unresolved release), store clock.
    pub payment_deadline_at_ms: Option<i64>,
}

impl Authority {
    /// No authority: the sweeper.
    pub fn none() -> Self {
        Self::default()
    }

    /// A new hold by `holder` (no token presented).
    pub fn new_hold(holder: &UserId) -> Self {
        Self { holder: Some(UserId::from(holder)), ..Self::default() }
    }

    /// A hold token presented by `holder` (release, checkout).
    pub fn token(token: HoldToken, holder: &UserId) -> Self {
        Self { token: Some(token), holder: Some(UserId::from(holder)), ..Self::default() }
    }

    /// An order acting on its seats (sale, payment declined, unresolved release).
    pub fn order(order: &Order) -> Self {
        Self {
            token: Some(order.hold_token),
            holder: Some(order.holder_id.clone()),
            order_id: Some(order.order_id),
            payment_deadline_at_ms: Some(order.payment_deadline_at_ms),
        }
    }
}

/// A seat record's ownership fields at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatImage {
    /// State.
    pub state: SeatState,
    /// Version.
    pub version: i64,
    /// Hold token.
    pub hold_token: Option<HoldToken>,
    /// Holder.
    pub holder_id: Option<UserId>,
    /// Hold deadline, store clock.
    pub hold_expires_at_ms: Option<i64>,
    /// Order reserving or owning the seat.
    pub order_id: Option<OrderId>,
    /// Booking (sold).
    pub booking_id: Option<BookingId>,
}

impl From<&Seat> for SeatImage {
    fn from(s: &Seat) -> Self {
        Self {
            state: s.state,
            version: s.version,
            hold_token: s.hold_token,
            holder_id: s.holder_id.clone(),
            hold_expires_at_ms: s.hold_expires_at_ms,
            order_id: s.order_id,
            booking_id: s.booking_id,
        }
    }
}

/// One write to one seat record, recorded inside the store's transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatChange {
    /// The event.
    pub event_id: EventId,
    /// The seat.
    pub seat_id: SeatId,
    /// The operation that wrote it.
    pub cause: ChangeCause,
    /// The store's clock at the write.
    pub store_now_ms: i64,
    /// What the writer presented.
    pub authority: Authority,
    /// The record just before the write (as the write saw it).
    pub before: SeatImage,
    /// The record just after.
    pub after: SeatImage,
}

impl SeatChange {
    /// Records a write from the row before and after it.
    ///
    /// Precondition: `before` and `after` are the same seat (asserted).
    pub fn new(cause: ChangeCause, store_now_ms: i64, authority: Authority, before: &Seat, after: &Seat) -> Self {
        assert!(
            before.event_id == after.event_id && before.seat_id == after.seat_id,
            "SeatChange of two different seats"
        );
        Self {
            event_id: after.event_id.clone(),
            seat_id: after.seat_id.clone(),
            cause,
            store_now_ms,
            authority,
            before: before.into(),
            after: after.into(),
        }
    }

    /// State before the write.
    pub fn from(&self) -> SeatState {
        self.before.state
    }

    /// State after the write.
    pub fn to(&self) -> SeatState {
        self.after.state
    }

    /// Version after the write.
    pub fn version(&self) -> i64 {
        self.after.version
    }

    /// The seat's key.
    pub fn seat_key(&self) -> (EventId, SeatId) {
        (self.event_id.clone(), self.seat_id.clone())
    }
}

/// An order created (`from: None`) or moved to another status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderChange {
    /// The event.
    pub event_id: EventId,
    /// The order.
    pub order_id: OrderId,
    /// The buyer.
    pub holder_id: UserId,
    /// Its payment operation.
    pub payment_op_id: PaymentOpId,
    /// Status before (`None`: created).
    pub from: Option<OrderStatus>,
    /// Status after.
    pub to: OrderStatus,
    /// Its payment deadline, store clock.
    pub payment_deadline_at_ms: i64,
    /// The store's clock at the write.
    pub store_now_ms: i64,
}

impl OrderChange {
    /// Records an order write from the record before (`None` when created) and after.
    pub fn new(before: Option<&Order>, after: &Order, store_now_ms: i64) -> Self {
        Self {
            event_id: after.event_id.clone(),
            order_id: after.order_id,
            holder_id: after.holder_id.clone(),
            payment_op_id: after.payment_op_id,
            from: before.map(|o| o.status),
            to: after.status,
            payment_deadline_at_ms: after.payment_deadline_at_ms,
            store_now_ms,
        }
    }
}

/// A compensation created (`from: None`) or moved to another status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompensationChange {
    /// The compensation.
    pub compensation_id: CompensationId,
    /// The order that was charged.
    pub order_id: OrderId,
    /// The payment operation that was charged.
    pub payment_op_id: PaymentOpId,
    /// Status before (`None`: created).
    pub from: Option<CompensationStatus>,
    /// Status after.
    pub to: CompensationStatus,
    /// Attempts made so far.
    pub attempts: i32,
    /// After the write: when the next attempt is due (`requested`), or when the
    /// running attempt's lease expires (`in_flight`).
    pub next_attempt_at_ms: i64,
    /// The store's clock at the write.
    pub store_now_ms: i64,
}

impl CompensationChange {
    /// Records a compensation write from the record before (`None` when created) and after.
    pub fn new(before: Option<&Compensation>, after: &Compensation, store_now_ms: i64) -> Self {
        Self {
            compensation_id: after.compensation_id,
            order_id: after.order_id,
            payment_op_id: after.payment_op_id,
            from: before.map(|c| c.status),
            to: after.status,
            attempts: after.attempts,
            next_attempt_at_ms: after.next_attempt_at_ms,
            store_now_ms,
        }
    }
}

/// What happened at the payment provider (the fake provider records these:
/// it is the ledger of money actually moved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "payment", rename_all = "snake_case")]
pub enum PaymentEvent {
    /// Money was taken. Recorded once per real charge: a provider that honours
    /// idempotency records one per payment operation however often it is asked.
    Charged {
        /// The payment operation (the provider's idempotency key).
        payment_op_id: PaymentOpId,
        /// Amount, in cents.
        amount_cents: i64,
        /// The provider's payment id.
        provider_payment_id: String,
    },
    /// The provider declined; nothing taken.
    Declined {
        /// The payment operation.
        payment_op_id: PaymentOpId,
    },
    /// The caller got no usable answer (timeout, 5xx): the outcome is unknown to it.
    Unknown {
        /// The payment operation.
        payment_op_id: PaymentOpId,
        /// Why.
        reason: String,
    },
    /// Money went back. Recorded once per real refund/void.
    Refunded {
        /// The compensation (the provider's idempotency key for the refund).
        compensation_id: CompensationId,
        /// The payment operation refunded.
        payment_op_id: PaymentOpId,
        /// Amount, in cents.
        amount_cents: i64,
    },
    /// A refund/void attempt failed; nothing went back.
    RefundFailed {
        /// The compensation.
        compensation_id: CompensationId,
        /// The payment operation.
        payment_op_id: PaymentOpId,
        /// The provider's error.
        reason: String,
    },
    /// The provider answered a status read (`GET /v1/payments/{key}`),
    /// traced where it answers (the simulator's provider host).
    Read {
        /// The payment operation asked about.
        payment_op_id: PaymentOpId,
        /// The status it answered (`processing`, `succeeded`, `failed`,
        /// ...); `None`: it had no record of the payment (`404`).
        status: Option<String>,
    },
    /// A callback (webhook) reached the service.
    CallbackDelivered {
        /// The payment operation.
        payment_op_id: PaymentOpId,
        /// What the callback says.
        status: booking::model::PaymentStatus,
        /// A repeat of a callback already delivered.
        duplicate: bool,
        /// Delivered after the order's payment deadline.
        late: bool,
    },
}

/// What the waiting room did (recorded by the simulator around the shared
/// rooms, in service-clock ms) or what a waiting user learnt. Serialized
/// with a `room` tag in snake_case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "room", rename_all = "snake_case")]
pub enum RoomEvent {
    /// An event's room opened.
    Opened {
        /// The event.
        event_id: EventId,
        /// Its fairness rule.
        policy: booking::admission::room::Policy,
        /// Sessions open at once at most.
        target_active_sessions: u32,
        /// When the sale opens, service-clock ms.
        opens_at_ms: i64,
        /// An admission's lifetime, ms.
        session_ttl_ms: i64,
        /// The lottery's seed, hex (what the reveal will show; the checker recomputes the draw from it).
        seed: String,
    },
    /// A user joined (first time only).
    Joined {
        /// The event.
        event_id: EventId,
        /// The user.
        user: UserId,
        /// Their tier (0 outside priority rooms).
        tier: u8,
        /// The service clock at the join.
        now_ms: i64,
    },
    /// An admission pass ran.
    Pass {
        /// The event.
        event_id: EventId,
        /// Users the law asked for.
        asked: u32,
        /// Users admitted.
        admitted: u32,
        /// Sessions open after.
        active: u32,
        /// Users waiting after.
        waiting: u64,
        /// The law's rate, admissions per 1,000 s.
        rate_per_ks: i64,
        /// The service clock at the pass.
        now_ms: i64,
    },
    /// A user was admitted: a session opened.
    Admitted {
        /// The event.
        event_id: EventId,
        /// The user.
        user: UserId,
        /// The session.
        session_id: booking::model::SessionId,
        /// The session's expiry, service-clock ms.
        expires_at_ms: i64,
    },
    /// A session ended by purchase (expiry is the session's `expires_at_ms`).
    Ended {
        /// The event.
        event_id: EventId,
        /// The user.
        user: UserId,
        /// The session.
        session_id: booking::model::SessionId,
        /// How.
        how: booking::admission::room::SessionEnd,
    },
    /// A purchase whose order failed was undone: the session is open again until its expiry.
    Reopened {
        /// The event.
        event_id: EventId,
        /// The user.
        user: UserId,
        /// The session.
        session_id: booking::model::SessionId,
    },
    /// The event sold out: nobody else is admitted.
    SoldOut {
        /// The event.
        event_id: EventId,
    },
    /// An instance's admission law ran before a pass: the instance's clock,
    /// the signals it read and what it decided (rates and health in
    /// millionths, rounded).
    LawRan {
        /// The event.
        event_id: EventId,
        /// The instance (`svc<i>`) and its life (0 first, +1 per restart).
        instance: String,
        /// The instance's life.
        life: u32,
        /// The instance's clock.
        now_ms: i64,
        /// What the law read.
        signals: LawSignals,
        /// Users it asked to admit.
        admit: u32,
        /// Its rate, admissions per 1,000,000 s.
        rate_per_million_s: i64,
        /// Its health, in millionths.
        health_ppm: i64,
        /// The mean session it assumed, in thousandths of a ms.
        mean_session_us: i64,
    },
    /// An instance's admission law learnt a session's duration.
    LawLearnt {
        /// The event.
        event_id: EventId,
        /// The instance (`svc<i>`).
        instance: String,
        /// The instance's life.
        life: u32,
        /// The session's duration.
        duration_ms: u64,
    },
    /// A waiting user learnt they were admitted, or that the event sold out.
    Told {
        /// The event.
        event_id: EventId,
        /// The user.
        user: UserId,
        /// True: admitted; false: sold out.
        admitted: bool,
    },
}

impl RoomEvent {
    /// The event whose room this is about.
    pub fn event_id(&self) -> &str {
        match self {
            RoomEvent::Opened { event_id, .. }
            | RoomEvent::Joined { event_id, .. }
            | RoomEvent::Pass { event_id, .. }
            | RoomEvent::Admitted { event_id, .. }
            | RoomEvent::Ended { event_id, .. }
            | RoomEvent::Reopened { event_id, .. }
            | RoomEvent::SoldOut { event_id }
            | RoomEvent::LawRan { event_id, .. }
            | RoomEvent::LawLearnt { event_id, .. }
            | RoomEvent::Told { event_id, .. } => event_id,
        }
    }
}

/// What an admission law read for one run: booking's own record of it.
pub use booking::admission::controller::Signals as LawSignals;

/// What the world knows because it made it: the credentials it issued, the
/// rooms it asked for, the webhooks its provider signed. Serialized with a
/// `fact` tag in snake_case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fact", rename_all = "snake_case")]
pub enum WorldFact {
    /// The world issued `user` a credential with a priority tier (a user
    /// without one is the public; recorded before the run starts).
    Credential {
        /// The user.
        user: UserId,
        /// The tier the credential grants (0 first).
        tier: u8,
    },
    /// The world asked for a waiting room in front of `event_id` with these
    /// settings (the service's clock at the request is the world's epoch).
    RoomAsked {
        /// The event.
        event_id: EventId,
        /// Its fairness rule.
        policy: booking::admission::room::Policy,
        /// Sessions open at once at most.
        target_active_sessions: u32,
        /// When the sale opens, service-clock ms.
        opens_at_ms: i64,
        /// An admission's lifetime, ms.
        session_ttl_ms: i64,
    },
    /// `user` is a prober: every request it sends is a probe of the API's
    /// surface (refusals wanted), not the workload's legitimate traffic.
    Prober {
        /// The user.
        user: UserId,
    },
    /// Request `op_id` (just invoked) is a deliberate misuse by a workload
    /// user (a checkout naming part of its hold, say): a refusal is wanted.
    Misuse {
        /// The request.
        op_id: OpId,
    },
    /// The service refused a webhook the world's provider signed with the
    /// deployed secret and its own clock and sent as it was made: a genuine
    /// webhook (recorded where the provider delivers it).
    WebhookRefused {
        /// The payment operation the webhook is about.
        payment_op_id: PaymentOpId,
        /// The webhook's kind (`payment_succeeded`, `refund_failed`, ...).
        kind: String,
        /// The service host that refused it (`svc<host>`).
        host: u32,
        /// The status it answered (a 4xx).
        status: u16,
    },
}

/// Which fault was injected or lifted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultEvent {
    /// A client stopped (GC pause, closed laptop).
    ClientPaused,
    /// A paused client resumed with its old requests.
    ClientResumed,
    /// An old token or checkout request was replayed.
    StaleTokenReplay,
    /// A payment callback or answer was held back.
    CallbackDelayed,
    /// A payment callback was delivered twice.
    CallbackDuplicated,
    /// Payment callbacks were delivered out of order.
    CallbackReordered,
    /// A service host crashed after the store committed, before it answered.
    CrashAfterCommit,
    /// A crashed host restarted.
    HostRestarted,
    /// The provider was told to answer "unknown" (timeout after processing).
    ProviderUnknown,
    /// The provider was told to fail a request.
    ProviderError,
    /// The provider was told to succeed after the payment deadline.
    ProviderLateSuccess,
    /// The provider was told to fail a refund.
    RefundFailure,
    /// A network partition started.
    PartitionStarted,
    /// A network partition was repaired.
    PartitionRepaired,
    /// Extra latency on a link.
    LinkLatency,
    /// A host's clock was skewed.
    ClockSkewed,
    /// The expiry sweeper stalled.
    SweeperStalled,
    /// The expiry sweeper resumed.
    SweeperResumed,
    /// The seat-map cache went down: every read misses, writes and invalidations are lost.
    CacheDown,
    /// The seat-map cache loses its invalidations: entries live out their TTL.
    CacheStale,
    /// The seat-map cache answers a poisoned entry: a map that shows every seat available.
    CachePoisoned,
    /// The seat-map cache works again.
    CacheHealed,
    /// The store became unreachable: every call fails as an outage does.
    StoreDown,
    /// The store answers again.
    StoreRestored,
    /// The waiting rooms' store lost every room (a Redis restart without persistence).
    RoomsLost,
    /// The waiting rooms' store stopped answering (Redis stopped); it comes back with `RoomsLost`.
    RoomsDown,
    /// A store write waited before it committed (a slow disk).
    CommitSlowed,
}

/// What a fault strikes, where a timeline draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultSite {
    /// A service host, named by the detail's first word.
    Host,
    /// A link, named by the detail (`a <-> b`).
    Link,
    /// Every link.
    Network,
    /// A user, named by the detail's first word.
    User,
    /// The expiry sweeper.
    Sweeper,
    /// The seat-map cache.
    Cache,
    /// The store.
    Store,
    /// The payment provider.
    Provider,
    /// Nothing of its own.
    Other,
}

/// A span a pair of faults marks out: from the fault that opens it to the one that closes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultBand {
    /// A host down: crash after commit until restart.
    Crash,
    /// A link cut or held until repaired.
    Partition,
    /// A client paused until it resumes.
    Pause,
    /// The sweeper stalled until it resumes.
    Stall,
    /// The seat-map cache down, stale or poisoned until healed.
    Cache,
    /// The provider's brownout window.
    Brownout,
    /// The store unreachable until restored.
    Outage,
}

/// Whether a fault is a moment or opens or closes a band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultSpan {
    /// A fault at one moment.
    Point,
    /// The start of a band.
    Open(FaultBand),
    /// The end of a band.
    Close(FaultBand),
}

impl FaultEvent {
    /// The path this fault counts as, if any. Every event is named: a new
    /// one must be decided here.
    pub fn path(self) -> Option<Path> {
        Some(match self {
            FaultEvent::ClientPaused => Path::ClientPaused,
            FaultEvent::StaleTokenReplay => Path::StaleTokenReplayed,
            FaultEvent::CrashAfterCommit => Path::CrashAfterCommit,
            FaultEvent::HostRestarted => Path::HostRestarted,
            FaultEvent::PartitionStarted => Path::PartitionStarted,
            FaultEvent::PartitionRepaired => Path::PartitionHealed,
            FaultEvent::ClockSkewed => Path::ClockSkewed,
            FaultEvent::SweeperStalled => Path::SweeperStalled,
            FaultEvent::CacheDown => Path::CacheDown,
            FaultEvent::CacheStale => Path::CacheStale,
            FaultEvent::CachePoisoned => Path::CachePoisoned,
            FaultEvent::StoreDown => Path::StoreDown,
            FaultEvent::RoomsLost => Path::RoomsLost,
            FaultEvent::RoomsDown => Path::RoomsDown,
            // Counted where they act (the provider's calls, the callbacks' deliveries), or an end.
            FaultEvent::ClientResumed
            | FaultEvent::CallbackDelayed
            | FaultEvent::CallbackDuplicated
            | FaultEvent::CallbackReordered
            | FaultEvent::ProviderUnknown
            | FaultEvent::ProviderError
            | FaultEvent::ProviderLateSuccess
            | FaultEvent::RefundFailure
            | FaultEvent::LinkLatency
            | FaultEvent::SweeperResumed
            | FaultEvent::CacheHealed
            | FaultEvent::StoreRestored
            | FaultEvent::CommitSlowed => return None,
        })
    }

    /// Whether this fault may cut work between a store's answer and its
    /// count. Every kind is named: a new one must be decided here.
    pub fn may_cut_work(self) -> bool {
        match self {
            FaultEvent::CrashAfterCommit
            | FaultEvent::HostRestarted
            | FaultEvent::PartitionStarted
            | FaultEvent::LinkLatency
            | FaultEvent::ClientPaused
            | FaultEvent::StoreDown
            | FaultEvent::RoomsDown
            | FaultEvent::RoomsLost => true,
            FaultEvent::ClientResumed
            | FaultEvent::CommitSlowed
            | FaultEvent::StaleTokenReplay
            | FaultEvent::CallbackDelayed
            | FaultEvent::CallbackDuplicated
            | FaultEvent::CallbackReordered
            | FaultEvent::ProviderUnknown
            | FaultEvent::ProviderError
            | FaultEvent::ProviderLateSuccess
            | FaultEvent::RefundFailure
            | FaultEvent::PartitionRepaired
            | FaultEvent::ClockSkewed
            | FaultEvent::SweeperStalled
            | FaultEvent::SweeperResumed
            | FaultEvent::CacheDown
            | FaultEvent::CacheStale
            | FaultEvent::CachePoisoned
            | FaultEvent::CacheHealed
            | FaultEvent::StoreRestored => false,
        }
    }

    /// What it strikes and whether it opens or closes a band (`detail` is
    /// its text: a provider brownout's edges are told by it). Every event
    /// is named: a new one must be decided here.
    pub fn placement(self, detail: &str) -> (FaultSite, FaultSpan) {
        use FaultEvent as K;
        use FaultSpan::{Close, Open, Point};
        match self {
            K::CrashAfterCommit => (FaultSite::Host, Open(FaultBand::Crash)),
            K::HostRestarted => (FaultSite::Host, Close(FaultBand::Crash)),
            K::ClockSkewed => (FaultSite::Host, Point),
            K::PartitionStarted => (FaultSite::Link, Open(FaultBand::Partition)),
            K::PartitionRepaired => (FaultSite::Link, Close(FaultBand::Partition)),
            K::LinkLatency => (FaultSite::Network, Point),
            K::ClientPaused => (FaultSite::User, Open(FaultBand::Pause)),
            K::ClientResumed => (FaultSite::User, Close(FaultBand::Pause)),
            K::StaleTokenReplay => (FaultSite::User, Point),
            K::SweeperStalled => (FaultSite::Sweeper, Open(FaultBand::Stall)),
            K::SweeperResumed => (FaultSite::Sweeper, Close(FaultBand::Stall)),
            K::CacheDown | K::CacheStale | K::CachePoisoned => (FaultSite::Cache, Open(FaultBand::Cache)),
            K::CacheHealed => (FaultSite::Cache, Close(FaultBand::Cache)),
            K::StoreDown => (FaultSite::Store, Open(FaultBand::Outage)),
            K::StoreRestored => (FaultSite::Store, Close(FaultBand::Outage)),
            K::CommitSlowed => (FaultSite::Store, Point),
            K::RoomsLost | K::RoomsDown => (FaultSite::Other, Point),
            K::ProviderError if detail.ends_with("brownout begins") => (FaultSite::Provider, Open(FaultBand::Brownout)),
            K::ProviderError if detail.ends_with("brownout ends") => (FaultSite::Provider, Close(FaultBand::Brownout)),
            K::ProviderError
            | K::ProviderUnknown
            | K::ProviderLateSuccess
            | K::RefundFailure
            | K::CallbackDelayed
            | K::CallbackDuplicated
            | K::CallbackReordered => (FaultSite::Provider, Point),
        }
    }
}

/// Phase markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseMark {
    /// Faults stop here; the settle phase begins.
    FaultPhaseEnd,
    /// The settle phase ended; checks run on the state at this point.
    SettleEnd,
}

/// Why a trace refused an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// The trace reached its limit.
    #[error("trace full: limit of {limit} events reached")]
    Full {
        /// The limit.
        limit: usize,
    },
    /// A JSON line did not parse.
    #[error("trace line {line}: {message}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// Sequence numbers are not 0, 1, 2, ...
    #[error("trace line {line}: expected seq {expected}, found {found}")]
    Sequence {
        /// 1-based line number.
        line: usize,
        /// The seq expected.
        expected: u64,
        /// The seq found.
        found: u64,
    },
}

/// Default bound on a trace's length.
pub const DEFAULT_TRACE_LIMIT_EVENTS: usize = 10_000_000;

/// A trace being recorded: assigns sequence numbers, bounded in length.
#[derive(Debug, Clone)]
pub struct Trace {
    events: Vec<TraceEvent>,
    limit_events: usize,
}

impl Default for Trace {
    fn default() -> Self {
        Self::new(DEFAULT_TRACE_LIMIT_EVENTS)
    }
}

impl Trace {
    /// An empty trace holding at most `limit_events` events (>= 1, asserted).
    pub fn new(limit_events: usize) -> Self {
        assert!(limit_events >= 1, "trace limit must be >= 1");
        Self { events: Vec::new(), limit_events }
    }

    /// Appends an event at simulated time `at_ms`; returns its seq.
    /// Errors: [`TraceError::Full`] once the limit is reached (nothing recorded).
    pub fn record(&mut self, at_ms: i64, kind: TraceKind) -> Result<u64, TraceError> {
        if self.events.len() >= self.limit_events {
            return Err(TraceError::Full { limit: self.limit_events });
        }
        let seq = self.events.len() as u64;
        self.events.push(TraceEvent { seq, at_ms, kind });
        Ok(seq)
    }

    /// The events so far, in order.
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event was recorded.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The events, consuming the trace.
    pub fn into_events(self) -> Vec<TraceEvent> {
        self.events
    }
}

/// One event as its canonical JSON line (no trailing newline): the form that
/// is hashed and written to trace files.
pub fn to_json_line(event: &TraceEvent) -> String {
    serde_json::to_string(event).expect("trace events always serialize")
}

/// The whole trace as JSON lines, each terminated by `\n`.
pub fn to_json_lines(events: &[TraceEvent]) -> String {
    let mut out = String::new();
    for e in events {
        out.push_str(&to_json_line(e));
        out.push('\n');
    }
    out
}

/// Parses JSON lines (blank lines ignored) and checks seqs run 0, 1, 2, ...
pub fn from_json_lines(text: &str) -> Result<Vec<TraceEvent>, TraceError> {
    let mut out: Vec<TraceEvent> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let event: TraceEvent =
            serde_json::from_str(line).map_err(|e| TraceError::Parse { line: i + 1, message: e.to_string() })?;
        let expected = out.len() as u64;
        if event.seq != expected {
            return Err(TraceError::Sequence { line: i + 1, expected, found: event.seq });
        }
        out.push(event);
    }
    Ok(out)
}
