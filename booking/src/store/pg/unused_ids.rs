//! Ids drawn for a write that did not happen, handed out again.
//!
//! A hold sent as one statement needs its token before the database decides;
//! a refused hold then has drawn an id `MemStore` would not have drawn (it
//! draws after deciding). Giving it back keeps the ids a sequence of
//! operations consumes the same on both stores (the differential test
//! compares them), and wastes none.

use crate::ids::IdSource;
use std::sync::{Arc, Mutex};
use uuid::Uuid;

/// Most ids kept for reuse; one more is dropped (it is only never used).
const MAX_UNUSED_IDS: usize = 64;

/// An [`IdSource`] that hands out given-back ids first, latest first.
pub(super) struct UnusedIds {
    source: Arc<dyn IdSource>,
    unused: Mutex<Vec<Uuid>>,
}

impl UnusedIds {
    /// Ids from `source`, plus those given back.
    pub(super) fn new(source: Arc<dyn IdSource>) -> Self {
        Self { source, unused: Mutex::new(Vec::new()) }
    }

    /// Returns `id`, drawn from this source and never written anywhere.
    pub(super) fn give_back(&self, id: Uuid) {
        let mut unused = self.unused.lock().expect("UnusedIds poisoned");
        if unused.len() < MAX_UNUSED_IDS {
            unused.push(id);
        }
    }
}

impl IdSource for UnusedIds {
    fn next_uuid(&self) -> Uuid {
        let given_back = self.unused.lock().expect("UnusedIds poisoned").pop();
        given_back.unwrap_or_else(|| self.source.next_uuid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::SeededIds;

    #[test]
    fn a_given_back_id_comes_next_and_the_sequence_goes_on_after_it() {
        let plain = SeededIds::new(7);
        let ids = UnusedIds::new(Arc::new(SeededIds::new(7)));
        let first = ids.next_uuid();
        assert_eq!(first, plain.next_uuid());
        ids.give_back(first);
        assert_eq!(ids.next_uuid(), first);
        assert_eq!(ids.next_uuid(), plain.next_uuid());
    }
}
