//! The reference model of the booking API: an independent, slow, readable
//! specification of what every answer of the service and every record of
//! its store should be, written from the documented rules (the brief, the
//! `Store` trait's contract, docs/CHECKERS.md's tables, the OpenAPI
//! document), not from the code that implements them.
//!
//! It may use booking's data types (records, requests, answers, problem
//! kinds) and its published limits, never its decisions: no
//! `store::{decide, machine, rules}`, no `admission::{queue, token,
//! controller}` function, no validation method of a request type. A test
//! (`invariants/tests/model_independence.rs`) enforces the rule on the source.
//!
//! - [`store`]: every store call, replayed in commit order: the answer it
//!   must give and the records it must write (seats, holds and their
//!   takeover, the per-user cap, checkout and idempotency, orders, payment
//!   outcomes, the reconciler's claims, compensations and refunds, the
//!   outbox, the sweeper, the operators' list);
//! - [`http`]: what each client request must be answered, from the store's
//!   answers to the calls it made and the service's own rules (credentials,
//!   validation, the per-user rate limit, the waiting room's gate);
//! - [`admission`]: admission tokens and checkout sessions;
//! - [`queue`]: the waiting room's fairness (who may be admitted, when);
//! - [`money`]: what the provider's ledger allows the store to record.
//!
//! The [`crate::checks::check_auditor`] checker drives it over a trace.

pub mod admission;
pub mod config;
pub mod http;
pub mod law;
pub mod money;
pub mod queue;
pub mod ranked_line;
pub mod standing;
pub mod store;
mod validate;

pub use config::ModelConfig;

/// Where the model and the system disagree: what was expected and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The record or request it concerns.
    pub subject: crate::Subject,
    /// What the model expected and what the system did, in one line.
    pub detail: String,
}

impl Finding {
    /// A finding about `subject`.
    pub fn new(subject: crate::Subject, detail: impl Into<String>) -> Self {
        Self { subject, detail: detail.into() }
    }
}

/// Longest rendering of a value in a finding's detail, in characters.
pub const MAX_SHOWN_CHARS: usize = 400;

/// `value`'s debug rendering, cut at [`MAX_SHOWN_CHARS`].
pub fn shown(value: &impl std::fmt::Debug) -> String {
    let text = format!("{value:?}");
    match text.char_indices().nth(MAX_SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// RFC 3339 `text` as ms since the epoch (the model's own reading: date, time, offset).
pub(crate) fn rfc3339_ms(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text).ok().map(|t| t.timestamp_millis())
}
