//! The records of the booking domain: seats, orders, payment operations,
//! bookings, compensations and the outbox. Pure data, no I/O.
//!
//! Every time is milliseconds since the Unix epoch *by the store's clock*
//! (`*_at_ms`); every duration carries its unit (`*_ms`).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use crate::typed_ids::{
    BookingId, CompensationId, EventId, HoldToken, OrderId, OutboxId, PaymentOpId, SeatId, SessionId, UserId,
};

/// Upper bound on the seats of one hold: a selection is small by construction.
pub const MAX_SEATS_PER_HOLD: usize = 8;
/// Upper bound on the seats of one event.
pub const MAX_SEATS_PER_EVENT: usize = 100_000;
/// Upper bound on a hold's time to live.
pub const MAX_HOLD_TTL_MS: i64 = 60 * 60 * 1000;
/// Upper bound on a payment's time to live.
pub const MAX_PAYMENT_TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// Upper bound on an idempotency key's length.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 128;

/// An enum of stable names: each variant serializes as, prints as and
/// parses from its literal (the name used in SQL, JSON, traces and problem
/// types), with `ALL` in declaration order.
macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name { $($(#[$vm])* #[serde(rename = $s)] $variant),+ }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The stable name used in SQL, JSON and traces.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
            /// Parses the stable name; `None` for anything else.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use string_enum;

string_enum! {
    /// Where a seat is in its life: `available -> held -> payment_pending -> sold`,
    /// with `held -> available` (release, expiry) and `payment_pending -> available`
    /// (payment failed, unresolved payment released after its deadline); the
    /// table and the machine that decides each move are
    /// [`store::machine::seat`](crate::store::machine::seat).
    SeatState {
        /// Nobody owns it.
        Available => "available",
        /// A holder owns it with a token until `hold_expires_at_ms`.
        Held => "held",
        /// An order's payment operation owns it.
        PaymentPending => "payment_pending",
        /// A confirmed booking owns it, for good.
        Sold => "sold",
    }
}

string_enum! {
    /// Where an order is. `pending`/`reconciling` own their seats; every other
    /// state does not. `compensating`, `compensated` and `compensation_failed`
    /// are orders that were charged without a ticket (a late success).
    OrderStatus {
        /// Payment dispatched or about to be; the seats are reserved for it.
        Pending => "pending",
        /// The provider's answer was lost; reconciliation asks until known. Seats stay reserved.
        Reconciling => "reconciling",
        /// Charged and booked.
        Confirmed => "confirmed",
        /// The provider declined; the seats were released. Nothing charged.
        Failed => "failed",
        /// Unresolved past its payment deadline; the seats were released and the decision recorded.
        Released => "released",
        /// Charged after the seats were released: a void/refund is under way.
        Compensating => "compensating",
        /// Charged after release, and the money went back.
        Compensated => "compensated",
        /// Charged after release, and giving the money back failed for good: operators must act.
        CompensationFailed => "compensation_failed",
    }
}

impl OrderStatus {
    /// Whether an order in this state still owns (reserves) its seats.
    pub fn owns_seats(self) -> bool {
        matches!(self, OrderStatus::Pending | OrderStatus::Reconciling)
    }
}

string_enum! {
    /// What the payment provider has said about a payment operation.
    PaymentStatus {
        /// Not yet answered.
        Pending => "pending",
        /// Asked, and the answer was lost (timeout, 5xx after processing): neither success nor failure.
        Unknown => "unknown",
        /// Charged.
        Succeeded => "succeeded",
        /// Declined; nothing charged.
        Failed => "failed",
    }
}

string_enum! {
    /// How a charge is given back.
    CompensationKind {
        /// Cancel an authorization before capture.
        Void => "void",
        /// Return captured money.
        Refund => "refund",
    }
}

string_enum! {
    /// Where a compensation is. `failed` is final and visible to operators.
    CompensationStatus {
        /// Waiting for its next attempt (at `next_attempt_at_ms`).
        Requested => "requested",
        /// An attempt is under way.
        InFlight => "in_flight",
        /// The money went back.
        Succeeded => "succeeded",
        /// Attempts exhausted: operators must act.
        Failed => "failed",
    }
}

string_enum! {
    /// What a dispatch event asks the dispatcher to do.
    OutboxKind {
        /// Ask the provider to charge a payment operation.
        Charge => "charge",
        /// Ask the provider to void/refund a compensation.
        Compensate => "compensate",
    }
}

string_enum! {
    /// Where a dispatch event is.
    OutboxStatus {
        /// Waiting (or leased until `available_at_ms`).
        Pending => "pending",
        /// Handled; kept for audit, never deleted silently.
        Done => "done",
    }
}

/// One seat of one event: the record that decides who owns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    /// The event.
    pub event_id: EventId,
    /// The seat within the event.
    pub seat_id: SeatId,
    /// Current state.
    pub state: SeatState,
    /// Bumped by one on every change.
    pub version: i64,
    /// The current hold's token (`held`, `payment_pending`).
    pub hold_token: Option<HoldToken>,
    /// The current holder (`held`, `payment_pending`, `sold`).
    pub holder_id: Option<UserId>,
    /// When the current hold expires (`held`, `payment_pending`).
    pub hold_expires_at_ms: Option<i64>,
    /// The order that reserves or bought the seat (`payment_pending`, `sold`).
    pub order_id: Option<OrderId>,
    /// The confirmed booking (`sold`).
    pub booking_id: Option<BookingId>,
}

/// An event and its per-seat price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// The event.
    pub event_id: EventId,
    /// Price of one seat, in cents.
    pub price_cents: i64,
    /// When it was created.
    pub created_at_ms: i64,
}

/// A checkout: the seats of one hold, moving through payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    /// The event.
    pub event_id: EventId,
    /// Unique order id.
    pub order_id: OrderId,
    /// The buyer.
    pub holder_id: UserId,
    /// The hold token the order was created from.
    pub hold_token: HoldToken,
    /// The seats, sorted.
    pub seat_ids: Vec<SeatId>,
    /// Total to charge, in cents.
    pub amount_cents: i64,
    /// Where the order is.
    pub status: OrderStatus,
    /// Its (one) payment operation; also the provider's idempotency key.
    pub payment_op_id: PaymentOpId,
    /// After this instant an unresolved payment may be released.
    pub payment_deadline_at_ms: i64,
    /// The client's idempotency key for the checkout.
    pub idempotency_key: String,
    /// Why the order left the `pending`/`reconciling` states without a sale, when it did.
    pub resolution_reason: Option<String>,
    /// Created.
    pub created_at_ms: i64,
    /// Last changed.
    pub updated_at_ms: i64,
}

