//! The checkers: each a pure function over the final records, the trace and
//! the [`Config`](crate::Config), returning the violations it finds. One
//! checker per file, named for its invariants.

mod bookings;
mod hidden_charges;
mod idempotency;
pub(crate) mod index;
mod liveness;
mod refunds;
mod stale_authority;
mod transitions;

pub use bookings::check_bookings;
pub use hidden_charges::check_hidden_charges;
pub use idempotency::check_idempotency;
pub use liveness::check_liveness;
pub use refunds::check_refunds;
pub use stale_authority::check_stale_authority;
pub use transitions::check_transitions;

use crate::{Config, TraceEvent, Violation};
use booking::model::Snapshot;

/// A checker's signature.
pub type Checker = fn(&Snapshot, &[TraceEvent], &Config) -> Vec<Violation>;

/// Every checker with its name, in a fixed order.
pub const CHECKERS: &[(&str, Checker)] = &[
    ("bookings", check_bookings),
    ("hidden_charges", check_hidden_charges),
    ("stale_authority", check_stale_authority),
    ("idempotency", check_idempotency),
    ("refunds", check_refunds),
    ("transitions", check_transitions),
    ("liveness", check_liveness),
];
