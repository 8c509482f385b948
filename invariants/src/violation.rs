//! What a checker reports: the invariant broken, the record it concerns, and
//! the trace events that witness it.

use booking::model::{CompensationId, EventId, HoldToken, OrderId, PaymentOpId, SeatId, UserId};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The invariants, with stable names (used in reports, JSON and scenario files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Invariant {
    /// At most one confirmed booking per (event, seat).
    OneBookingPerSeat,
    /// Every sold seat has exactly one booking tied to a succeeded payment, and
    /// every booking belongs to a seat sold to it.
    SoldSeatPaid,
    /// Every charge is a booking or a compensation record (or still open for reconciliation).
    NoHiddenCharge,
    /// Every compensation not yet succeeded is in the operators' list.
    CompensationVisible,
    /// Every ownership change was made with the authority current and unexpired by the store's clock.
    NoStaleAuthority,
    /// All answers to one idempotency key name one order; never two charges.
    IdempotentRetry,
    /// Never more refunded than charged.
    RefundBounded,
    /// No refund twice.
    NoDoubleRefund,
    /// A seat's version rises by one on every change and never goes back.
    VersionMonotonic,
    /// Seat states move only along the checker's own seat table (`checks::SEAT_TRANSITIONS`).
    AllowedTransition,
    /// Liveness: no seat held past its deadline plus the sweep bound.
    HoldReclaimed,
    /// Liveness: no payment unresolved past its deadline plus the reconciliation bound.
    PaymentResolved,
    /// Liveness: every compensation finished (succeeded) or flagged (failed) within its bound.
    CompensationSettled,
    /// A multi-seat hold grants exactly the seats requested, or none.
    HoldAllOrNothing,
    /// Every hold grant carries a token never issued before (a takeover never keeps the old token).
    FreshHoldToken,
    /// An unknown payment outcome keeps its seats reserved until the payment
    /// deadline; only a decline (never charged) frees them early, and every
    /// release records its reason.
    UnknownKeepsSeats,
    /// The payment of a confirmed booking is never refunded: refunds exist only
    /// for orders charged without a ticket.
    NoRefundOfTicket,
    /// Every compensation the store records as succeeded has its refund in the provider's ledger.
    RefundAtProvider,
    /// No user ever has more seats of one event than the per-user cap, held
    /// (unexpired by the store's clock) or in payment.
    HoldCap,
    /// A checkout is granted only when it names every seat of its hold: a
    /// hold is paid all or nothing, as it was taken.
    CheckoutWholeHold,
    /// A refund attempt starts only when due: a requested compensation once
    /// its backoff has passed, an in-flight one (a takeover) only once the
    /// running attempt's lease has expired; and every attempt is leased into the future.
    RefundAttemptDue,
    /// Orders move only along their table (`checks::ORDER_TRANSITIONS`):
    /// created `pending`, each change from where the last one left it, nothing
    /// out of a final state.
    OrderTransition,
    /// Compensations move only along their table
    /// (`checks::COMPENSATION_TRANSITIONS`), as orders do along theirs.
    CompensationTransition,
    /// A seat map served from the cache is never older than the cache's TTL:
    /// the first store change it does not show happened less than
    /// `seat_map_cache_ttl_ms` before it was served.
    StaleReadBounded,
    /// No hold or checkout on a waiting-room event is granted without an
    /// admission: one made after the user's admission, before its session
    /// ended (a purchase's own retried checkout aside) and before it expired.
    AdmissionRequired,
    /// Open checkout sessions of a waiting room never exceed its target.
    SessionsWithinTarget,
    /// Admissions follow the room's fairness policy: arrival order, the
    /// lottery's recomputable draw then arrival order, or tiers then arrival order.
    AdmissionOrder,
    /// Liveness: every user who joined a waiting room is told they were
    /// admitted, or that the event sold out, by the end of the run.
    QueueLiveness,
    /// Goodput: a request the world knows is well-formed and authorized (a
    /// workload user's own, a webhook its provider signed) is never refused
    /// as malformed, unauthorized or naming what does not exist.
    LegitimateAccepted,
    /// Every answer a client received and every record the store wrote is
    /// what the reference model ([`crate::model`]) says it must be.
    Auditor,
}

impl Invariant {
    /// Every invariant, in declaration order.
    pub const ALL: &'static [Invariant] = &[
        Invariant::OneBookingPerSeat,
        Invariant::SoldSeatPaid,
        Invariant::NoHiddenCharge,
        Invariant::CompensationVisible,
        Invariant::NoStaleAuthority,
        Invariant::IdempotentRetry,
        Invariant::RefundBounded,
        Invariant::NoDoubleRefund,
        Invariant::VersionMonotonic,
        Invariant::AllowedTransition,
        Invariant::HoldReclaimed,
        Invariant::PaymentResolved,
        Invariant::CompensationSettled,
        Invariant::HoldAllOrNothing,
        Invariant::FreshHoldToken,
        Invariant::UnknownKeepsSeats,
        Invariant::NoRefundOfTicket,
        Invariant::RefundAtProvider,
        Invariant::HoldCap,
        Invariant::CheckoutWholeHold,
        Invariant::RefundAttemptDue,
        Invariant::OrderTransition,
        Invariant::CompensationTransition,
        Invariant::StaleReadBounded,
        Invariant::AdmissionRequired,
        Invariant::SessionsWithinTarget,
        Invariant::AdmissionOrder,
        Invariant::QueueLiveness,
        Invariant::LegitimateAccepted,
        Invariant::Auditor,
    ];

    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Invariant::OneBookingPerSeat => "one-booking-per-seat",
            Invariant::SoldSeatPaid => "sold-seat-paid",
            Invariant::NoHiddenCharge => "no-hidden-charge",
            Invariant::CompensationVisible => "compensation-visible",
            Invariant::NoStaleAuthority => "no-stale-authority",
            Invariant::IdempotentRetry => "idempotent-retry",
            Invariant::RefundBounded => "refund-bounded",
            Invariant::NoDoubleRefund => "no-double-refund",
            Invariant::VersionMonotonic => "version-monotonic",
            Invariant::AllowedTransition => "allowed-transition",
            Invariant::HoldReclaimed => "hold-reclaimed",
            Invariant::PaymentResolved => "payment-resolved",
            Invariant::CompensationSettled => "compensation-settled",
            Invariant::HoldAllOrNothing => "hold-all-or-nothing",
            Invariant::FreshHoldToken => "fresh-hold-token",
            Invariant::UnknownKeepsSeats => "unknown-keeps-seats",
            Invariant::NoRefundOfTicket => "no-refund-of-ticket",
            Invariant::RefundAtProvider => "refund-at-provider",
            Invariant::HoldCap => "hold-cap",
            Invariant::CheckoutWholeHold => "checkout-whole-hold",
            Invariant::RefundAttemptDue => "refund-attempt-due",
            Invariant::OrderTransition => "order-transition",
            Invariant::CompensationTransition => "compensation-transition",
            Invariant::StaleReadBounded => "stale-read-bounded",
            Invariant::AdmissionRequired => "admission-required",
            Invariant::SessionsWithinTarget => "sessions-within-target",
            Invariant::AdmissionOrder => "admission-order",
            Invariant::QueueLiveness => "queue-liveness",
            Invariant::LegitimateAccepted => "legitimate-accepted",
            Invariant::Auditor => "auditor",
        }
    }

    /// Parses a stable name.
    pub fn parse(name: &str) -> Option<Invariant> {
        Invariant::ALL.iter().copied().find(|i| i.as_str() == name)
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The record a violation concerns.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "subject", rename_all = "snake_case")]
pub enum Subject {
    /// A seat.
    Seat {
        /// The event.
        event_id: EventId,
        /// The seat.
        seat_id: SeatId,
    },
    /// An order.
    Order {
        /// The order.
        order_id: OrderId,
    },
    /// A payment operation.
    PaymentOp {
        /// The operation.
        payment_op_id: PaymentOpId,
    },
    /// A compensation.
    Compensation {
        /// The compensation.
        compensation_id: CompensationId,
    },
    /// A client's idempotency key (scoped to event and holder, as the store scopes it).
    IdempotencyKey {
        /// The event.
        event_id: EventId,
        /// The client.
        holder_id: UserId,
        /// The key.
        key: String,
    },
    /// An event's seat map (a read of it).
    SeatMap {
        /// The event.
        event_id: EventId,
    },
    /// An event's waiting room.
    Room {
        /// The event.
        event_id: EventId,
    },
    /// A user in an event's waiting room.
    Waiting {
        /// The event.
        event_id: EventId,
        /// The user.
        user: UserId,
    },
    /// A hold, by its token.
    Hold {
        /// The event.
        event_id: EventId,
        /// The token.
        hold_token: HoldToken,
    },
    /// A client's request.
    Request {
        /// The operation's id.
        op_id: u64,
        /// The client.
        client: UserId,
    },
    /// A store call not about one record (a claim, a sweep, a list).
    Call {
        /// The call's name.
        name: String,
    },
}

