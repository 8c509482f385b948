//! What `simulator run` prints: per scenario its failures (each with its
//! replay line) or its JSON lines, then the tables of every scenario run
//! (seeds, speed, metrics, paths) and the closing `N passed, N failed` line.

use crate::run::runner::{SeedVerdict, Summary};
use crate::world::plan::Plan;

/// Prints one scenario's result: every missing declared path and failed
/// seed, or (with `json`) one JSON object per seed and one for the summary.
pub fn scenario(summary: &Summary, verdicts: &[SeedVerdict], json: bool) {
    for missing in &summary.missing_paths {
        println!(
            "FAIL {}: `{missing}` never happened in {} seeds (expect.must_happen): a fault stopped firing or the story is no longer told",
            summary.scenario, summary.seeds
        );
    }
    for v in verdicts {
        if json {
            println!("{}", serde_json::to_string(&serde_json::json!({ "seed_verdict": v })).expect("serializes"));
        } else if !v.passed {
            println!("FAIL {} seed {}", v.scenario, v.seed);
            for line in crate::run::failure_report::lines(&v.failures) {
                println!("  {line}");
            }
            println!("  replay: {}", v.replay);
        }
    }
    if json {
        println!("{}", serde_json::to_string(&serde_json::json!({ "summary": summary })).expect("serializes"));
    }
}

/// Prints the tables of `summaries` (of `plans`) and the closing count.
pub fn tables(summaries: &[Summary], plans: &[Plan]) {
    speed(summaries);
    println!();
    metrics(summaries);
    println!();
    paths(summaries, plans);
    println!();
    refusals(summaries);
    let (seeds, failed): (u64, u64) = summaries.iter().fold((0, 0), |(a, b), s| (a + s.seeds, b + s.failed));
    println!("{} passed, {} failed", seeds - failed, failed);
}

fn speed(summaries: &[Summary]) {
    println!(
        "{:<28} {:>6} {:>6} {:>6} {:>10} {:>12} {:>10}",
        "scenario", "seeds", "passed", "failed", "seeds/s", "sim-s/wall-s", "http/seed"
    );
    for s in summaries {
        println!(
            "{:<28} {:>6} {:>6} {:>6} {:>10.1} {:>12.0} {:>10.0}",
            s.scenario, s.seeds, s.passed, s.failed, s.seeds_per_s, s.sim_per_wall, s.http_exchanges_per_seed
        );
    }
}

fn metrics(summaries: &[Summary]) {
    println!(
        "{:<28} {:>7} {:>9} {:>9} {:>8} {:>8} {:>6} {:>8} {:>8}  classification",
        "metrics (mean per seed)", "holds", "refused", "abandon", "lag-max", "expired", "sold", "charged", "refunded"
    );
    for s in summaries {
        let m = &s.metrics;
        let classes: Vec<String> = m.classifications.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        println!(
            "{:<28} {:>7.0} {:>9.0} {:>9.0} {:>6}ms {:>7.1}% {:>6.0} {:>8.0} {:>8.0}  {}",
            s.scenario,
            m.holds_acquired,
            m.holds_refused_contention,
            m.holds_abandoned,
            m.expiry_lag_max_ms,
            m.held_expired_share * 100.0,
            m.seats_sold,
            m.charged,
            m.refunded,
            classes.join(" ")
        );
    }
}

/// Every problem kind clients were answered, and the store answered the
/// service, over all scenarios run.
fn refusals(summaries: &[Summary]) {
    for (prefix, title) in [("refused ", "refusals answered"), ("store refused ", "store refusals")] {
        let mut total: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
        for s in summaries {
            for (k, n) in &s.answers {
                if let Some(kind) = k.strip_prefix(prefix) {
                    *total.entry(kind).or_insert(0) += n;
                }
            }
        }
        let shown: Vec<String> = total.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!("{title} (problem kinds, over the scenarios run): {}", shown.join(", "));
    }
}

fn paths(summaries: &[Summary], plans: &[Plan]) {
    println!("paths (total over the seeds run; * = declared in expect.must_happen)");
    for s in summaries {
        let plan = plans.iter().find(|p| p.name == s.scenario).expect("summarised plans ran");
        let shown: Vec<String> = s
            .paths
            .iter()
            .map(|(k, v)| format!("{k}{} {v}", if plan.must_happen.contains(k) { "*" } else { "" }))
            .collect();
        println!("{:<28} {}", s.scenario, shown.join(", "));
    }
}
