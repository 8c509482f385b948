//! The planted bug `replayed-webhook-refused`: a webhook "replay guard" that
//! remembers the events it has applied and refuses a second delivery of one
//! as a replay. A provider whose first answer was lost delivers the event
//! again, genuinely, and is refused (the sound endpoint answers a repeat as
//! applied: applying a webhook is idempotent). The endpoint makes one only
//! when the bug is planted (never in a build without `fault-injection`).

use std::collections::BTreeSet;
use std::sync::Mutex;

/// At most this many event ids are remembered; the set starts over beyond it.
pub const MAX_REMEMBERED_EVENTS: usize = 100_000;

/// The provider event ids applied so far (at most [`MAX_REMEMBERED_EVENTS`]).
#[derive(Debug, Default)]
pub struct ReplayGuard {
    applied: Mutex<BTreeSet<String>>,
}

impl ReplayGuard {
    fn applied(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.applied.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the event `provider_event_id` was applied before.
    pub fn seen(&self, provider_event_id: &str) -> bool {
        self.applied().contains(provider_event_id)
    }

    /// Remembers that `provider_event_id` was applied.
    pub fn remember(&self, provider_event_id: &str) {
        let mut applied = self.applied();
        if applied.len() >= MAX_REMEMBERED_EVENTS {
            applied.clear();
        }
        applied.insert(provider_event_id.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_seen_only_after_it_is_remembered() {
        let guard = ReplayGuard::default();
        assert!(!guard.seen("evt_1"));
        guard.remember("evt_1");
        assert!(guard.seen("evt_1"));
        assert!(!guard.seen("evt_2"));
    }
}
