//! Running scenarios over seed ranges: verdicts, the per-scenario summary
//! (seeds, passed, failed, seeds per second, simulated seconds per wall
//! second) and, for each failure, the violated invariant and the one command
//! that replays it.

use crate::run::failure::Failure;
use crate::world;
use crate::world::check::RunOutcome;
use crate::world::plan::Plan;
use serde::Serialize;

pub use crate::run::verdict::{SeedVerdict, replay_command};

/// A scenario's summary over its seeds.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds whose outcome matched the expectation.
    pub passed: u64,
    /// The others.
    pub failed: u64,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Seeds per wall second.
    pub seeds_per_s: f64,
    /// Simulated seconds per wall second.
    pub sim_per_wall: f64,
    /// HTTP exchanges per seed, mean.
    pub http_exchanges_per_seed: f64,
    /// Run metrics, averaged over the seeds.
    pub metrics: MetricsSummary,
    /// How often each fault and path happened, summed over the seeds (by stable name).
    pub paths: std::collections::BTreeMap<String, u64>,
    /// Paths the scenario declares in `expect.must_happen` that never
    /// happened over its default seeds: each fails the scenario.
    pub missing_paths: Vec<String>,
    /// Whether the run judged the declared paths (it covered the default seeds).
    pub paths_judged: bool,
    /// What clients were answered, by kind, summed over the seeds.
    pub answers: std::collections::BTreeMap<String, u64>,
}

/// Each path's total over `verdicts`, by stable name.
pub fn path_totals(verdicts: &[SeedVerdict]) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for v in verdicts {
        for (p, n) in &v.paths {
            *out.entry(p.as_str().to_string()).or_insert(0) += n;
        }
    }
    out
}

/// Each answer kind's total over scenario summaries.
pub fn answer_totals_of(summaries: &[Summary]) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for s in summaries {
        for (k, n) in &s.answers {
            *out.entry(k.clone()).or_insert(0) += n;
        }
    }
    out
}

/// Each answer kind's total over `verdicts`.
pub fn answer_totals(verdicts: &[SeedVerdict]) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for v in verdicts {
        for (k, n) in &v.answers {
            *out.entry(k.clone()).or_insert(0) += n;
        }
    }
    out
}

/// The paths `plan` declares in `expect.must_happen` that no verdict of
/// `verdicts` saw.
pub fn missing_paths(plan: &Plan, verdicts: &[SeedVerdict]) -> Vec<String> {
    let totals = path_totals(verdicts);
    plan.must_happen.iter().filter(|p| totals.get(*p).copied().unwrap_or(0) == 0).cloned().collect()
}

/// Run metrics averaged over a scenario's seeds: enough to tell genuine
/// demand from a broken expiry process at a glance.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MetricsSummary {
    /// Holds granted per seed.
    pub holds_acquired: f64,
    /// Holds refused by contention per seed.
    pub holds_refused_contention: f64,
    /// Holds abandoned (expired unused) per seed.
    pub holds_abandoned: f64,
    /// Largest expiry lag over all seeds, ms.
    pub expiry_lag_max_ms: i64,
    /// Seat-time held past the deadline, as a share of all held seat-time.
    pub held_expired_share: f64,
    /// Seats sold per seed.
    pub seats_sold: f64,
    /// Charges per seed (provider ledger).
    pub charged: f64,
    /// Refunds per seed (provider ledger).
    pub refunded: f64,
    /// How many seeds got each classification.
    pub classifications: std::collections::BTreeMap<String, u64>,
}

impl MetricsSummary {
    /// Averages `verdicts`' metrics.
    pub fn of(verdicts: &[SeedVerdict]) -> Self {
        let n = verdicts.len().max(1) as f64;
        let mean =
            |f: &dyn Fn(&invariants::metrics::Metrics) -> f64| verdicts.iter().map(|v| f(&v.metrics)).sum::<f64>() / n;
        let mut classifications = std::collections::BTreeMap::new();
        for v in verdicts {
            *classifications.entry(v.metrics.classification.as_str().to_string()).or_insert(0) += 1;
        }
        let (held, expired) = verdicts
            .iter()
            .fold((0i64, 0i64), |(h, e), v| (h + v.metrics.seat_ms_held, e + v.metrics.seat_ms_held_expired));
        Self {
            holds_acquired: mean(&|m| m.holds_acquired as f64),
            holds_refused_contention: mean(&|m| m.holds_refused_contention as f64),
            holds_abandoned: mean(&|m| m.holds_abandoned as f64),
            expiry_lag_max_ms: verdicts.iter().map(|v| v.metrics.expiry_lag_max_ms).max().unwrap_or(0),
            held_expired_share: if held + expired > 0 { expired as f64 / (held + expired) as f64 } else { 0.0 },
            seats_sold: mean(&|m| m.seats_sold as f64),
            charged: mean(&|m| *m.payments.get("charged").unwrap_or(&0) as f64),
            refunded: mean(&|m| *m.payments.get("refunded").unwrap_or(&0) as f64),
            classifications,
        }
    }
}

