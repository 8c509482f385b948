//! The document: a header, the violations panel with witness links, the
//! controls and legend, the lanes, a detail box, and the inline style and
//! script. Pre-rendered: the page works (and shows every witness) before any
//! script runs; the script only zooms, filters and focuses.

use super::Timeline;
use super::describe::event_line_drawn;
use super::escape::escape;
use super::lanes::{Item, Layer, Layout};
use super::scale::{TimeScale, time_label};
use invariants::trace::TraceEvent;
use std::collections::{BTreeMap, BTreeSet};

/// The inline style sheet.
const STYLE: &str = include_str!("style.css");

/// The inline script.
const SCRIPT: &str = include_str!("timeline.js");

/// Longest witness link text, in characters (its title has the whole line).
const WITNESS_LINK_CHARS: usize = 96;

/// The legend: a CSS class for the swatch and what it means.
const LEGEND: &[(&str, &str)] = &[
    ("st-held", "held"),
    ("st-payment-pending", "payment pending"),
    ("st-sold", "sold"),
    ("op-hold", "hold request"),
    ("op-checkout", "checkout request"),
    ("ord-confirmed", "order confirmed / charged"),
    ("pay-refunded", "refund"),
    ("pay-declined", "refused / declined"),
    ("band-crash", "host down"),
    ("band-partition", "partition"),
    ("band-pause", "client paused"),
    ("band-stall", "sweeper stalled"),
];

/// `text` cut to `max` characters, with an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The whole document for `t` laid out as `layout`.
pub fn document(t: &Timeline<'_>, layout: &Layout, witnesses: &BTreeSet<u64>) -> String {
    let mut out = String::with_capacity(64 * 1024 + t.trace.len() * 200);
    let title = format!("holdfast timeline: {} seed {}", t.scenario, t.seed);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<link rel=\"icon\" href=\"data:,\">\n");
    out.push_str(&format!("<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n", escape(&title)));
    header(&mut out, t, layout);
    out.push_str("<main>\n");
    violations(&mut out, t);
    notes(&mut out, t);
    controls(&mut out);
    if layout.left_out_lanes > 0 {
        out.push_str(&format!(
            "<p class=\"left-out\">{} lanes with {} events are not shown (over the limit of {} lanes; none holds a witness). <code>replay --trace FILE</code> has every event.</p>\n",
            layout.left_out_lanes, layout.left_out_events, t.max_lanes
        ));
    }
    lanes(&mut out, layout, witnesses);
    out.push_str("</main>\n");
    out.push_str("<div id=\"detail\" hidden><button id=\"detail-close\" type=\"button\" aria-label=\"close\">×</button><div id=\"detail-text\"></div></div>\n");
    out.push_str(&format!("<script>\n{SCRIPT}</script>\n</body>\n</html>\n"));
    out
}

fn header(out: &mut String, t: &Timeline<'_>, layout: &Layout) {
    let verdict =
        if t.passed { "<span class=\"verdict-pass\">pass</span>" } else { "<span class=\"verdict-fail\">FAIL</span>" };
    out.push_str(&format!("<header>\n<h1>{} seed {} — {verdict}</h1>\n", escape(t.scenario), t.seed));
    out.push_str(&format!(
        "<p class=\"meta\">{} trace events · {} violations · simulated time {} to {} · trace-hash <code>{}</code></p>\n",
        t.trace.len(),
        t.violations.len(),
        time_label(layout.scale.t0_ms),
        time_label(layout.scale.end_ms()),
        escape(t.trace_hash)
    ));
    if !t.replay.is_empty() {
        out.push_str(&format!("<p class=\"meta\">replay: <code>{}</code></p>\n", escape(t.replay)));
    }
    out.push_str("</header>\n");
}

fn violations(out: &mut String, t: &Timeline<'_>) {
    if t.violations.is_empty() {
        out.push_str("<section id=\"violations\" class=\"none\"><h2>No violations</h2></section>\n");
        return;
    }
    let by_seq: BTreeMap<u64, &TraceEvent> = t.trace.iter().map(|e| (e.seq, e)).collect();
    let after_run = super::lanes::after_run(t.trace);
    out.push_str(&format!("<section id=\"violations\">\n<h2>{} violations</h2>\n", t.violations.len()));
    for (i, v) in t.violations.iter().enumerate() {
        out.push_str(&format!(
            "<div class=\"violation\" id=\"violation-{i}\">\n<div><span class=\"inv mono\">{}</span><span class=\"subject mono\">{}</span></div>\n<p class=\"detail\">{}</p>\n",
            escape(v.invariant.as_str()),
            escape(&v.subject.to_string()),
            escape(&v.detail)
        ));
        if v.witnesses.is_empty() {
            out.push_str("<div class=\"witness-missing\">no witness events: the final records show it</div>\n");
        } else {
            out.push_str("<div class=\"witnesses\">witnesses: ");
            for seq in &v.witnesses {
                match by_seq.get(seq) {
                    Some(e) => {
                        let line = event_line_drawn(e, after_run.contains_key(seq));
                        out.push_str(&format!(
                            "<a class=\"witness-link\" href=\"#ev-{seq}\" data-seq=\"{seq}\" title=\"{}\">{}</a>",
                            escape(&line),
                            escape(&cut(&line, WITNESS_LINK_CHARS))
                        ));
                    }
                    None => {
                        out.push_str(&format!("<span class=\"witness-missing\">seq {seq} (not in the trace)</span> "))
                    }
                }
            }
            out.push_str("</div>\n");
        }
        out.push_str("</div>\n");
    }
    out.push_str("</section>\n");
}

