//! `faults.delayed_callback`'s part in a world: nothing from outside the hosts;
//! the fake provider holds back, duplicates and reorders its webhooks (its knobs: [`crate::world::plan`]).

use super::Strike;

/// `faults.delayed_callback` has no hook of its own.
impl Strike for scenarios::DelayedCallback {}
