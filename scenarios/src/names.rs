//! The names a scenario file may use in `expect`: the invariants' and the
//! metrics classification's stable names. They mirror
//! `invariants::Invariant::as_str` and `invariants::Classification::as_str`
//! (a test in `invariants` keeps them equal; this crate stays free of the
//! booking core).

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
];

/// Every metrics classification's stable name.
pub const CLASSIFICATION_NAMES: &[&str] = &["broken-expiry", "genuine-demand", "low-demand"];
