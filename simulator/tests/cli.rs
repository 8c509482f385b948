//! The simulator binary as users run it: determinism across separate
//! processes, a broken store caught with a replay line that reproduces the
//! failure, usage errors, and the scenario list; and the CI recipes' outputs
//! as a CI service consumes them: `--shard I/N` splits each scenario's seeds
//! into disjoint parts that cover them, `--junit FILE` writes one test case
//! per seed with the replay line in each failure, and `--time-budget` runs
//! fresh seeds from a printed base until the budget is spent, its failures
//! replayable.

use std::process::{Command, Output};

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simulator")).args(args).output().expect("simulator runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn trace_hash(o: &Output) -> String {
    let out = stdout(o);
    let last = out.lines().last().unwrap_or_default().to_string();
    last.strip_prefix("trace-hash: ")
        .unwrap_or_else(|| panic!("last line is the trace hash, got {last:?} in\n{out}"))
        .to_string()
}

#[test]
fn replay_is_deterministic_across_processes() {
    for (scenario, seed) in [
        ("alice-bob-stale-token", "3"),
        ("same-seat-race", "1"),
        ("crash-after-commit", "2"),
        ("stale-token-replay", "5"),
    ] {
        let a = sim(&["replay", "--scenario", scenario, "--seed", seed]);
        let b = sim(&["replay", "--scenario", scenario, "--seed", seed]);
        assert!(a.status.success(), "{scenario}/{seed}: {}", stdout(&a));
        let (ha, hb) = (trace_hash(&a), trace_hash(&b));
        assert_eq!(ha.len(), 64, "a SHA-256 in hex");
        assert_eq!(ha, hb, "{scenario} seed {seed} differs between processes");
        assert!(stdout(&a).contains("verdict: pass"));
    }
    let other = sim(&["replay", "--scenario", "same-seat-race", "--seed", "2"]);
    let first = sim(&["replay", "--scenario", "same-seat-race", "--seed", "1"]);
    assert_ne!(trace_hash(&other), trace_hash(&first), "another seed is another run");
}

