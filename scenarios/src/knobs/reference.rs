//! The README's key table, rendered from [`super::KNOBS`]: `scenarios/README.md`
//! holds it between [`BEGIN`] and [`END`], and a test keeps the two equal
//! (`HOLDFAST_BLESS=1 cargo test -p scenarios` rewrites the README's copy).

use super::{Bound, Check, KNOBS, Knob};

/// The line before the rendered table in the README.
pub const BEGIN: &str = "<!-- knob table: rendered from scenarios/src/knobs/table.rs and scenarios/src/faults/ -->";
/// The line after it.
pub const END: &str = "<!-- end of knob table -->";

/// The Markdown key table: a header, then one row per knob.
pub fn markdown() -> String {
    let mut out = String::from("| key | meaning | allowed |\n| --- | --- | --- |\n");
    for knob in KNOBS.iter() {
        out.push_str(&format!("| `{}` | {} | {} |\n", knob.key, knob.meaning, allowed(knob)));
    }
    out
}

/// `text` with the part between [`BEGIN`] and [`END`] replaced by [`markdown`];
/// `None` when `text` lacks the markers.
pub fn splice(text: &str) -> Option<String> {
    let start = text.find(BEGIN)? + BEGIN.len();
    let end = start + text[start..].find(END)?;
    Some(format!("{}\n{}{}", &text[..start], markdown(), &text[end..]))
}

/// The "allowed" cell: what the row's check allows, then its note.
fn allowed(knob: &Knob) -> String {
    let base = match knob.check {
        Check::Count { min, max } | Check::Duration { min, max } => format!("{}..={}", bound(min), bound(max)),
        Check::Probability => "probability".to_string(),
        Check::Range { max } => format!("`{{ min, max }}`, each 0..={}, `min <= max`", bound(max)),
        Check::Flag => "`true`/`false`".to_string(),
        Check::Name { known, noun } => format!("a {noun}: {}", names(known)),
        Check::Names { noun, non_empty, .. } => {
            format!("{}list of {noun} names{}", if non_empty { "non-empty " } else { "" }, names_where(noun))
        }
        Check::Table => "optional table".to_string(),
        Check::Special(text) => text.to_string(),
    };
    if knob.note.is_empty() { base } else { format!("{base}; {}", knob.note) }
}

fn bound(b: Bound) -> String {
    match b {
        Bound::Fixed(v) => v.to_string(),
        Bound::Of(label, _) => label.to_string(),
    }
}

fn names(known: &[&str]) -> String {
    known.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// Where the README lists the names of `noun`.
fn names_where(noun: &str) -> &'static str {
    match noun {
        "invariant" | "path" => " (below)",
        _ => " (in its meaning)",
    }
}
