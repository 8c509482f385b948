//! Every scenario knob, declared once: one row of [`KNOBS`] per key of the
//! file (its path, meaning, allowed values, cross-key rule, how a swarm seed
//! scales it and how the shrinker reduces it). The loader validates with
//! the table, [`crate::SwarmDraw`] scales with it, `simulator shrink`
//! reduces with it, and `scenarios/README.md`'s key table is rendered from
//! it ([`reference`]). A test holds the table to the scenario type: every
//! key of [`crate::Scenario`] has exactly one row.
//!
//! Adding a knob: a field in `model.rs` and a row in `table.rs`, or, for a
//! fault kind's key, both in the kind's module under `faults/` (then
//! `HOLDFAST_BLESS=1 cargo test -p scenarios` rewrites the README's table).

mod check;
pub mod reference;
pub(crate) mod row;
mod table;
mod value;

pub use table::KNOBS;
pub use value::{FromValue, Value};

use crate::faults::FaultKind;
use crate::model::Scenario;

/// One key of the scenario file.
pub struct Knob {
    /// Dotted key path (`workload.users`); a table's own row names the table.
    pub key: &'static str,
    /// What it means, one README cell.
    pub meaning: &'static str,
    /// Which values are allowed alone.
    pub check: Check,
    /// A rule it must keep with other keys, if any.
    pub rule: Option<Rule>,
    /// More on what is allowed (defaults, cross-key rules), appended to the
    /// README's "allowed" cell; empty for nothing.
    pub note: &'static str,
    /// How the value is read and written.
    pub access: Access,
    /// How `simulator shrink` reduces it.
    pub shrink: Shrink,
    /// How a swarm seed changes it.
    pub swarm: Swarm,
}

/// A knob's reader and writer. `get` is `None` where the key is absent (an
/// optional key, or a key of an absent table); `set` on an absent table's
/// key does nothing; a table's own row reads [`Value::Table`] and is
/// removed by writing [`Value::Absent`].
#[derive(Clone, Copy)]
pub struct Access {
    /// The value, if present.
    pub get: fn(&Scenario) -> Option<Value>,
    /// Writes a value of the knob's own variant (panics on another: a table bug).
    pub set: fn(&mut Scenario, Value),
}

impl Access {
    /// For keys checked by a rule of the loader's own (names, seeds, pinned
    /// faults, the outcome): no generic access.
    pub const NONE: Access = Access { get: |_| None, set: |_, _| {} };
}

/// A bound of a count or duration: fixed, or read from other keys.
#[derive(Clone, Copy)]
pub enum Bound {
    /// A constant.
    Fixed(i64),
    /// Computed from the scenario; the label says from what (for the README).
    Of(&'static str, fn(&Scenario) -> i64),
}

impl Bound {
    /// The bound's value for `s`.
    pub fn of(&self, s: &Scenario) -> i64 {
        match self {
            Bound::Fixed(v) => *v,
            Bound::Of(_, f) => f(s),
        }
    }
}

/// What values a knob allows on its own.
#[derive(Clone, Copy)]
pub enum Check {
    /// An integer within `min..=max`.
    Count {
        /// Smallest allowed.
        min: Bound,
        /// Largest allowed.
        max: Bound,
    },
    /// Milliseconds (or seconds, by its name) within `min..=max`.
    Duration {
        /// Smallest allowed.
        min: Bound,
        /// Largest allowed.
        max: Bound,
    },
    /// A probability, `0.0..=1.0`.
    Probability,
    /// A `{ min, max }` range of ms, each within `0..=max`, `min <= max`.
    Range {
        /// Largest allowed end.
        max: Bound,
    },
    /// `true` or `false`.
    Flag,
    /// One of `known`.
    Name {
        /// The allowed names.
        known: &'static [&'static str],
        /// What they name (`room policy`), for messages and the README.
        noun: &'static str,
    },
    /// A list of names, each one of `known`.
    Names {
        /// The allowed names.
        known: &'static [&'static str],
        /// What they name (`commit point`).
        noun: &'static str,
        /// Whether the list must name at least one.
        non_empty: bool,
    },
    /// An optional table: present or absent.
    Table,
    /// Checked by the loader itself (the name, seeds, pinned faults, the outcome).
    Special(&'static str),
}

/// A rule between keys: the knob's value is refused when `broken` holds.
#[derive(Clone, Copy)]
pub struct Rule {
    /// Whether the scenario breaks the rule.
    pub broken: fn(&Scenario) -> bool,
    /// What is wrong, after the key path (`is above 0 but ...`).
    pub message: &'static str,
}

/// How `simulator shrink` reduces a knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shrink {
    /// Left as it is.
    Keep,
    /// The whole table is dropped (tried before any other reduction).
    Drop,
    /// Down an integer ladder to `lo`, every rung a multiple of `grain`.
    Ladder {
        /// The floor.
        lo: i64,
        /// The step.
        grain: i64,
    },
    /// Down a probability ladder to 0.
    Probability,
    /// One name of the list removed at a time.
    OneLess,
}

/// Shortest phase a shrunk scenario gets, ms; phases shrink by multiples of it.
pub const MIN_PHASE_MS: i64 = 1_000;
/// Fault lengths (pauses, delays, partitions, restarts) shrink by multiples of this, ms.
pub const MS_GRAIN: i64 = 100;

/// How a swarm seed changes a knob (see [`crate::SwarmDraw::apply`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swarm {
    /// Kept as written.
    Keep,
    /// The table is removed when its kind is off.
    Switch(FaultKind),
    /// A probability multiplied by its kind's weight.
    Scale(FaultKind),
    /// Milliseconds multiplied by its kind's weight (at least 1).
    ScaleMs(FaultKind),
    /// Set to true on seeds whose provider is lenient.
    Lenient,
}

/// The row of `key`, if the file has such a key.
pub fn knob(key: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.key == key).copied()
}

/// How many fault tables `s` has (the waiting room is not a fault).
pub fn fault_tables(s: &Scenario) -> usize {
    KNOBS
        .iter()
        .filter(|k| matches!(k.check, Check::Table) && k.key.starts_with("faults.") && (k.access.get)(s).is_some())
        .count()
}
