//! Loading scenario files: the library, the README's example, and one test
//! per error kind asserting its message.

use scenarios::{FaultKind, LIBRARY_FILES, Outcome, Scenario, ScenarioError, SeedRange, find, library};
use std::collections::BTreeSet;

const README: &str = include_str!("../README.md");

/// The README's example: the first ```toml block.
fn readme_example() -> &'static str {
    let start = README.find("```toml\n").expect("README has a toml block") + "```toml\n".len();
    let len = README[start..].find("```").expect("closed block");
    &README[start..start + len]
}

fn err(text: &str) -> String {
    Scenario::parse(text, "my.toml").expect_err("must be refused").to_string()
}

/// The README example with `from` replaced by `to` (asserting `from` is there).
fn example_with(from: &str, to: &str) -> String {
    let ex = readme_example();
    assert!(ex.contains(from), "example lacks {from:?}");
    ex.replacen(from, to, 1)
}

#[test]
fn every_library_file_loads_with_a_unique_name_matching_its_file() {
    let all = library();
    assert_eq!(all.len(), LIBRARY_FILES.len());
    let mut names = BTreeSet::new();
    for (s, (file, _)) in all.iter().zip(LIBRARY_FILES) {
        assert_eq!(format!("{}.toml", s.name), *file);
        assert_eq!(s.origin, format!("library:{file}"));
        assert!(names.insert(s.name.clone()), "duplicate {}", s.name);
        assert!(!s.default_seeds().is_empty() && s.default_seeds().len() <= 50);
    }
    let on_disk: BTreeSet<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/library"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let embedded: BTreeSet<String> = LIBRARY_FILES.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(on_disk, embedded, "every library file must be embedded in LIBRARY_FILES");
}

#[test]
fn the_library_has_the_required_scenarios() {
    for name in [
        "alice-bob-stale-token",
        "same-seat-race",
        "adjacent-seats",
        "paused-clients",
        "stale-token-replay",
        "payment-unknown",
        "late-success-after-release",
        "refund-failures",
        "crash-after-commit",
        "duplicate-webhooks",
        "network-partitions",
        "clock-skew",
        "hot-seat",
        "abandoned-holds",
        "broken-expiry",
        "swarm",
        "all-faults",
    ] {
        assert!(find(name).is_some(), "missing {name}");
    }
    assert!(find("nope").is_none());
    let broken = find("broken-expiry").unwrap();
    assert_eq!(broken.expect.outcome, Outcome::Fail);
    assert_eq!(broken.expect.violations, vec!["hold-reclaimed".to_string()]);
    assert_eq!(broken.expect.classification.as_deref(), Some("broken-expiry"));
    let all = find("all-faults").unwrap();
    assert_eq!(
        all.faults.kinds(),
        vec![
            FaultKind::PausedClient,
            FaultKind::StaleToken,
            FaultKind::DelayedCallback,
            FaultKind::CrashAfterCommit,
            // Late successes: a delayed callback is only a callback held back.
            FaultKind::Provider,
        ]
    );
    let hot = find("hot-seat").unwrap();
    assert!(hot.workload.users >= 1000 && hot.workload.seats_per_event == 10);
    let swarm = find("swarm").unwrap();
    assert!(swarm.swarm);
    assert_eq!(swarm.faults.kinds(), kinds_without_a_room());
}

#[test]
fn the_readme_example_parses_and_sets_every_key() {
    let s = Scenario::parse(readme_example(), "README.md").unwrap();
    assert_eq!(s.name, "my-flash-sale");
    assert_eq!(s.faults.kinds(), kinds_without_a_room(), "the example must configure every fault it can");
    assert!(s.expect.classification.is_some());
    assert_eq!(s.default_seeds(), SeedRange { start: 0, end: 20 });
    // Every key of the format is documented in the README's key table.
    let value = toml::Value::try_from(&s).unwrap();
    let mut keys = Vec::new();
    key_paths(&value, "", &mut keys);
    assert!(keys.len() > 40, "{keys:?}");
    for k in keys {
        assert!(README.contains(&format!("| `{k}` |")), "README's key table lacks `{k}`");
    }
}

/// Every fault kind a scenario without a `[waiting_room]` can configure
/// (swarm scenarios cannot have one).
fn kinds_without_a_room() -> Vec<FaultKind> {
    FaultKind::ALL.iter().copied().filter(|k| *k != FaultKind::RoomsLost).collect()
}

