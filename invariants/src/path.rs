//! The paths a run can take: one [`Path`] per interesting thing that can
//! happen (every injected fault, every path through the booking core a
//! scenario exists to exercise), with its stable name. Counting them is
//! [`crate::paths`]'s.

use serde::{Deserialize, Serialize};

/// One kind of interesting event. Stable kebab-case names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Path {
    /// Fault: a client paused mid-checkout.
    ClientPaused,
    /// Fault: a client replayed an old or another user's hold token.
    StaleTokenReplayed,
    /// Fault: a service host crashed right after a store commit.
    CrashAfterCommit,
    /// Fault: a crashed host came back.
    HostRestarted,
    /// Fault: a link was cut or held.
    PartitionStarted,
    /// Fault: a cut or held link was healed.
    PartitionHealed,
    /// Fault: a service host's clock was skewed.
    ClockSkewed,
    /// Fault: the hold sweeper stalled.
    SweeperStalled,
    /// A checkout or release with a stale, borrowed or expired hold was refused.
    StaleTokenRefused,
    /// A checkout arrived after its hold's deadline, before any sweep or takeover.
    CheckoutOnExpiredHold,
    /// A new hold took over an expired hold (the sweeper had not reclaimed it).
    ExpiredHoldTakenOver,
    /// The sweeper returned an expired hold.
    HoldSwept,
    /// A hold was refused because a seat was taken (contention).
    HoldRefused,
    /// A multi-seat hold was granted.
    MultiSeatHoldGranted,
    /// A multi-seat hold was refused whole because a seat was taken.
    MultiSeatHoldRefused,
    /// A retried checkout was answered with the order its key committed.
    CheckoutReplayed,
    /// A client got no answer (timeout, reset, crash).
    AnswerLost,
    /// A sale was confirmed.
    SaleConfirmed,
    /// A payment's outcome became unknown (order reconciling).
    PaymentUnknown,
    /// A payment was declined (order failed).
    PaymentDeclined,
    /// An unknown payment's outcome was found before its deadline (a
    /// reconciling order confirmed or failed).
    UnknownResolved,
    /// An unresolved payment's seats were released at its deadline.
    UnresolvedReleased,
    /// A refund (compensation) succeeded.
    RefundSucceeded,
    /// A refund attempt failed and was scheduled again.
    RefundRetried,
    /// A compensation gave up and was flagged for operators.
    CompensationFailed,
    /// Provider: a request failed before processing.
    ProviderError,
    /// Provider: a response was lost after processing.
    ProviderLostAnswer,
    /// Provider: a payment succeeded late.
    ProviderLateSuccess,
    /// Provider: a refund attempt was refused.
    ProviderRefundRefused,
    /// Provider: a webhook was delivered twice.
    WebhookDuplicated,
    /// A hold past the per-user cap was refused (409 hold-limit).
    HoldLimitRefused,
    /// A checkout of a hold already checked out, under a new idempotency key
    /// (a double click), was refused.
    DuplicateCheckoutRefused,
    /// A checkout naming only part of its hold was refused.
    PartialCheckoutRefused,
    /// Fault: the seat-map cache went down.
    CacheDown,
    /// Fault: the seat-map cache lost its invalidations.
    CacheStale,
    /// Fault: the seat-map cache was poisoned.
    CachePoisoned,
    /// A poisoned seat map was served from the cache.
    PoisonedMapServed,
    /// A seat map older than the store's was served from the cache.
    StaleMapServed,
    /// A waiting user was admitted.
    AdmittedFromQueue,
    /// A waiting user was told the event sold out.
    SoldOutTold,
    /// A user whose session was over joined the queue again (a new arrival).
    Rejoined,
    /// A purchase's checkout, sent again after its admission expired, was
    /// answered with its order (the purchase's retry passes the gate late).
    PurchaseRetriedLate,
    /// A hold or checkout on a waiting-room event was refused by the admission gate.
    AdmissionRefused,
    /// An admission pass ran at half (or less) the highest rate its room had run at.
    AdmissionSlowed,
    /// After slowing, an admission pass ran again at 90% (or more) of that highest rate.
    AdmissionRecovered,
    /// Fault: the store was unreachable for a while.
    StoreDown,
    /// Fault: the waiting rooms' store lost every room (each rebuilt from the record).
    RoomsLost,
    /// Fault: the waiting rooms' store stopped answering (every room call failed closed until it came back).
    RoomsDown,
    /// A checkout reached the store one tick before its hold's deadline.
    CheckoutBeforeDeadline,
    /// A checkout reached the store at its hold's deadline (it has passed: `deadline <= now`).
    CheckoutAtDeadline,
    /// A checkout reached the store one tick after its hold's deadline.
    CheckoutAfterDeadline,
    /// A hold asked for a seat held by another hold one tick before that hold's deadline.
    TakeoverBeforeDeadline,
    /// A hold asked for a seat held by another hold at that hold's deadline.
    TakeoverAtDeadline,
    /// A hold asked for a seat held by another hold one tick after that hold's deadline.
    TakeoverAfterDeadline,
    /// A hold was refused for passing the per-user cap by exactly one seat.
    CapPassedByOne,
    /// A multi-seat hold sent in click order (not the seats' own) was granted.
    UnsortedHoldGranted,
    /// A checkout was accepted under a key another user's accepted checkout used before.
    IdempotencyKeyShared,
    /// A hold was granted while its holder's live seats over every event passed the cap.
    CapPerEvent,
    /// A member was admitted ahead of a public user who joined the room earlier.
    MemberOvertook,
    /// A room buyer told its order failed was told by the queue its session is open again.
    SessionReopened,
}

