//! The fault schedule of one seed: a printable value, drawn up front from the
//! seed before the world is built (`simulator replay --plan` prints it).
//!
//! Faults whose moments do not depend on what the system does are drawn
//! here in full: each service host's clock skew, every link fault (when it
//! starts and ends, which link, cut or held), every seat-map cache fault
//! (when, and which: down, stale, poisoned). The windows a scenario fixes
//! itself (the sweeper's stall, the store's outage, the rooms' loss) are
//! their kinds' own, which describe them ([`crate::world::fault_kind`]).
//! The others are policies whose moments depend on the run itself, drawn at
//! the moment from a stream of their own seeded by the same seed: a crash
//! after a commit (each host's stream, per commit at the scenario's points),
//! a paused client and a stale-token replay (each user's stream, per hold),
//! and the provider's knobs (the provider's stream, per call). The schedule
//! names those policies too, so that it lists every fault the seed can meet.

use crate::world::config::{WorldConfig, host_seed};
use crate::world::fault_params::{CacheFault, CacheFaults, HostSkew, LinkFault, LinkMode, PausedClients};
use crate::world::faults::CrashFault;
use crate::world::faulty_cache::CacheMode;
use booking::fake_provider::ProviderFaults;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// Everything that can go wrong in one seed's world.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultSchedule {
    /// The seed it was drawn from.
    pub seed: u64,
    /// Length of the fault phase, ms; every fault below stops at its end.
    pub fault_phase_ms: u64,
    /// Every service host's clock skew, in host order (0 where unskewed).
    pub clock_skews: Vec<HostSkew>,
    /// Link faults, by start time.
    pub link_faults: Vec<LinkFault>,
    /// Seat-map cache faults, by start time, one at a time.
    pub cache_faults: Vec<CacheFault>,
    /// Crash after commit (a policy: each host's stream decides per commit).
    pub crash: Option<CrashFault>,
    /// Paused clients (a policy: each user's stream decides per checkout).
    pub paused_clients: Option<PausedClients>,
    /// Stale-token replays: probability per granted hold and per sold-out
    /// look (a policy: each user's stream decides).
    pub stale_token_probability: Option<f64>,
    /// The provider's knobs during the fault phase (the provider's stream decides per call).
    pub provider: ProviderFaults,
    /// Message latency bounds on every link, ms (`min..=max`).
    pub message_latency_ms: (u64, u64),
    /// The policies the fault kinds describe themselves, one line each
    /// ([`crate::world::fault_kind::Strike::describe`]).
    pub kind_policies: Vec<String>,
}

/// Every link a link fault may strike: each service host with the provider,
/// and each client host with each service host, in that order.
pub fn links(service_hosts: &[String], client_hosts: usize) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for s in service_hosts {
        pairs.push((s.clone(), "provider".to_string()));
        for c in 0..client_hosts {
            pairs.push((format!("client{c}"), s.clone()));
        }
    }
    pairs
}

/// The service hosts of a world of `n` of them: `svc0`, `svc1`, ...
pub fn service_hosts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("svc{i}")).collect()
}

/// Draws the schedule of `seed` for `cfg`, from the world's own stream:
/// first each service host's skew (hosts in order, only when skew is on),
/// then the link faults, second by second, then the cache faults. Pinned
/// link or cache faults (a capsule's) are taken as they are, not drawn.
pub fn draw(cfg: &WorldConfig, seed: u64) -> FaultSchedule {
    let mut rng = ChaCha8Rng::seed_from_u64(host_seed(seed, "world"));
    let services = service_hosts(cfg.server_hosts);
    let clock_skews = services
        .iter()
        .map(|host| HostSkew {
            host: host.clone(),
            skew_ms: if cfg.clock_skew_ms > 0 { rng.random_range(-cfg.clock_skew_ms..=cfg.clock_skew_ms) } else { 0 },
        })
        .collect();
    let mut link_faults = Vec::new();
    // Drawn whenever the scenario's probability asks, pinned or not, so that
    // pinning the link faults leaves the cache faults drawn after them as they were.
    if let Some(l) = cfg.link_faults.filter(|l| l.per_second_probability > 0.0) {
        let pairs = links(&services, cfg.client_hosts);
        for second in 0..cfg.fault_ms / 1000 {
            if rng.random_bool(l.per_second_probability) {
                let (a, b) = pairs[rng.random_range(0..pairs.len())].clone();
                let start_ms = second * 1000 + rng.random_range(0..1000);
                let mode = if rng.random_bool(0.5) { LinkMode::Held } else { LinkMode::Cut };
                link_faults.push(LinkFault {
                    start_ms,
                    end_ms: (start_ms + l.length_ms).min(cfg.fault_ms),
                    a,
                    b,
                    mode,
                });
            }
        }
    }
    if let Some(pinned) = &cfg.pinned_link_faults {
        // A capsule's: exactly these.
        link_faults = pinned.clone();
    }
    // In time order; equal starts by link, then cut before held.
    link_faults.sort_by(|x, y| {
        (x.start_ms, x.end_ms, &x.a, &x.b, x.mode == LinkMode::Held).cmp(&(
            y.start_ms,
            y.end_ms,
            &y.a,
            &y.b,
            y.mode == LinkMode::Held,
        ))
    });
    // Drawn after the link faults, from the same stream: a world without
    // cache faults draws exactly what it drew before they existed.
    let drawn_cache = cfg
        .cache_faults
        .as_ref()
        .filter(|c| c.per_second_probability > 0.0)
        .map_or_else(Vec::new, |c| draw_cache_faults(c, cfg.fault_ms, &mut rng));
    let cache_faults = cfg.pinned_cache_faults.clone().unwrap_or(drawn_cache);
    FaultSchedule {
        seed,
        fault_phase_ms: cfg.fault_ms,
        clock_skews,
        link_faults,
        cache_faults,
        crash: cfg.crash.clone(),
        paused_clients: cfg.user.pause,
        stale_token_probability: cfg.user.stale_replay,
        provider: cfg.provider.clone(),
        message_latency_ms: cfg.message_latency_ms,
        kind_policies: crate::world::fault_kind::policies(&cfg.faults),
    }
}

