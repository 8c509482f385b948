//! The names a scenario file may use: the invariants', the metrics
//! classification's and the paths' stable names (in `expect`), and the
//! commit points (in `faults.crash_after_commit.points`). They mirror
//! `invariants::Invariant::as_str`, `invariants::Classification::as_str`,
//! `invariants::paths::Path::as_str` and `booking::fault::CommitPoint::as_str`
//! (tests in `invariants` and `simulator` keep them equal; this crate stays
//! free of the booking core).

/// Every invariant's stable name.
pub const INVARIANT_NAMES: &[&str] = &[
    "one-booking-per-seat",
    "sold-seat-paid",
    "no-hidden-charge",
    "compensation-visible",
    "no-stale-authority",
    "idempotent-retry",
    "refund-bounded",
    "no-double-refund",
    "version-monotonic",
    "allowed-transition",
    "hold-reclaimed",
    "payment-resolved",
    "compensation-settled",
    "hold-all-or-nothing",
    "fresh-hold-token",
    "unknown-keeps-seats",
    "no-refund-of-ticket",
    "refund-at-provider",
    "hold-cap",
    "checkout-whole-hold",
    "refund-attempt-due",
    "order-transition",
    "compensation-transition",
    "stale-read-bounded",
    "admission-required",
    "sessions-within-target",
    "admission-order",
    "queue-liveness",
    "legitimate-accepted",
    "auditor",
];

/// Every metrics classification's stable name.
pub const CLASSIFICATION_NAMES: &[&str] = &["broken-expiry", "genuine-demand", "low-demand"];

/// Every path's stable name (what `expect.must_happen` may list).
pub const PATH_NAMES: &[&str] = &[
    "client-paused",
    "stale-token-replayed",
    "crash-after-commit",
    "host-restarted",
    "partition-started",
    "partition-healed",
    "clock-skewed",
    "sweeper-stalled",
    "stale-token-refused",
    "checkout-on-expired-hold",
    "expired-hold-taken-over",
    "hold-swept",
    "hold-refused",
    "multi-seat-hold-granted",
    "multi-seat-hold-refused",
    "checkout-replayed",
    "answer-lost",
    "sale-confirmed",
    "payment-unknown",
    "payment-declined",
    "unknown-resolved",
    "unresolved-released",
    "refund-succeeded",
    "refund-retried",
    "compensation-failed",
    "provider-error",
    "provider-lost-answer",
    "provider-late-success",
    "provider-refund-refused",
    "webhook-duplicated",
    "hold-limit-refused",
    "duplicate-checkout-refused",
    "partial-checkout-refused",
    "cache-down",
    "cache-stale",
    "cache-poisoned",
    "poisoned-map-served",
    "stale-map-served",
    "admitted-from-queue",
    "sold-out-told",
    "rejoined",
    "purchase-retried-late",
    "admission-refused",
    "admission-slowed",
    "admission-recovered",
    "store-down",
    "rooms-lost",
    "rooms-down",
    "checkout-before-deadline",
    "checkout-at-deadline",
    "checkout-after-deadline",
    "takeover-before-deadline",
    "takeover-at-deadline",
    "takeover-after-deadline",
    "cap-passed-by-one",
    "unsorted-hold-granted",
    "idempotency-key-shared",
    "cap-per-event",
    "member-overtook",
    "session-reopened",
];

/// Every waiting-room policy's name (what `waiting_room.policy` may be).
pub const ROOM_POLICY_NAMES: &[&str] = &["fifo", "lottery", "priority"];

/// Every seat-map cache fault's name (what `faults.cache.modes` may list).
pub const CACHE_FAULT_NAMES: &[&str] = &["down", "stale", "poisoned"];

/// Every commit point's stable name (what `faults.crash_after_commit.points` may list).
pub const COMMIT_POINT_NAMES: &[&str] = &[
    "hold",
    "release",
    "checkout",
    "outbox-claim",
    "payment-outcome",
    "unresolved-release",
    "webhook",
    "sweep",
    "compensation-start",
    "compensation-finish",
];
