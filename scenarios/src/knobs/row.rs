//! What a knob row is written with: the row type and its parts, the
//! access macros, the default row and the common checks. The knob table
//! and every fault kind's rows `use` this module whole.

pub(crate) use super::{Access, Bound, Check, FromValue, Knob, MIN_PHASE_MS, MS_GRAIN, Rule, Shrink, Swarm, Value};
pub(crate) use crate::faults::FaultKind as F;
pub(crate) use crate::limits::*;
pub(crate) use crate::names::*;

/// A key every scenario has: `req!(workload.events)`.
macro_rules! req {
    ($($p:ident).+) => {
        Access { get: |s| Some(Value::from(s.$($p).+.clone())), set: |s, v| s.$($p).+ = FromValue::from_value(v) }
    };
}

/// An optional key (an `Option` field) of a table every scenario has.
macro_rules! maybe {
    ($($p:ident).+) => {
        Access { get: |s| s.$($p).+.clone().map(Value::from), set: |s, v| s.$($p).+ = FromValue::from_value(v) }
    };
}

/// A key of an optional table: `opt!(faults.paused_client => probability)`.
macro_rules! opt {
    ($($t:ident).+ => $f:ident) => {
        Access {
            get: |s| s.$($t).+.as_ref().map(|t| Value::from(t.$f.clone())),
            set: |s, v| if let Some(t) = s.$($t).+.as_mut() { t.$f = FromValue::from_value(v) },
        }
    };
}

/// An optional key of an optional table: `opt_maybe!(waiting_room => poll_max_s)`.
macro_rules! opt_maybe {
    ($($t:ident).+ => $f:ident) => {
        Access {
            get: |s| s.$($t).+.as_ref().and_then(|t| t.$f.clone()).map(Value::from),
            set: |s, v| if let Some(t) = s.$($t).+.as_mut() { t.$f = FromValue::from_value(v) },
        }
    };
}

/// An optional table itself: `table!(faults.cache)`.
macro_rules! table {
    ($($t:ident).+) => {
        Access {
            get: |s| s.$($t).+.as_ref().map(|_| Value::Table),
            set: |s, v| {
                assert_eq!(v, Value::Absent, "a table's row only removes it");
                s.$($t).+ = None;
            },
        }
    };
}

/// A row with the defaults: no rule, no note, kept by swarm and shrink.
pub(crate) const ROW: Knob = Knob {
    key: "",
    meaning: "",
    check: Check::Special(""),
    rule: None,
    note: "",
    access: Access::NONE,
    shrink: Shrink::Keep,
    swarm: Swarm::Keep,
};

pub(crate) const fn count(min: i64, max: i64) -> Check {
    Check::Count { min: Bound::Fixed(min), max: Bound::Fixed(max) }
}

pub(crate) const fn ms(min: i64, max: i64) -> Check {
    Check::Duration { min: Bound::Fixed(min), max: Bound::Fixed(max) }
}

pub(crate) const fn range(max: i64) -> Check {
    Check::Range { max: Bound::Fixed(max) }
}

pub(crate) const P: Check = Check::Probability;
pub(crate) const LADDER: Shrink = Shrink::Ladder { lo: 1, grain: 1 };
pub(crate) const LADDER_MS: Shrink = Shrink::Ladder { lo: 1, grain: MS_GRAIN };
pub(crate) const LADDER_PHASE: Shrink = Shrink::Ladder { lo: MIN_PHASE_MS, grain: MIN_PHASE_MS };

pub(crate) use maybe;
pub(crate) use opt;
pub(crate) use opt_maybe;
pub(crate) use req;
pub(crate) use table;
