//! The admission law, stated apart from booking's controller: given what an
//! instance's law read at each run, what it must have decided.
//!
//! Each instance (each life of it) keeps, per event, the mean session
//! duration `W` (from the prior, moving toward each ended session by the
//! session weight), a health `h` and a credit. A run at the instance's clock
//! `t`:
//!
//! 1. elapsed = `t` − the previous run's `t` (the tick interval at the first
//!    run), counted in seconds up to the burst bound;
//! 2. the reading is the product of three factors, each 1 when its signal is
//!    within bounds: contention `1 − (c − c0) / (1 − c0)` when the refused
//!    share `c` of hold attempts passes `c0`; errors `e0 / e` when the
//!    failed share `e` of provider calls passes `e0`; latency `L0 / p95` when
//!    the p95 passes `L0`; clamped to `[min_health, 1]`;
//! 3. `h` drops to a worse reading at once and follows a better one by the
//!    recovery share;
//! 4. the rate is `T / W · h` (`T` the room's target sessions, `W` in s);
//! 5. credit = min(credit, 1) + rate · elapsed; admit the whole credit, but
//!    never past `⌊T · h⌋` − the active sessions, nor below 0; the admitted
//!    leave the credit.

use crate::trace::LawSignals;
use serde::{Deserialize, Serialize};

/// The law's settings (bookingd's defaults unless the deployment says otherwise).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LawSettings {
    /// The mean session assumed before any ended, ms.
    pub prior_session_ms: u64,
    /// Weight of each ended session in the mean.
    pub session_weight: f64,
    /// Refused share of hold attempts above which the law slows.
    pub contention_threshold: f64,
    /// Failed share of provider calls above which the law slows.
    pub provider_error_threshold: f64,
    /// Provider p95 above which the law slows, ms.
    pub provider_latency_target_ms: u64,
    /// The lowest health.
    pub min_health: f64,
    /// Share of the way a better reading is followed per run.
    pub recovery_per_tick: f64,
    /// Most elapsed time one run accrues credit for, s.
    pub max_burst_s: f64,
    /// The elapsed time of an instance's first run, ms (the tick interval).
    pub tick_ms: u64,
}

impl Default for LawSettings {
    fn default() -> Self {
        Self {
            prior_session_ms: 90_000,
            session_weight: 0.02,
            contention_threshold: 0.5,
            provider_error_threshold: 0.05,
            provider_latency_target_ms: 2_000,
            min_health: 0.1,
            recovery_per_tick: 0.1,
            max_burst_s: 1.0,
            tick_ms: 1_000,
        }
    }
}

/// One law's state: one event at one instance life.
#[derive(Debug, Clone)]
pub struct Law {
    mean_session_ms: f64,
    health: f64,
    credit: f64,
    last_run_ms: Option<i64>,
}

/// What a run decided, as the trace shows it (rates and health in millionths).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    /// Users to admit.
    pub admit: u32,
    /// Admissions per 1,000,000 s.
    pub rate_per_million_s: i64,
    /// Health, millionths.
    pub health_ppm: i64,
    /// The mean session, thousandths of a ms.
    pub mean_session_us: i64,
}

impl Decided {
    /// Whether `self` and `other` agree: the same admissions, the rest within rounding.
    pub fn agrees(&self, other: &Decided) -> bool {
        let near = |a: i64, b: i64| (a - b).abs() <= 1;
        self.admit == other.admit
            && near(self.rate_per_million_s, other.rate_per_million_s)
            && near(self.health_ppm, other.health_ppm)
            && near(self.mean_session_us, other.mean_session_us)
    }
}

impl Law {
    /// A new law: healthy, no credit, the prior mean.
    pub fn new(s: &LawSettings) -> Self {
        Self { mean_session_ms: s.prior_session_ms as f64, health: 1.0, credit: 0.0, last_run_ms: None }
    }

    /// A session ended after `duration_ms` (at least 1 ms counts).
    pub fn learnt(&mut self, s: &LawSettings, duration_ms: u64) {
        let d = duration_ms.max(1) as f64;
        self.mean_session_ms += s.session_weight * (d - self.mean_session_ms);
    }

