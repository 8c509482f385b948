//! `faults.clock_skew`'s part in a world: nothing from outside the hosts;
//! each service host's clock is offset, drawn up front ([`crate::world::schedule`]).

use super::Strike;

/// `faults.clock_skew` has no hook of its own.
impl Strike for scenarios::ClockSkew {}
