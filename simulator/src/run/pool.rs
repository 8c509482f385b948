//! The process pool: every seed runs in a process of its own (`simulator
//! seed ...`), exactly as `replay` runs it, `jobs` at a time.
//!
//! Why processes: tokio numbers tasks from one process-wide counter and a
//! runtime drops its tasks in an order that depends on those numbers, so a
//! crashed host's connections would close in an order that depends on what
//! else the process ran before (or runs beside) the world. A fresh process
//! per seed makes every run, and every `replay` of it, see the same numbers.

use crate::run::verdict::{SeedVerdict, replay_command};
use crate::world::plan::Plan;
use std::io::Write;

/// Wall-clock timing of the runner itself (never simulated code): the one
/// place the runner reads the real clock.
#[allow(clippy::disallowed_methods)]
pub fn wall_now() -> std::time::Instant {
    std::time::Instant::now()
}

/// The command-line arguments that make a child process run `seed` of
/// `plan` as `plan` says (scenario, planted bug, muted faults).
pub fn seed_args(plan: &Plan, seed: u64) -> Vec<String> {
    let mut args = vec!["seed".to_string(), "--seed".to_string(), seed.to_string()];
    match &plan.file {
        Some(f) => args.extend(["--scenario-file".to_string(), f.clone()]),
        None => args.extend(["--scenario".to_string(), plan.name.clone()]),
    }
    if let Some(p) = plan.plant {
        args.extend(["--plant".to_string(), p.to_string()]);
    }
    for m in &plan.muted {
        args.extend(["--mute".to_string(), m.as_str().to_string()]);
    }
    if !plan.seat_map_cache {
        args.push("--no-seat-map-cache".to_string());
    }
    if !plan.checkers.is_empty() {
        args.extend(["--checkers".to_string(), plan.checkers.join(",")]);
    }
    args
}

/// Runs `seed` of `plan` in a child process and reads its verdict. A child
/// that dies without one is a failed seed with its replay line.
pub fn seed_in_process(plan: &Plan, seed: u64) -> SeedVerdict {
    let exe = std::env::current_exe().expect("the simulator knows its own path");
    let failed = |why: crate::run::failure::Failure| {
        SeedVerdict::without_run(plan.name.clone(), seed, replay_command(plan, seed), why)
    };
    let out =
        std::process::Command::new(exe).args(seed_args(plan, seed)).stderr(std::process::Stdio::inherit()).output();
    match out {
        Ok(out) => match serde_json::from_slice::<SeedVerdict>(&out.stdout) {
            Ok(v) => v,
            Err(_) => failed(crate::run::failure::Failure::NoVerdict { status: out.status.to_string() }),
        },
        Err(e) => failed(crate::run::failure::Failure::NoProcess { error: e.to_string() }),
    }
}

/// Runs `seeds` of `plan`, `jobs` at a time, each in a process of its own;
/// with `twice`, every seed runs again and a differing trace hash fails it.
/// `progress` shows a progress bar on stderr ([`progress_line`]). Verdicts come back in seed order.
pub fn run_seeds(plan: &Plan, seeds: &[u64], jobs: usize, twice: bool, progress: bool) -> Vec<SeedVerdict> {
    let done = std::sync::atomic::AtomicUsize::new(0);
    let mut verdicts: Vec<Option<SeedVerdict>> = vec![None; seeds.len()];
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots = std::sync::Mutex::new(&mut verdicts);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, 64).min(seeds.len()).max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if i >= seeds.len() {
                        return;
                    }
                    let mut verdict = seed_in_process(plan, seeds[i]);
                    if twice {
                        let again = seed_in_process(plan, seeds[i]);
                        if again.trace_hash != verdict.trace_hash {
                            verdict.passed = false;
                            verdict.failures.push(crate::run::failure::Failure::Nondeterministic {
                                first: verdict.trace_hash.clone(),
                                second: again.trace_hash.clone(),
                            });
                        }
                    }
                    slots.lock().expect("poisoned")[i] = Some(verdict);
                    let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    if progress {
                        eprint!("\r{}", progress_line(&plan.name, n, seeds.len()));
                        let _ = std::io::stderr().flush();
                    }
                }
            });
        }
    });
    if progress {
        eprintln!();
    }
    verdicts.into_iter().map(|v| v.expect("every seed ran")).collect()
}

/// Width of the progress bar, in cells.
const PROGRESS_CELLS: usize = 24;

/// The progress line of `done` seeds of `total` of scenario `name`: a bar,
/// the count and the share (`swarm  [#####.....] 12/50  24%`).
pub fn progress_line(name: &str, done: usize, total: usize) -> String {
    assert!(done <= total && total > 0);
    let filled = done * PROGRESS_CELLS / total;
    format!(
        "{name:<28} [{}{}] {done}/{total} {:>3}%",
        "#".repeat(filled),
        ".".repeat(PROGRESS_CELLS - filled),
        done * 100 / total
    )
}

/// Runs the seeds of `plan` in order, `jobs` at a time, until one fails;
/// returns the seeds run and the first failing verdict (lowest seed among
/// those run), if any.
pub fn until_first_failure(plan: &Plan, seeds: &[u64], jobs: usize) -> (u64, Option<SeedVerdict>) {
    until_first(plan, seeds, jobs, |_| true)
}

/// Runs `seeds` of `plan` in order, `jobs` at a time, until a seed fails
/// in a way `wanted` accepts; returns how many seeds ran and that verdict.
pub fn until_first(
    plan: &Plan,
    seeds: &[u64],
    jobs: usize,
    wanted: impl Fn(&SeedVerdict) -> bool,
) -> (u64, Option<SeedVerdict>) {
    let jobs = jobs.clamp(1, 64);
    let mut ran = 0u64;
    for chunk in seeds.chunks(jobs) {
        let verdicts = run_seeds(plan, chunk, jobs, false, false);
        ran += chunk.len() as u64;
        if let Some(v) = verdicts.into_iter().find(|v| !v.passed && wanted(v)) {
            return (ran, Some(v));
        }
    }
    (ran, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_bar_fills_with_the_seeds_done() {
        assert_eq!(progress_line("swarm", 0, 4), format!("{:<28} [{}] 0/4   0%", "swarm", ".".repeat(24)));
        assert_eq!(
            progress_line("swarm", 2, 4),
            format!("{:<28} [{}{}] 2/4  50%", "swarm", "#".repeat(12), ".".repeat(12))
        );
        assert_eq!(progress_line("swarm", 4, 4), format!("{:<28} [{}] 4/4 100%", "swarm", "#".repeat(24)));
    }
}
