//! Simulated time to horizontal position: every position is a percentage of
//! the time track's width (so zooming is one CSS variable), computed in
//! integers so the same trace gives the same bytes everywhere.

/// Thousandths of a percent in a whole track.
const FULL_MILLI_PCT: i128 = 100_000;

/// The most ticks the time axis shows.
const MAX_TICKS: i128 = 30;

/// Tick steps the axis may use, in ms, smallest first.
const TICK_STEPS_MS: [i64; 22] = [
    1, 2, 5, 10, 20, 50, 100, 200, 250, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000,
    600_000, 1_800_000, 3_600_000,
];

/// Maps simulated time in `t0_ms..=t0_ms + span_ms` onto `0%..=100%`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeScale {
    /// The time at the track's left edge, ms.
    pub t0_ms: i64,
    /// The time the track spans, ms (at least 1).
    pub span_ms: i128,
}

/// One labelled tick of the time axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tick {
    /// Where, as a CSS percentage (`"12.345%"`).
    pub left: String,
    /// Its label (`"1.5 s"`, `"250 ms"`).
    pub label: String,
}

impl TimeScale {
    /// The scale of a run whose events lie in `first_ms..=last_ms`: it starts
    /// at the simulation's epoch (0) unless an event is earlier.
    pub fn new(first_ms: i64, last_ms: i64) -> Self {
        let t0_ms = first_ms.min(0);
        let span_ms = (i128::from(last_ms) - i128::from(t0_ms)).max(1);
        Self { t0_ms, span_ms }
    }

    /// The last time on the track, ms (saturating).
    pub fn end_ms(&self) -> i64 {
        i64::try_from(i128::from(self.t0_ms) + self.span_ms).unwrap_or(i64::MAX)
    }

    /// Thousandths of a percent of the track at `at_ms`, clamped to the track.
    fn milli_pct(&self, at_ms: i64) -> i128 {
        ((i128::from(at_ms) - i128::from(self.t0_ms)) * FULL_MILLI_PCT / self.span_ms).clamp(0, FULL_MILLI_PCT)
    }

    /// The CSS `left` of time `at_ms` (`"12.345%"`).
    pub fn left(&self, at_ms: i64) -> String {
        pct(self.milli_pct(at_ms))
    }

    /// The CSS `width` from `from_ms` to `to_ms` (`"0.000%"` when reversed).
    pub fn width(&self, from_ms: i64, to_ms: i64) -> String {
        pct((self.milli_pct(to_ms) - self.milli_pct(from_ms)).max(0))
    }

    /// The axis ticks: the smallest step that gives at most 30 ticks, at
    /// multiples of the step.
    pub fn ticks(&self) -> Vec<Tick> {
        let step_ms = TICK_STEPS_MS
            .iter()
            .copied()
            .find(|s| self.span_ms / i128::from(*s) <= MAX_TICKS)
            .unwrap_or_else(|| i64::try_from(self.span_ms / MAX_TICKS + 1).unwrap_or(i64::MAX));
        let first = self.t0_ms.div_euclid(step_ms).saturating_add(1).saturating_mul(step_ms);
        let first = if self.t0_ms.rem_euclid(step_ms) == 0 { self.t0_ms } else { first };
        let mut out = Vec::new();
        let mut t = i128::from(first);
        let end = i128::from(self.t0_ms) + self.span_ms;
        while t <= end && out.len() <= MAX_TICKS as usize + 1 {
            let at_ms = i64::try_from(t).unwrap_or(i64::MAX);
            out.push(Tick { left: self.left(at_ms), label: time_label(at_ms) });
            t += i128::from(step_ms);
        }
        out
    }
}

/// `milli` thousandths of a percent as a CSS percentage.
fn pct(milli: i128) -> String {
    format!("{}.{:03}%", milli / 1000, milli % 1000)
}

/// A time for people: `"250 ms"` below a second, else seconds with up to
/// three decimals (`"1.5 s"`).
pub fn time_label(at_ms: i64) -> String {
    if at_ms.unsigned_abs() < 1000 {
        return format!("{at_ms} ms");
    }
    let sign = if at_ms < 0 { "-" } else { "" };
    let (s, ms) = (at_ms.unsigned_abs() / 1000, at_ms.unsigned_abs() % 1000);
    if ms == 0 {
        format!("{sign}{s} s")
    } else {
        let frac = format!("{ms:03}");
        format!("{sign}{s}.{} s", frac.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_percentages_of_the_span() {
        let s = TimeScale::new(0, 2000);
        assert_eq!(s.left(0), "0.000%");
        assert_eq!(s.left(500), "25.000%");
        assert_eq!(s.left(2000), "100.000%");
        assert_eq!(s.left(9999), "100.000%", "clamped");
        assert_eq!(s.width(500, 1000), "25.000%");
        assert_eq!(s.width(1000, 500), "0.000%");
    }

    #[test]
    fn odd_spans_do_not_panic() {
        let s = TimeScale::new(i64::MIN, i64::MAX);
        assert_eq!(s.left(i64::MIN), "0.000%");
        assert!(s.ticks().len() <= 32);
        let one = TimeScale::new(5, 5);
        assert_eq!(one.span_ms, 5);
        assert!(!one.ticks().is_empty());
    }

    #[test]
    fn ticks_use_a_round_step() {
        let ticks = TimeScale::new(0, 10_000).ticks();
        let labels: Vec<&str> = ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels[..3], ["0 ms", "500 ms", "1 s"]);
        assert_eq!(time_label(1_250), "1.25 s");
        assert_eq!(time_label(-2_000), "-2 s");
    }
}
