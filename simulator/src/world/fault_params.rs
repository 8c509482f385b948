//! The fault parameters a world is built with, as the scenario states them
//! (rates, lengths, windows, pinned faults), and the faults the schedule
//! fixes from them. Values only: drawing is [`crate::world::schedule`]'s.

use crate::world::faulty_cache::CacheMode;
use serde::Serialize;

/// Link faults of a scenario: each simulated second of the fault phase cuts
/// or holds a random link with `per_second_probability`, for `length_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkFaults {
    /// Probability per simulated second of the fault phase, in `0.0..=1.0`.
    pub per_second_probability: f64,
    /// How long each link fault lasts, ms (cut short at the end of the fault phase).
    pub length_ms: u64,
}

/// Seat-map cache faults of a scenario: each simulated second of the fault
/// phase starts one with `per_second_probability` (while none is under way),
/// its mode drawn from `modes`, lasting `length_ms`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheFaults {
    /// Probability per simulated second of the fault phase, in `0.0..=1.0`.
    pub per_second_probability: f64,
    /// How long each lasts, ms (cut short at the end of the fault phase).
    pub length_ms: u64,
    /// The modes that may strike (not [`CacheMode::Healthy`]), at least one.
    pub modes: Vec<CacheMode>,
}

/// One seat-map cache fault, fully drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CacheFault {
    /// When it starts, ms after the world starts.
    pub start_ms: u64,
    /// When it ends, ms after the world starts (`<=` the fault phase's end).
    pub end_ms: u64,
    /// What the cache does meanwhile.
    pub mode: CacheMode,
}

/// A window of simulated time, ms after the world starts: from `from_ms`
/// to `to_ms` (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MsWindow {
    /// Its start.
    pub from_ms: u64,
    /// Its end (exclusive).
    pub to_ms: u64,
}

impl MsWindow {
    /// A scenario's window (`from_ms`, `to_ms` validated `0 <= from_ms < to_ms`).
    pub fn of(from_ms: i64, to_ms: i64) -> Self {
        MsWindow {
            from_ms: u64::try_from(from_ms).expect("validated start"),
            to_ms: u64::try_from(to_ms).expect("validated end"),
        }
    }
}

/// A paused client: a user who checks out pauses first with `probability`,
/// for `pause_ms` (its hold may expire meanwhile).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PausedClients {
    /// Probability per checkout, in `0.0..=1.0`.
    pub probability: f64,
    /// How long the pause lasts, ms.
    pub pause_ms: u64,
}

/// One service host's clock skew.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostSkew {
    /// The service host (`svc0`, ...).
    pub host: String,
    /// Its clock's offset from the store's clock, ms (may be negative).
    pub skew_ms: i64,
}

/// What a link fault does to the messages on its link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkMode {
    /// Messages are dropped (a partition).
    Cut,
    /// Messages are queued and delivered when the fault ends.
    Held,
}

impl LinkMode {
    /// Its name in scenario files and `replay --plan`: `cut` or `held`.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkMode::Cut => "cut",
            LinkMode::Held => "held",
        }
    }

    /// The mode named `name` (see [`LinkMode::as_str`]), if any.
    pub fn parse(name: &str) -> Option<Self> {
        [LinkMode::Cut, LinkMode::Held].into_iter().find(|m| m.as_str() == name)
    }
}

/// One link fault, fully drawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LinkFault {
    /// When it starts, ms after the world starts.
    pub start_ms: u64,
    /// When it ends, ms after the world starts (`<=` the fault phase's end).
    pub end_ms: u64,
    /// One end of the link.
    pub a: String,
    /// The other end.
    pub b: String,
    /// Cut or held.
    pub mode: LinkMode,
}

impl LinkFault {
    /// A scenario's pinned link fault as the world takes it. Precondition:
    /// the scenario was validated (its times are non-negative and its mode
    /// is one of [`LinkMode::as_str`]'s names).
    pub fn from_pinned(p: &scenarios::PinnedLinkFault) -> Self {
        LinkFault {
            start_ms: u64::try_from(p.start_ms).expect("validated start"),
            end_ms: u64::try_from(p.end_ms).expect("validated end"),
            a: p.a.clone(),
            b: p.b.clone(),
            mode: LinkMode::parse(&p.mode).expect("validated link mode"),
        }
    }

    /// This fault as a scenario's pinned entry: [`LinkFault::from_pinned`] gives it back.
    pub fn to_pinned(&self) -> scenarios::PinnedLinkFault {
        scenarios::PinnedLinkFault {
            start_ms: self.start_ms as i64,
            end_ms: self.end_ms as i64,
            a: self.a.clone(),
            b: self.b.clone(),
            mode: self.mode.as_str().to_string(),
        }
    }
}

impl CacheFault {
    /// A scenario's pinned cache fault as the world takes it. Precondition:
    /// the scenario was validated (non-negative times, a known mode).
    pub fn from_pinned(p: &scenarios::PinnedCacheFault) -> Self {
        CacheFault {
            start_ms: u64::try_from(p.start_ms).expect("validated start"),
            end_ms: u64::try_from(p.end_ms).expect("validated end"),
            mode: CacheMode::parse(&p.mode).expect("validated cache fault"),
        }
    }

    /// This fault as a scenario's pinned entry: [`CacheFault::from_pinned`] gives it back.
    pub fn to_pinned(&self) -> scenarios::PinnedCacheFault {
        scenarios::PinnedCacheFault {
            start_ms: self.start_ms as i64,
            end_ms: self.end_ms as i64,
            mode: self.mode.as_str().to_string(),
        }
    }
}
