//! The largest values a scenario may ask for.

/// Largest phase, pause, delay or partition, ms (one hour).
pub const MAX_PHASE_MS: i64 = 60 * 60 * 1000;
/// Largest hold time to live, ms (mirrors `booking::model::MAX_HOLD_TTL_MS`).
pub const MAX_HOLD_TTL_MS: i64 = 60 * 60 * 1000;
/// Largest payment time to live, ms (mirrors `booking::model::MAX_PAYMENT_TTL_MS`).
pub const MAX_PAYMENT_TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// Largest selection (mirrors `booking::model::MAX_SEATS_PER_HOLD`).
pub const MAX_SEATS_PER_HOLD: i64 = 8;
/// Largest event (mirrors `booking::model::MAX_SEATS_PER_EVENT`).
pub const MAX_SEATS_PER_EVENT: i64 = 100_000;
/// Largest latency, ms.
pub const MAX_LATENCY_MS: i64 = 60_000;
/// Largest sweeper-stall bound, ms (one day).
pub const MAX_STALL_MS: i64 = 24 * 60 * 60 * 1000;
/// Most pinned faults one fault table may list (`faults.network.pinned`, `faults.cache.pinned`).
pub const MAX_PINNED_FAULTS: i64 = 10_000;
