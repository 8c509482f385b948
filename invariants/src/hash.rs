//! The trace hash: SHA-256 over the canonical JSON lines of the trace. Two runs
//! of one seed must give the same hash; any difference in any event changes it.

use crate::trace::{TraceEvent, to_json_line};
use sha2::{Digest, Sha256};

/// SHA-256 of the trace's canonical serialization: each event's JSON line
/// (fields in declaration order, no maps) followed by `\n`.
pub fn trace_hash(events: &[TraceEvent]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for e in events {
        hasher.update(to_json_line(e).as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().into()
}

/// Lowercase hex of a hash (64 characters).
pub fn to_hex(hash: &[u8; 32]) -> String {
    hex::encode(hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{FaultEvent, PhaseMark, Trace, TraceKind};

    fn sample(detail: &str) -> Vec<TraceEvent> {
        let mut t = Trace::new(10);
        t.record(0, TraceKind::Fault { kind: FaultEvent::ClientPaused, detail: detail.into() }).unwrap();
        t.record(5, TraceKind::Phase { phase: PhaseMark::FaultPhaseEnd, store_now_ms: 5 }).unwrap();
        t.into_events()
    }

    #[test]
    fn same_trace_same_hash() {
        assert_eq!(trace_hash(&sample("user-1")), trace_hash(&sample("user-1")));
        assert_eq!(to_hex(&trace_hash(&sample("user-1"))).len(), 64);
    }

    #[test]
    fn different_trace_different_hash() {
        assert_ne!(trace_hash(&sample("user-1")), trace_hash(&sample("user-2")));
        let mut shifted = sample("user-1");
        shifted[1].at_ms = 6;
        assert_ne!(trace_hash(&sample("user-1")), trace_hash(&shifted));
        assert_ne!(trace_hash(&sample("user-1")), trace_hash(&sample("user-1")[..1]));
    }

    #[test]
    fn empty_trace_hash_is_sha256_of_nothing() {
        assert_eq!(to_hex(&trace_hash(&[])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