/// Dotted paths of the leaves of `v` (a `{ min, max }` range counts as one leaf).
fn key_paths(v: &toml::Value, prefix: &str, out: &mut Vec<String>) {
    match v.as_table() {
        Some(t) if !(t.len() == 2 && t.contains_key("min") && t.contains_key("max")) => {
            for (k, v) in t {
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                key_paths(v, &p, out);
            }
        }
        _ => out.push(prefix.to_string()),
    }
}

#[test]
fn swarm_faults_vary_by_seed_and_plain_faults_do_not() {
    let swarm = find("swarm").unwrap();
    assert_eq!(swarm.faults_for_seed(3), swarm.faults_for_seed(3));
    let mixes: BTreeSet<Vec<FaultKind>> = (0..32).map(|s| swarm.faults_for_seed(s).kinds()).collect();
    assert!(mixes.len() > 8, "{} mixes", mixes.len());
    for seed in 0..32 {
        let f = swarm.faults_for_seed(seed);
        if let (Some(p), Some(base)) = (&f.paused_client, &swarm.faults.paused_client) {
            assert!(p.probability <= base.probability && p.probability >= base.probability * 0.25);
        }
    }
    let plain = find("all-faults").unwrap();
    assert_eq!(plain.faults_for_seed(1), plain.faults);
}

