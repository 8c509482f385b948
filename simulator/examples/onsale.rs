//! The on-sale benchmark: runs one seed of a waiting-room
//! scenario (default: `scenarios/bench/onsale-rush-full.toml`, the brief's
//! 100,000 users in one minute) in this process, and prints its verdict,
//! wall time, peak memory, and the waiting room's figures: admission rate,
//! peak sessions against the target, wait percentiles, the admission law's
//! error, and a timeline of open sessions against the target. Exits 1 when
//! the run broke an invariant, panicked, could not finish, or ended before a room sold
//! out (its figures are then not the benchmark's).
//!
//! `cargo run --release -p simulator --example onsale [-- FILE [SEED [SAMPLE_S]]]`

use invariants::room_metrics;

// The simulator binary's allocator, so that time and memory are the CLI's.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
use simulator::world::plan;

/// Peak resident memory of this process, KiB (Linux `VmHWM`), if readable.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[allow(clippy::disallowed_methods)] // a benchmark measures wall time
fn main() {
    simulator::run::allocator::tune();
    let args: Vec<String> = std::env::args().collect();
    let file = args.get(1).map_or("scenarios/bench/onsale-rush-full.toml", String::as_str);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let sample_s: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(60);
    let plan = plan::from_file(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let cfg = plan.world_for(seed);
    let started = std::time::Instant::now();
    let out = simulator::world::run(&cfg, seed);
    let wall_s = started.elapsed().as_secs_f64();
    println!("scenario: {} (seed {seed}, {} users)", plan.name, cfg.users);
    println!(
        "verdict: {} violation(s){}",
        out.violations.len(),
        out.error.as_deref().map(|e| format!(", error: {e}")).unwrap_or_default()
    );
    if let Some(p) = &out.panic {
        println!("panic: {p:?}");
    }
    for v in out.violations.iter().take(5) {
        println!("  {} {}: {}", v.invariant, v.subject, v.detail);
    }
    println!(
        "wall: {wall_s:.1} s; simulated: {:.0} s; peak RSS: {} MiB",
        out.simulated_ms as f64 / 1000.0,
        peak_rss_kib().map_or("?".into(), |k| (k / 1024).to_string())
    );
    println!("http exchanges: {}; trace events: {}", out.http_exchanges, out.trace.len());
    let rooms = room_metrics::compute(&out.trace, sample_s);
    for m in &rooms {
        println!(
            "room {}: joined {}, admitted {}, told sold out {}, peak waiting {}",
            m.event_id, m.joined, m.admitted, m.told_sold_out, m.peak_waiting
        );
        println!(
            "  admission rate {:.2}/s; peak sessions {} (target {}); law error {:.1}%",
            m.admission_rate_per_s,
            m.peak_active,
            m.target,
            m.law_error * 100.0
        );
        let (p50, p90, p99) = m.wait_p50_p90_p99_s;
        println!("  wait to admission: p50 {p50:.0} s, p90 {p90:.0} s, p99 {p99:.0} s");
        println!("  | t (s) | open sessions | target | waiting | rate (/s) |");
        println!("  |---:|---:|---:|---:|---:|");
        for s in &m.timeline {
            println!("  | {} | {} | {} | {} | {:.2} |", s.at_s, s.active, m.target, s.waiting, s.rate_per_s);
        }
    }
    // One line for ci/bench, which sets it beside the floor measured in the same sitting.
    let hosts = cfg.server_hosts + cfg.client_hosts + 1 + usize::from(cfg.probers > 0);
    let admitted: u64 = rooms.iter().map(|m| m.admitted).sum();
    println!(
        r#"{{"onsale":{{"users":{},"wall_s":{wall_s:.2},"peak_rss_mib":{},"http_exchanges":{},"trace_events":{},"simulated_ms":{},"hosts":{hosts},"admitted":{admitted},"violations":{}}}}}"#,
        cfg.users,
        peak_rss_kib().map_or(0, |k| k / 1024),
        out.http_exchanges,
        out.trace.len(),
        out.simulated_ms,
        out.violations.len()
    );
    // A run that broke an invariant, could not finish, or ended before a
    // room sold out (the scenario's story untold) is no benchmark figure.
    let unsold = rooms.iter().filter(|m| m.told_sold_out == 0).count();
    if unsold > 0 {
        println!("error: {unsold} room(s) never told a waiting user the event sold out");
    }
    if !out.violations.is_empty() || out.error.is_some() || out.panic.is_some() || unsold > 0 {
        std::process::exit(1);
    }
}
