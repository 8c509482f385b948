//! The waiting room's building blocks (issue 15), pure and tested on their
//! own; the queue, its endpoints and the simulator's on-sale come next.
//!
//! - [`controller`]: the admission law: Little's law for the base rate,
//!   slowed by hold contention, provider errors and latency, capped by
//!   the headroom under the target of active sessions.
//! - [`queue`]: one event's waiting queue under its fairness policy (arrival
//!   order, a verifiable pre-sale lottery, priority tiers), in memory.
//! - [`room`]: the waiting-room contract every `bookingd` instance shares
//!   (queue, sessions, admission lease), in memory and in Redis.
//! - [`token`]: signed, expiring admission tokens bound to one event and
//!   one user, refused each in its own way when forged, expired, borrowed,
//!   presented to another event or used after their session ended.

pub mod controller;
pub mod queue;
pub mod room;
pub mod token;