impl Path {
    /// Every path, in declaration order.
    pub const ALL: &'static [Path] = &[
        Path::ClientPaused,
        Path::StaleTokenReplayed,
        Path::CrashAfterCommit,
        Path::HostRestarted,
        Path::PartitionStarted,
        Path::PartitionHealed,
        Path::ClockSkewed,
        Path::SweeperStalled,
        Path::StaleTokenRefused,
        Path::CheckoutOnExpiredHold,
        Path::ExpiredHoldTakenOver,
        Path::HoldSwept,
        Path::HoldRefused,
        Path::MultiSeatHoldGranted,
        Path::MultiSeatHoldRefused,
        Path::CheckoutReplayed,
        Path::AnswerLost,
        Path::SaleConfirmed,
        Path::PaymentUnknown,
        Path::PaymentDeclined,
        Path::UnknownResolved,
        Path::UnresolvedReleased,
        Path::RefundSucceeded,
        Path::RefundRetried,
        Path::CompensationFailed,
        Path::ProviderError,
        Path::ProviderLostAnswer,
        Path::ProviderLateSuccess,
        Path::ProviderRefundRefused,
        Path::WebhookDuplicated,
        Path::HoldLimitRefused,
        Path::DuplicateCheckoutRefused,
        Path::PartialCheckoutRefused,
        Path::CacheDown,
        Path::CacheStale,
        Path::CachePoisoned,
        Path::PoisonedMapServed,
        Path::StaleMapServed,
        Path::AdmittedFromQueue,
        Path::SoldOutTold,
        Path::Rejoined,
        Path::PurchaseRetriedLate,
        Path::AdmissionRefused,
        Path::AdmissionSlowed,
        Path::AdmissionRecovered,
        Path::StoreDown,
        Path::RoomsLost,
        Path::RoomsDown,
        Path::CheckoutBeforeDeadline,
        Path::CheckoutAtDeadline,
        Path::CheckoutAfterDeadline,
        Path::TakeoverBeforeDeadline,
        Path::TakeoverAtDeadline,
        Path::TakeoverAfterDeadline,
        Path::CapPassedByOne,
        Path::UnsortedHoldGranted,
        Path::IdempotencyKeyShared,
        Path::CapPerEvent,
        Path::MemberOvertook,
        Path::SessionReopened,
    ];

    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Path::ClientPaused => "client-paused",
            Path::StaleTokenReplayed => "stale-token-replayed",
            Path::CrashAfterCommit => "crash-after-commit",
            Path::HostRestarted => "host-restarted",
            Path::PartitionStarted => "partition-started",
            Path::PartitionHealed => "partition-healed",
            Path::ClockSkewed => "clock-skewed",
            Path::SweeperStalled => "sweeper-stalled",
            Path::StaleTokenRefused => "stale-token-refused",
            Path::CheckoutOnExpiredHold => "checkout-on-expired-hold",
            Path::ExpiredHoldTakenOver => "expired-hold-taken-over",
            Path::HoldSwept => "hold-swept",
            Path::HoldRefused => "hold-refused",
            Path::MultiSeatHoldGranted => "multi-seat-hold-granted",
            Path::MultiSeatHoldRefused => "multi-seat-hold-refused",
            Path::CheckoutReplayed => "checkout-replayed",
            Path::AnswerLost => "answer-lost",
            Path::SaleConfirmed => "sale-confirmed",
            Path::PaymentUnknown => "payment-unknown",
            Path::PaymentDeclined => "payment-declined",
            Path::UnknownResolved => "unknown-resolved",
            Path::UnresolvedReleased => "unresolved-released",
            Path::RefundSucceeded => "refund-succeeded",
            Path::RefundRetried => "refund-retried",
            Path::CompensationFailed => "compensation-failed",
            Path::ProviderError => "provider-error",
            Path::ProviderLostAnswer => "provider-lost-answer",
            Path::ProviderLateSuccess => "provider-late-success",
            Path::ProviderRefundRefused => "provider-refund-refused",
            Path::WebhookDuplicated => "webhook-duplicated",
            Path::HoldLimitRefused => "hold-limit-refused",
            Path::DuplicateCheckoutRefused => "duplicate-checkout-refused",
            Path::PartialCheckoutRefused => "partial-checkout-refused",
            Path::CacheDown => "cache-down",
            Path::CacheStale => "cache-stale",
            Path::CachePoisoned => "cache-poisoned",
            Path::PoisonedMapServed => "poisoned-map-served",
            Path::StaleMapServed => "stale-map-served",
            Path::AdmittedFromQueue => "admitted-from-queue",
            Path::SoldOutTold => "sold-out-told",
            Path::Rejoined => "rejoined",
            Path::PurchaseRetriedLate => "purchase-retried-late",
            Path::AdmissionRefused => "admission-refused",
            Path::AdmissionSlowed => "admission-slowed",
            Path::AdmissionRecovered => "admission-recovered",
            Path::StoreDown => "store-down",
            Path::RoomsLost => "rooms-lost",
            Path::RoomsDown => "rooms-down",
            Path::CheckoutBeforeDeadline => "checkout-before-deadline",
            Path::CheckoutAtDeadline => "checkout-at-deadline",
            Path::CheckoutAfterDeadline => "checkout-after-deadline",
            Path::TakeoverBeforeDeadline => "takeover-before-deadline",
            Path::TakeoverAtDeadline => "takeover-at-deadline",
            Path::TakeoverAfterDeadline => "takeover-after-deadline",
            Path::CapPassedByOne => "cap-passed-by-one",
            Path::UnsortedHoldGranted => "unsorted-hold-granted",
            Path::IdempotencyKeyShared => "idempotency-key-shared",
            Path::CapPerEvent => "cap-per-event",
            Path::MemberOvertook => "member-overtook",
            Path::SessionReopened => "session-reopened",
        }
    }

    /// Parses a stable name.
    pub fn parse(name: &str) -> Option<Path> {
        Path::ALL.iter().copied().find(|p| p.as_str() == name)
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
