//! A panic inside a world is a verdict, not a crash of the runner: the
//! hook installed by [`install`] notes the first panic's message and
//! location (quietly: no backtrace on stderr), and the world reports it as
//! a named `panic` failure with the trace up to that point.
//!
//! Each seed runs in a process of its own (see `simulator run`), so one
//! note per process is one note per world.

use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// The first panic of this process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PanicNote {
    /// The panic's message.
    pub message: String,
    /// `file:line:column` where it was raised.
    pub location: String,
}

impl std::fmt::Display for PanicNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {}", self.message, self.location)
    }
}

static FIRST: Mutex<Option<PanicNote>> = Mutex::new(None);

/// Installs the noting hook (idempotent in effect: the last install wins).
pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        let message = if let Some(s) = info.payload().downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "panic with a non-text payload".to_string()
        };
        let location = info.location().map_or_else(|| "unknown".into(), |l| l.to_string());
        let mut first = FIRST.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(PanicNote { message, location });
        }
    }));
}

/// Takes the noted panic, if any (the next panic will be noted again).
pub fn take() -> Option<PanicNote> {
    FIRST.lock().unwrap_or_else(|e| e.into_inner()).take()
}
