//! `faults.paused_client`'s part in a world: nothing from outside the hosts;
//! a user pauses at its checkout, drawn from its own stream ([`crate::world::user`]).

use super::Strike;

/// `faults.paused_client` has no hook of its own.
impl Strike for scenarios::PausedClient {}
