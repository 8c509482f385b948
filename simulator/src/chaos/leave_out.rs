//! `simulator chaos --without FAULT`: a run with one nemesis (or several)
//! left out of its fault plan, everything else as the seed says. A planted
//! bug caught with every nemesis and passed without one is a bug that
//! nemesis alone exposes; a failing run that passes without a nemesis
//! names the fault to look at first.
//!
//! A nemesis is named by the fault kind it logs when it strikes; the kinds
//! that only log an end or a consequence (`db-heal`, `restart`, ...) and
//! the users' own behaviour (`client-pause`, `stale-replay`) cannot be
//! left out.

use super::disrupt::FaultPlan;
use super::link_latency::Target;
use super::log::ChaosFault;
use super::provider_link::Kind;

/// The kinds `--without` takes.
pub const LEAVABLE: &[ChaosFault] = &[
    ChaosFault::CrashAfterCommit,
    ChaosFault::Kill9,
    ChaosFault::Disconnect,
    ChaosFault::PgTerminateBackends,
    ChaosFault::RedisPoison,
    ChaosFault::RedisStop,
    ChaosFault::RedisStall,
    ChaosFault::DbPartition,
    ChaosFault::DbLatency,
    ChaosFault::ProviderLatency,
    ChaosFault::PacketLoss,
    ChaosFault::PgStop,
    ChaosFault::ProviderCut,
    ChaosFault::ProviderOneWay,
    ChaosFault::WebhookAnswersLost,
    ChaosFault::PgFailover,
    ChaosFault::ClockSkew,
];

/// Removes from `plan` what each of `without` (all in [`LEAVABLE`]) would
/// have done. Clock skew is not in the plan: [`skew_max_ms`] leaves it out.
pub fn apply(plan: &mut FaultPlan, without: &[ChaosFault]) {
    for fault in without {
        assert!(LEAVABLE.contains(fault), "{fault:?} cannot be left out");
        match fault {
            ChaosFault::CrashAfterCommit => plan.crash_points.clear(),
            ChaosFault::Kill9 => plan.kills_at_ms.clear(),
            ChaosFault::Disconnect => plan.disconnectors = 0,
            ChaosFault::PgTerminateBackends => plan.pg_terminations_at_ms.clear(),
            ChaosFault::RedisPoison => plan.redis_poison_at_ms.clear(),
            ChaosFault::RedisStop => plan.redis_stops.clear(),
            ChaosFault::RedisStall => plan.redis_stalls.clear(),
            ChaosFault::DbPartition => plan.db_partitions.clear(),
            ChaosFault::DbLatency => plan.link_latency.retain(|p| p.target != Target::Database),
            ChaosFault::ProviderLatency => plan.link_latency.retain(|p| p.target != Target::Provider),
            ChaosFault::PacketLoss => plan.packet_loss = None,
            ChaosFault::PgStop => plan.pg_restarts.clear(),
            ChaosFault::ProviderCut => plan.provider_links.retain(|p| p.kind != Kind::ProviderCut),
            ChaosFault::ProviderOneWay => plan.provider_links.retain(|p| p.kind != Kind::ProviderOneWay),
            ChaosFault::WebhookAnswersLost => plan.provider_links.retain(|p| p.kind != Kind::WebhookAnswersLost),
            ChaosFault::PgFailover => plan.pg_failover_at_ms = None,
            // Not in the plan: see [`skew_max_ms`].
            ChaosFault::ClockSkew => {}
            ChaosFault::Restart
            | ChaosFault::RedisRestartEmpty
            | ChaosFault::RedisRestartKept
            | ChaosFault::DbHeal
            | ChaosFault::LatencyEnd
            | ChaosFault::PacketLossEnd
            | ChaosFault::PgStart
            | ChaosFault::LinkHeal
            | ChaosFault::PgPromoted
            | ChaosFault::ClientPause
            | ChaosFault::StaleReplay
            | ChaosFault::Note => unreachable!("{fault:?} is not in LEAVABLE"),
        }
    }
}

/// The clock skew bound a run uses: `max_ms`, or 0 with clock skew left out.
pub fn skew_max_ms(max_ms: i64, without: &[ChaosFault]) -> i64 {
    if without.contains(&ChaosFault::ClockSkew) { 0 } else { max_ms }
}

/// Parses a `--without` value: a kebab-case kind of [`LEAVABLE`].
pub fn parse(name: &str) -> Result<ChaosFault, String> {
    let names = || LEAVABLE.iter().map(|f| super::log::name(*f)).collect::<Vec<_>>().join(", ");
    LEAVABLE
        .iter()
        .copied()
        .find(|f| super::log::name(*f) == name)
        .ok_or_else(|| format!("--without {name}: not a nemesis that can be left out (one of: {})", names()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_leavable_nemesis_parses_and_nothing_else_does() {
        for f in LEAVABLE {
            assert_eq!(parse(&super::super::log::name(*f)), Ok(*f));
        }
        for name in ["db-heal", "restart", "client-pause", "note", "nope"] {
            assert!(parse(name).unwrap_err().contains("one of: crash-after-commit"), "{name}");
        }
    }
}
