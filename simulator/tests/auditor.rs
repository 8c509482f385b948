//! The auditor alone: with every other checker switched off, the reference
//! model's replay of the trace catches every planted bug of the catalog in
//! its own scenario within the default seeds; the printed replay line (which
//! names `--checkers auditor`) reproduces it, and the same seed passes
//! without the bug. None of the plants was written for the auditor: it
//! knows the rules, not the bugs.

use std::process::Command;

#[test]
fn the_auditor_alone_catches_every_planted_bug() {
    let out = Command::new(env!("CARGO_BIN_EXE_simulator"))
        .args(["plants", "--check", "--auditor", "--json", "--jobs", "2"])
        .output()
        .expect("simulator runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let checks: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let simulated = booking::fault::CATALOG.iter().filter(|e| !e.real_stack).count();
    assert_eq!(checks.len(), simulated, "one check per plant the simulator runs:\n{text}");
    let missed: Vec<String> = checks
        .iter()
        .filter(|c| c["ok"] != true)
        .map(|c| format!("{} in {}: {}", c["plant"], c["scenario"], c["problems"]))
        .collect();
    assert!(missed.is_empty(), "the auditor alone missed:\n{}", missed.join("\n"));
    assert!(checks.iter().all(|c| c["invariant"] == "auditor"));
    assert!(out.status.success());
}
