//! `faults.stale_token`'s part in a world: nothing from outside the hosts;
//! a user replays an old request, drawn from its own stream ([`crate::world::user`]).

use super::Strike;

/// `faults.stale_token` has no hook of its own.
impl Strike for scenarios::StaleToken {}