/// One call (and its retries) to the payment provider for an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentOp {
    /// The event.
    pub event_id: EventId,
    /// Unique; used as the provider's idempotency key.
    pub payment_op_id: PaymentOpId,
    /// The order it pays for.
    pub order_id: OrderId,
    /// Amount, in cents.
    pub amount_cents: i64,
    /// What the provider has said.
    pub status: PaymentStatus,
    /// The provider's payment id, once known.
    pub provider_payment_id: Option<String>,
    /// Last error seen talking to the provider.
    pub last_error: Option<String>,
    /// Last changed (by what the provider said; a reconcile claim does not count).
    pub updated_at_ms: i64,
    /// Earliest instant at which a reconciler may claim it again to ask the
    /// provider (its backoff; see `Store::claim_reconcile`). Its creation time
    /// at first: due as soon as it needs a check.
    pub next_check_at_ms: i64,
    /// How many times reconcilers have claimed it: its backoff step.
    pub checks: i32,
}

/// A confirmed booking: one per sold seat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Booking {
    /// The event.
    pub event_id: EventId,
    /// The seat.
    pub seat_id: SeatId,
    /// Unique booking id.
    pub booking_id: BookingId,
    /// The order that bought it.
    pub order_id: OrderId,
    /// The payment operation that paid for it.
    pub payment_op_id: PaymentOpId,
    /// The buyer.
    pub holder_id: UserId,
    /// When it was confirmed.
    pub created_at_ms: i64,
}