/// The first line starting with `replay: `, split into the simulator's arguments.
fn replay_args(out: &str) -> Vec<String> {
    let replay = out.lines().find_map(|l| l.trim().strip_prefix("replay: ")).expect("a replay line").to_string();
    let prefix = "cargo run --release -p simulator -- ";
    replay
        .strip_prefix(prefix)
        .expect("the replay line is a cargo command")
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn a_planted_bug_is_caught_and_the_replay_line_reproduces_it() {
    // `--break-checkout` is the catalog's first entry under its old name.
    for flag in [&["--plant", "unconditional-checkout"][..], &["--break-checkout"][..]] {
        let mut args = vec!["run", "--scenario", "stale-token-replay", "--seeds", "0..3"];
        args.extend_from_slice(flag);
        let run = sim(&args);
        let out = stdout(&run);
        assert_eq!(run.status.code(), Some(1), "{out}");
        assert!(out.contains("no-stale-authority"), "the stale-token checker names the violation:\n{out}");
        let args = replay_args(&out);
        assert!(
            args.windows(2).any(|w| w == ["--plant", "unconditional-checkout"]),
            "the replay line keeps the plant: {args:?}"
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let again = sim(&args);
        let again_out = stdout(&again);
        assert_eq!(again.status.code(), Some(1), "{again_out}");
        assert!(again_out.contains("violation: no-stale-authority"), "{again_out}");
        // The same seed without the bug passes.
        let fixed: Vec<&str> = args[..args.len() - 2].to_vec();
        assert!(!fixed.contains(&"--plant"));
        assert!(sim(&fixed).status.success());
    }
    assert_eq!(sim(&["run", "--plant", "no-such-bug"]).status.code(), Some(2));
}

#[test]
fn plants_lists_the_catalog_and_checks_an_entry() {
    let list = sim(&["plants"]);
    let out = stdout(&list);
    assert!(list.status.success(), "{out}");
    assert!(out.contains("holdfast-fault-seam"), "the catalog names the seam:\n{out}");
    let rows: Vec<&str> = out.lines().skip(2).filter(|l| !l.trim().is_empty()).collect();
    assert!(rows.len() >= 12, "at least 12 planted bugs:\n{out}");
    for name in booking::fault::CATALOG.iter().map(|e| e.name) {
        let row =
            rows.iter().find(|r| r.split_whitespace().next() == Some(name)).unwrap_or_else(|| panic!("{name} listed"));
        let entry = booking::fault::Plant::parse(name).unwrap().entry();
        assert!(row.contains(entry.scenario) && row.contains(entry.invariant), "{row}");
        assert!(scenarios::find(entry.scenario).is_some(), "{name} names a library scenario");
    }
    // One entry proved end to end (ci/test proves them all on the release build).
    let check = sim(&["plants", "--check", "--plant", "checkout-ignores-token"]);
    let out = stdout(&check);
    assert!(check.status.success(), "{out}");
    assert!(out.starts_with("ok   checkout-ignores-token"), "{out}");
}

/// A fault that silently stops firing turns the run red: alice-bob declares
/// `stale-token-replayed`, so muting its stale-token fault fails the scenario.
#[test]
fn muting_a_declared_fault_fails_its_scenario() {
    let ok = sim(&["run", "--scenario", "alice-bob-stale-token"]);
    assert!(ok.status.success(), "{}", stdout(&ok));
    let muted = sim(&["run", "--scenario", "alice-bob-stale-token", "--mute", "stale_token"]);
    let out = stdout(&muted);
    assert_eq!(muted.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL alice-bob-stale-token: `stale-token-replayed` never happened in 20 seeds"), "{out}");
    // Every seed itself passed: only the declaration caught it.
    assert!(out.contains("20 passed, 0 failed"), "{out}");
    // A narrower seed range judges no declaration (a rare path may miss a few seeds).
    assert!(
        sim(&["run", "--scenario", "alice-bob-stale-token", "--seeds", "0..2", "--mute", "stale_token"])
            .status
            .success()
    );
}

/// Regression: a store assertion inside a world ended the seed's
/// process without a verdict. Postmortem: the panic unwound through turmoil
/// and the runner saw only a dead child; now the world notes the first panic
/// and the seed fails with a named `panic` verdict and its replay line.
/// (The store assertion that found it is a named store error now, as in
/// PgStore; the harness's self-test panic stands in for it.)
#[test]
fn a_panic_in_the_world_is_a_named_verdict() {
    let panicking = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_simulator"))
            .args(args)
            .env(simulator::world::SELF_TEST_PANIC_VAR, "4000")
            .output()
            .expect("simulator runs")
    };
    let run = panicking(&["run", "--scenario", "all-faults", "--seeds", "0..1"]);
    let out = stdout(&run);
    assert_eq!(run.status.code(), Some(1), "{out}");
    assert!(
        out.contains("panic: harness self-test: a panic inside the world at 4000 ms at simulator/src/world/build.rs:"),
        "{out}"
    );
    assert!(!out.contains("without a verdict"), "{out}");
    let args = replay_args(&out);
    let dir = std::env::temp_dir().join(format!("holdfast-panic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.jsonl");
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--trace", trace.to_str().unwrap()]);
    let replay = panicking(&args);
    let replay_out = stdout(&replay);
    assert_eq!(replay.status.code(), Some(1), "{replay_out}");
    assert!(replay_out.contains("\npanic: harness self-test"), "{replay_out}");
    let events = invariants::trace::from_json_lines(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert!(events.len() > 100, "the trace up to the panic is kept: {} events", events.len());
}

#[test]
fn usage_errors_exit_2_and_list_names_every_scenario() {
    assert_eq!(sim(&["run", "--scenario", "no-such-scenario"]).status.code(), Some(2));
    assert_eq!(sim(&["run", "--seeds", "5..1"]).status.code(), Some(2));
    assert_eq!(sim(&["bogus"]).status.code(), Some(2));
    let list = stdout(&sim(&["list"]));
    // The scenarios crate's own test pins the required names; here: `list` shows every one.
    for scenario in scenarios::library() {
        let name = scenario.name.as_str();
        assert!(list.lines().any(|l| l.split_whitespace().next() == Some(name)), "list lacks {name}");
    }
}

#[test]
fn json_output_carries_verdicts_metrics_and_a_summary() {
    let o = sim(&["run", "--scenario", "alice-bob-stale-token", "--seeds", "0..2", "--json"]);
    assert!(o.status.success());
    let lines: Vec<serde_json::Value> =
        stdout(&o).lines().map(|l| serde_json::from_str(l).expect("every line is JSON")).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["seed_verdict"]["seed"], 0);
    assert!(lines[0]["seed_verdict"]["metrics"]["holds_acquired"].as_u64().unwrap() >= 1, "{}", lines[0]);
    assert_eq!(lines[2]["summary"]["passed"], 2);
    // Alice and Bob: seat maps, holds, checkouts, order polls, the provider's calls and webhooks.
    let exchanges = lines[0]["seed_verdict"]["http_exchanges"].as_u64().unwrap();
    assert!((10..1_000).contains(&exchanges), "{}", lines[0]);
    assert!(lines[2]["summary"]["http_exchanges_per_seed"].as_f64().unwrap() >= 10.0);
}

#[test]
fn scenario_files_outside_the_library_run_and_replay() {
    let dir = std::env::temp_dir().join(format!("holdfast-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mine.toml");
    let text = scenarios::find("alice-bob-stale-token")
        .map(|_| include_str!("../../scenarios/library/alice-bob-stale-token.toml"))
        .unwrap();
    std::fs::write(&path, text.replace("name = \"alice-bob-stale-token\"", "name = \"mine\"")).unwrap();
    let p = path.to_str().unwrap();
    let o = sim(&["run", "--scenario-file", p, "--seed", "1"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, text.replace("[workload]", "[workload]\nbogus = 1")).unwrap();
    let o = sim(&["run", "--scenario-file", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bogus"), "the error names the unknown key");
}

/// Regression (found 2026-11-30): `run --check-determinism --jobs 2` failed on
/// crash scenarios while `replay` agreed with itself. Postmortem: tokio numbers
/// tasks from one process-wide counter and a crashed host's runtime drops its
/// tasks in an order set by those numbers, so worlds sharing a process closed
/// connections in different orders; now every seed runs in its own process.
/// Also: a seed `run` reports must hash exactly as its `replay` line does.
#[test]
fn run_agrees_with_itself_and_with_replay_on_crash_scenarios() {
    let out = sim(&[
        "run",
        "--json",
        "--check-determinism",
        "--scenario",
        "crash-after-commit",
        "--seeds",
        "0..4",
        "--jobs",
        "2",
    ]);
    assert!(out.status.success(), "{}", stdout(&out));
    let verdicts: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("one JSON object per line"))
        .filter_map(|v| v.get("seed_verdict").cloned())
        .collect();
    assert_eq!(verdicts.len(), 4);
    for v in verdicts.iter().take(2) {
        let seed = v["seed"].to_string();
        let replayed = sim(&["replay", "--scenario", "crash-after-commit", "--seed", &seed]);
        assert_eq!(v["trace_hash"].as_str().unwrap(), trace_hash(&replayed), "seed {seed}: run and replay differ");
    }
}

/// Regression (found while measuring connection costs): every user of a world
/// dialing one service host in the same tick panicked turmoil ("server socket
/// buffer full": its listener backlog defaults to 64 and it panics rather than
/// refuse). Worlds now size the backlog from the user count, and
/// `opening-burst` (500 users in the first 20 ms) keeps the shape in the library.
#[test]
fn an_opening_burst_fits_the_listener_backlog() {
    let out = sim(&["run", "--json", "--scenario", "opening-burst", "--seeds", "0..1", "--jobs", "1"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    let verdict: serde_json::Value = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()?.get("seed_verdict").cloned())
        .next()
        .expect("a verdict");
    assert_eq!(verdict["passed"], true);
    let sold = verdict["metrics"]["seats_sold"].as_u64().expect("seats sold");
    assert!(sold >= 90, "a burst of 500 users on 100 seats sells nearly all of them: {sold}");
}

#[test]
fn fail_fast_stops_after_the_first_failing_scenario_and_names_the_rest() {
    let run = sim(&["run", "--seeds", "0..1", "--plant", "unconditional-checkout", "--fail-fast"]);
    let out = stdout(&run);
    assert_eq!(run.status.code(), Some(1), "{out}");
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL ")).collect();
    assert_eq!(failed.len(), 1, "one failing scenario, then the stop: {out}");
    let rest = out.lines().find_map(|l| l.strip_prefix("--fail-fast: not run: ")).expect("the scenarios not run");
    assert!(rest.split(", ").any(|s| s == "swarm"), "{rest}");
    assert!(!out.contains("FAIL swarm"), "{out}");
}

/// The seeds a `--json` run reported, in order.
fn seeds_run(o: &Output) -> Vec<u64> {
    stdout(o)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["seed_verdict"]["seed"].as_u64())
        .collect()
}

#[test]
fn shards_are_disjoint_and_cover_the_seeds() {
    let mut all = Vec::new();
    for i in 1..=3 {
        let shard = format!("{i}/3");
        let o = sim(&["run", "--scenario", "same-seat-race", "--seeds", "0..10", "--shard", &shard, "--json"]);
        assert!(o.status.success(), "{}", stdout(&o));
        let seeds = seeds_run(&o);
        assert!(!seeds.is_empty() && seeds.iter().all(|s| !all.contains(s)), "shard {shard}: {seeds:?}");
        all.extend(seeds);
    }
    all.sort_unstable();
    assert_eq!(all, (0..10).collect::<Vec<u64>>());
    for bad in ["0/3", "4/3", "1/0", "x/2", "2"] {
        let o = sim(&["run", "--scenario", "same-seat-race", "--shard", bad]);
        assert_eq!(o.status.code(), Some(2), "--shard {bad}");
    }
}

/// A file name in the temp dir, unique to this test process.
fn temp_file(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("holdfast-{}-{name}", std::process::id()))
}

/// The text of `path` (which must exist), removed afterwards.
fn read_and_remove(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).expect("the file was written");
    let _ = std::fs::remove_file(path);
    text
}

#[test]
fn junit_has_a_case_per_seed_and_each_failure_carries_its_replay_line() {
    let path = temp_file("junit.xml");
    let file = path.to_str().expect("a UTF-8 temp path");
    let o = sim(&[
        "run",
        "--scenario",
        "alice-bob-stale-token",
        "--plant",
        "checkout-ignores-token",
        "--seeds",
        "0..4",
        "--junit",
        file,
    ]);
    assert_eq!(o.status.code(), Some(1), "the planted bug fails: {}", stdout(&o));
    let xml = read_and_remove(&path);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites"), "{xml}");
    assert_eq!(
        xml.matches("<testcase ").count(),
        4,
        "one case per seed (the seeds do not cover the default range, so no must_happen case): {xml}"
    );
    assert_eq!(xml.matches("<testsuite ").count(), xml.matches("</testsuite>").count());
    let failures = xml.matches("<failure ").count();
    assert!(failures >= 1, "{xml}");
    assert_eq!(
        xml.matches("replay: cargo run --release -p simulator -- replay --scenario alice-bob-stale-token --seed ")
            .count(),
        2 * failures,
        "each failure names its replay line in its message and its body: {xml}"
    );
    assert!(xml.contains("tests=\"4\"") && xml.contains(&format!("failures=\"{failures}\"")), "{xml}");
    // A passing run over the default seeds also judges the declared paths.
    let path = temp_file("junit-ok.xml");
    let o = sim(&["run", "--scenario", "same-seat-race", "--junit", path.to_str().unwrap()]);
    assert!(o.status.success());
    let xml = read_and_remove(&path);
    assert!(xml.contains("name=\"expect.must_happen\"") && !xml.contains("<failure"), "{xml}");
}

#[test]
fn a_time_budget_runs_fresh_seeds_from_a_printed_base_and_its_failures_replay() {
    let o = sim(&[
        "run",
        "--scenario",
        "alice-bob-stale-token",
        "--plant",
        "checkout-ignores-token",
        "--time-budget",
        "2s",
        "--base-seed",
        "1000",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.starts_with("time-budget: 2 s from base seed 1000 over 1 scenarios"), "{out}");
    let replay = out.lines().find_map(|l| l.trim().strip_prefix("replay: ")).expect("a failure's replay line");
    let args: Vec<&str> = replay
        .strip_prefix("cargo run --release -p simulator -- ")
        .expect("a cargo command")
        .split_whitespace()
        .collect();
    let seed: u64 = args[args.iter().position(|a| *a == "--seed").unwrap() + 1].parse().unwrap();
    assert!(seed >= 1000, "a fresh seed from the base: {seed}");
    let again = sim(&args);
    assert!(stdout(&again).contains("verdict: fail"), "the replay line reproduces it");
    assert!(out.lines().last().unwrap().ends_with(" failed"), "{out}");
    let bad = sim(&["run", "--time-budget", "10x"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// The workflow recipe (`ci/github-actions.yml`) as a dry run: every
/// simulator command it runs is accepted by this binary and writes its JUnit
/// file (matrix values substituted; seeds, budget and scenarios shrunk so the
/// run is short; the flags are the recipe's own).
#[test]
fn the_ci_workflow_s_commands_run() {
    let workflow = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ci/github-actions.yml"))
        .expect("the workflow recipe");
    let prefix = "cargo run --release -p simulator -- ";
    let commands: Vec<&str> = workflow
        .lines()
        .filter_map(|l| l.trim().strip_prefix("run: "))
        .filter_map(|c| c.strip_prefix(prefix))
        .map(|c| c.split(" | ").next().unwrap())
        .collect();
    let (soaks, commands): (Vec<&str>, Vec<&str>) = commands.into_iter().partition(|c| c.starts_with("chaos "));
    assert_eq!(commands.len(), 3, "library, shards and nightly: {commands:?}");
    assert_eq!(soaks.len(), 1, "the nightly chaos soak: {soaks:?}");
    let dir = std::env::temp_dir().join(format!("holdfast-workflow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The soak, shrunk to one short run of one scenario.
    let soak = soaks[0].replace("30m", "1s").replace("chaos-nightly", dir.join("chaos").to_str().unwrap());
    let mut args: Vec<&str> = soak.split_whitespace().collect();
    args.extend(["--scenario", "paused-clients", "--duration-ms", "1000"]);
    let o = Command::new(env!("CARGO_BIN_EXE_simulator")).args(&args).output().expect("simulator runs");
    assert!(o.status.success() && stdout(&o).contains("resources after run 1:"), "{args:?}: {}", stdout(&o));
    for c in commands {
        let c = c.replace("${{ matrix.shard }}", "2").replace("--seeds 0..200", "--seeds 0..4").replace("60m", "1s");
        let mut args: Vec<String> = c.split_whitespace().map(String::from).collect();
        let junit = args.iter().position(|a| a == "--junit").expect("every job writes JUnit") + 1;
        let file = dir.join(&args[junit]);
        args[junit] = file.to_str().unwrap().to_string();
        args.extend(["--scenario".to_string(), "same-seat-race".to_string()]);
        let o = Command::new(env!("CARGO_BIN_EXE_simulator")).args(&args).output().expect("simulator runs");
        assert!(o.status.success(), "{args:?}: {}", stdout(&o));
        assert!(std::fs::read_to_string(&file).expect("its JUnit file").contains("<testcase "), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// How GitHub runs a `run:` step of `workflow`: `shell: bash` named in the
/// workflow's `defaults.run` runs `bash --noprofile --norc -eo pipefail {0}`;
/// an unnamed shell runs `bash -e {0}` (GitHub's documented defaults, Linux runners).
fn github_shell(workflow: &str) -> Vec<&'static str> {
    let named = workflow.lines().skip_while(|l| *l != "defaults:").take(3).any(|l| l.trim() == "shell: bash");
    if named { vec!["--noprofile", "--norc", "-eo", "pipefail"] } else { vec!["-e"] }
}

/// Runs `script` as a step file under `bash shell_args` in `dir`.
fn run_step(shell_args: &[&str], script: &str, dir: &std::path::Path) -> Output {
    let file = dir.join("step.sh");
    std::fs::write(&file, script).unwrap();
    Command::new("bash").args(shell_args).arg(&file).current_dir(dir).output().expect("bash runs")
}

/// The workflow's library step, run as GitHub runs it, with a planted bug:
/// the failing seed turns the step red, although the step pipes the
/// simulator's output through `tee`. Run as GitHub runs an unnamed shell
/// (`bash -e`, no pipefail), the same step stays green: that is what the
/// workflow's `defaults.run.shell` guards against.
#[test]
fn a_failing_seed_turns_the_workflow_s_library_step_red() {
    let workflow = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ci/github-actions.yml"))
        .expect("the workflow recipe");
    let step = workflow
        .lines()
        .filter_map(|l| l.trim().strip_prefix("run: "))
        .find(|c| c.contains("--junit junit-library.xml"))
        .expect("the library step");
    assert!(step.contains(" | tee "), "the step this guards pipes its output: {step}");
    let exe = env!("CARGO_BIN_EXE_simulator");
    let planted = format!("{exe} run --scenario alice-bob-stale-token --plant unconditional-checkout ");
    let script = step.replace("cargo run --release -p simulator -- run ", &planted);
    assert_ne!(script, step, "the step runs the simulator: {step}");
    let dir = std::env::temp_dir().join(format!("holdfast-step-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let red = run_step(&github_shell(&workflow), &script, &dir);
    assert!(!red.status.success(), "a failing seed must fail the step: {}", stdout(&red));
    assert!(stdout(&red).contains("FAIL alice-bob-stale-token"), "{}", stdout(&red));
    let unnamed = run_step(&["-e"], &script, &dir);
    assert!(unnamed.status.success(), "without pipefail `tee` hides the failure (what the test tells apart)");
    let _ = std::fs::remove_dir_all(&dir);
}