/// Judges one run against the plan's expectation.
pub fn judge(plan: &Plan, out: &RunOutcome) -> SeedVerdict {
    let mut failures: Vec<Failure> = Vec::new();
    if let Some(e) = &out.error {
        failures.push(Failure::RunError { error: e.clone() });
    }
    if let Some(p) = &out.panic {
        failures.push(Failure::Panic { note: p.clone() });
    }
    let violated = !out.violations.is_empty();
    if plan.expect_violation {
        if !violated {
            failures.push(Failure::NoViolation);
        }
        for want in &plan.expect_violations {
            if !out.violations.iter().any(|v| v.invariant.as_str() == want) {
                failures.push(Failure::ExpectedMissing { invariant: want.clone() });
            }
        }
        // An expected failure must be the only failure: any violation of an
        // invariant neither expected nor tolerated fails the seed. (With no
        // invariant named, any violation is the expected one.)
        if !plan.expect_violations.is_empty() {
            let allowed = |name: &str| plan.expect_violations.iter().chain(&plan.tolerated).any(|w| w == name);
            failures.extend(
                out.violations
                    .iter()
                    .filter(|v| !allowed(v.invariant.as_str()))
                    .map(|v| Failure::Unexpected { violation: v.clone() }),
            );
        }
    } else {
        failures.extend(out.violations.iter().map(|v| Failure::Violated { violation: v.clone() }));
    }
    if let Some(want) = &plan.expect_classification {
        let got = out.metrics.classification.as_str();
        if got != want {
            failures.push(Failure::Classification { want: want.clone(), got: got.to_string() });
        }
    }
    SeedVerdict {
        scenario: plan.name.clone(),
        seed: out.seed,
        passed: failures.is_empty(),
        failures,
        replay: replay_command(plan, out.seed),
        trace_hash: out.trace_hash.clone(),
        simulated_ms: out.simulated_ms,
        http_exchanges: out.http_exchanges,
        metrics: out.metrics.clone(),
        paths: out.paths.clone(),
        answers: out.answers.clone(),
        panic: out.panic.clone(),
        trace_events: out.trace.len() as u64,
    }
}

/// What `simulator run` asks of one scenario.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The seeds (the scenario's default range unless narrowed).
    pub seeds: Vec<u64>,
    /// Worlds run in parallel (one process each).
    pub jobs: usize,
    /// Run every seed twice and fail it on differing trace hashes.
    pub check_determinism: bool,
    /// Show progress on stderr.
    pub progress: bool,
}

/// Runs `plan` over `req.seeds` in the process pool and summarises it: its
/// verdicts, and the scenario's summary (declared paths are judged only when
/// the seeds cover the default range: a narrower range may legitimately
/// miss a rare path).
pub fn run_scenario(plan: &Plan, req: &RunRequest) -> (Summary, Vec<SeedVerdict>) {
    let started = crate::run::pool::wall_now();
    let verdicts = crate::run::pool::run_seeds(plan, &req.seeds, req.jobs, req.check_determinism, req.progress);
    let wall_s = started.elapsed().as_secs_f64().max(1e-9);
    let judge_paths = plan.default_seeds.clone().all(|s| req.seeds.contains(&s));
    let passed = verdicts.iter().filter(|v| v.passed).count() as u64;
    let runs_per_seed = if req.check_determinism { 2.0 } else { 1.0 };
    let sim_s: f64 = verdicts.iter().map(|v| v.simulated_ms as f64 / 1000.0).sum::<f64>() * runs_per_seed;
    let seeds = req.seeds.len() as u64;
    let summary = Summary {
        scenario: plan.name.clone(),
        seeds,
        passed,
        failed: seeds - passed,
        wall_s,
        seeds_per_s: seeds as f64 / wall_s,
        sim_per_wall: sim_s / wall_s,
        http_exchanges_per_seed: verdicts.iter().map(|v| v.http_exchanges as f64).sum::<f64>()
            / verdicts.len().max(1) as f64,
        metrics: MetricsSummary::of(&verdicts),
        paths: path_totals(&verdicts),
        missing_paths: if judge_paths { missing_paths(plan, &verdicts) } else { Vec::new() },
        paths_judged: judge_paths,
        answers: answer_totals(&verdicts),
    };
    (summary, verdicts)
}