impl Subject {
    /// A seat subject.
    pub fn seat(event_id: &EventId, seat_id: &SeatId) -> Self {
        Subject::Seat { event_id: EventId::from(event_id), seat_id: SeatId::from(seat_id) }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Seat { event_id, seat_id } => write!(f, "seat {event_id}/{seat_id}"),
            Subject::Order { order_id } => write!(f, "order {order_id}"),
            Subject::PaymentOp { payment_op_id } => write!(f, "payment-op {payment_op_id}"),
            Subject::Compensation { compensation_id } => write!(f, "compensation {compensation_id}"),
            Subject::IdempotencyKey { event_id, holder_id, key } => {
                write!(f, "idempotency-key {event_id}/{holder_id}/{key}")
            }
            Subject::SeatMap { event_id } => write!(f, "seat-map {event_id}"),
            Subject::Room { event_id } => write!(f, "waiting-room {event_id}"),
            Subject::Waiting { event_id, user } => write!(f, "waiting-room {event_id} user {user}"),
            Subject::Hold { event_id, hold_token } => write!(f, "hold {event_id}/{hold_token}"),
            Subject::Request { op_id, client } => write!(f, "request {op_id} of {client}"),
            Subject::Call { name } => write!(f, "store call {name}"),
        }
    }
}

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Violation {
    /// Which invariant.
    pub invariant: Invariant,
    /// The seat, order, operation, compensation or key it concerns.
    pub subject: Subject,
    /// What was wrong, in one line.
    pub detail: String,
    /// The trace seqs that witness it (the fewest that do), ascending. Empty
    /// when only the final records show it.
    pub witnesses: Vec<u64>,
}

impl Violation {
    /// A violation; `witnesses` are sorted and deduplicated.
    pub fn new(invariant: Invariant, subject: Subject, detail: impl Into<String>, mut witnesses: Vec<u64>) -> Self {
        witnesses.sort_unstable();
        witnesses.dedup();
        Self { invariant, subject, detail: detail.into(), witnesses }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.invariant, self.subject, self.detail)?;
        if !self.witnesses.is_empty() {
            let seqs: Vec<String> = self.witnesses.iter().map(u64::to_string).collect();
            write!(f, " (witnesses: seq {})", seqs.join(", "))?;
        }
        Ok(())
    }
}
