//! What the checkers need to know about the run besides its records and trace:
//! the final store time, when faults stopped, and the liveness bounds.

use crate::trace::{PhaseMark, TraceEvent, TraceKind};
use booking::problem_kind::ProblemKind;
use serde::{Deserialize, Serialize};

/// Default bound on the time between a hold's deadline and its reclaim.
pub const DEFAULT_SWEEP_BOUND_MS: i64 = 5_000;
/// Default bound on the time between a payment's deadline and its resolution.
pub const DEFAULT_RECONCILE_BOUND_MS: i64 = 30_000;
/// Default bound on the time a compensation may stay open.
pub const DEFAULT_COMPENSATION_BOUND_MS: i64 = 60_000;

/// The checkers' parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The store's clock when the final records were read (end of the settle phase).
    pub final_store_now_ms: i64,
    /// The store's clock when faults stopped. Liveness deadlines are counted
    /// from `max(deadline, faults_end_ms)`: during faults the system may lag.
    pub faults_end_ms: i64,
    /// How long after its deadline (or the end of faults) a hold may stay held, >= 0.
    pub sweep_bound_ms: i64,
    /// How long after its payment deadline (or the end of faults) a payment may stay unresolved, >= 0.
    pub reconcile_bound_ms: i64,
    /// How long after its creation (or the end of faults) a compensation may stay open, >= 0.
    pub compensation_bound_ms: i64,
    /// Error kinds that say "try again" rather than "this did not and will not
    /// apply" (a retry may still succeed): not a contradiction of an earlier ok.
    pub transient_error_kinds: Vec<ProblemKind>,
    /// The per-user cap the service ran with: seats of one event one user may
    /// have at once, held or in payment (`None`: no cap, nothing to check).
    #[serde(default)]
    pub max_held_seats_per_user: Option<u32>,
    /// How long the service's seat-map cache keeps an entry, ms: the bound on
    /// a cached map's staleness (`None`: not checked).
    #[serde(default)]
    pub seat_map_cache_ttl_ms: Option<i64>,
    /// The deployment the auditor's reference model judges (`None`: no audit).
    #[serde(default)]
    pub audit: Option<crate::model::ModelConfig>,
    /// Judge with these checkers only (names of [`crate::checks::CHECKERS`]); empty: all.
    #[serde(default)]
    pub checkers: Vec<String>,
}

impl Config {
    /// A config with the default bounds and transient error kinds.
    ///
    /// Precondition: `faults_end_ms <= final_store_now_ms` (asserted).
    pub fn new(final_store_now_ms: i64, faults_end_ms: i64) -> Self {
        assert!(faults_end_ms <= final_store_now_ms, "faults must end before the final read");
        Self {
            final_store_now_ms,
            faults_end_ms,
            sweep_bound_ms: DEFAULT_SWEEP_BOUND_MS,
            reconcile_bound_ms: DEFAULT_RECONCILE_BOUND_MS,
            compensation_bound_ms: DEFAULT_COMPENSATION_BOUND_MS,
            transient_error_kinds: ProblemKind::ALL.iter().copied().filter(|k| k.is_transient()).collect(),
            max_held_seats_per_user: None,
            seat_map_cache_ttl_ms: None,
            audit: None,
            checkers: Vec::new(),
        }
    }

    /// This config judging with `checkers` only (empty: all; see [`Config::checkers`]).
    pub fn with_checkers(mut self, checkers: Vec<String>) -> Self {
        self.checkers = checkers;
        self
    }

    /// Whether the checker named `name` judges this run.
    pub fn runs(&self, name: &str) -> bool {
        self.checkers.is_empty() || self.checkers.iter().any(|c| c == name)
    }

    /// This config with the auditor's deployment (see [`Config::audit`]).
    pub fn with_audit(mut self, audit: crate::model::ModelConfig) -> Self {
        self.audit = Some(audit);
        self
    }

    /// This config with the seat-map cache's TTL (see [`Config::seat_map_cache_ttl_ms`]).
    pub fn with_cache_ttl(mut self, seat_map_cache_ttl_ms: Option<i64>) -> Self {
        self.seat_map_cache_ttl_ms = seat_map_cache_ttl_ms;
        self
    }

    /// This config with the service's per-user cap (see [`Config::max_held_seats_per_user`]).
    pub fn with_hold_cap(mut self, max_held_seats_per_user: Option<u32>) -> Self {
        self.max_held_seats_per_user = max_held_seats_per_user;
        self
    }

    /// A config with default bounds whose times come from the trace's phase
    /// markers (`fault_phase_end`, `settle_end`); `None` when either is missing.
    pub fn from_phases(trace: &[TraceEvent]) -> Option<Self> {
        let mut fault_end = None;
        let mut settle_end = None;
        for e in trace {
            if let TraceKind::Phase { phase, store_now_ms } = &e.kind {
                match phase {
                    PhaseMark::FaultPhaseEnd => fault_end = Some(*store_now_ms),
                    PhaseMark::SettleEnd => settle_end = Some(*store_now_ms),
                }
            }
        }
        let (f, s) = (fault_end?, settle_end?);
        (f <= s).then(|| Self::new(s, f))
    }

    /// Whether `error_kind` is transient (see [`Config::transient_error_kinds`]).
    pub fn is_transient(&self, error_kind: ProblemKind) -> bool {
        self.transient_error_kinds.contains(&error_kind)
    }
}
