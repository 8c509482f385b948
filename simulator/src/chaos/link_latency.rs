//! Slow links, where the scenario has network faults
//! ([`test_services::link::Link`]): one bookingd's link to PostgreSQL holds
//! every chunk the server sends for the scenario's largest message latency
//! (clamped to [`DELAY_MS`]), and every bookingd's link to the provider
//! (a provider slow for everyone) holds its answers [`PROVIDER_DELAY_MS`],
//! each for 2–3 s, then they answer at once again (`db-latency`,
//! `provider-latency`, `latency-end`). Every transaction of the slowed
//! instance takes several round trips longer (locks held longer, pool waits
//! grow, requests may time out); provider calls answer late, or after the
//! call timeout with the charge made.
//! Nothing a client is told may change: the tables, the ledger and the
//! client history are judged as in every run.

use super::log::{ChaosFault, FaultLog};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;
use test_services::link::Link;
use tokio::sync::watch;

/// The delay per chunk, ms: at least enough to matter on loopback, at most
/// what keeps a transaction of a few round trips under a second.
pub const DELAY_MS: (u64, u64) = (20, 100);
/// The provider link's delay per chunk, ms: its answers come in one chunk
/// or two, so the delay is larger: from just under bookingd's provider call
/// timeout in chaos runs (1 s: answers late but in time) to well past it
/// (every call of the spell times out, the charge made: unknown outcomes).
pub const PROVIDER_DELAY_MS: (u64, u64) = (800, 1_600);
/// How long a link stays slow, wall ms.
pub const SLOW_MS: (u64, u64) = (2_000, 3_000);

/// Which link of a bookingd is slowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Its link to PostgreSQL.
    Database,
    /// Its link to the provider.
    Provider,
}

/// One planned slow spell.
#[derive(Debug, Clone, Copy)]
pub struct Planned {
    /// When it starts, wall ms into the window.
    pub at_ms: u64,
    /// How long it lasts, wall ms.
    pub for_ms: u64,
    /// The delay per chunk, ms.
    pub delay_ms: u64,
    /// The bookingd slot whose link it slows; `None`: every slot's.
    pub slot: Option<usize>,
    /// Which of its links.
    pub target: Target,
}

/// Two spells on seeded slots of `slots` (> 0), each in the first half of
/// a window of `window_ms` (while users still check out): the database
/// link's delaying by `latency_ms` (clamped to [`DELAY_MS`]), the
/// provider link's by a seeded [`PROVIDER_DELAY_MS`].
pub fn plan(rng: &mut ChaCha8Rng, window_ms: u64, slots: usize, latency_ms: u64) -> Vec<Planned> {
    assert!(slots > 0, "a slow link needs a bookingd");
    let database = Planned {
        at_ms: rng.random_range(window_ms / 8..window_ms / 2),
        for_ms: rng.random_range(SLOW_MS.0..=SLOW_MS.1),
        delay_ms: latency_ms.clamp(DELAY_MS.0, DELAY_MS.1),
        slot: Some(rng.random_range(0..slots)),
        target: Target::Database,
    };
    let provider = Planned {
        at_ms: rng.random_range(window_ms / 8..window_ms / 2),
        for_ms: rng.random_range(SLOW_MS.0..=SLOW_MS.1),
        delay_ms: rng.random_range(PROVIDER_DELAY_MS.0..=PROVIDER_DELAY_MS.1),
        slot: None,
        target: Target::Provider,
    };
    vec![database, provider]
}

/// Runs every spell of `plan` on `db_links` or `provider_links`.
pub async fn run(
    db_links: Arc<Vec<Link>>,
    provider_links: Arc<Vec<Link>>,
    plan: Vec<Planned>,
    log: Arc<FaultLog>,
    stop: watch::Receiver<bool>,
) {
    let spells = plan.into_iter().map(|p| {
        let links = if p.target == Target::Database { db_links.clone() } else { provider_links.clone() };
        spell(links, p, log.clone(), stop.clone())
    });
    futures::future::join_all(spells).await;
}

/// Slows `links[p.slot]` (every link without a slot) at `p.at_ms` for
/// `p.for_ms` (ended at once when `stop` comes first: the settle phase
/// needs every instance quick).
async fn spell(links: Arc<Vec<Link>>, p: Planned, log: Arc<FaultLog>, mut stop: watch::Receiver<bool>) {
    if !super::disrupt::until(&log, p.at_ms, &mut stop).await {
        return;
    }
    let (fault, far) = match p.target {
        Target::Database => (ChaosFault::DbLatency, "PostgreSQL"),
        Target::Provider => (ChaosFault::ProviderLatency, "provider"),
    };
    let (slowed, whose) = match p.slot {
        Some(i) => (&links[i..=i], format!("bookingd {i}'s")),
        None => (&links[..], "every bookingd's".to_string()),
    };
    slowed.iter().for_each(|l| l.delay_answers(p.delay_ms));
    let what = format!("{whose} {far} answers held {} ms per chunk for {} ms", p.delay_ms, p.for_ms);
    record(&log, fault, p.slot, what);
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(p.for_ms)) => {}
        _ = stop.changed() => {}
    }
    slowed.iter().for_each(|l| l.delay_answers(0));
    record(&log, ChaosFault::LatencyEnd, p.slot, format!("{whose} {far} link answers at once again"));
}

/// Logs `fault` against `slot`, or against the run where it struck every slot.
fn record(log: &FaultLog, fault: ChaosFault, slot: Option<usize>, what: String) {
    match slot {
        Some(i) => log.record_at(fault, i, what),
        None => log.record(fault, what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn spells_are_inside_the_window_with_bounded_delays() {
        for seed in 0..50 {
            let spells = plan(&mut ChaCha8Rng::seed_from_u64(seed), 4_000, 2, seed * 5);
            let [db, provider] = spells[..] else { panic!("two spells: {spells:?}") };
            assert!((500..2_000).contains(&db.at_ms) && (SLOW_MS.0..=SLOW_MS.1).contains(&db.for_ms), "{db:?}");
            assert!((DELAY_MS.0..=DELAY_MS.1).contains(&db.delay_ms) && db.slot.is_some_and(|i| i < 2), "{db:?}");
            assert!((500..2_000).contains(&provider.at_ms) && provider.slot.is_none(), "{provider:?}");
            assert!((PROVIDER_DELAY_MS.0..=PROVIDER_DELAY_MS.1).contains(&provider.delay_ms), "{provider:?}");
        }
    }
}
