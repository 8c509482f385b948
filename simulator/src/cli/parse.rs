//! Parsers of the command line's values.

use std::ops::Range;

/// A seed range `A..B` (B exclusive, not empty).
pub fn parse_range(s: &str) -> Result<Range<u64>, String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("expected A..B, got {s}"))?;
    let a: u64 = a.parse().map_err(|_| format!("bad range start {a}"))?;
    let b: u64 = b.parse().map_err(|_| format!("bad range end {b}"))?;
    if a >= b {
        return Err(format!("empty range {s}"));
    }
    Ok(a..b)
}

/// `90s`, `10m`, `2h` (or plain seconds) as seconds, at least 1.
pub fn parse_duration_s(s: &str) -> Result<u64, String> {
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().map_err(|_| format!("bad duration {s}: expected e.g. 90s, 10m, 2h"))?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3_600,
        _ => return Err(format!("bad duration unit in {s}: use s, m or h")),
    };
    match n.checked_mul(scale) {
        Some(secs) if secs >= 1 => Ok(secs),
        _ => Err(format!("duration {s} out of range")),
    }
}
