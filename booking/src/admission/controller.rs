//! The admission law of one waiting-room event: how many waiting users to
//! admit into checkout each tick so that active checkout sessions stay near
//! a target, and fewer when the system under them struggles.
//!
//! **Base rate (Little's law).** With a target of `T` active sessions and a
//! mean session duration `W`, admitting `λ = T / W` users per second keeps
//! `L = λ·W = T` sessions active in steady state (the brief: 300 sessions
//! of 90 s → 3.33 admissions/s; admitting 500/s would swamp checkout). `W`
//! is measured: an exponentially weighted mean of the sessions that ended
//! (purchase or expiry), starting from a prior.
//!
//! **Health.** `λ` is multiplied by a health factor `h` in `[min_health, 1]`,
//! the product of three signals over the last window: hold contention
//! (refusals per attempt beyond a threshold: users are fighting over too few
//! seats), provider errors (an error rate beyond a threshold `e0` scales by
//! `e0 / e`) and provider latency (`L0 / p95` when the p95 is over its
//! target `L0`). `h` falls at once to a worse reading and recovers toward a
//! better one by a fixed share per tick (a first-order lag), so a brief good
//! reading in a brownout does not flood checkout.
//!
//! **Headroom.** Admissions never exceed `⌊T·h⌋ − active`: the concurrency
//! bound holds whatever the estimate of `W` says (a `W` estimated too short
//! admits replacements only, until ended sessions correct it).
//!
//! **Pacing.** Admissions accrue as credit at `λ·h` per second; at most one
//! admission's worth carries over a tick and at most `max_burst_s` of
//! elapsed time accrues, so a pause does not bank a flood (no integral windup).
//!
//! Why it is stable: the headroom cap makes `active ≤ T` an invariant (only
//! admissions raise it); below the cap, inflow `λh` and outflow `active/W`
//! balance at `active = T·h`, the fixed point, approached at the rate
//! sessions end (a first-order system with time constant `W`); `h` reacts to
//! signals measured over a window and recovers with a lag longer than that
//! window, so admission changes cannot feed back into their own measurement
//! within one tick. Pure: no I/O, no clock (the caller passes elapsed time).

use serde::{Deserialize, Serialize};

/// The law's parameters (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AdmissionParams {
    /// Active checkout sessions to hold, >= 1 (the brief: 300).
    pub target_active_sessions: u32,
    /// Mean session duration assumed before any session ended, ms, >= 1 (the brief: 90 s).
    pub prior_session_ms: u64,
    /// Weight of each ended session in the mean, in `(0, 1]`.
    pub session_weight: f64,
    /// Hold refusals per attempt above which admission slows, in `[0, 1)`.
    pub contention_threshold: f64,
    /// Provider error rate above which admission slows, in `(0, 1]`.
    pub provider_error_threshold: f64,
    /// Provider p95 latency above which admission slows, ms, >= 1.
    pub provider_latency_target_ms: u64,
    /// Lowest health: admission slows, never stops while sessions end, in `(0, 1]`.
    pub min_health: f64,
    /// Share of the way a better health reading is followed per tick, in `(0, 1]`.
    pub recovery_per_tick: f64,
    /// Most elapsed time one tick accrues credit for, s, > 0.
    pub max_burst_s: f64,
}

impl Default for AdmissionParams {
    /// The brief's on-sale: 300 sessions of about 90 s.
    fn default() -> Self {
        Self {
            target_active_sessions: 300,
            prior_session_ms: 90_000,
            session_weight: 0.02,
            contention_threshold: 0.5,
            provider_error_threshold: 0.05,
            provider_latency_target_ms: 2_000,
            min_health: 0.1,
            recovery_per_tick: 0.1,
            max_burst_s: 1.0,
        }
    }
}

impl AdmissionParams {
    /// Whether every parameter is in its range.
    pub fn valid(&self) -> bool {
        self.target_active_sessions >= 1
            && self.prior_session_ms >= 1
            && self.session_weight > 0.0
            && self.session_weight <= 1.0
            && (0.0..1.0).contains(&self.contention_threshold)
            && self.provider_error_threshold > 0.0
            && self.provider_error_threshold <= 1.0
            && self.provider_latency_target_ms >= 1
            && self.min_health > 0.0
            && self.min_health <= 1.0
            && self.recovery_per_tick > 0.0
            && self.recovery_per_tick <= 1.0
            && self.max_burst_s > 0.0
    }
}

