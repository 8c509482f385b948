//! Partitions between the processes of the payment path, where the
//! scenario has network faults (`faults.network`): every bookingd reaches the
//! provider through a link of its own and the provider reaches bookingd's
//! webhook endpoint through one ([`test_services::link::Link`]), which this
//! nemesis cuts or mutes for a while:
//!
//! - `provider-cut`: one bookingd cannot reach the provider (calls in flight
//!   reset, new ones refused: "unreachable", never sent);
//! - `provider-one-way`: the way from the provider to bookingd is broken:
//!   every bookingd's calls reach the provider, which charges, but no answer
//!   comes back (each call times out: an unknown outcome, the charge made),
//!   and the provider's webhooks cannot connect (it retries them later);
//! - `webhook-answers-lost`: the provider's webhooks reach bookingd, which
//!   records them, but its answers are lost (the provider retries: a
//!   duplicate for every one);
//!
//! each healed (`link-heal`) after 2–3 s, or at once when the users stop.
//! What must hold meanwhile is what holds always: the tables, the ledger
//! and the client history are judged as in every run.

use super::log::{ChaosFault, FaultLog};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;
use test_services::link::Link;
use tokio::sync::watch;

/// How long each fault lasts, wall ms: longer than bookingd's provider call
/// timeout in chaos runs (1 s), so that calls time out; short enough for the provider's webhook
/// retries (5 attempts over about 3 s) to outlast it.
pub const FAULT_MS: (u64, u64) = (2_000, 3_000);

/// What a planned fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One bookingd's link to the provider is cut.
    ProviderCut,
    /// Every bookingd's link to the provider loses every answer, and the
    /// webhook link is cut.
    ProviderOneWay,
    /// The provider's link to bookingd's webhook endpoint loses every answer.
    WebhookAnswersLost,
}

impl Kind {
    fn fault(self) -> ChaosFault {
        match self {
            Kind::ProviderCut => ChaosFault::ProviderCut,
            Kind::ProviderOneWay => ChaosFault::ProviderOneWay,
            Kind::WebhookAnswersLost => ChaosFault::WebhookAnswersLost,
        }
    }
}

/// One planned fault.
#[derive(Debug, Clone, Copy)]
pub struct Planned {
    /// When it starts, wall ms into the window.
    pub at_ms: u64,
    /// How long it lasts, wall ms.
    pub for_ms: u64,
    /// What it does.
    pub kind: Kind,
    /// The bookingd slot whose link it strikes (webhook faults: slot 0's
    /// endpoint); `None`: every slot's provider link.
    pub slot: Option<usize>,
}

/// Each kind once, in time order, at seeded moments of a window of
/// `window_ms`: the one-way partition early (its second eighth, while users
/// check out and mostly before the database's own faults, during which
/// nothing is dispatched), the lost webhook answers and the cut of a seeded
/// slot of `slots` (> 0) in its second half (a cut slot's dispatcher keeps
/// the rows it claimed until their retry, and the one-way partition refuses
/// webhooks: apart, the faults do not hide each other; where they overlap,
/// [`Link`] composes them). The database's restart and partition, in the
/// window's middle half, often cover the later two (nothing is dispatched or
/// applied meanwhile): the plants that need them leave those out
/// (`--without pg-stop --without db-partition`, `ci/test`'s
/// `chaos-plant-provider-cut` and `chaos-plant-webhook`).
pub fn plan(rng: &mut ChaCha8Rng, window_ms: u64, slots: usize) -> Vec<Planned> {
    assert!(slots > 0, "a provider fault needs a bookingd");
    let (early, late) = (window_ms / 8..window_ms / 4, window_ms / 2..3 * window_ms / 4);
    let cut_slot = rng.random_range(0..slots);
    let mut planned: Vec<Planned> = [
        (Kind::ProviderOneWay, early, None),
        (Kind::WebhookAnswersLost, late.clone(), Some(0)),
        (Kind::ProviderCut, late, Some(cut_slot)),
    ]
    .into_iter()
    .map(|(kind, when, slot)| Planned {
        at_ms: rng.random_range(when),
        for_ms: rng.random_range(FAULT_MS.0..=FAULT_MS.1),
        kind,
        slot,
    })
    .collect();
    planned.sort_by_key(|p| p.at_ms);
    planned
}

