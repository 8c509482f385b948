//! A timeline to look at: one seed's trace and violations as one
//! self-contained HTML page (`simulator replay ... --html FILE`).
//!
//! Swimlanes over simulated time: one per seat (its state between writes:
//! held, payment pending, sold), one per user (requests from sending to
//! answer, orders, payments, refunds, pauses), and lanes for the run, each
//! service host (crashes until restart), each link (partitions), the
//! sweeper, the cache and the provider; faults are translucent bands. Each
//! violation is listed with its invariant, record and message, and its
//! witness events as links: a click scrolls to the event's mark (id
//! `ev-<seq>`), which is outlined (class `witness`) wherever it is.
//!
//! The page fetches nothing: style and script are inline, and the marks are
//! pre-rendered, so it shows everything even with scripts off. The same
//! trace gives the same bytes.
//!
//! One idea per file: [`lanes`] (which lane, drawn as what), [`faults`]
//! (fault events as bands), [`scale`] (time to position), [`describe`]
//! (an event in words), [`escape`] (text into HTML), `html` (the document).

pub mod describe;
pub mod escape;
pub mod faults;
mod html;
pub mod lane_key;
pub mod lanes;
pub mod scale;

use invariants::trace::TraceEvent;
use invariants::violation::Violation;
use std::collections::BTreeSet;

/// Lanes shown at most besides those holding a witness: beyond it the page
/// would be too long to scroll through (and slow to draw); the rest are
/// counted on the page.
pub const DEFAULT_MAX_LANES: usize = 1_500;

/// What one timeline shows.
#[derive(Debug, Clone, Copy)]
pub struct Timeline<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The seed.
    pub seed: u64,
    /// Whether the seed met its scenario's expectation.
    pub passed: bool,
    /// The command that replays the seed (empty: not shown).
    pub replay: &'a str,
    /// The trace's hash.
    pub trace_hash: &'a str,
    /// The trace.
    pub trace: &'a [TraceEvent],
    /// The violations found, each with its witness seqs.
    pub violations: &'a [Violation],
    /// Other failures to show as they are (a panic, an unmet expectation).
    pub notes: &'a [String],
    /// Lanes shown at most besides those holding a witness ([`DEFAULT_MAX_LANES`]).
    pub max_lanes: usize,
}

/// The whole page for `t`, as one HTML document.
pub fn render(t: &Timeline<'_>) -> String {
    let witnesses: BTreeSet<u64> = t.violations.iter().flat_map(|v| v.witnesses.iter().copied()).collect();
    let layout = lanes::layout(t.trace, &witnesses, t.max_lanes);
    html::document(t, &layout, &witnesses)
}