impl Summary {
    /// Whether the scenario failed: a seed missed its expectation, or a declared path never happened.
    pub fn failed_any(&self) -> bool {
        self.failed > 0 || !self.missing_paths.is_empty()
    }
}

/// A CI shard: `index` of `count` (1-based), written `I/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, `1..=count`.
    pub index: u64,
    /// How many shards.
    pub count: u64,
}

impl Shard {
    /// Parses `I/N` with `1 <= I <= N`.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let (i, n) = s.split_once('/').ok_or_else(|| format!("expected I/N, got {s}"))?;
        let (index, count): (u64, u64) =
            (i.parse().map_err(|_| format!("bad shard {i}"))?, n.parse().map_err(|_| format!("bad count {n}"))?);
        if count == 0 || index == 0 || index > count {
            return Err(format!("shard {s}: need 1 <= I <= N"));
        }
        Ok(Shard { index, count })
    }

    /// This shard's share of `seeds`: every `count`-th, from position
    /// `index - 1`. The shards of one count are disjoint and cover `seeds`.
    pub fn of(&self, seeds: &[u64]) -> Vec<u64> {
        seeds.iter().enumerate().filter(|(i, _)| *i as u64 % self.count == self.index - 1).map(|(_, s)| *s).collect()
    }
}

/// Runs one seed of `plan`.
pub fn run_seed(plan: &Plan, seed: u64) -> (RunOutcome, SeedVerdict) {
    let out = world::run(&plan.world_for(seed), seed);
    let verdict = judge(plan, &out);
    (out, verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use invariants::{Invariant, Subject, Violation};

    fn outcome(violations: Vec<Invariant>) -> RunOutcome {
        RunOutcome {
            seed: 3,
            violations: violations
                .into_iter()
                .map(|i| Violation::new(i, Subject::seat(&"ev0".into(), &"s00001".into()), "planted", vec![1]))
                .collect(),
            trace: Vec::new(),
            trace_hash: "h".into(),
            simulated_ms: 1,
            metrics: invariants::metrics::Metrics {
                classification: invariants::Classification::BrokenExpiry,
                ..Default::default()
            },
            error: None,
            http_exchanges: 0,
            seat_map_cache_hits: 0,
            paths: Default::default(),
            answers: Default::default(),
            panic: None,
            judged: None,
        }
    }

    /// `broken-expiry` expects `hold-reclaimed`; a seed that also
    /// sold a seat twice used to pass. An expected failure must be the only one.
    #[test]
    fn an_expected_failure_must_be_the_only_failure() {
        let plan = crate::world::plan::find("broken-expiry").expect("library scenario");
        assert!(judge(&plan, &outcome(vec![Invariant::HoldReclaimed])).passed);
        let v = judge(&plan, &outcome(vec![Invariant::HoldReclaimed, Invariant::OneBookingPerSeat]));
        assert!(!v.passed);
        assert_eq!(v.failures.len(), 1, "{:?}", v.failures);
        assert!(
            v.failures[0].to_string().starts_with("unexpected: one-booking-per-seat seat ev0/s00001"),
            "{:?}",
            v.failures
        );
        // Unless the scenario tolerates it explicitly.
        let mut tolerant = plan.clone();
        tolerant.tolerated = vec!["one-booking-per-seat".into()];
        assert!(judge(&tolerant, &outcome(vec![Invariant::HoldReclaimed, Invariant::OneBookingPerSeat])).passed);
        // And the expected one must still be there.
        assert!(!judge(&tolerant, &outcome(vec![Invariant::OneBookingPerSeat])).passed);
    }

    #[test]
    fn a_panic_fails_any_scenario_and_names_its_place() {
        let plan = crate::world::plan::find("broken-expiry").expect("library scenario");
        let mut out = outcome(vec![Invariant::HoldReclaimed]);
        out.panic = Some(crate::world::panic_note::PanicNote {
            message: "an open order owns its seats".into(),
            location: "x.rs:1:2".into(),
        });
        let v = judge(&plan, &out);
        assert!(!v.passed);
        assert_eq!(
            v.failures.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["panic: an open order owns its seats at x.rs:1:2"]
        );
        assert!(v.replay.ends_with("replay --scenario broken-expiry --seed 3"), "{}", v.replay);
    }
}
