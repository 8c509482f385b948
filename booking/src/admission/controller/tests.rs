//! The admission law in a small deterministic world: one tick a second,
//! an endless queue, each admitted session lasting a fixed or spread
//! duration; the provider's health a function of time.

use super::*;
use std::collections::VecDeque;

/// What one run saw, second by second.
struct Run {
    /// (second, active sessions after admitting, admitted that second, rate).
    seconds: Vec<(u64, u32, u32, f64)>,
}

impl Run {
    fn admitted_between(&self, from_s: u64, to_s: u64) -> u64 {
        self.seconds.iter().filter(|s| s.0 >= from_s && s.0 < to_s).map(|s| u64::from(s.2)).sum()
    }
    fn mean_active_between(&self, from_s: u64, to_s: u64) -> f64 {
        let w: Vec<u32> = self.seconds.iter().filter(|s| s.0 >= from_s && s.0 < to_s).map(|s| s.1).collect();
        w.iter().map(|a| f64::from(*a)).sum::<f64>() / w.len() as f64
    }
    fn max_active(&self) -> u32 {
        self.seconds.iter().map(|s| s.1).max().unwrap_or(0)
    }
}

/// Runs `seconds` of the law with sessions lasting `session_s(i)` for the
/// i-th admission and the provider erring at `error_rate(second)`.
fn run(params: AdmissionParams, seconds: u64, session_s: impl Fn(u64) -> u64, error_rate: impl Fn(u64) -> f64) -> Run {
    let mut c = AdmissionController::new(params);
    let mut ending: VecDeque<(u64, u64)> = VecDeque::new(); // (ends at second, lasted s), by end
    let mut admitted_total = 0u64;
    let mut out = Run { seconds: Vec::new() };
    for t in 0..seconds {
        while ending.front().is_some_and(|(end, _)| *end <= t) {
            let (_, lasted) = ending.pop_front().unwrap();
            c.session_ended(lasted * 1000);
        }
        let active = ending.len() as u32;
        let e = error_rate(t);
        let signals = Signals {
            active_sessions: active,
            provider_calls: 100,
            provider_errors: (e * 100.0).round() as u64,
            ..Signals::default()
        };
        let d = c.tick(1000, &signals);
        for _ in 0..d.admit {
            let lasted = session_s(admitted_total);
            admitted_total += 1;
            let end = t + lasted;
            let at = ending.partition_point(|(e, _)| *e <= end);
            ending.insert(at, (end, lasted));
        }
        out.seconds.push((t, ending.len() as u32, d.admit, d.rate_per_s));
    }
    out
}

fn spread(i: u64) -> u64 {
    60 + (i * 37) % 61 // 60..=120 s, mean about 90 s
}

#[test]
fn the_brief_s_figures_hold_the_target_at_little_s_rate() {
    let r = run(AdmissionParams::default(), 900, spread, |_| 0.0);
    assert!(r.max_active() <= 300, "never past the target: {}", r.max_active());
    let rate = r.admitted_between(300, 900) as f64 / 600.0;
    assert!((3.0..=3.7).contains(&rate), "about 300 / 90 s = 3.33 admissions/s: {rate}");
    let active = r.mean_active_between(300, 900);
    assert!((270.0..=300.0).contains(&active), "active sessions near the target: {active}");
}

#[test]
fn a_wrong_prior_never_overshoots_and_is_corrected_by_ended_sessions() {
    // The law assumes 30 s sessions; they last 90 s.
    let params = AdmissionParams { prior_session_ms: 30_000, ..AdmissionParams::default() };
    let r = run(params, 1_500, |_| 90, |_| 0.0);
    assert!(r.max_active() <= 300, "the headroom cap holds: {}", r.max_active());
    let late_rate = r.seconds.last().unwrap().3;
    assert!((3.0..=3.7).contains(&late_rate), "the measured mean corrected the rate: {late_rate}");
}

#[test]
fn a_provider_brownout_slows_admission_and_it_recovers_after() {
    let brownout = |t: u64| if (400..500).contains(&t) { 0.5 } else { 0.0 };
    let r = run(AdmissionParams::default(), 900, spread, brownout);
    let before = r.admitted_between(300, 400) as f64 / 100.0;
    let during = r.admitted_between(410, 500) as f64 / 90.0;
    let after = r.admitted_between(700, 900) as f64 / 200.0;
    assert!(during < before / 3.0, "admission slows in the brownout: {before}/s before, {during}/s during");
    assert!(after > 3.0, "and recovers: {after}/s after");
    // Recovery is gradual: the first seconds after the brownout admit less than steady state.
    let first = r.seconds.iter().find(|s| s.0 == 501).unwrap().3;
    assert!(first < 3.0, "health recovers with a lag: {first}/s one second after");
}

#[test]
fn health_reads_contention_errors_and_latency() {
    let c = AdmissionController::new(AdmissionParams::default());
    let calm = Signals::default();
    assert_eq!(c.health_of(&calm), 1.0);
    let contended = Signals { hold_attempts: 100, hold_refusals: 75, ..calm };
    assert!((c.health_of(&contended) - 0.5).abs() < 1e-9, "75% refusals, threshold 50%: half speed");
    let erring = Signals { provider_calls: 100, provider_errors: 10, ..calm };
    assert!((c.health_of(&erring) - 0.5).abs() < 1e-9, "10% errors, threshold 5%: half speed");
    let slow = Signals { provider_latency_p95_ms: 8_000, ..calm };
    assert!((c.health_of(&slow) - 0.25).abs() < 1e-9, "p95 four times the target: a quarter");
    let everything = Signals { hold_attempts: 100, hold_refusals: 100, provider_calls: 1, provider_errors: 1, ..slow };
    assert_eq!(c.health_of(&everything), AdmissionParams::default().min_health, "never below the floor");
}

#[test]
fn a_pause_banks_no_flood() {
    let mut c = AdmissionController::new(AdmissionParams::default());
    let d = c.tick(600_000, &Signals::default());
    assert!(d.admit <= 4, "ten minutes without a tick admit one second's worth: {}", d.admit);
}

#[test]
#[should_panic(expected = "admission parameters out of range")]
fn parameters_are_checked() {
    AdmissionController::new(AdmissionParams { target_active_sessions: 0, ..AdmissionParams::default() });
}
