//! `faults.delayed_callback`'s part in a world: nothing from outside the hosts;
//! the fake provider holds back, duplicates and reorders its webhooks (its knobs: [`crate::world::plan`]).

use super::Strike;

/// `faults.delayed_callback`: no hook of its own.
pub struct Kind;

impl Strike for Kind {}
