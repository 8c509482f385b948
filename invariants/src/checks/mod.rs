//! The checkers: each a pure function over the final records, the trace and
//! the [`Config`](crate::Config), returning the violations it finds. One
//! checker per file, named for its invariants.
//!
//! | checker | invariants |
//! | --- | --- |
//! | [`check_bookings`] | `one-booking-per-seat`, `sold-seat-paid` |
//! | [`check_hidden_charges`] | `no-hidden-charge`, `compensation-visible` |
//! | [`check_stale_authority`] | `no-stale-authority` |
//! | [`check_idempotency`] | `idempotent-retry` |
//! | [`check_refunds`] | `refund-bounded`, `no-double-refund` |
//! | [`check_transitions`] | `version-monotonic`, `allowed-transition` |
//! | [`check_liveness`] | `hold-reclaimed`, `payment-resolved`, `compensation-settled` |
//! | [`check_hold_selection`] | `hold-all-or-nothing` |
//! | [`check_hold_tokens`] | `fresh-hold-token` |
//! | [`check_unknown_outcome`] | `unknown-keeps-seats` |
//! | [`check_ticket_refunds`] | `no-refund-of-ticket` |
//! | [`check_provider_refunds`] | `refund-at-provider` |
//! | [`check_hold_cap`] | `hold-cap` |
//! | [`check_checkout_selection`] | `checkout-whole-hold` |
//! | [`check_refund_attempts`] | `refund-attempt-due` |
//! | [`check_record_transitions`] | `order-transition`, `compensation-transition` |
//! | [`check_cached_reads`] | `stale-read-bounded` |
//! | [`check_waiting_room`] | `admission-required`, `sessions-within-target`, `admission-order`, `queue-liveness` |
//! | [`check_legitimate`] | `legitimate-accepted` (the world's well-formed requests and genuine webhooks are not refused as malformed) |
//! | [`check_auditor`] | `auditor` (every answer and record against the reference model) |

mod auditor;
mod bookings;
mod cached_reads;
mod checkout_selection;
mod hidden_charges;
mod hold_cap;
mod hold_selection;
mod hold_tokens;
mod idempotency;
pub(crate) mod index;
mod legitimate;
mod liveness;
mod provider_refunds;
mod record_transitions;
mod refund_attempts;
mod refunds;
mod stale_authority;
mod ticket_refunds;
mod transitions;
mod unknown_outcome;
mod waiting_room;

pub use auditor::{Audit, MAX_REPORTED, RefusalTally, audit, check_auditor};
pub use bookings::check_bookings;
pub use cached_reads::check_cached_reads;
pub use checkout_selection::check_checkout_selection;
pub use hidden_charges::check_hidden_charges;
pub use hold_cap::check_hold_cap;
pub use hold_selection::check_hold_selection;
pub use hold_tokens::check_hold_tokens;
pub use idempotency::check_idempotency;
pub use legitimate::{MALFORMED, check_legitimate};
pub use liveness::check_liveness;
pub use provider_refunds::check_provider_refunds;
pub use record_transitions::{COMPENSATION_TRANSITIONS, ORDER_TRANSITIONS, check_record_transitions};
pub use refund_attempts::check_refund_attempts;
pub use refunds::check_refunds;
pub use stale_authority::check_stale_authority;
pub use ticket_refunds::check_ticket_refunds;
pub use transitions::{SEAT_TRANSITIONS, check_transitions};
pub use unknown_outcome::check_unknown_outcome;
pub use waiting_room::check_waiting_room;

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
    ("hold_selection", check_hold_selection),
    ("hold_tokens", check_hold_tokens),
    ("unknown_outcome", check_unknown_outcome),
    ("ticket_refunds", check_ticket_refunds),
    ("provider_refunds", check_provider_refunds),
    ("hold_cap", check_hold_cap),
    ("checkout_selection", check_checkout_selection),
    ("refund_attempts", check_refund_attempts),
    ("record_transitions", check_record_transitions),
    ("cached_reads", check_cached_reads),
    ("waiting_room", check_waiting_room),
    ("legitimate", check_legitimate),
    ("auditor", check_auditor),
];
