//! Chaos mode as users run it, on the real stack (PostgreSQL and Redis of
//! `ci/test`, `bookingd` and `fake-provider` processes): a planted bug in the
//! checkout condition is reported from the client history and as a double
//! sale found in the PostgreSQL tables, a planted bug in the payment path as a
//! hidden charge found in the tables and the provider's ledger, and each
//! failing run names its records and its rerun line.

use std::process::{Command, Output};

/// `simulator chaos ARGS`, with a 4 s flow window unless `args` name one.
/// A failing run on a server of the caller's (`--database-url`) keeps its
/// database for inspection; these tests read only what the run printed and
/// wrote, so every database it kept is dropped. (On chaos mode's own server,
/// the default, nothing is kept: the server goes with the command.)
fn chaos(args: &[&str]) -> Output {
    let out_dir = std::env::temp_dir().join(format!("holdfast-chaos-test-{}", std::process::id()));
    let window: &[&str] = if args.contains(&"--duration-ms") { &[] } else { &["--duration-ms", "4000"] };
    let out = Command::new(env!("CARGO_BIN_EXE_simulator"))
        .arg("chaos")
        .args(window)
        .arg("--out")
        .arg(&out_dir)
        .args(args)
        .output()
        .expect("simulator runs");
    drop_kept_databases(&out);
    out
}

/// Drops every database the run's output says it kept (`kept database NAME
/// for inspection`).
fn drop_kept_databases(out: &Output) {
    let kept: Vec<String> = stdout(out)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("kept database ")?.split_whitespace().next().map(str::to_string))
        .filter(|name| {
            name.starts_with("holdfast_chaos_") && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
        .collect();
    if kept.is_empty() {
        return;
    }
    let url = test_services::postgres_url();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        use sqlx::Connection;
        let mut admin = sqlx::PgConnection::connect(&url).await.expect("the test server");
        for name in kept {
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
                .execute(&mut admin)
                .await
                .expect("drop a kept database");
        }
    });
}

