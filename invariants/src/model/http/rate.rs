//! The per-user rate limit on hold attempts: at most `per_minute` attempts
//! per user per clock minute (`floor(host ms / 60,000)`) at each service
//! host, judged by that host's clock; an attempt refused by the limit does
//! not count; a host that restarts forgets its counts.
//!
//! The model does not know the exact moment a request met the limit, only
//! a span (sent .. answered): an attempt counts for certain in a minute only
//! when its whole span falls in it, and may count in any minute its span
//! touches. A refusal is then certain, possible, or impossible.
//!
//! A refusal tells when to ask again (`retry_after_s`): the whole seconds
//! until the host's next minute starts, rounded up, at least 1 — for some
//! moment of the span.

use booking::model::UserId;
use std::collections::BTreeMap;

/// The length of one window, ms.
pub const WINDOW_MS: i64 = 60_000;

/// One attempt that met the limiter: its span on its host's clock, and
/// whether it surely reached it (an unanswered one may not have).
#[derive(Debug, Clone, Copy)]
struct Attempt {
    from_ms: i64,
    to_ms: i64,
    surely: bool,
}

/// The attempts every host's limiter has counted.
#[derive(Debug, Default)]
pub struct Limiter {
    attempts: BTreeMap<(u32, UserId), Vec<Attempt>>,
}

/// What the limit says of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It passes.
    Passes,
    /// It may be refused (or pass).
    Maybe,
    /// It is refused.
    Refused,
}

impl Limiter {
    /// The verdict on an attempt by `user` at `host` whose span on the
    /// host's clock is `from_ms..=to_ms`, with `per_minute` allowed.
    pub fn judge(&self, host: u32, user: &UserId, from_ms: i64, to_ms: i64, per_minute: u32) -> Verdict {
        let earlier = self.attempts.get(&(host, user.clone())).map(Vec::as_slice).unwrap_or(&[]);
        let (first, last) = (from_ms.div_euclid(WINDOW_MS), to_ms.div_euclid(WINDOW_MS));
        let per = per_minute as usize;
        let mut all_refuse = true;
        let mut any_refuse = false;
        for w in first..=last {
            let surely = earlier
                .iter()
                .filter(|a| a.surely && a.from_ms.div_euclid(WINDOW_MS) == w && a.to_ms.div_euclid(WINDOW_MS) == w)
                .count();
            let maybe = earlier
                .iter()
                .filter(|a| (a.from_ms.div_euclid(WINDOW_MS)..=a.to_ms.div_euclid(WINDOW_MS)).contains(&w))
                .count();
            all_refuse &= surely >= per;
            any_refuse |= maybe >= per;
        }
        match (all_refuse, any_refuse) {
            (true, _) => Verdict::Refused,
            (false, true) => Verdict::Maybe,
            (false, false) => Verdict::Passes,
        }
    }

    /// Counts an attempt that met the limiter and passed it (`surely`), or may have.
    pub fn count(&mut self, host: u32, user: &UserId, from_ms: i64, to_ms: i64, surely: bool) {
        self.attempts.entry((host, user.clone())).or_default().push(Attempt { from_ms, to_ms, surely });
    }

    /// Host `host` restarted: its counts are gone.
    pub fn forget(&mut self, host: u32) {
        self.attempts.retain(|(h, _), _| *h != host);
    }
}

/// Whether a refusal whose span on its host's clock is `from_ms..=to_ms`
/// may tell `retry_after_s` (see the module doc).
pub fn retry_agrees(retry_after_s: u64, from_ms: i64, to_ms: i64) -> bool {
    assert!(from_ms <= to_ms);
    // Within a minute the wait only shrinks: each minute the span touches
    // allows the waits from its last moment's to its first moment's.
    let wait_s = |t_ms: i64| {
        let next_minute_ms = (t_ms.div_euclid(WINDOW_MS) + 1) * WINDOW_MS;
        u64::try_from(next_minute_ms - t_ms).expect("the next minute is ahead").div_ceil(1000).max(1)
    };
    let mut start_ms = from_ms;
    while start_ms <= to_ms {
        let end_ms = to_ms.min((start_ms.div_euclid(WINDOW_MS) + 1) * WINDOW_MS - 1);
        if (wait_s(end_ms)..=wait_s(start_ms)).contains(&retry_after_s) {
            return true;
        }
        start_ms = end_ms + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_tells_the_seconds_to_the_next_minute() {
        assert!(retry_agrees(60, 0, 0));
        assert!(!retry_agrees(59, 0, 0));
        assert!(retry_agrees(1, 59_500, 59_500));
        assert!(retry_agrees(1, 59_999, 59_999), "at least 1");
        assert!(retry_agrees(31, 29_000, 29_500) && retry_agrees(31, 29_500, 29_500));
        assert!(!retry_agrees(32, 29_000, 29_500));
        assert!(retry_agrees(60, 59_900, 60_100), "the span reaches the next minute");
        assert!(retry_agrees(1, 59_900, 60_100));
        assert!(!retry_agrees(30, 59_900, 60_100));
        assert!(retry_agrees(60, -60_000, -60_000), "minutes before the epoch too");
    }

    #[test]
    fn refusals_are_certain_only_when_every_possible_minute_is_full() {
        let (u, v) = (UserId::from("u"), UserId::from("v"));
        let mut l = Limiter::default();
        assert_eq!(l.judge(0, &u, 10, 20, 2), Verdict::Passes);
        l.count(0, &u, 10, 20, true);
        l.count(0, &u, 30, 40, true);
        assert_eq!(l.judge(0, &u, 50, 60, 2), Verdict::Refused);
        assert_eq!(l.judge(1, &u, 50, 60, 2), Verdict::Passes, "per host");
        assert_eq!(l.judge(0, &v, 50, 60, 2), Verdict::Passes, "per user");
        assert_eq!(l.judge(0, &u, 59_990, 60_010, 2), Verdict::Maybe, "the span reaches the next minute");
        assert_eq!(l.judge(0, &u, 60_000, 60_010, 2), Verdict::Passes, "a new minute");
        let mut m = Limiter::default();
        m.count(0, &u, 59_990, 60_010, true);
        assert_eq!(
            m.judge(0, &u, 60_020, 60_030, 1),
            Verdict::Maybe,
            "the earlier one may have counted in either minute"
        );
        m.forget(0);
        assert_eq!(m.judge(0, &u, 60_020, 60_030, 1), Verdict::Passes);
    }
}
