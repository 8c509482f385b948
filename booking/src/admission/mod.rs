//! The waiting room: admission as capacity control.
//!
//! - [`controller`]: the admission law: Little's law for the base rate,
//!   slowed by hold contention, provider errors and latency, capped by
//!   the headroom under the target of active sessions.
//! - [`law_log`]: what each run of the law saw and decided, for watchers.
//! - [`queue`]: one event's waiting queue under its fairness policy (arrival
//!   order, a verifiable pre-sale lottery, priority tiers), in memory.
//! - [`records`]: the authority's record of the rooms (PostgreSQL): which
//!   events have one, and what rebuilds a room its store lost.
//! - [`room`]: the waiting-room contract every `bookingd` instance shares
//!   (queue, sessions, admission lease), in memory and in Redis.
//! - [`waiting_room`]: the service's side: joins, status polls, tokens for
//!   the admitted, the gate before holds and checkouts, and the law's tick.
//! - [`provider_health`]: the payment provider's calls, errors and latency
//!   as the law reads them.
//! - [`token`]: signed, expiring admission tokens bound to one event and
//!   one user, refused each in its own way when forged, expired, borrowed,
//!   presented to another event or used after their session ended.

pub mod controller;
pub mod law_log;
pub mod provider_health;
pub mod queue;
pub mod records;
pub mod room;
pub mod token;
pub mod waiting_room;