/// Applies one planned fault to its link.
fn strike(p: &Planned, provider: &[Link], webhook: &Link) {
    match (p.kind, p.slot) {
        (Kind::ProviderCut, Some(slot)) => provider[slot].cut(),
        (Kind::ProviderCut, None) => provider.iter().for_each(Link::cut),
        (Kind::ProviderOneWay, Some(slot)) => provider[slot].lose_answers(),
        (Kind::ProviderOneWay, None) => provider.iter().for_each(Link::lose_answers),
        (Kind::WebhookAnswersLost, _) => webhook.lose_answers(),
    }
    if p.kind == Kind::ProviderOneWay {
        webhook.cut();
    }
}

/// Undoes one planned fault.
async fn heal(p: &Planned, provider: &[Link], webhook: &Link) -> Result<(), String> {
    if p.kind == Kind::WebhookAnswersLost {
        webhook.answer_again();
        return Ok(());
    }
    let struck: Vec<&Link> = match p.slot {
        Some(slot) => vec![&provider[slot]],
        None => provider.iter().collect(),
    };
    for link in struck {
        match p.kind {
            Kind::ProviderCut => link.restore().await.map_err(|e| format!("heal the provider link: {e}"))?,
            _ => link.answer_again(),
        }
    }
    if p.kind == Kind::ProviderOneWay {
        webhook.restore().await.map_err(|e| format!("heal the webhook link: {e}"))?;
    }
    Ok(())
}

/// What the fault log says of a planned fault.
fn describe(p: &Planned) -> String {
    let who = p.slot.map_or("every bookingd".to_string(), |s| format!("bookingd {s}"));
    match p.kind {
        Kind::ProviderCut => format!("{who} cut off from the provider for {} ms", p.for_ms),
        Kind::ProviderOneWay => {
            format!(
                "the provider cannot reach {who} for {} ms (answers lost, webhooks refused; calls still arrive)",
                p.for_ms
            )
        }
        Kind::WebhookAnswersLost => {
            format!("{who}'s answers to the provider's webhooks lost for {} ms (they still arrive)", p.for_ms)
        }
    }
}

/// Logs `fault` for `p`: at its slot, if it struck one alone.
fn record(log: &FaultLog, fault: ChaosFault, p: &Planned, detail: String) {
    match p.slot {
        Some(slot) => log.record_at(fault, slot, detail),
        None => log.record(fault, detail),
    }
}

/// Runs each of `planned` on its link until `stop`, side by side (they may
/// overlap), healing each after its time (at once once `stop` comes: the
/// settle phase needs them).
pub async fn run(
    provider: Arc<Vec<Link>>,
    webhook: Arc<Link>,
    planned: Vec<Planned>,
    log: Arc<FaultLog>,
    stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let mut tasks = tokio::task::JoinSet::new();
    for p in planned {
        let (provider, webhook, log, mut stop) = (provider.clone(), webhook.clone(), log.clone(), stop.clone());
        tasks.spawn(async move {
            if !super::disrupt::until(&log, p.at_ms, &mut stop).await {
                return Ok(());
            }
            strike(&p, &provider, &webhook);
            record(&log, p.kind.fault(), &p, describe(&p));
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(p.for_ms)) => {}
                _ = stop.changed() => {}
            }
            heal(&p, &provider, &webhook).await?;
            record(&log, ChaosFault::LinkHeal, &p, format!("healed: {}", describe(&p)));
            Ok::<(), String>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| format!("a payment path fault: {e}"))??;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_plan_has_each_kind_once_in_its_part_of_the_window_in_time_order() {
        for seed in 0..50 {
            let planned = plan(&mut ChaCha8Rng::seed_from_u64(seed), 4_000, 2);
            assert_eq!(planned.len(), 3);
            for kind in [Kind::ProviderCut, Kind::ProviderOneWay, Kind::WebhookAnswersLost] {
                assert_eq!(planned.iter().filter(|p| p.kind == kind).count(), 1, "{kind:?}");
            }
            assert!(planned.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
            for p in &planned {
                let (when, slot_ok) = match p.kind {
                    Kind::ProviderOneWay => (500..1_000, p.slot.is_none()),
                    Kind::WebhookAnswersLost => (2_000..3_000, p.slot == Some(0)),
                    Kind::ProviderCut => (2_000..3_000, p.slot.is_some_and(|s| s < 2)),
                };
                assert!(when.contains(&p.at_ms) && slot_ok, "{p:?}");
                assert!((FAULT_MS.0..=FAULT_MS.1).contains(&p.for_ms));
            }
        }
    }
}
