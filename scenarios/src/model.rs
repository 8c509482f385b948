//! The scenario file's shape: one struct per TOML table, every table
//! `deny_unknown_fields` (the fault tables are each kind's: `faults/`).
//! Field docs state units and allowed ranges; the
//! loader ([`crate::Scenario::parse`]) enforces them.

use crate::faults::Faults;
use serde::{Deserialize, Serialize};

/// A scenario: a workload composed with fault workloads, phase durations,
/// default seeds and the expected outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Unique name: 1..=64 characters of `[a-z0-9-]`.
    pub name: String,
    /// One line shown by `simulator list`.
    pub description: String,
    /// Swarm testing: each fault of `faults` is switched on or off and
    /// weighted per seed (see [`crate::SwarmDraw`]). Needs at least one fault.
    #[serde(default)]
    pub swarm: bool,
    /// Who does what.
    pub workload: Workload,
    /// Which faults, how often, how long. Absent faults are off.
    #[serde(default)]
    pub faults: Faults,
    /// The service's own settings, where a scenario tests a deployment's
    /// choice rather than the defaults. Absent keys keep bookingd's defaults.
    #[serde(default)]
    pub service: Service,
    /// A waiting room in front of every event: users join its queue, wait
    /// until admitted (polling when told), and only then hold and check out.
    #[serde(default)]
    pub waiting_room: Option<WaitingRoom>,
    /// How long the fault phase and the settle phase last.
    pub phases: Phases,
    /// The seeds a plain `run` uses.
    pub seeds: Seeds,
    /// What a run must conclude.
    pub expect: Expect,
    /// Where it was loaded from (a path, or `library:<file>`); not in the file.
    #[serde(skip)]
    pub origin: String,
}

/// An inclusive range of milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RangeMs {
    /// Lower bound, ms, >= 0.
    pub min: i64,
    /// Upper bound, ms, >= `min`.
    pub max: i64,
}

/// The users and what they do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Events on sale, 1..=100.
    pub events: u32,
    /// Seats of each event, 1..=100000.
    pub seats_per_event: u32,
    /// Seats per event in the hot set (the first ones), 0..=`seats_per_event`.
    pub hot_seats: u32,
    /// Probability that a selection is drawn from the hot set (0 when `hot_seats` is 0).
    pub hot_share: f64,
    /// Virtual users, 1..=100000.
    pub users: u32,
    /// Client hosts the users are spread over, 1..=64.
    pub client_hosts: u32,
    /// `bookingd` hosts, 1..=16.
    pub server_hosts: u32,
    /// Pause between a user's steps, ms.
    pub think_time_ms: RangeMs,
    /// When each user arrives, ms after the sale opens (a uniform draw per
    /// user); absent: like any other step, after a think time. A narrow range
    /// is an on-sale opening: everyone clicks in the same instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_ms: Option<RangeMs>,
    /// Probability that a selection has more than one (adjacent) seat.
    pub multi_seat_share: f64,
    /// Largest selection, 1..=8.
    pub max_seats_per_hold: u32,
    /// Probability that a user with a hold checks out.
    pub checkout_share: f64,
    /// Probability that a user with a hold walks away without releasing it.
    pub abandon_share: f64,
    /// Probability that a user with a hold hoards: keeps it and holds again
    /// at once, selections of 2..=`max_seats_per_hold` seats, until the
    /// per-user cap refuses (409 hold-limit) or a bounded number of tries;
    /// the extra holds are abandoned. 0 (absent): nobody hoards.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hoard_share: f64,
    /// Probability that a granted checkout is sent again at once under a new
    /// idempotency key (a double click), which must be refused. 0 (absent): never.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub double_submit_share: f64,
    /// Probability that the checkout of a multi-seat hold first names only
    /// its first seat, which must be refused. 0 (absent): never.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub partial_checkout_share: f64,
    /// Probers, 0..=100 (0, absent: none): users besides `users` who walk
    /// the API's whole answer space (every refusal of the surface, the
    /// webhook's signature, the rate limit, another user's hold, order and
    /// key, the per-user cap met exactly, checkouts and takeovers aimed one
    /// tick before, at and after a hold's deadline), for the auditor to judge.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub probers: u32,
    /// Hold time to live, ms, 1..=3600000.
    pub hold_ttl_ms: i64,
    /// Time a payment may stay unresolved before its seats may be released, ms, 1..=86400000.
    pub payment_ttl_ms: i64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}

/// Service settings a scenario may choose (bookingd's defaults otherwise).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// Refund attempts before a compensation gives up and is flagged
    /// `failed` for operators, 1..=100 (bookingd: 8; unknown outcomes get twice as many).
    #[serde(default)]
    pub max_refund_attempts: Option<u32>,
}

/// A waiting room (see `booking::admission`): every user of the workload
/// joins at their arrival time and holds only once admitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitingRoom {
    /// `fifo`, `lottery` or `priority` (see [`crate::ROOM_POLICY_NAMES`]).
    pub policy: String,
    /// Checkout sessions open at once at most, 1..=100000.
    pub target_active_sessions: u32,
    /// How long an admission lasts unless it ends sooner, ms, 1000..=3600000.
    pub session_ttl_ms: i64,
    /// When the sale opens (nobody is admitted before), ms after the start, 0..=3600000.
    pub opens_at_ms: i64,
    /// The admission law's prior mean session, ms, 1..=3600000 (default: 90000, the brief's).
    #[serde(default)]
    pub prior_session_ms: Option<i64>,
    /// Share of users with a members' credential (tier 0) in a priority room; the rest are the public.
    #[serde(default)]
    pub member_share: f64,
    /// Share of users who try to get past the queue: holds and checkouts
    /// without a token, with a forged, borrowed, other-event or spent one.
    #[serde(default)]
    pub bypass_share: f64,
    /// Longest wait a waiting client is told before asking again, s, 1..=3600 (default 60).
    #[serde(default)]
    pub poll_max_s: Option<u64>,
}

/// Phase durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phases {
    /// Users and faults run for this long, ms, 1..=3600000.
    pub fault_ms: i64,
    /// Then faults stop and the system must settle within this long, ms, 1..=3600000.
    pub settle_ms: i64,
}

/// Default seeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seeds {
    /// `"A..B"` (B excluded) or `"A..=B"`; see [`crate::SeedRange`].
    pub default: String,
}

/// Whether a run must pass or must be caught failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// No invariant may be violated.
    Pass,
    /// The checks must report a violation (of each of `expect.violations`, when given).
    Fail,
}

/// What the run must conclude.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Pass or fail.
    pub outcome: Outcome,
    /// With `outcome = "fail"`: invariants (stable names, see
    /// [`crate::INVARIANT_NAMES`]) each seed must violate. Empty: any.
    #[serde(default)]
    pub violations: Vec<String>,
    /// The metrics' classification every seed must get (see [`crate::CLASSIFICATION_NAMES`]).
    #[serde(default)]
    pub classification: Option<String>,
    /// With `outcome = "fail"`: further invariants a seed may also violate
    /// without failing. Any violation neither expected nor tolerated fails the seed.
    #[serde(default)]
    pub tolerated: Vec<String>,
    /// Paths (see [`crate::PATH_NAMES`]) that must happen at least once
    /// across the default seeds: a fault that silently stops firing, or a
    /// story the workload no longer tells, fails the scenario.
    #[serde(default)]
    pub must_happen: Vec<String>,
}
