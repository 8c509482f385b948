//! `faults.provider`'s part in a world: nothing from outside the hosts;
//! the fake provider answers unknown, declines, fails and succeeds late, per call (its knobs: [`crate::world::plan`]).

use super::Strike;

/// `faults.provider`: no hook of its own.
pub struct Kind;

impl Strike for Kind {}
