//! The waiting room's figures, from a run's trace: queue length, admission
//! rate, sessions open over time against the target, wait-time percentiles
//! and the admission law's error (what `docs/BENCHMARKS.md` reports for
//! the on-sale). Sessions are counted as the `sessions-within-target`
//! checker counts them: from admission until ended or expired.

use crate::trace::{RoomEvent, TraceEvent, TraceKind};
use booking::model::{EventId, SessionId, UserId};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One sample of the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Simulated time, s.
    pub at_s: u64,
    /// Sessions open.
    pub active: u32,
    /// Users waiting (as of the last pass).
    pub waiting: u64,
    /// The law's admission rate, per second (as of the last pass).
    pub rate_per_s: f64,
}

/// One room's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoomMetrics {
    /// The event.
    pub event_id: EventId,
    /// The target of open sessions.
    pub target: u32,
    /// Users who joined.
    pub joined: u64,
    /// Users admitted.
    pub admitted: u64,
    /// Users told the event sold out.
    pub told_sold_out: u64,
    /// Most users waiting at once (as the passes saw it).
    pub peak_waiting: u64,
    /// Most sessions open at once.
    pub peak_active: u32,
    /// Admissions per second from the first admission to the last.
    pub admission_rate_per_s: f64,
    /// Wait from joining to admission, percentiles 50, 90, 99, s.
    pub wait_p50_p90_p99_s: (f64, f64, f64),
    /// Mean of |open sessions − target| / target over the passes while users
    /// waited and the event had not sold out (the law's error).
    pub law_error: f64,
    /// Open sessions, waiting users and rate every `sample_s`.
    pub timeline: Vec<Sample>,
}

#[derive(Default)]
struct Room {
    target: u32,
    ttl_ms: i64,
    joined_at: BTreeMap<UserId, i64>,
    waits_ms: Vec<i64>,
    admitted: u64,
    told_sold_out: u64,
    first_last_admission_ms: Option<(i64, i64)>,
    open: BTreeSet<(i64, SessionId)>,
    ended_at: BTreeMap<SessionId, i64>,
    peak_active: u32,
    peak_waiting: u64,
    errors: Vec<f64>,
    sold_out: bool,
    last_waiting: u64,
    last_rate_per_s: f64,
    timeline: Vec<Sample>,
}

impl Room {
    fn expire(&mut self, now_ms: i64) {
        while self.open.first().is_some_and(|(expiry, _)| *expiry <= now_ms) {
            self.open.pop_first();
        }
    }
}

/// The figures of every room of `trace`, sampling the timeline every `sample_s` (>= 1).
pub fn compute(trace: &[TraceEvent], sample_s: u64) -> Vec<RoomMetrics> {
    assert!(sample_s >= 1, "a timeline needs a sample interval");
    let mut rooms: BTreeMap<EventId, Room> = BTreeMap::new();
    let mut next_sample_ms = 0i64;
    for e in trace {
        while e.at_ms >= next_sample_ms {
            for r in rooms.values_mut() {
                r.expire(next_sample_ms);
                r.timeline.push(Sample {
                    at_s: (next_sample_ms / 1000) as u64,
                    active: r.open.len() as u32,
                    waiting: r.last_waiting,
                    rate_per_s: r.last_rate_per_s,
                });
            }
            next_sample_ms += sample_s as i64 * 1000;
        }
        if let TraceKind::Room(ev) = &e.kind {
            observe(&mut rooms, e.at_ms, ev);
        }
    }
    rooms.into_iter().map(|(event_id, r)| r.figures(event_id)).collect()
}

