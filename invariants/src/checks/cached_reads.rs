//! A seat map served from the cache may be stale, but never by more than the
//! cache's TTL: writes never consult the cache (the store decides every
//! hold), and a lost invalidation is bounded by the entry's lifetime. Judged
//! from the trace: an event's store seat-map version is the number of its
//! seat changes so far (each adds one to one seat's version), and a cached
//! read shows the version its entry was cached from; the read is stale from
//! the first change it does not show. Poisoned entries are lies, not stale
//! reads: what they must never do (let a hold or checkout through) is the
//! other checkers' to judge.

use crate::trace::TraceKind;
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::model::Snapshot;
use std::collections::BTreeMap;

/// Checks [`Invariant::StaleReadBounded`] when the config names the cache's
/// TTL. Subject: the event's seat map. Witnesses: the first store change the
/// read does not show, and the read. One violation per event: the first.
pub fn check_cached_reads(_snap: &Snapshot, trace: &[TraceEvent], cfg: &Config) -> Vec<Violation> {
    let Some(ttl_ms) = cfg.seat_map_cache_ttl_ms else { return Vec::new() };
    // Each event's seat changes so far, in trace order: (seq, at_ms).
    let mut changes: BTreeMap<&str, Vec<(u64, i64)>> = BTreeMap::new();
    let mut reported: BTreeMap<&str, ()> = BTreeMap::new();
    let mut out = Vec::new();
    for e in trace {
        match &e.kind {
            TraceKind::SeatChange(c) => changes.entry(c.event_id.as_str()).or_default().push((e.seq, e.at_ms)),
            TraceKind::SeatMapCached { event_id, version_sum: Some(shown) } => {
                let Some(seen) = changes.get(event_id.as_str()) else { continue };
                let Ok(shown) = usize::try_from(*shown) else { continue };
                // The first change the read does not show, if it happened already.
                let Some(&(first_seq, first_at_ms)) = seen.get(shown) else { continue };
                let stale_ms = e.at_ms - first_at_ms;
                if stale_ms >= ttl_ms && reported.insert(event_id.as_str(), ()).is_none() {
                    out.push(Violation::new(
                        Invariant::StaleReadBounded,
                        Subject::SeatMap { event_id: event_id.clone() },
                        format!(
                            "a cached map at version {shown} was served {stale_ms} ms after the store moved past it \
                             (the cache keeps an entry {ttl_ms} ms)"
                        ),
                        vec![first_seq, e.seq],
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;

    fn served(w: &mut World, version_sum: Option<i64>) -> u64 {
        w.record(TraceKind::SeatMapCached { event_id: "ev".into(), version_sum })
    }

    #[test]
    fn a_read_within_the_ttl_of_the_first_change_it_misses_is_fine() {
        let mut w = World::new(&["A", "B"]);
        served(&mut w, Some(0));
        w.hold("u1", &["A"], 5_000);
        w.advance(999);
        served(&mut w, Some(0)); // stale by 999 ms: within a 1,000 ms TTL
        served(&mut w, Some(1)); // fresh
        served(&mut w, None); // poisoned: not a stale read
        let cfg = w.config().with_cache_ttl(Some(1_000));
        assert_eq!(check_cached_reads(&w.snap, w.trace.events(), &cfg), vec![]);
    }

    #[test]
    fn a_read_older_than_the_ttl_is_reported_once_with_its_witnesses() {
        let mut w = World::new(&["A", "B"]);
        w.hold("u1", &["A"], 5_000);
        let first = w.last_change_of("A");
        w.hold("u2", &["B"], 5_000);
        w.advance(1_000);
        let read = served(&mut w, Some(0));
        served(&mut w, Some(0));
        let cfg = w.config().with_cache_ttl(Some(1_000));
        let v = check_cached_reads(&w.snap, w.trace.events(), &cfg);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::StaleReadBounded);
        assert_eq!(v[0].subject, Subject::SeatMap { event_id: "ev".into() });
        assert_eq!(v[0].witnesses, vec![first, read]);
        // A read that shows the first change is stale only from the second.
        let mut w2 = World::new(&["A", "B"]);
        w2.hold("u1", &["A"], 5_000);
        w2.advance(600);
        w2.hold("u2", &["B"], 5_000);
        w2.advance(600);
        served(&mut w2, Some(1));
        assert_eq!(check_cached_reads(&w2.snap, w2.trace.events(), &cfg), vec![], "stale by 600 ms only");
        // Without a TTL in the config nothing is checked.
        assert_eq!(check_cached_reads(&w.snap, w.trace.events(), &w.config()), vec![]);
    }
}