    /// The reading `signals` give, before smoothing.
    pub fn reading(s: &LawSettings, g: &LawSignals) -> f64 {
        let share = |part: u64, whole: u64| part.min(whole) as f64 / whole as f64;
        let mut h = 1.0;
        if g.hold_attempts > 0 && share(g.hold_refusals, g.hold_attempts) > s.contention_threshold {
            let c = share(g.hold_refusals, g.hold_attempts);
            h *= 1.0 - (c - s.contention_threshold) / (1.0 - s.contention_threshold);
        }
        if g.provider_calls > 0 && share(g.provider_errors, g.provider_calls) > s.provider_error_threshold {
            h *= s.provider_error_threshold / share(g.provider_errors, g.provider_calls);
        }
        if g.provider_latency_p95_ms > s.provider_latency_target_ms {
            h *= s.provider_latency_target_ms as f64 / g.provider_latency_p95_ms as f64;
        }
        h.max(s.min_health).min(1.0)
    }

    /// A run at the instance's `now_ms` for a room of `target` sessions under `signals`.
    pub fn run(&mut self, s: &LawSettings, target: u32, now_ms: i64, g: &LawSignals) -> Decided {
        let elapsed_ms = self.last_run_ms.map_or(s.tick_ms, |t| u64::try_from(now_ms - t).unwrap_or(0));
        self.last_run_ms = Some(now_ms);
        let reading = Self::reading(s, g);
        if reading < self.health {
            self.health = reading;
        } else {
            self.health += s.recovery_per_tick * (reading - self.health);
        }
        let rate_per_s = f64::from(target) / (self.mean_session_ms / 1000.0) * self.health;
        let elapsed_s = s.max_burst_s.min(elapsed_ms as f64 / 1000.0);
        self.credit = self.credit.min(1.0) + rate_per_s * elapsed_s;
        let headroom = (f64::from(target) * self.health).floor() as i64 - i64::from(g.active_sessions);
        let admit = headroom.min(self.credit.floor() as i64).max(0);
        self.credit -= admit as f64;
        Decided {
            admit: u32::try_from(admit).unwrap_or(u32::MAX),
            rate_per_million_s: (rate_per_s * 1e6).round() as i64,
            health_ppm: (self.health * 1e6).round() as i64,
            mean_session_us: (self.mean_session_ms * 1e3).round() as i64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn littles_law_paced_by_credit_and_capped_by_headroom() {
        let s = LawSettings::default();
        let mut law = Law::new(&s);
        let quiet = LawSignals::default();
        // 300 sessions of 90 s: 3.33 a second; the first run accrues one tick.
        let d = law.run(&s, 300, 1_000, &quiet);
        assert_eq!((d.admit, d.rate_per_million_s, d.health_ppm), (3, 3_333_333, 1_000_000));
        let d = law.run(&s, 300, 4_000, &quiet);
        assert_eq!(d.admit, 3, "at most max_burst_s accrues: 0.33 + 3.33");
        let full = LawSignals { active_sessions: 300, ..quiet };
        assert_eq!(law.run(&s, 300, 5_000, &full).admit, 0, "no headroom");
    }

    #[test]
    fn health_drops_at_once_and_recovers_by_a_share() {
        let s = LawSettings::default();
        let mut law = Law::new(&s);
        let contended = LawSignals { hold_attempts: 4, hold_refusals: 3, ..LawSignals::default() };
        assert_eq!(law.run(&s, 10, 1_000, &contended).health_ppm, 500_000, "(0.75 - 0.5) / 0.5 off");
        assert_eq!(law.run(&s, 10, 2_000, &LawSignals::default()).health_ppm, 550_000);
        let slow =
            LawSignals { provider_calls: 10, provider_errors: 1, provider_latency_p95_ms: 4_000, ..Default::default() };
        assert_eq!(Law::reading(&s, &slow), 0.05 / 0.1 * 0.5);
        law.learnt(&s, 40_000);
        assert_eq!(law.run(&s, 10, 3_000, &slow).mean_session_us, 89_000_000);
    }
}
