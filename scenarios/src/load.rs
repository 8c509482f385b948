//! Reading a scenario: TOML into the model (unknown keys refused, with the
//! key path), then every range and cross-key rule checked.

use crate::error::ScenarioError;
use crate::knobs::KNOBS;
use crate::limits::MAX_PINNED_FAULTS;
use crate::model::Scenario;
use crate::names::CACHE_FAULT_NAMES;
use crate::seeds::SeedRange;
use crate::validator::Validator;
use std::path::Path;

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
        if self.swarm { crate::SwarmDraw::new(seed).apply(self) } else { self.faults.clone() }
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
        for knob in KNOBS.iter() {
            knob.validate(self, &self.origin)?;
        }
        self.validate_pinned_links(&v)?;
        self.validate_pinned_cache(&v)?;
        SeedRange::parse(&self.seeds.default).map_err(|reason| ScenarioError::BadSeeds {
            origin: self.origin.clone(),
            value: self.seeds.default.clone(),
            reason,
        })?;
        Ok(())
    }

    /// `faults.network.pinned`: each window within the fault phase, each a link of this world.
    fn validate_pinned_links(&self, v: &Validator) -> Result<(), ScenarioError> {
        let Some(pinned) = self.faults.network.as_ref().and_then(|n| n.pinned.as_ref()) else { return Ok(()) };
        let w = &self.workload;
        v.count("faults.network.pinned (entries)", pinned.len() as i64, 0, MAX_PINNED_FAULTS)?;
        for (i, l) in pinned.iter().enumerate() {
            let key = format!("faults.network.pinned[{i}]");
            v.window(&key, l.start_ms, l.end_ms, self.phases.fault_ms)?;
            v.known(&format!("{key}.mode"), &l.mode, &["cut", "held"])?;
            if !is_link(&l.a, &l.b, w.server_hosts.into(), w.client_hosts.into()) {
                let what =
                    format!("{} <-> {} is not a link of this world (svcN <-> provider, clientN <-> svcN)", l.a, l.b);
                return Err(v.inconsistent(&key, &what));
            }
        }
        Ok(())
    }

    /// `faults.cache.pinned`: each window within the fault phase, one at a time, in time order.
    fn validate_pinned_cache(&self, v: &Validator) -> Result<(), ScenarioError> {
        let Some(pinned) = self.faults.cache.as_ref().and_then(|c| c.pinned.as_ref()) else { return Ok(()) };
        v.count("faults.cache.pinned (entries)", pinned.len() as i64, 0, MAX_PINNED_FAULTS)?;
        let mut prev_end_ms = 0;
        for (i, p) in pinned.iter().enumerate() {
            let key = format!("faults.cache.pinned[{i}]");
            v.window(&key, p.start_ms, p.end_ms, self.phases.fault_ms)?;
            v.known(&format!("{key}.mode"), &p.mode, CACHE_FAULT_NAMES)?;
            if p.start_ms < prev_end_ms {
                return Err(v.inconsistent(&key, "starts before the previous one ends (one at a time, in time order)"));
            }
            prev_end_ms = p.end_ms;
        }
        Ok(())
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
