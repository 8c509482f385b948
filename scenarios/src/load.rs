//! Reading a scenario: TOML into the model (unknown keys refused, with the
//! key path), then every range and cross-key rule checked.

use crate::error::ScenarioError;
use crate::model::{Outcome, RangeMs, Scenario};
use crate::names::{
    CACHE_FAULT_NAMES, CLASSIFICATION_NAMES, COMMIT_POINT_NAMES, INVARIANT_NAMES, PATH_NAMES, ROOM_POLICY_NAMES,
};
use crate::seeds::SeedRange;
use std::path::Path;

/// Largest phase, pause, delay or partition, ms (one hour).
pub const MAX_PHASE_MS: i64 = 60 * 60 * 1000;
/// Largest hold time to live, ms (mirrors `booking::model::MAX_HOLD_TTL_MS`).
pub const MAX_HOLD_TTL_MS: i64 = 60 * 60 * 1000;
/// Largest payment time to live, ms (mirrors `booking::model::MAX_PAYMENT_TTL_MS`).
pub const MAX_PAYMENT_TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// Largest selection (mirrors `booking::model::MAX_SEATS_PER_HOLD`).
pub const MAX_SEATS_PER_HOLD: i64 = 8;
/// Largest event (mirrors `booking::model::MAX_SEATS_PER_EVENT`).
pub const MAX_SEATS_PER_EVENT: i64 = 100_000;
/// Largest latency, ms.
pub const MAX_LATENCY_MS: i64 = 60_000;
/// Largest sweeper-stall bound, ms (one day).
pub const MAX_STALL_MS: i64 = 24 * 60 * 60 * 1000;
/// Most pinned faults one fault table may list (`faults.network.pinned`, `faults.cache.pinned`).
pub const MAX_PINNED_FAULTS: i64 = 10_000;

