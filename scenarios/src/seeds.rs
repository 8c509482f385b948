//! Seed ranges, as written in scenario files and on the command line.

use std::fmt;

/// Upper bound on the seeds of one range.
pub const MAX_SEEDS_PER_RANGE: u64 = 1_000_000;

/// A non-empty half-open range of seeds `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeedRange {
    /// First seed.
    pub start: u64,
    /// One past the last seed (> `start`).
    pub end: u64,
}

impl SeedRange {
    /// Parses `"A..B"` (B excluded), `"A..=B"` (B included) or `"N"` (one seed).
    /// The range must hold 1..=[`MAX_SEEDS_PER_RANGE`] seeds.
    pub fn parse(text: &str) -> Result<SeedRange, String> {
        let num = |s: &str| {
            s.trim().parse::<u64>().map_err(|_| format!("{:?} is not a seed (an unsigned 64-bit integer)", s.trim()))
        };
        let (start, end) = if let Some((a, b)) = text.split_once("..=") {
            let b = num(b)?;
            (num(a)?, b.checked_add(1).ok_or_else(|| "end seed too large".to_string())?)
        } else if let Some((a, b)) = text.split_once("..") {
            (num(a)?, num(b)?)
        } else {
            let n = num(text)?;
            (n, n.checked_add(1).ok_or_else(|| "seed too large".to_string())?)
        };
        if end <= start {
            return Err(format!("empty range: the end must be greater than the start {start}"));
        }
        if end - start > MAX_SEEDS_PER_RANGE {
            return Err(format!("{} seeds: at most {MAX_SEEDS_PER_RANGE} per range", end - start));
        }
        Ok(SeedRange { start, end })
    }

    /// Number of seeds.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Always false: a range holds at least one seed.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The seeds, in order.
    pub fn iter(&self) -> std::ops::Range<u64> {
        self.start..self.end
    }
}

impl fmt::Display for SeedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(SeedRange::parse("0..20"), Ok(SeedRange { start: 0, end: 20 }));
        assert_eq!(SeedRange::parse("5..=7"), Ok(SeedRange { start: 5, end: 8 }));
        assert_eq!(SeedRange::parse("42"), Ok(SeedRange { start: 42, end: 43 }));
        assert_eq!(SeedRange::parse("3..9").unwrap().to_string(), "3..9");
        assert_eq!(SeedRange::parse("3..9").unwrap().len(), 6);
    }

    #[test]
    fn refusals() {
        assert_eq!(SeedRange::parse("5..5"), Err("empty range: the end must be greater than the start 5".into()));
        assert_eq!(SeedRange::parse("a..5"), Err("\"a\" is not a seed (an unsigned 64-bit integer)".into()));
        assert_eq!(SeedRange::parse("0..2000000"), Err("2000000 seeds: at most 1000000 per range".into()));
        assert!(SeedRange::parse("0..=18446744073709551615").is_err());
    }
}