/// What the service saw over the last window, and how many sessions are active now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signals {
    /// Checkout sessions open now.
    pub active_sessions: u32,
    /// Hold attempts in the window.
    pub hold_attempts: u64,
    /// Of those, refused because a seat was taken.
    pub hold_refusals: u64,
    /// Provider calls in the window.
    pub provider_calls: u64,
    /// Of those, errors or lost answers.
    pub provider_errors: u64,
    /// The provider's p95 latency in the window, ms (0: no call).
    pub provider_latency_p95_ms: u64,
}

/// One tick's decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Decision {
    /// Users to admit now.
    pub admit: u32,
    /// The rate the law runs at now, admissions per second (`λ·h`).
    pub rate_per_s: f64,
    /// The health factor now.
    pub health: f64,
    /// The mean session duration the law assumes now, ms.
    pub mean_session_ms: f64,
}

/// The admission law's state for one event.
#[derive(Debug, Clone)]
pub struct AdmissionController {
    params: AdmissionParams,
    mean_session_ms: f64,
    health: f64,
    credit: f64,
}

impl AdmissionController {
    /// A controller with `params` (asserted valid), healthy, with no credit.
    pub fn new(params: AdmissionParams) -> Self {
        assert!(params.valid(), "admission parameters out of range: {params:?}");
        Self { params, mean_session_ms: params.prior_session_ms as f64, health: 1.0, credit: 0.0 }
    }

    /// A session ended after `duration_ms` (purchase or expiry): the mean moves toward it.
    pub fn session_ended(&mut self, duration_ms: u64) {
        let w = self.params.session_weight;
        self.mean_session_ms = (1.0 - w) * self.mean_session_ms + w * duration_ms.max(1) as f64;
    }

    /// The health the signals call for, before smoothing.
    pub fn health_of(&self, s: &Signals) -> f64 {
        let p = &self.params;
        let contention = if s.hold_attempts == 0 {
            1.0
        } else {
            let c = (s.hold_refusals.min(s.hold_attempts) as f64) / s.hold_attempts as f64;
            if c <= p.contention_threshold {
                1.0
            } else {
                1.0 - (c - p.contention_threshold) / (1.0 - p.contention_threshold)
            }
        };
        let errors = if s.provider_calls == 0 {
            1.0
        } else {
            let e = (s.provider_errors.min(s.provider_calls) as f64) / s.provider_calls as f64;
            if e <= p.provider_error_threshold { 1.0 } else { p.provider_error_threshold / e }
        };
        let latency = if s.provider_latency_p95_ms <= p.provider_latency_target_ms {
            1.0
        } else {
            p.provider_latency_target_ms as f64 / s.provider_latency_p95_ms as f64
        };
        (contention * errors * latency).clamp(p.min_health, 1.0)
    }

    /// Advances the law by `elapsed_ms` under `signals`: how many to admit now.
    pub fn tick(&mut self, elapsed_ms: u64, signals: &Signals) -> Decision {
        let p = self.params;
        let reading = self.health_of(signals);
        self.health =
            if reading < self.health { reading } else { self.health + (reading - self.health) * p.recovery_per_tick };
        let rate_per_s = f64::from(p.target_active_sessions) / (self.mean_session_ms / 1000.0) * self.health;
        // At most one admission's worth is carried over, and at most
        // `max_burst_s` of elapsed time accrues: a pause banks no flood.
        let elapsed_s = (elapsed_ms as f64 / 1000.0).min(p.max_burst_s);
        self.credit = self.credit.min(1.0) + rate_per_s * elapsed_s;
        let room =
            (f64::from(p.target_active_sessions) * self.health).floor() as i64 - i64::from(signals.active_sessions);
        let admit = (self.credit.floor() as i64).min(room).max(0);
        self.credit -= admit as f64;
        let admit = u32::try_from(admit).expect("admissions are bounded by the target");
        assert!(
            signals.active_sessions.saturating_add(admit) <= p.target_active_sessions.max(signals.active_sessions),
            "admission never passes the target"
        );
        Decision { admit, rate_per_s, health: self.health, mean_session_ms: self.mean_session_ms }
    }
}

#[cfg(test)]
mod tests;
