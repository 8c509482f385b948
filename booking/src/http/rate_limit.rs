//! Per-user fixed-window rate limit on hold attempts, judged by the service's
//! clock. Bounded: at most `max_users` windows are tracked; when full, windows
//! from past minutes are dropped first, then the request is let through
//! unlimited rather than refused (the store still decides ownership).

use crate::clock::Clock;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The length of one window.
pub const WINDOW_MS: i64 = 60_000;

/// A per-user hold-attempt limiter.
pub struct RateLimiter {
    per_window: u32,
    max_users: usize,
    clock: Arc<dyn Clock>,
    windows: Mutex<Windows>,
}

/// Each tracked user's window and count, and the last window whose stale entries were dropped.
#[derive(Default)]
struct Windows {
    by_user: BTreeMap<String, (i64, u32)>,
    swept_window: Option<i64>,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter").field("per_window", &self.per_window).finish_non_exhaustive()
    }
}

impl RateLimiter {
    /// Allows `per_window` attempts per user per minute, tracking at most `max_users` users.
    pub fn new(per_window: u32, max_users: usize, clock: Arc<dyn Clock>) -> Self {
        assert!(per_window > 0 && max_users > 0);
        Self { per_window, max_users, clock, windows: Mutex::new(Windows::default()) }
    }

    /// Counts one attempt under `key` (a user, or a user on one event).
    /// `Err(retry_after_s)` when over the limit.
    /// A full table drops the windows of past minutes once per minute (an
    /// entry goes stale only when the minute turns, so one sweep finds them
    /// all): a crowd of new users past the bound costs a lookup each, not a
    /// walk of the table each.
    pub fn check(&self, key: &str) -> Result<(), u64> {
        let now_ms = self.clock.now_ms();
        let window = now_ms.div_euclid(WINDOW_MS);
        let mut w = self.windows.lock().expect("rate limiter poisoned");
        if !w.by_user.contains_key(key) && w.by_user.len() >= self.max_users {
            if w.swept_window != Some(window) {
                w.by_user.retain(|_, (win, _)| *win == window);
                w.swept_window = Some(window);
            }
            if w.by_user.len() >= self.max_users {
                return Ok(());
            }
        }
        let entry = match w.by_user.get_mut(key) {
            Some(entry) => entry,
            None => w.by_user.entry(key.to_string()).or_insert((window, 0)),
        };
        if entry.0 != window {
            *entry = (window, 0);
        }
        if entry.1 >= self.per_window {
            let next_window_ms = (window + 1) * WINDOW_MS;
            let retry_s = u64::try_from((next_window_ms - now_ms + 999) / 1000).unwrap_or(1).max(1);
            return Err(retry_s);
        }
        entry.1 += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn refuses_past_the_limit_until_the_next_window() {
        let clock = ManualClock::new(0);
        let rl = RateLimiter::new(2, 10, clock.clone());
        assert!(rl.check("a").is_ok());
        assert!(rl.check("a").is_ok());
        assert_eq!(rl.check("a"), Err(60));
        assert!(rl.check("b").is_ok(), "limits are per user");
        clock.set_ms(59_500);
        assert_eq!(rl.check("a"), Err(1));
        clock.set_ms(60_000);
        assert!(rl.check("a").is_ok());
    }

    #[test]
    fn tracking_is_bounded() {
        let clock = ManualClock::new(0);
        let rl = RateLimiter::new(1, 2, clock.clone());
        rl.check("a").unwrap();
        rl.check("b").unwrap();
        assert!(rl.check("c").is_ok(), "full table lets through");
        clock.set_ms(60_000);
        rl.check("c").unwrap();
        assert_eq!(rl.check("c"), Err(60), "old windows were dropped to make room");
    }

    #[test]
    fn a_full_table_of_this_minute_keeps_limiting_its_users_and_lets_newcomers_through() {
        let clock = ManualClock::new(0);
        let rl = RateLimiter::new(1, 2, clock.clone());
        rl.check("a").unwrap();
        clock.set_ms(60_000);
        rl.check("b").unwrap();
        assert!(rl.check("c").is_ok(), "a's stale window dropped, c tracked");
        assert_eq!(rl.check("c"), Err(60));
        for newcomer in ["d", "e", "f"] {
            assert!(rl.check(newcomer).is_ok(), "a full table lets {newcomer} through");
            assert!(rl.check(newcomer).is_ok(), "untracked: never refused");
        }
        assert_eq!(rl.check("b"), Err(60), "the tracked are still limited");
        clock.set_ms(120_000);
        rl.check("d").unwrap();
        assert_eq!(rl.check("d"), Err(60), "the next minute's sweep made room");
    }
}
