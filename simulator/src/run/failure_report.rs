//! A failing seed's failures as a person reads them: grouped by invariant
//! (or kind of failure) with a count and the first few, every simulated
//! time shown as seconds from the world's start instead of epoch
//! milliseconds. The full list stays in `--json` and the HTML timeline.

use crate::run::failure::Failure;
use crate::world::sim_clock::EPOCH_MS;

/// Failures shown per group; the rest are counted.
pub const SHOWN_PER_GROUP: usize = 3;
/// Epoch ms within this many ms after the world's epoch are simulated times.
const SIMULATED_SPAN_MS: i64 = 10_000_000_000;

/// `failures` as lines: per group (in order of first appearance) its first
/// [`SHOWN_PER_GROUP`], then how many more there were.
pub fn lines(failures: &[Failure]) -> Vec<String> {
    let mut groups: Vec<(String, Vec<&Failure>)> = Vec::new();
    for f in failures {
        let key = group_of(f);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(f),
            None => groups.push((key, vec![f])),
        }
    }
    let mut out = Vec::new();
    for (key, members) in groups {
        if members.len() > 1 {
            out.push(format!("{key}: {} failures", members.len()));
        }
        for f in members.iter().take(SHOWN_PER_GROUP) {
            out.push(sim_times(&f.to_string()));
        }
        if members.len() > SHOWN_PER_GROUP {
            out.push(format!(
                "... {} more {key} (all of them: --json, or replay --html)",
                members.len() - SHOWN_PER_GROUP
            ));
        }
    }
    out
}

/// The group a failure belongs to: its invariant's name, or its kind.
fn group_of(f: &Failure) -> String {
    match f.violation() {
        Some(v) => v.invariant.as_str().to_string(),
        None => f.to_string().split_whitespace().next().unwrap_or("failure").to_string(),
    }
}

/// `text` with every simulated epoch-ms time (13 digits, within
/// [`SIMULATED_SPAN_MS`] of the world's epoch) written as seconds from the start.
pub fn sim_times(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        match digits.parse::<i64>() {
            Ok(ms) if digits.len() == 13 && (EPOCH_MS..EPOCH_MS + SIMULATED_SPAN_MS).contains(&ms) => {
                out.push_str(&format!("{:.3} s", (ms - EPOCH_MS) as f64 / 1000.0));
            }
            _ => out.push_str(digits),
        }
        digits.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            // A digit run inside a word (an id) stays as it is.
            if !digits.is_empty() && (c.is_ascii_alphanumeric() || c == '-') {
                out.push_str(&digits);
                digits.clear();
            } else {
                flush(&mut digits, &mut out);
            }
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_times_read_as_seconds_and_other_numbers_stay() {
        let at = EPOCH_MS + 1_480;
        let text = format!("freed at {at} before its deadline {}, seat s00012, order 8f9a21d9-1364", EPOCH_MS + 21_420);
        assert_eq!(sim_times(&text), "freed at 1.480 s before its deadline 21.420 s, seat s00012, order 8f9a21d9-1364");
        assert_eq!(sim_times("1767225600000x"), "1767225600000x", "inside a word: an id");
        assert_eq!(sim_times("42 and 9999999999999"), "42 and 9999999999999");
    }
}
