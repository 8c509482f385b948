//! The scenario library as one test, for mutation testing (`ci/mutants`):
//! a mutant of the booking core survives only if every library scenario
//! still meets its expectation over its default seeds and every planted bug
//! is still caught (a mutant of the fault seam itself shows there). Ignored
//! by default (`ci/test` runs both itself, on the release build).

use std::process::Command;

#[test]
#[ignore = "the whole library (about a minute in release): run by ci/mutants with --include-ignored"]
fn the_scenario_library_passes() {
    assert_the_library_passes();
    let out =
        Command::new(env!("CARGO_BIN_EXE_simulator")).args(["plants", "--check"]).output().expect("the simulator runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "a planted bug went uncaught:\n{stdout}");
}

/// The library alone, as the harness's own mutation score counts it
/// (`ci/mutants` with `MUTANTS_SCOPE=library`): the scenarios over their
/// default seeds, judged by every checker and the auditor; no planted-bug check.
#[test]
#[ignore = "the whole library (about a minute in release): run by ci/mutants with --include-ignored"]
fn the_scenario_library_alone_passes() {
    assert_the_library_passes();
}

/// Runs the whole library (both cores, stopping at the first failing
/// scenario) and fails with its report unless every scenario passed.
fn assert_the_library_passes() {
    let out = Command::new(env!("CARGO_BIN_EXE_simulator"))
        .args(["run", "--jobs", "2", "--fail-fast"])
        .output()
        .expect("the simulator runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the library failed:\n{stdout}");
}
