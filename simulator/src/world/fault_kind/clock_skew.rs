//! `faults.clock_skew`'s part in a world: nothing from outside the hosts;
//! each service host's clock is offset, drawn up front ([`crate::world::schedule`]).

use super::Strike;

/// `faults.clock_skew`: no hook of its own.
pub struct Kind;

impl Strike for Kind {}