/// A planted run of `scenario` over `seeds` (`--seed N` or `--seeds A..B`),
/// with `extra` arguments: the plant keeps some order open, so the settle
/// phase is cut short.
fn planted(scenario: &str, seeds: [&str; 2], plant: &str, extra: &[&str]) -> Output {
    let base = ["--scenario", scenario, seeds[0], seeds[1], "--plant", plant, "--settle-max-ms", "5000"];
    chaos(&[&base[..], extra].concat())
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn planted_unconditional_checkout_is_reported_as_a_stale_authorization() {
    let o = planted("paused-clients", ["--seed", "0"], "unconditional-checkout", &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "a violation fails the run:\n{out}");
    assert!(out.contains("FAIL"), "{out}");
    assert!(out.contains("violation: no-stale-authority (client history)"), "{out}");
    assert!(out.contains("a checkout of a hold past its lifetime"), "{out}");
    assert!(
        out.contains("simulator chaos --scenario paused-clients --seed 0 --plant unconditional-checkout"),
        "the rerun line: {out}"
    );
    assert!(out.contains("may pass"), "says a chaos seed may not replay exactly: {out}");
    let records = out.lines().find_map(|l| l.trim().strip_prefix("records: ")).expect("records line");
    for f in ["faults.json", "history.json", "tables.json", "ledger.json", "verdict.json", "bookingd-0.log"] {
        assert!(std::path::Path::new(records).join(f).exists(), "{records}/{f}");
    }
}

/// `payment-unknown` with every payment callback held back 3 s: a lost
/// answer (the provider charged, its 500 reached the dispatcher) is always
/// decided by the dispatcher before the provider's success webhook arrives.
fn payment_unknown_with_late_webhooks() -> std::path::PathBuf {
    let library = include_str!("../../scenarios/library/payment-unknown.toml");
    // The library's file holds every callback back past its payment's deadline already; here 3 s.
    let toml = library.replace("name = \"payment-unknown\"", "name = \"payment-unknown-late-webhooks\"").replace(
        "[faults.delayed_callback]\nprobability = 1.0\ndelay_ms = 30000\n",
        "[faults.delayed_callback]\nprobability = 1.0\ndelay_ms = 3000\n",
    );
    assert!(toml.contains("payment-unknown-late-webhooks"), "the library file still names its scenario");
    assert!(toml.contains("delay_ms = 3000\n"), "the library file still holds its callbacks back");
    let path = std::env::temp_dir().join(format!("holdfast-chaos-late-webhooks-{}.toml", std::process::id()));
    std::fs::write(&path, toml).expect("write the scenario file");
    path
}

#[test]
fn planted_payment_path_bug_is_reported_as_a_hidden_charge() {
    // Regression (CI run of 2026-12-02): on `payment-unknown` as it is, the
    // provider's success webhook races the lost answer's 500; when the webhook
    // wins, the sale is confirmed first and the planted decline changes
    // nothing, so the run passed. Held-back webhooks take the race away.
    let file = payment_unknown_with_late_webhooks();
    let file = file.to_str().expect("a UTF-8 temp path");
    let o = chaos(&["--scenario-file", file, "--seed", "0", "--plant", "dispatch-unknown-as-declined"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "a violation fails the run:\n{out}");
    assert!(out.contains("violation: no-hidden-charge"), "{out}");
    assert!(
        out.contains(&format!("simulator chaos --scenario-file {file} --seed 0")),
        "the rerun line names the file: {out}"
    );
}

#[test]
fn unknown_scenario_or_plant_is_a_usage_error() {
    let o = chaos(&["--scenario", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    let o = chaos(&["--plant", "nope"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn planted_unconditional_checkout_is_reported_as_a_double_sale_found_in_the_tables() {
    // A stale replay checks out seats bought (or being paid for) since; the
    // sale that finds its seats taken is refused (the unique index, or the
    // sale's own condition), and the tables show one seat claimed by two live
    // orders. The interleaving is real, so a replay may land on a seat nobody
    // bought yet, and a loaded machine runs fewer flows (a user replays only
    // after its first purchase): a 10 s window, two seeds, one double sale
    // among them is required.
    let o = planted("stale-token-replay", ["--seeds", "0..2"], "unconditional-checkout", &["--duration-ms", "10000"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "a violation fails the run:\n{out}");
    assert!(out.contains("violation: one-booking-per-seat seat "), "{out}");
    assert!(out.contains(": double sale: claimed by "), "{out}");
}

#[test]
fn help_names_every_nemesis() {
    let out = Command::new(env!("CARGO_BIN_EXE_simulator")).args(["chaos", "--help"]).output().expect("simulator runs");
    let help = stdout(&out);
    for fault in simulator::chaos::log::ChaosFault::ALL.iter().filter(|f| f.must_fire()) {
        let name = serde_json::to_value(fault).expect("a fault serializes");
        let name = name.as_str().expect("a fault is named by a string");
        assert!(help.contains(name), "`simulator chaos --help` does not name the nemesis {name}");
    }
}

#[test]
fn ci_proves_every_real_stack_plant_on_its_scenario_and_invariant() {
    let ci = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ci/test")).expect("ci/test is readable");
    // A step may continue over lines ending in a backslash.
    let steps = ci.replace("\\\n", " ");
    for e in booking::fault::CATALOG.iter().filter(|e| e.real_stack) {
        if let Some(test) = e.proved_by_test {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../").to_string() + test;
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{test}: {e}"));
            assert!(text.contains(&format!("Plant::{:?}", e.plant)), "{test} does not plant {}", e.name);
            continue;
        }
        let proved = steps.lines().any(|l| {
            l.starts_with("step ")
                && l.contains(&format!("--scenario {} ", e.scenario))
                && l.contains(&format!("--plant {} ", e.name))
                && l.trim_end().ends_with(&format!("--expect-caught {}", e.invariant))
        });
        assert!(proved, "no ci/test step runs {} on {} expecting {}", e.name, e.scenario, e.invariant);
    }
}
