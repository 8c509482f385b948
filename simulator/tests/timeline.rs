//! `simulator replay ... --html FILE`: the timeline page of a failing
//! planted seed shows every violation with links to its witness events, each
//! drawn and outlined; the page fetches nothing; text from the trace is
//! escaped; the same trace gives the same bytes; odd input does not panic.
//! (`ci/timeline-browser` checks the page in a real browser.)

use invariants::trace::{FaultEvent, TraceEvent, TraceKind};
use invariants::{Invariant, Subject, Violation};
use simulator::timeline::{DEFAULT_MAX_LANES, Timeline, render};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// A fresh directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("timeline-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A timeline of `trace` and `violations` with the defaults.
fn page(trace: &[TraceEvent], violations: &[Violation], notes: &[String]) -> String {
    render(&Timeline {
        scenario: "test",
        seed: 1,
        passed: violations.is_empty(),
        replay: "",
        trace_hash: "h",
        trace,
        violations,
        notes,
        max_lanes: DEFAULT_MAX_LANES,
    })
}

/// The opening tag of the element with id `ev-<seq>`, if there is exactly one.
fn element(html: &str, seq: u64) -> Option<&str> {
    let needle = format!("id=\"ev-{seq}\"");
    let mut hits = html.match_indices(&needle);
    let (at, _) = hits.next()?;
    if hits.next().is_some() {
        return None;
    }
    let start = html[..at].rfind('<')?;
    let end = at + html[at..].find('>')?;
    Some(&html[start..=end])
}

