//! `faults.provider`'s part in a world: nothing from outside the hosts;
//! the fake provider answers unknown, declines, fails and succeeds late, per call (its knobs: [`crate::world::plan`]).

use super::Strike;

/// `faults.provider` has no hook of its own.
impl Strike for scenarios::Provider {}