impl Scenario {
    /// Reads and validates the scenario file at `path`.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let origin = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|source| ScenarioError::Io { path: origin.clone(), source })?;
        Scenario::parse(&text, &origin)
    }

    /// Parses and validates scenario `text`; `origin` (a path or
    /// `library:<file>`) starts every error message.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let de = toml::de::Deserializer::parse(text).map_err(|e| syntax(text, origin, &e))?;
        let mut scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| shape(text, origin, e))?;
        scenario.origin = origin.to_owned();
        scenario.validate()?;
        Ok(scenario)
    }

    /// The default seeds (validated at load).
    pub fn default_seeds(&self) -> SeedRange {
        SeedRange::parse(&self.seeds.default).expect("validated at load")
    }

    /// The faults of one seed: the file's faults, or with `swarm = true` the
    /// per-seed mix of [`crate::SwarmDraw`].
    pub fn faults_for_seed(&self, seed: u64) -> crate::Faults {
        if self.swarm { crate::SwarmDraw::new(seed).apply(&self.faults) } else { self.faults.clone() }
    }

    /// Total simulated time of a run: fault phase then settle phase, ms.
    pub fn total_ms(&self) -> i64 {
        self.phases.fault_ms + self.phases.settle_ms
    }

    fn validate(&self) -> Result<(), ScenarioError> {
        let v = Validator { origin: &self.origin };
        if self.name.is_empty() {
            return Err(ScenarioError::EmptyName { origin: self.origin.clone() });
        }
        if self.name.len() > 64 || !self.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(ScenarioError::BadName { origin: self.origin.clone(), name: self.name.clone() });
        }
        if self.description.trim().is_empty() || self.description.contains('\n') {
            return Err(v.inconsistent("description", "must be one non-empty line"));
        }
        let w = &self.workload;
        v.count("workload.events", w.events.into(), 1, 100)?;
        v.count("workload.seats_per_event", w.seats_per_event.into(), 1, MAX_SEATS_PER_EVENT)?;
        v.count("workload.hot_seats", w.hot_seats.into(), 0, w.seats_per_event.into())?;
        v.probability("workload.hot_share", w.hot_share)?;
        if w.hot_seats == 0 && w.hot_share > 0.0 {
            return Err(v.inconsistent("workload.hot_share", "is above 0 but workload.hot_seats is 0"));
        }
        v.count("workload.users", w.users.into(), 1, 100_000)?;
        v.count("workload.client_hosts", w.client_hosts.into(), 1, 64)?;
        v.count("workload.server_hosts", w.server_hosts.into(), 1, 16)?;
        v.range("workload.think_time_ms", w.think_time_ms, MAX_PHASE_MS)?;
        if let Some(arrival) = w.arrival_ms {
            v.range("workload.arrival_ms", arrival, MAX_PHASE_MS)?;
        }
        v.probability("workload.multi_seat_share", w.multi_seat_share)?;
        v.count("workload.max_seats_per_hold", w.max_seats_per_hold.into(), 1, MAX_SEATS_PER_HOLD)?;
        if w.multi_seat_share > 0.0 && w.max_seats_per_hold < 2 {
            return Err(v.inconsistent("workload.multi_seat_share", "is above 0 but workload.max_seats_per_hold is 1"));
        }
        v.probability("workload.checkout_share", w.checkout_share)?;
        v.probability("workload.abandon_share", w.abandon_share)?;
        if w.checkout_share + w.abandon_share > 1.0 {
            return Err(v.inconsistent("workload.abandon_share", "checkout_share + abandon_share exceed 1"));
        }
        v.probability("workload.hoard_share", w.hoard_share)?;
        v.probability("workload.double_submit_share", w.double_submit_share)?;
        v.probability("workload.partial_checkout_share", w.partial_checkout_share)?;
        if w.partial_checkout_share > 0.0 && w.max_seats_per_hold < 2 {
            return Err(
                v.inconsistent("workload.partial_checkout_share", "is above 0 but workload.max_seats_per_hold is 1")
            );
        }
        v.count("workload.probers", w.probers.into(), 0, 100)?;
        v.duration("workload.hold_ttl_ms", w.hold_ttl_ms, 1, MAX_HOLD_TTL_MS)?;
        v.duration("workload.payment_ttl_ms", w.payment_ttl_ms, 1, MAX_PAYMENT_TTL_MS)?;

        let f = &self.faults;
        if let Some(p) = &f.paused_client {
            v.probability("faults.paused_client.probability", p.probability)?;
            v.duration("faults.paused_client.pause_ms", p.pause_ms, 1, MAX_PHASE_MS)?;
        }
        if let Some(s) = &f.stale_token {
            v.probability("faults.stale_token.probability", s.probability)?;
        }
        if let Some(d) = &f.delayed_callback {
            v.probability("faults.delayed_callback.probability", d.probability)?;
            v.duration("faults.delayed_callback.delay_ms", d.delay_ms, 1, MAX_PHASE_MS)?;
            v.probability("faults.delayed_callback.duplicate_probability", d.duplicate_probability)?;
            v.probability("faults.delayed_callback.reorder_probability", d.reorder_probability)?;
        }
        if let Some(c) = &f.crash_after_commit {
            v.probability("faults.crash_after_commit.probability", c.probability)?;
            v.duration("faults.crash_after_commit.restart_after_ms", c.restart_after_ms, 1, MAX_PHASE_MS)?;
            if c.points.is_empty() {
                return Err(v.inconsistent("faults.crash_after_commit.points", "names no commit point"));
            }
            for (i, p) in c.points.iter().enumerate() {
                v.known(&format!("faults.crash_after_commit.points[{i}]"), p, COMMIT_POINT_NAMES)?;
            }
        }
        if let Some(p) = &f.provider {
            v.probability("faults.provider.unknown_probability", p.unknown_probability)?;
            v.probability("faults.provider.decline_probability", p.decline_probability)?;
            v.probability("faults.provider.error_rate", p.error_rate)?;
            v.range("faults.provider.latency_ms", p.latency_ms, MAX_LATENCY_MS)?;
            v.probability("faults.provider.late_success_probability", p.late_success_probability)?;
            v.probability("faults.provider.refund_failure_probability", p.refund_failure_probability)?;
            if p.unknown_probability + p.decline_probability + p.error_rate > 1.0 {
                return Err(v.inconsistent(
                    "faults.provider",
                    "unknown_probability + decline_probability + error_rate exceed 1",
                ));
            }
        }
        if let Some(n) = &f.network {
            v.probability("faults.network.partition_probability", n.partition_probability)?;
            v.duration("faults.network.partition_ms", n.partition_ms, 1, MAX_PHASE_MS)?;
            v.range("faults.network.latency_ms", n.latency_ms, MAX_LATENCY_MS)?;
            if let Some(pinned) = &n.pinned {
                v.count("faults.network.pinned (entries)", pinned.len() as i64, 0, crate::MAX_PINNED_FAULTS)?;
                for (i, l) in pinned.iter().enumerate() {
                    let key = format!("faults.network.pinned[{i}]");
                    v.window(&key, l.start_ms, l.end_ms, self.phases.fault_ms)?;
                    v.known(&format!("{key}.mode"), &l.mode, &["cut", "held"])?;
                    if !is_link(&l.a, &l.b, w.server_hosts.into(), w.client_hosts.into()) {
                        return Err(v.inconsistent(
                            &key,
                            &format!(
                                "{} <-> {} is not a link of this world (svcN <-> provider, clientN <-> svcN)",
                                l.a, l.b
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(c) = &f.clock_skew {
            v.duration("faults.clock_skew.max_skew_ms", c.max_skew_ms, 1, MAX_PHASE_MS)?;
        }
        if let Some(s) = &f.sweeper_stall {
            v.duration("faults.sweeper_stall.from_ms", s.from_ms, 0, MAX_STALL_MS)?;
            v.duration("faults.sweeper_stall.to_ms", s.to_ms, s.from_ms + 1, MAX_STALL_MS)?;
        }
        if let Some(o) = &f.store_outage {
            v.duration("faults.store_outage.from_ms", o.from_ms, 0, self.phases.fault_ms - 1)?;
            v.duration("faults.store_outage.to_ms", o.to_ms, o.from_ms + 1, self.phases.fault_ms)?;
        }
        if let Some(r) = &f.rooms_lost {
            v.duration("faults.rooms_lost.at_ms", r.at_ms, 0, self.phases.fault_ms - 1)?;
            v.duration("faults.rooms_lost.down_ms", r.down_ms, 0, self.phases.fault_ms - 1 - r.at_ms)?;
            if self.waiting_room.is_none() {
                return Err(v.inconsistent("faults.rooms_lost", "needs a [waiting_room] to lose"));
            }
        }
        if let Some(c) = &f.cache {
            v.probability("faults.cache.probability", c.probability)?;
            v.duration("faults.cache.length_ms", c.length_ms, 1, MAX_PHASE_MS)?;
            if c.modes.is_empty() {
                return Err(v.inconsistent("faults.cache.modes", "names no cache fault"));
            }
            for (i, m) in c.modes.iter().enumerate() {
                v.known(&format!("faults.cache.modes[{i}]"), m, CACHE_FAULT_NAMES)?;
            }
            if let Some(pinned) = &c.pinned {
                v.count("faults.cache.pinned (entries)", pinned.len() as i64, 0, crate::MAX_PINNED_FAULTS)?;
                let mut prev_end_ms = 0;
                for (i, p) in pinned.iter().enumerate() {
                    let key = format!("faults.cache.pinned[{i}]");
                    v.window(&key, p.start_ms, p.end_ms, self.phases.fault_ms)?;
                    v.known(&format!("{key}.mode"), &p.mode, CACHE_FAULT_NAMES)?;
                    if p.start_ms < prev_end_ms {
                        return Err(
                            v.inconsistent(&key, "starts before the previous one ends (one at a time, in time order)")
                        );
                    }
                    prev_end_ms = p.end_ms;
                }
            }
        }
        if self.swarm && f.kinds().is_empty() {
            return Err(v.inconsistent("swarm", "swarm = true needs at least one fault under [faults]"));
        }

        if let Some(w) = f.provider.as_ref().and_then(|p| p.window_ms) {
            v.range("faults.provider.window_ms", w, self.phases.fault_ms)?;
        }
        if let Some(r) = &self.waiting_room {
            v.known("waiting_room.policy", &r.policy, ROOM_POLICY_NAMES)?;
            v.count("waiting_room.target_active_sessions", r.target_active_sessions.into(), 1, 100_000)?;
            v.duration("waiting_room.session_ttl_ms", r.session_ttl_ms, 1_000, MAX_PHASE_MS)?;
            v.duration("waiting_room.opens_at_ms", r.opens_at_ms, 0, MAX_PHASE_MS)?;
            if let Some(p) = r.prior_session_ms {
                v.duration("waiting_room.prior_session_ms", p, 1, MAX_PHASE_MS)?;
            }
            v.probability("waiting_room.member_share", r.member_share)?;
            v.probability("waiting_room.bypass_share", r.bypass_share)?;
            if let Some(p) = r.poll_max_s {
                v.count("waiting_room.poll_max_s", p as i64, 2, 3_600)?;
            }
            if r.member_share > 0.0 && r.policy != "priority" {
                return Err(v.inconsistent("waiting_room.member_share", "is above 0 but the policy is not priority"));
            }
            if self.swarm {
                return Err(v.inconsistent("waiting_room", "a swarm scenario has no waiting room"));
            }
        }
        if let Some(n) = self.service.max_refund_attempts {
            v.count("service.max_refund_attempts", n.into(), 1, 100)?;
        }
        v.duration("phases.fault_ms", self.phases.fault_ms, 1, MAX_PHASE_MS)?;
        v.duration("phases.settle_ms", self.phases.settle_ms, 1, MAX_PHASE_MS)?;
        SeedRange::parse(&self.seeds.default).map_err(|reason| ScenarioError::BadSeeds {
            origin: self.origin.clone(),
            value: self.seeds.default.clone(),
            reason,
        })?;

        let e = &self.expect;
        for (i, name) in e.violations.iter().enumerate() {
            v.known(&format!("expect.violations[{i}]"), name, INVARIANT_NAMES)?;
        }
        if e.outcome == Outcome::Pass && !e.violations.is_empty() {
            return Err(v.inconsistent("expect.violations", "lists violations but expect.outcome is \"pass\""));
        }
        if let Some(c) = &e.classification {
            v.known("expect.classification", c, CLASSIFICATION_NAMES)?;
        }
        for (i, name) in e.tolerated.iter().enumerate() {
            v.known(&format!("expect.tolerated[{i}]"), name, INVARIANT_NAMES)?;
        }
        if e.outcome == Outcome::Pass && !e.tolerated.is_empty() {
            return Err(v.inconsistent("expect.tolerated", "lists violations but expect.outcome is \"pass\""));
        }
        for (i, name) in e.must_happen.iter().enumerate() {
            v.known(&format!("expect.must_happen[{i}]"), name, PATH_NAMES)?;
        }
        Ok(())
    }
}

/// Range checks that name the file and key.
struct Validator<'a> {
    origin: &'a str,
}

impl Validator<'_> {
    fn probability(&self, key_path: &str, value: f64) -> Result<(), ScenarioError> {
        if (0.0..=1.0).contains(&value) {
            Ok(())
        } else {
            Err(ScenarioError::ProbabilityOutOfRange { origin: self.origin.into(), key_path: key_path.into(), value })
        }
    }

    fn duration(&self, key_path: &str, value: i64, min: i64, max: i64) -> Result<(), ScenarioError> {
        if (min..=max).contains(&value) {
            Ok(())
        } else {
            Err(ScenarioError::BadDuration {
                origin: self.origin.into(),
                key_path: key_path.into(),
                value,
                reason: format!("must be within {min}..={max} ms"),
            })
        }
    }

    fn range(&self, key_path: &str, r: RangeMs, max: i64) -> Result<(), ScenarioError> {
        self.duration(&format!("{key_path}.min"), r.min, 0, max)?;
        self.duration(&format!("{key_path}.max"), r.max, 0, max)?;
        if r.min > r.max {
            return Err(ScenarioError::BadDuration {
                origin: self.origin.into(),
                key_path: format!("{key_path}.max"),
                value: r.max,
                reason: format!("smaller than {key_path}.min = {}", r.min),
            });
        }
        Ok(())
    }

    fn count(&self, key_path: &str, value: i64, min: i64, max: i64) -> Result<(), ScenarioError> {
        if (min..=max).contains(&value) {
            Ok(())
        } else {
            Err(ScenarioError::OutOfRange { origin: self.origin.into(), key_path: key_path.into(), value, min, max })
        }
    }

    /// A pinned fault's window: `0 <= start_ms < end_ms <= fault_ms`.
    fn window(&self, key_path: &str, start_ms: i64, end_ms: i64, fault_ms: i64) -> Result<(), ScenarioError> {
        self.duration(&format!("{key_path}.start_ms"), start_ms, 0, fault_ms - 1)?;
        self.duration(&format!("{key_path}.end_ms"), end_ms, start_ms + 1, fault_ms)
    }

    fn known(&self, key_path: &str, name: &str, known: &[&str]) -> Result<(), ScenarioError> {
        if known.contains(&name) {
            Ok(())
        } else {
            Err(ScenarioError::UnknownName {
                origin: self.origin.into(),
                key_path: key_path.into(),
                name: name.into(),
                known: known.join(", "),
            })
        }
    }

    fn inconsistent(&self, key_path: &str, message: &str) -> ScenarioError {
        ScenarioError::Inconsistent { origin: self.origin.into(), key_path: key_path.into(), message: message.into() }
    }
}

/// Whether `a <-> b` is a link a link fault may strike in a world of
/// `servers` service hosts and `clients` client hosts: `svcN <-> provider`
/// or `clientN <-> svcM`.
fn is_link(a: &str, b: &str, servers: i64, clients: i64) -> bool {
    let index = |name: &str, prefix: &str, n: i64| {
        name.strip_prefix(prefix)
            .filter(|i| !i.is_empty() && i.bytes().all(|c| c.is_ascii_digit()) && (i.len() == 1 || !i.starts_with('0')))
            .and_then(|i| i.parse::<i64>().ok())
            .is_some_and(|i| i < n)
    };
    (index(a, "svc", servers) && b == "provider") || (index(a, "client", clients) && index(b, "svc", servers))
}

/// 1-based (line, column) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn syntax(text: &str, origin: &str, e: &toml::de::Error) -> ScenarioError {
    let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
    ScenarioError::Syntax { origin: origin.into(), line, column, message: e.message().trim().to_owned() }
}

/// Maps a shape error (unknown key, missing key, wrong type) to its kind, with the key path.
fn shape(text: &str, origin: &str, e: serde_path_to_error::Error<toml::de::Error>) -> ScenarioError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let message = inner.message().trim().to_owned();
    let join = |key: &str| if path == "." { key.to_owned() } else { format!("{path}.{key}") };
    let quoted = |m: &str| m.split('`').nth(1).map(str::to_owned);
    if message.starts_with("unknown field") {
        // The path already ends at the unknown key.
        let key_path = if path == "." { quoted(&message).unwrap_or_default() } else { path };
        return ScenarioError::UnknownKey { origin: origin.into(), key_path };
    }
    if message.starts_with("missing field") {
        let key = quoted(&message).unwrap_or_default();
        return ScenarioError::MissingKey { origin: origin.into(), key_path: join(&key) };
    }
    if let Some(span) = inner.span().filter(|_| path == ".") {
        let (line, column) = line_col(text, span.start);
        return ScenarioError::Syntax { origin: origin.into(), line, column, message };
    }
    ScenarioError::BadValue { origin: origin.into(), key_path: path, message }
}