/// Every value of attribute `name` (double-quoted) in `html`.
fn attribute_values<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let needle = format!(" {name}=\"");
    html.match_indices(&needle)
        .filter_map(|(at, _)| {
            let rest = &html[at + needle.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}

/// Asserts `html` fetches nothing: no URL anywhere, every `src`/`href` an
/// in-page anchor or a data URL, no CSS import or url(), no script loading.
fn assert_fetches_nothing(html: &str) {
    assert!(!html.contains("http://") && !html.contains("https://"), "a URL in the page");
    for name in ["src", "href", "srcset", "action", "poster", "data"] {
        for value in attribute_values(html, name) {
            assert!(value.starts_with('#') || value.starts_with("data:"), "{name}=\"{value}\" may fetch");
        }
    }
    for needle in ["@import", "url(", "fetch(", "XMLHttpRequest", "import(", "<iframe", "<object", "<embed"] {
        assert!(!html.contains(needle), "{needle} in the page");
    }
}

#[test]
fn a_failing_planted_seed_shows_its_violations_and_witnesses() {
    let dir = scratch("planted");
    let (html_path, trace_path) = (dir.join("t.html"), dir.join("t.jsonl"));
    let out = Command::new(env!("CARGO_BIN_EXE_simulator"))
        .args(["replay", "--scenario", "alice-bob-stale-token", "--seed", "19", "--plant", "unconditional-checkout"])
        .arg("--html")
        .arg(&html_path)
        .arg("--trace")
        .arg(&trace_path)
        .output()
        .expect("simulator runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "the planted bug fails the seed:\n{stdout}");
    assert!(stdout.lines().last().is_some_and(|l| l.starts_with("trace-hash: ")), "the usual replay output:\n{stdout}");
    let html = std::fs::read_to_string(&html_path).expect("the page was written");
    let trace = invariants::trace::from_json_lines(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();

    // The violations panel: every printed violation's invariant, and its witnesses.
    assert!(html.contains("<section id=\"violations\">"), "a violations panel");
    let violations: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("violation: ")).collect();
    assert!(!violations.is_empty(), "{stdout}");
    assert_eq!(html.matches("class=\"violation\"").count(), violations.len());
    let mut witnesses = BTreeSet::new();
    for v in &violations {
        let invariant = v.split_whitespace().next().unwrap();
        assert!(html.contains(&format!("<span class=\"inv mono\">{invariant}</span>")), "{invariant} shown");
        if let Some((_, seqs)) = v.rsplit_once("(witnesses: seq ") {
            witnesses.extend(seqs.trim_end_matches(')').split(", ").map(|s| s.parse::<u64>().unwrap()));
        }
    }
    let double = violations.iter().find(|v| v.starts_with("one-booking-per-seat")).expect("a double sale");
    let (_, seqs) = double.rsplit_once("(witnesses: seq ").expect("the double sale has witnesses");
    assert!(!seqs.is_empty(), "the double sale's witnesses: {witnesses:?}");
    for seq in &witnesses {
        assert!(html.contains(&format!("href=\"#ev-{seq}\"")), "a link to witness {seq}");
        let el = element(&html, *seq).unwrap_or_else(|| panic!("one element for witness {seq}"));
        assert!(el.contains(" witness\""), "witness {seq} outlined: {el}");
    }
    // Every trace event is drawn, once; only witnesses are outlined.
    for e in &trace {
        let el = element(&html, e.seq).unwrap_or_else(|| panic!("one element for seq {}", e.seq));
        assert_eq!(el.contains(" witness\""), witnesses.contains(&e.seq), "{el}");
    }
    assert!(html.contains("seat ev0/s00000") && html.contains("user u00000") && html.contains("user u00001"));
    assert!(html.contains("band band-pause"), "the paused client's band");
    assert!(html.contains("band band-stall"), "the stalled sweeper's band");
    assert_fetches_nothing(&html);

    // The same trace gives the same bytes, and the page is the one `replay` wrote.
    let again = Command::new(env!("CARGO_BIN_EXE_simulator"))
        .args(["replay", "--scenario", "alice-bob-stale-token", "--seed", "19", "--plant", "unconditional-checkout"])
        .arg("--html")
        .arg(dir.join("again.html"))
        .output()
        .expect("simulator runs");
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(dir.join("again.html")).unwrap(), html, "same seed, same page");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn html_flag_conflicts_with_plan_and_reports_unwritable_paths() {
    let sim = |extra: &[&str]| {
        let mut args = vec!["replay", "--scenario", "alice-bob-stale-token", "--seed", "0"];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_simulator")).args(&args).output().expect("simulator runs")
    };
    assert_eq!(sim(&["--plan", "--html", "x.html"]).status.code(), Some(2));
    let unwritable = sim(&["--html", "/proc/no/such/dir/x.html"]);
    assert_eq!(unwritable.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unwritable.stderr).contains("cannot write"));
}

fn fault(seq: u64, at_ms: i64, kind: FaultEvent, detail: &str) -> TraceEvent {
    TraceEvent { seq, at_ms, kind: TraceKind::Fault { kind, detail: detail.into() } }
}

#[test]
fn text_from_the_trace_is_escaped() {
    let evil = "<script>alert(1)</script>\"'&";
    let trace = vec![
        fault(0, 5, FaultEvent::ClientPaused, &format!("u<b>1 pauses {evil}")),
        fault(1, 9, FaultEvent::PartitionStarted, &format!("{evil} <-> svc0 cut")),
        TraceEvent {
            seq: 2,
            at_ms: 12,
            kind: TraceKind::Invoke {
                op_id: 1,
                client: "\"><img src=x onerror=alert(2)>".into(),
                op: invariants::trace::ClientOp::OrderStatus { order_id: booking::model::OrderId::nil() },
                host: None,
            },
        },
    ];
    let violations = vec![Violation::new(
        Invariant::NoStaleAuthority,
        Subject::seat(&"ev<0>".into(), &"s'1".into()),
        format!("detail {evil}"),
        vec![0, 2],
    )];
    let html = page(&trace, &violations, &[format!("panic: {evil}")]);
    for raw in ["<script>alert", "<img", "<b>", "onerror=alert(2)>", "'&"] {
        assert!(!html.contains(raw), "{raw} reached the page unescaped");
    }
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"));
    assert!(html.contains("seat ev&lt;0&gt;/s&#39;1"));
    // One <script> tag: the page's own, inline.
    assert_eq!(html.matches("<script").count(), 1);
    assert_fetches_nothing(&html);
}

#[test]
fn odd_input_renders() {
    // Empty, passing.
    let empty = page(&[], &[], &[]);
    assert!(empty.contains("No violations") && empty.contains("the trace is empty"));
    assert_fetches_nothing(&empty);
    // A witness not in the trace, seqs with gaps, times out of order, a band never closed.
    let trace = vec![
        fault(5, 1_000, FaultEvent::CrashAfterCommit, "svc0 crashes after committing at hold"),
        fault(9, -50, FaultEvent::PartitionRepaired, "never started"),
        fault(12, i64::MAX, FaultEvent::ClientResumed, ""),
    ];
    let violations =
        vec![Violation::new(Invariant::HoldReclaimed, Subject::seat(&"ev0".into(), &"s0".into()), "x", vec![5, 77])];
    let html = page(&trace, &violations, &[]);
    assert!(html.contains("seq 77 (not in the trace)"));
    assert!(element(&html, 5).is_some_and(|el| el.contains(" witness\"")));
    assert!(element(&html, 9).is_some() && element(&html, 12).is_some());
    // The same input, the same bytes.
    assert_eq!(page(&trace, &violations, &[]), html);
}