fn notes(out: &mut String, t: &Timeline<'_>) {
    if t.notes.is_empty() {
        return;
    }
    out.push_str("<section class=\"notes\" id=\"notes\">\n");
    for n in t.notes {
        out.push_str(&format!("<div>{}</div>\n", escape(n)));
    }
    out.push_str("</section>\n");
}

fn controls(out: &mut String) {
    out.push_str("<div class=\"controls\">\n<span>zoom <button type=\"button\" data-zoom=\"out\">−</button> <span id=\"zoom-level\">1×</span> <button type=\"button\" data-zoom=\"in\">+</button> <button type=\"button\" data-zoom=\"fit\">fit</button></span>\n");
    out.push_str("<label><input type=\"checkbox\" id=\"only-witness\"> only lanes with witnesses</label>\n<span class=\"legend\">");
    for (class, what) in LEGEND {
        out.push_str(&format!("<span class=\"sw {class}\"></span>{what}"));
    }
    out.push_str("</span>\n</div>\n");
}

/// One drawn item: `left` (and `width` for spans) as percentages.
fn item(out: &mut String, scale: &TimeScale, it: &Item, witnesses: &BTreeSet<u64>) {
    let id = it.seq.map(|s| format!(" id=\"ev-{s}\"")).unwrap_or_default();
    let witness = if it.seq.is_some_and(|s| witnesses.contains(&s)) { " witness" } else { "" };
    let style = if it.layer == Layer::Mark {
        format!("left:{}", scale.left(it.from_ms))
    } else {
        format!("left:{};width:{}", scale.left(it.from_ms), scale.width(it.from_ms, it.to_ms))
    };
    out.push_str(&format!(
        "<div{id} class=\"{}{witness}\" style=\"{style}\" title=\"{}\"></div>",
        escape(&it.class),
        escape(&it.title)
    ));
}

fn lanes(out: &mut String, layout: &Layout, witnesses: &BTreeSet<u64>) {
    let scale = &layout.scale;
    out.push_str(&format!(
        "<div id=\"timeline\">\n<div id=\"canvas\" data-t0-ms=\"{}\" data-span-ms=\"{}\">\n",
        scale.t0_ms, scale.span_ms
    ));
    out.push_str("<div class=\"lane axis\"><div class=\"label\">simulated time</div><div class=\"track\">");
    for tick in scale.ticks() {
        out.push_str(&format!("<span class=\"tick\" style=\"left:{}\">{}</span>", tick.left, escape(&tick.label)));
    }
    out.push_str("</div></div>\n");
    if layout.lanes.is_empty() {
        out.push_str("<div class=\"group\">the trace is empty</div>\n");
    }
    let mut group = "";
    for lane in &layout.lanes {
        if lane.key.group() != group {
            group = lane.key.group();
            out.push_str(&format!("<div class=\"group\">{}</div>\n", escape(group)));
        }
        let label = lane.key.label();
        let class = if lane.witnesses > 0 { "lane witness-lane" } else { "lane" };
        out.push_str(&format!(
            "<div class=\"{class}\"><div class=\"label\" title=\"{}\">{}</div><div class=\"track\">",
            escape(&label),
            escape(&label)
        ));
        for it in &lane.items {
            item(out, scale, it, witnesses);
        }
        out.push_str("</div></div>\n");
    }
    out.push_str("<div class=\"overlay\">");
    for it in &layout.overlays {
        let style = if it.class.starts_with("overlay-phase") {
            format!("left:{}", scale.left(it.from_ms))
        } else {
            format!("left:{};width:{}", scale.left(it.from_ms), scale.width(it.from_ms, it.to_ms))
        };
        out.push_str(&format!(
            "<div class=\"{}\" style=\"{style}\" title=\"{}\"></div>",
            escape(&it.class),
            escape(&it.title)
        ));
    }
    out.push_str("</div>\n</div>\n</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_on_a_character() {
        assert_eq!(cut("ééééé", 3), "éé…");
        assert_eq!(cut("abc", 3), "abc");
    }
}