#[test]
fn load_reads_a_file_and_reports_missing_ones() {
    let dir = std::env::temp_dir().join(format!("holdfast-scenarios-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mine.toml");
    std::fs::write(&path, readme_example()).unwrap();
    let s = Scenario::load(&path).unwrap();
    assert_eq!(s.origin, path.display().to_string());
    let missing = dir.join("absent.toml");
    let e = Scenario::load(&missing).unwrap_err();
    assert!(matches!(e, ScenarioError::Io { .. }));
    assert!(e.to_string().starts_with(&format!("{}: cannot read: ", missing.display())), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_key_names_its_path() {
    assert_eq!(err(&example_with("hot_seats = 10", "hot_sets = 10")), "my.toml: unknown key `workload.hot_sets`");
    assert_eq!(
        err(&example_with("[faults.stale_token]\nprobability", "[faults.stale_token]\nprobabilty")),
        "my.toml: unknown key `faults.stale_token.probabilty`"
    );
    assert_eq!(err(&example_with("swarm = false", "swarm = false\ncolour = 1")), "my.toml: unknown key `colour`");
    assert_eq!(
        err(&example_with("[faults.clock_skew]", "[faults.clock_skews]")),
        "my.toml: unknown key `faults.clock_skews`"
    );
}

#[test]
fn missing_key_names_its_path() {
    assert_eq!(err(&example_with("users = 400\n", "")), "my.toml: missing key `workload.users`");
    assert_eq!(err(&example_with("[seeds]\ndefault = \"0..20\"\n", "")), "my.toml: missing key `seeds`");
}

#[test]
fn wrong_type_or_enum_value_is_a_bad_value() {
    let e = err(&example_with("users = 400", "users = \"many\""));
    assert!(e.starts_with("my.toml: `workload.users`: invalid type: string \"many\""), "{e}");
    let e = err(&example_with("outcome = \"pass\"", "outcome = \"maybe\""));
    assert!(e.starts_with("my.toml: `expect.outcome`: unknown variant `maybe`"), "{e}");
}

#[test]
fn syntax_error_gives_line_and_column() {
    let e = err("name = \"x\"\ndescription = \n");
    assert!(e.starts_with("my.toml:2:"), "{e}");
    assert!(e.contains("TOML syntax error"), "{e}");
}

#[test]
fn out_of_range_probability_names_its_path() {
    assert_eq!(
        err(&example_with("error_rate = 0.05", "error_rate = 1.5")),
        "my.toml: `faults.provider.error_rate` = 1.5: a probability must be within 0.0..=1.0"
    );
    assert_eq!(
        err(&example_with("hot_share = 0.6", "hot_share = -0.1")),
        "my.toml: `workload.hot_share` = -0.1: a probability must be within 0.0..=1.0"
    );
    assert_eq!(
        err(&example_with("hot_share = 0.6", "hot_share = nan")),
        "my.toml: `workload.hot_share` = NaN: a probability must be within 0.0..=1.0"
    );
}

#[test]
fn bad_duration_names_its_path() {
    assert_eq!(
        err(&example_with("hold_ttl_ms = 10000", "hold_ttl_ms = 0")),
        "my.toml: `workload.hold_ttl_ms` = 0: bad duration: must be within 1..=3600000 ms"
    );
    assert_eq!(
        err(&example_with("think_time_ms = { min = 100, max = 2000 }", "think_time_ms = { min = 3000, max = 2000 }")),
        "my.toml: `workload.think_time_ms.max` = 2000: bad duration: smaller than workload.think_time_ms.min = 3000"
    );
    assert_eq!(
        err(&example_with("arrival_ms = { min = 0, max = 500 }", "arrival_ms = { min = 0, max = -1 }")),
        "my.toml: `workload.arrival_ms.max` = -1: bad duration: must be within 0..=3600000 ms"
    );
    let absent = Scenario::parse(&example_with("arrival_ms = { min = 0, max = 500 }\n", ""), "my.toml").unwrap();
    assert_eq!(absent.workload.arrival_ms, None, "arrival_ms is optional");
    assert_eq!(
        err(&example_with("to_ms = 30000", "to_ms = 10000")),
        "my.toml: `faults.sweeper_stall.to_ms` = 10000: bad duration: must be within 10001..=86400000 ms"
    );
}

#[test]
fn out_of_range_count_names_its_path() {
    assert_eq!(
        err(&example_with("users = 400", "users = 0")),
        "my.toml: `workload.users` = 0: must be within 1..=100000"
    );
    assert_eq!(
        err(&example_with("hot_seats = 10", "hot_seats = 201")),
        "my.toml: `workload.hot_seats` = 201: must be within 0..=200"
    );
}

#[test]
fn empty_and_bad_names_are_refused() {
    assert_eq!(err(&example_with("name = \"my-flash-sale\"", "name = \"\"")), "my.toml: `name` is empty");
    assert_eq!(
        err(&example_with("name = \"my-flash-sale\"", "name = \"My Sale\"")),
        "my.toml: `name` = \"My Sale\": use 1..=64 characters of [a-z0-9-]"
    );
}

#[test]
fn bad_seed_range_is_refused() {
    assert_eq!(
        err(&example_with("default = \"0..20\"", "default = \"5..5\"")),
        "my.toml: `seeds.default` = \"5..5\": empty range: the end must be greater than the start 5"
    );
}

#[test]
fn unknown_invariant_or_classification_is_refused() {
    let e = err(&example_with(
        "outcome = \"pass\"\nviolations = []",
        "outcome = \"fail\"\nviolations = [\"hold-reclaimed\", \"no-such-thing\"]",
    ));
    assert!(
        e.starts_with("my.toml: `expect.violations[1]`: unknown name \"no-such-thing\" (known: one-booking-per-seat, "),
        "{e}"
    );
    let e = err(&example_with("classification = \"genuine-demand\"", "classification = \"busy\""));
    assert_eq!(
        e,
        "my.toml: `expect.classification`: unknown name \"busy\" (known: broken-expiry, genuine-demand, low-demand)"
    );
}

#[test]
fn contradicting_keys_are_refused() {
    assert_eq!(
        err(&example_with("violations = []", "violations = [\"hold-reclaimed\"]")),
        "my.toml: `expect.violations`: lists violations but expect.outcome is \"pass\""
    );
    assert_eq!(
        err(&example_with("abandon_share = 0.2", "abandon_share = 0.5")),
        "my.toml: `workload.abandon_share`: checkout_share + abandon_share exceed 1"
    );
    let no_faults = readme_example().split("[faults.paused_client]").next().unwrap().to_string()
        + &readme_example()[readme_example().find("[phases]").unwrap()..];
    assert!(Scenario::parse(&no_faults, "my.toml").is_ok());
    assert_eq!(
        err(&no_faults.replace("swarm = false", "swarm = true")),
        "my.toml: `swarm`: swarm = true needs at least one fault under [faults]"
    );
}

#[test]
fn commit_points_paths_tolerated_and_service_keys_are_checked() {
    let s = Scenario::parse(readme_example(), "README.md").unwrap();
    let crash = s.faults.crash_after_commit.as_ref().unwrap();
    assert_eq!(crash.points, ["checkout", "payment-outcome", "webhook", "sweep"]);
    assert!(s.faults.provider.as_ref().unwrap().lenient_refunds);
    assert_eq!(s.service.max_refund_attempts, Some(8));
    assert_eq!(s.expect.must_happen, ["crash-after-commit", "stale-token-refused", "refund-succeeded"]);
    // Omitted: crashes strike after checkouts only, the provider is strict, the service keeps its defaults.
    let plain = example_with("points = [\"checkout\", \"payment-outcome\", \"webhook\", \"sweep\"]\n", "");
    let plain = Scenario::parse(
        &plain.replace("lenient_refunds = true\n", "").replace("[service]\nmax_refund_attempts = 8\n", ""),
        "my.toml",
    )
    .unwrap();
    assert_eq!(plain.faults.crash_after_commit.unwrap().points, ["checkout"]);
    assert!(!plain.faults.provider.unwrap().lenient_refunds);
    assert_eq!(plain.service.max_refund_attempts, None);

    let e = err(&example_with("\"webhook\", \"sweep\"]", "\"webhook\", \"swept\"]"));
    assert!(
        e.starts_with("my.toml: `faults.crash_after_commit.points[3]`: unknown name \"swept\" (known: hold, "),
        "{e}"
    );
    assert_eq!(
        err(&example_with("points = [\"checkout\", \"payment-outcome\", \"webhook\", \"sweep\"]", "points = []")),
        "my.toml: `faults.crash_after_commit.points`: names no commit point"
    );
    let e = err(&example_with("\"refund-succeeded\"]", "\"refund-sucseeded\"]"));
    assert!(
        e.starts_with("my.toml: `expect.must_happen[2]`: unknown name \"refund-sucseeded\" (known: client-paused, "),
        "{e}"
    );
    assert_eq!(
        err(&example_with("violations = []", "violations = []\ntolerated = [\"hold-reclaimed\"]")),
        "my.toml: `expect.tolerated`: lists violations but expect.outcome is \"pass\""
    );
    let e = err(&example_with("max_refund_attempts = 8", "max_refund_attempts = 0"));
    assert!(e.starts_with("my.toml: `service.max_refund_attempts` = 0: must be within 1..=100"), "{e}");
}

/// Pinned faults (a capsule's explicit schedule) are checked like every
/// other key: inside the fault phase, on links of this world, known modes,
/// cache faults one at a time; and they survive writing and reading back.
#[test]
fn pinned_faults_are_validated_and_round_trip() {
    let base = find("network-partitions").expect("a library scenario with link faults");
    let with = |links: &str, cache: &str| {
        let mut text = base.to_toml().expect("writes");
        text = text.replacen("[faults.network]\n", &format!("[faults.network]\npinned = {links}\n"), 1);
        if !cache.is_empty() {
            text.push_str(&format!(
                "\n[faults.cache]\nprobability = 0.0\nlength_ms = 1000\nmodes = [\"down\"]\npinned = {cache}\n"
            ));
        }
        text
    };
    let ok = with(
        r#"[{ start_ms = 100, end_ms = 900, a = "client0", b = "svc1", mode = "held" }, { start_ms = 5, end_ms = 6, a = "svc0", b = "provider", mode = "cut" }]"#,
        r#"[{ start_ms = 0, end_ms = 1000, mode = "stale" }, { start_ms = 1000, end_ms = 2000, mode = "poisoned" }]"#,
    );
    let s = Scenario::parse(&ok, "pinned.toml").expect("valid pinned faults");
    assert_eq!(s.faults.network.as_ref().unwrap().pinned.as_ref().unwrap().len(), 2);
    assert_eq!(Scenario::parse(&s.to_toml().unwrap(), "again.toml").unwrap().faults, s.faults);
    let cases = [
        (r#"[{ start_ms = 100, end_ms = 100, a = "client0", b = "svc0", mode = "cut" }]"#, "", "pinned[0].end_ms"),
        (r#"[{ start_ms = 0, end_ms = 999999999, a = "client0", b = "svc0", mode = "cut" }]"#, "", "pinned[0].end_ms"),
        (r#"[{ start_ms = 0, end_ms = 10, a = "client9", b = "svc0", mode = "cut" }]"#, "", "not a link"),
        (r#"[{ start_ms = 0, end_ms = 10, a = "svc0", b = "client0", mode = "cut" }]"#, "", "not a link"),
        (r#"[{ start_ms = 0, end_ms = 10, a = "svc00", b = "provider", mode = "cut" }]"#, "", "not a link"),
        (r#"[{ start_ms = 0, end_ms = 10, a = "svc0", b = "provider", mode = "slow" }]"#, "", "pinned[0].mode"),
        (
            "[]",
            r#"[{ start_ms = 0, end_ms = 1000, mode = "down" }, { start_ms = 500, end_ms = 800, mode = "stale" }]"#,
            "one at a time",
        ),
        ("[]", r#"[{ start_ms = 0, end_ms = 1000, mode = "gone" }]"#, "pinned[0].mode"),
    ];
    for (links, cache, needle) in cases {
        let e = err(&with(links, cache));
        assert!(e.contains(needle), "{links} {cache}: {e}");
    }
}