/// Money to give back: a charge that bought no ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compensation {
    /// The event.
    pub event_id: EventId,
    /// Unique compensation id; also the provider's idempotency key for the refund.
    pub compensation_id: CompensationId,
    /// The order that was charged.
    pub order_id: OrderId,
    /// The payment operation that was charged.
    pub payment_op_id: PaymentOpId,
    /// Void or refund.
    pub kind: CompensationKind,
    /// Amount to give back, in cents.
    pub amount_cents: i64,
    /// Where it is.
    pub status: CompensationStatus,
    /// Attempts made so far.
    pub attempts: i32,
    /// Last error from the provider.
    pub last_error: Option<String>,
    /// `requested`: earliest instant of the next attempt; `in_flight`: when the
    /// running attempt's lease ends (after it, another dispatcher may take over).
    pub next_attempt_at_ms: i64,
    /// Created.
    pub created_at_ms: i64,
    /// Last changed.
    pub updated_at_ms: i64,
}

/// A durable dispatch event: work for the dispatcher, written in the same
/// transaction as the state change that calls for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxEvent {
    /// The event.
    pub event_id: EventId,
    /// Unique id.
    pub outbox_id: OutboxId,
    /// What to do.
    pub kind: OutboxKind,
    /// The payment operation (`charge`) or compensation (`compensate`) concerned.
    pub ref_id: Uuid,
    /// Pending or done.
    pub status: OutboxStatus,
    /// Times it was claimed.
    pub attempts: i32,
    /// Claimable from this instant (a claim leases it until then).
    pub available_at_ms: i64,
    /// Last error while handling it.
    pub last_error: Option<String>,
    /// Created.
    pub created_at_ms: i64,
}

/// Everything a store holds, in canonical order (sorted by key). Used by the
/// differential test and by invariant checkers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Events by id.
    pub events: Vec<Event>,
    /// Seats by (event, seat).
    pub seats: Vec<Seat>,
    /// Orders by (event, order id).
    pub orders: Vec<Order>,
    /// Payment operations by (event, id).
    pub payment_ops: Vec<PaymentOp>,
    /// Bookings by (event, seat, booking id).
    pub bookings: Vec<Booking>,
    /// Compensations by (event, id).
    pub compensations: Vec<Compensation>,
    /// Dispatch events by (event, id).
    pub outbox: Vec<OutboxEvent>,
}

/// Whether `id` is a valid event, seat or user id.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

impl Compensation {
    /// A new refund of `amount_cents` for a charge that bought no ticket,
    /// due at once (`requested`, no attempt yet).
    pub fn requested_refund(
        event_id: &EventId,
        compensation_id: CompensationId,
        order_id: OrderId,
        payment_op_id: PaymentOpId,
        amount_cents: i64,
        now_ms: i64,
    ) -> Self {
        Self {
            event_id: event_id.clone(),
            compensation_id,
            order_id,
            payment_op_id,
            kind: CompensationKind::Refund,
            amount_cents,
            status: CompensationStatus::Requested,
            attempts: 0,
            last_error: None,
            next_attempt_at_ms: now_ms,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        }
    }
}

impl OutboxEvent {
    /// A new dispatch event, due at once.
    pub fn pending(
        event_id: &EventId,
        outbox_id: OutboxId,
        kind: OutboxKind,
        ref_id: impl Into<Uuid>,
        now_ms: i64,
    ) -> Self {
        Self {
            event_id: event_id.clone(),
            outbox_id,
            kind,
            ref_id: ref_id.into(),
            status: OutboxStatus::Pending,
            attempts: 0,
            available_at_ms: now_ms,
            last_error: None,
            created_at_ms: now_ms,
        }
    }
}
