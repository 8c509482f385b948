//! Packet loss between processes, where the scenario has network faults:
//! for 2–3 s, 5–20 % of the TCP segments between one bookingd and its
//! links to PostgreSQL and to the provider are dropped ([`super::nft`]),
//! both ways (`packet-loss`, `packet-loss-end`). TCP retransmits: some
//! statements, commits and provider calls of that instance take hundreds
//! of ms longer, at random, some time out. Nothing a client is told may
//! change: the tables, the ledger and the client history are judged as in
//! every run. Where nftables cannot be used (not root, no `nft`), the run
//! notes why and goes on without it; CI's chaos step requires it to fire.

use super::log::{ChaosFault, FaultLog};
use super::nft::Loss;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;
use test_services::link::Link;
use tokio::sync::watch;

/// The share of segments dropped, ‰.
pub const LOSS_PERMILLE: (u32, u32) = (50, 200);
/// How long the loss lasts, wall ms.
pub const LOSSY_MS: (u64, u64) = (2_000, 3_000);

/// One planned lossy spell.
#[derive(Debug, Clone, Copy)]
pub struct Planned {
    /// When it starts, wall ms into the window.
    pub at_ms: u64,
    /// How long it lasts, wall ms.
    pub for_ms: u64,
    /// The share of segments dropped, ‰.
    pub permille: u32,
    /// The bookingd slot whose links lose packets.
    pub slot: usize,
}

/// A spell in the first half of a window of `window_ms` (while users still
/// check out), on a seeded slot of `slots` (> 0).
pub fn plan(rng: &mut ChaCha8Rng, window_ms: u64, slots: usize) -> Planned {
    assert!(slots > 0, "packet loss needs a bookingd");
    Planned {
        at_ms: rng.random_range(window_ms / 8..window_ms / 2),
        for_ms: rng.random_range(LOSSY_MS.0..=LOSSY_MS.1),
        permille: rng.random_range(LOSS_PERMILLE.0..=LOSS_PERMILLE.1),
        slot: rng.random_range(0..slots),
    }
}

/// Drops packets on `db_links[p.slot]` and `provider_links[p.slot]` at
/// `p.at_ms` for `p.for_ms` (healed at once when `stop` comes first: the
/// settle phase needs every instance quick). Rules that cannot be removed
/// are an error: the settle phase would run with them.
pub async fn run(
    db_links: Arc<Vec<Link>>,
    provider_links: Arc<Vec<Link>>,
    p: Option<Planned>,
    log: Arc<FaultLog>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let Some(p) = p else { return Ok(()) };
    super::nft::remove_orphans().await;
    if !super::disrupt::until(&log, p.at_ms, &mut stop).await {
        return Ok(());
    }
    let ports = [db_links[p.slot].addr().port(), provider_links[p.slot].addr().port()];
    let loss = Loss::default();
    if let Err(e) = loss.apply(&ports, p.permille).await {
        log.note(format!("packet loss not applied: {e}"));
        return Ok(());
    }
    let what = format!(
        "{}.{} % of the segments between bookingd {} and its PostgreSQL and provider links dropped for {} ms",
        p.permille / 10,
        p.permille % 10,
        p.slot,
        p.for_ms
    );
    log.record_at(ChaosFault::PacketLoss, p.slot, what);
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(p.for_ms)) => {}
        _ = stop.changed() => {}
    }
    let dropped =
        loss.heal().await.map_err(|e| format!("bookingd {}'s loss rules could not be removed: {e}", p.slot))?;
    let healed = format!("bookingd {}'s links lose nothing again ({dropped} segments were dropped)", p.slot);
    log.record_at(ChaosFault::PacketLossEnd, p.slot, healed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_spell_is_in_the_first_half_with_a_bounded_loss() {
        for seed in 0..50 {
            let p = plan(&mut ChaCha8Rng::seed_from_u64(seed), 4_000, 2);
            assert!((500..2_000).contains(&p.at_ms) && (LOSSY_MS.0..=LOSSY_MS.1).contains(&p.for_ms), "{p:?}");
            assert!((LOSS_PERMILLE.0..=LOSS_PERMILLE.1).contains(&p.permille) && p.slot < 2, "{p:?}");
        }
    }
}
