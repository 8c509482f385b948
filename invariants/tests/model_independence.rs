//! The reference model is a second, independent statement of the rules: it
//! may use booking's data types and published limits, never the functions
//! that make booking's decisions. This test reads the model's and the
//! auditor's source and fails on any use of them.

use std::path::{Path, PathBuf};

/// Paths and calls the model must not use: booking's decisions.
const FORBIDDEN: &[&str] = &[
    "store::decide",
    "store::machine",
    "machine::",
    "store::rules",
    "Rules",
    "admission::queue",
    "admission::token",
    "admission::controller",
    "lottery_order",
    "AdmissionSigner",
    ".validate(",
    "reconcile_due",
    "counts_toward_hold_limit",
    "expire_due",
    "bounded_text",
    "SeatMapVersion::of_seats",
    "etag_for(",
    "IfNoneMatch",
    "all_seat_ids",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_model_uses_no_decision_of_booking() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root.join("model"), &mut files);
    sources(&root.join("checks/auditor"), &mut files);
    assert!(files.len() >= 10, "the model's files: {files:?}");
    let mut uses = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for bad in FORBIDDEN {
                if code.contains(bad) {
                    uses.push(format!("{}:{}: {bad}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(uses.is_empty(), "the model uses booking's decisions:\n{}", uses.join("\n"));
}

#[test]
fn the_rule_would_notice_a_use() {
    let line = "use booking::store::machine::seat::next;";
    assert!(FORBIDDEN.iter().any(|bad| line.contains(bad)));
}
