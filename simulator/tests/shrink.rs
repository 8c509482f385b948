//! `simulator shrink`: for planted bugs whose failing seeds run
//! fast, the capsule fails with the same invariant through the CLI, has at
//! least ten times fewer trace events than the original seed, and replays
//! deterministically.

use std::process::Command;

const SIMULATOR: &str = env!("CARGO_BIN_EXE_simulator");

/// (scenario, seed, plant, the invariant its catalog entry names).
const CASES: &[(&str, u64, &str, &str)] = &[
    ("payment-unknown", 0, "unknown-releases-at-once", "unknown-keeps-seats"),
    ("abandoned-holds", 0, "sweep-early", "no-stale-authority"),
    ("crash-after-commit", 0, "checkout-ignores-state", "one-booking-per-seat"),
];

fn simulator(args: &[&str]) -> (i32, String) {
    let out = Command::new(SIMULATOR).args(args).output().expect("the simulator runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The value of the `key: value` line of `text`.
fn field<'a>(text: &'a str, key: &str) -> &'a str {
    let prefix = format!("{key}: ");
    text.lines().find_map(|l| l.strip_prefix(prefix.as_str())).unwrap_or_else(|| panic!("no {key} in:\n{text}"))
}

#[test]
fn shrinking_planted_bugs_gives_small_capsules_that_fail_the_same_way_every_time() {
    let dir = std::env::temp_dir().join(format!("holdfast-shrink-test-{}", std::process::id()));
    for (scenario, seed, plant, invariant) in CASES {
        let capsule = dir.join(format!("{scenario}-{seed}-{plant}.toml"));
        let capsule = capsule.to_str().expect("utf-8 path");
        let seed = seed.to_string();
        let (code, out) = simulator(&[
            "shrink",
            "--scenario",
            scenario,
            "--seed",
            &seed,
            "--plant",
            plant,
            "--out",
            capsule,
            "--max-runs",
            "150",
        ]);
        assert_eq!(code, 0, "{scenario}/{plant}:\n{out}");
        assert!(
            out.starts_with(&format!("shrink {scenario} seed {seed} --plant {plant}: fails with {invariant}\n")),
            "{out}"
        );
        // trace-events: A -> B (R x fewer)
        let figures: Vec<u64> = field(&out, "trace-events")
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .take(2)
            .map(|n| n.parse().expect("a count"))
            .collect();
        assert!(figures[0] >= 10 * figures[1], "{scenario}/{plant}: not 10x fewer trace events:\n{out}");
        assert_eq!(
            field(&out, "replay"),
            format!("cargo run --release -p simulator -- run --scenario-file {capsule} --seed {seed} --plant {plant}")
        );
        let text = std::fs::read_to_string(capsule).expect("the capsule is written");
        assert!(text.contains("outcome = \"pass\""), "the capsule expects the promise:\n{text}");
        assert!(text.contains(&format!("--plant {plant}")), "the header names the plant:\n{text}");

        // (a) Through the CLI, the capsule fails with that invariant, and
        // `replay` shows it.
        let (code, out) = simulator(&["run", "--scenario-file", capsule, "--seed", &seed, "--plant", plant]);
        assert_eq!(code, 1, "{scenario}/{plant}: the capsule does not fail:\n{out}");
        assert!(out.contains(invariant), "{scenario}/{plant}: the capsule fails otherwise:\n{out}");
        // (b) and (c): small, and the same trace twice.
        let mut hashes = Vec::new();
        for _ in 0..2 {
            let (_, out) = simulator(&["replay", "--scenario-file", capsule, "--seed", &seed, "--plant", plant]);
            assert!(out.lines().any(|l| l.starts_with(&format!("violation: {invariant} "))), "{out}");
            assert_eq!(field(&out, "trace-events").parse::<u64>().expect("a count"), figures[1], "{out}");
            hashes.push(field(&out, "trace-hash").to_string());
            assert!(out.trim_end().lines().last().is_some_and(|l| l.starts_with("trace-hash: ")), "{out}");
        }
        assert_eq!(hashes[0], hashes[1], "{scenario}/{plant}: the capsule does not replay deterministically");
        // Without the bug the capsule passes: it is a regression test to keep.
        let (code, out) = simulator(&["run", "--scenario-file", capsule, "--seed", &seed]);
        assert_eq!(code, 0, "{scenario}/{plant}: the capsule fails even without the bug:\n{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_passing_seed_has_nothing_to_shrink_and_bad_usage_exits_2() {
    let (code, out) =
        simulator(&["shrink", "--scenario", "same-seat-race", "--seed", "0", "--out", "/dev/null/x.toml"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("does not fail"), "{out}");
    let (code, _) = simulator(&["shrink", "--scenario", "no-such-scenario", "--seed", "0"]);
    assert_eq!(code, 2);
    let (code, _) = simulator(&["shrink", "--seed", "0"]);
    assert_eq!(code, 2);
}

/// Pinning the fault schedule changes nothing about the run: a scenario with
/// the link faults its seed draws written in as `faults.network.pinned`
/// replays the same trace as the scenario that draws them; and a pinned list
/// is obeyed as written (dropping every pinned fault changes the run).
#[test]
fn a_pinned_fault_schedule_replays_the_drawn_one_exactly() {
    let dir = std::env::temp_dir().join(format!("holdfast-pin-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let library = scenarios::library();
    let original = library.iter().find(|s| s.name == "network-partitions").expect("the library scenario");
    for seed in [0u64, 3] {
        let (pinned, what) = simulator::shrink::pinned::pin(original, seed).expect("link faults to pin");
        let links = pinned.faults.network.as_ref().and_then(|n| n.pinned.clone()).expect("pinned");
        assert!(!links.is_empty(), "seed {seed} draws link faults ({what})");
        let file = dir.join(format!("pinned-{seed}.toml"));
        std::fs::write(&file, pinned.to_toml().expect("writes")).expect("written");
        let file = file.to_str().expect("utf-8 path");
        let seed_s = seed.to_string();
        let (_, drawn) = simulator(&["replay", "--scenario", "network-partitions", "--seed", &seed_s]);
        let (_, as_pinned) = simulator(&["replay", "--scenario-file", file, "--seed", &seed_s]);
        assert_eq!(field(&drawn, "trace-hash"), field(&as_pinned, "trace-hash"), "seed {seed}: {what}");
        // The plan printed from the pinned file lists the same link faults.
        let (_, plan_drawn) = simulator(&["replay", "--scenario", "network-partitions", "--seed", &seed_s, "--plan"]);
        let (_, plan_pinned) = simulator(&["replay", "--scenario-file", file, "--seed", &seed_s, "--plan"]);
        let links_of =
            |p: &str| p.lines().filter(|l| l.trim_start().starts_with("link ")).map(String::from).collect::<Vec<_>>();
        assert_eq!(links_of(&plan_drawn), links_of(&plan_pinned));
        // Emptied, the pinned list is obeyed: no link fault strikes.
        let mut none = pinned.clone();
        none.faults.network.as_mut().expect("network").pinned = Some(Vec::new());
        let empty = dir.join(format!("pinned-none-{seed}.toml"));
        std::fs::write(&empty, none.to_toml().expect("writes")).expect("written");
        let (_, plan_none) =
            simulator(&["replay", "--scenario-file", empty.to_str().unwrap(), "--seed", &seed_s, "--plan"]);
        assert!(links_of(&plan_none).is_empty(), "{plan_none}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