/// Applies one room event, at simulated `at_ms`, to the rooms' figures.
fn observe(rooms: &mut BTreeMap<EventId, Room>, at_ms: i64, ev: &RoomEvent) {
    if let RoomEvent::Opened { event_id, target_active_sessions, session_ttl_ms, .. } = ev {
        let r = rooms.entry(event_id.clone()).or_default();
        r.target = *target_active_sessions;
        r.ttl_ms = *session_ttl_ms;
        return;
    }
    let Some(r) = rooms.get_mut(ev.event_id()) else { return };
    match ev {
        RoomEvent::Opened { .. } | RoomEvent::LawRan { .. } | RoomEvent::LawLearnt { .. } => {}
        RoomEvent::Joined { user, .. } => {
            r.joined_at.entry(user.clone()).or_insert(at_ms);
        }
        RoomEvent::Admitted { user, session_id, .. } => {
            r.admitted += 1;
            if let Some(j) = r.joined_at.get(user) {
                r.waits_ms.push(at_ms - j);
            }
            let first = r.first_last_admission_ms.map_or(at_ms, |(first, _)| first);
            r.first_last_admission_ms = Some((first, at_ms));
            r.expire(at_ms);
            r.open.insert((at_ms + r.ttl_ms, *session_id));
            r.peak_active = r.peak_active.max(r.open.len() as u32);
        }
        // Metrics count a session's first end; a reopened one is not counted again.
        RoomEvent::Reopened { .. } => {}
        RoomEvent::Ended { session_id, .. } => {
            r.ended_at.insert(*session_id, at_ms);
            r.open.retain(|(_, s)| s != session_id);
        }
        RoomEvent::Pass { waiting, rate_per_ks, .. } => {
            r.expire(at_ms);
            r.last_waiting = *waiting;
            r.last_rate_per_s = *rate_per_ks as f64 / 1000.0;
            r.peak_waiting = r.peak_waiting.max(*waiting);
            if *waiting > 0 && !r.sold_out && r.target > 0 {
                let gap = r.open.len() as f64 - f64::from(r.target);
                r.errors.push(gap.abs() / f64::from(r.target));
            }
        }
        RoomEvent::SoldOut { .. } => r.sold_out = true,
        RoomEvent::Told { admitted: false, .. } => r.told_sold_out += 1,
        RoomEvent::Told { .. } => {}
    }
}

impl Room {
    /// The room's figures, once the trace was read.
    fn figures(mut self, event_id: EventId) -> RoomMetrics {
        self.waits_ms.sort_unstable();
        let pct = |p: usize| match self.waits_ms.len() {
            0 => 0.0,
            n => self.waits_ms[((n * p).div_ceil(100)).clamp(1, n) - 1] as f64 / 1000.0,
        };
        let admission_rate_per_s = match self.first_last_admission_ms {
            Some((first, last)) if last > first => self.admitted as f64 / ((last - first) as f64 / 1000.0),
            _ => 0.0,
        };
        let law_error =
            if self.errors.is_empty() { 0.0 } else { self.errors.iter().sum::<f64>() / self.errors.len() as f64 };
        RoomMetrics {
            event_id,
            target: self.target,
            joined: self.joined_at.len() as u64,
            admitted: self.admitted,
            told_sold_out: self.told_sold_out,
            peak_waiting: self.peak_waiting,
            peak_active: self.peak_active,
            admission_rate_per_s,
            wait_p50_p90_p99_s: (pct(50), pct(90), pct(99)),
            law_error,
            timeline: self.timeline,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    #[test]
    fn figures_follow_the_room_s_events() {
        let mut t = Trace::new(100);
        let ev = || EventId::from("ev");
        let at = |t: &mut Trace, ms: i64, k: RoomEvent| t.record(ms, TraceKind::Room(k)).unwrap();
        at(
            &mut t,
            0,
            RoomEvent::Opened {
                event_id: ev(),
                policy: booking::admission::room::Policy::Fifo,
                target_active_sessions: 2,
                opens_at_ms: 0,
                session_ttl_ms: 10_000,
                seed: String::new(),
            },
        );
        for (i, u) in ["a", "b", "c"].iter().enumerate() {
            at(&mut t, i as i64, RoomEvent::Joined { event_id: ev(), user: UserId::from(*u), tier: 0, now_ms: 0 });
        }
        for (ms, u, n) in [(1_000, "a", 1), (2_000, "b", 2)] {
            at(
                &mut t,
                ms,
                RoomEvent::Admitted {
                    event_id: ev(),
                    user: UserId::from(u),
                    session_id: SessionId::from_u128(n),
                    expires_at_ms: 0,
                },
            );
        }
        at(
            &mut t,
            2_500,
            RoomEvent::Pass {
                event_id: ev(),
                asked: 0,
                admitted: 0,
                active: 2,
                waiting: 1,
                rate_per_ks: 500,
                now_ms: 0,
            },
        );
        at(&mut t, 20_000, RoomEvent::SoldOut { event_id: ev() });
        at(&mut t, 20_001, RoomEvent::Told { event_id: ev(), user: "c".into(), admitted: false });
        let m = &compute(t.events(), 5)[0];
        assert_eq!((m.joined, m.admitted, m.told_sold_out, m.peak_active, m.peak_waiting), (3, 2, 1, 2, 1));
        assert_eq!(m.admission_rate_per_s, 2.0);
        assert_eq!(m.wait_p50_p90_p99_s, (1.0, 1.999, 1.999));
        assert_eq!(m.law_error, 0.0, "two open of two targeted");
        // Sampled from the room's opening on: at 5, 10, 15 and 20 s.
        let actives: Vec<(u64, u32)> = m.timeline.iter().map(|s| (s.at_s, s.active)).collect();
        assert_eq!(actives, vec![(5, 2), (10, 2), (15, 0), (20, 0)], "sessions expire 10 s after admission");
    }
}