/// Cache faults of `c` over a fault phase of `fault_ms`, second by second,
/// each starting once the previous one has ended.
fn draw_cache_faults(c: &CacheFaults, fault_ms: u64, rng: &mut ChaCha8Rng) -> Vec<CacheFault> {
    assert!(!c.modes.is_empty() && !c.modes.contains(&CacheMode::Healthy), "cache faults name their modes");
    let mut out: Vec<CacheFault> = Vec::new();
    for second in 0..fault_ms / 1000 {
        if rng.random_bool(c.per_second_probability) {
            let start_ms = second * 1000 + rng.random_range(0..1000);
            let mode = c.modes[rng.random_range(0..c.modes.len())];
            if out.last().is_none_or(|prev| prev.end_ms <= start_ms) && start_ms < fault_ms {
                out.push(CacheFault { start_ms, end_ms: (start_ms + c.length_ms).min(fault_ms), mode });
            }
        }
    }
    out
}

impl FaultSchedule {
    /// The skew of service host `host` (0 for a host not in the schedule).
    pub fn skew_of(&self, host: &str) -> i64 {
        self.clock_skews.iter().find(|s| s.host == host).map_or(0, |s| s.skew_ms)
    }
}

impl fmt::Display for FaultSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "fault schedule of seed {} (fault phase 0..{} ms)", self.seed, self.fault_phase_ms)?;
        let (lo, hi) = self.message_latency_ms;
        writeln!(f, "  message latency: {lo}..={hi} ms on every link")?;
        for s in self.clock_skews.iter().filter(|s| s.skew_ms != 0) {
            writeln!(f, "  clock skew: {} {:+} ms", s.host, s.skew_ms)?;
        }
        for l in &self.link_faults {
            writeln!(f, "  link {}: {} <-> {} from {} to {} ms", l.mode.as_str(), l.a, l.b, l.start_ms, l.end_ms)?;
        }
        for c in &self.cache_faults {
            writeln!(f, "  seat-map cache {}: from {} to {} ms", c.mode.as_str(), c.start_ms, c.end_ms)?;
        }
        if let Some(c) = &self.crash {
            let points: Vec<String> = c.points.iter().map(ToString::to_string).collect();
            writeln!(
                f,
                "  crash after commit (per commit, each host's stream): p={} at {}; restart after {} ms",
                c.probability,
                points.join(","),
                c.restart_after_ms
            )?;
        }
        if let Some(p) = self.paused_clients {
            writeln!(
                f,
                "  paused client (per checkout, each user's stream): p={} for {} ms",
                p.probability, p.pause_ms
            )?;
        }
        if let Some(p) = self.stale_token_probability {
            writeln!(f, "  stale token (per hold and sold-out look, each user's stream): p={p}")?;
        }
        if self.provider != ProviderFaults::default() {
            writeln!(f, "  provider (per call, the provider's stream): {}", provider_knobs(&self.provider))?;
        }
        for policy in &self.kind_policies {
            writeln!(f, "  {policy}")?;
        }
        Ok(())
    }
}

/// The provider knobs that differ from the fault-free defaults, as
/// `name=value` pairs in the knobs' declaration order.
pub fn provider_knobs(faults: &ProviderFaults) -> String {
    let (Ok(serde_json::Value::Object(set)), Ok(serde_json::Value::Object(none))) =
        (serde_json::to_value(faults), serde_json::to_value(ProviderFaults::default()))
    else {
        unreachable!("provider faults serialize to an object")
    };
    set.iter().filter(|(k, v)| none.get(*k) != Some(v)).map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_faults_round_trip() {
        let link = LinkFault {
            start_ms: 1_000,
            end_ms: 2_500,
            a: "client-0".into(),
            b: "service-1".into(),
            mode: LinkMode::Held,
        };
        assert_eq!(LinkFault::from_pinned(&link.to_pinned()), link);
        for mode in [CacheMode::Down, CacheMode::Stale, CacheMode::Poisoned] {
            let cache = CacheFault { start_ms: 0, end_ms: 7, mode };
            assert_eq!(CacheFault::from_pinned(&cache.to_pinned()), cache);
        }
    }
}
