//! The clock-skew nemesis: each `bookingd` and the provider run with their
//! wall clock seconds ahead or behind, through libfaketime (Debian's
//! `faketime`), as the scenario's `faults.clock_skew` says. A slot draws a
//! new skew for every life, so a restarted instance comes back on a clock
//! that jumped.
//!
//! The store's clock (PostgreSQL's, unskewed) decides every hold's
//! lifetime, so a skewed process must change nothing the tables or the
//! clients see of it: [`super::hold_life`] judges that.
//!
//! What it cannot do: step a clock inside a running process.
//! libfaketime 0.9.10 moves `CLOCK_MONOTONIC` with `CLOCK_REALTIME`
//! (`FAKETIME_DONT_FAKE_MONOTONIC=1` breaks `clock_nanosleep`), so a step
//! would fire every timer of the process at once: a different fault.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};

/// Skews are clamped to this many ms either way.
pub const MAX_SKEW_MS: i64 = 30_000;
/// A drawn skew is at least this far from zero, in ms: well past the hold
/// judge's tolerance, so a process that trusted its own clock is caught.
pub const MIN_SKEW_MS: i64 = 1_000;
/// Where Debian's `libfaketime` lives (the multi-threaded build), by architecture.
const LIBFAKETIME: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
];

/// The installed libfaketime, or an error saying how to install it.
pub fn libfaketime() -> Result<PathBuf, String> {
    LIBFAKETIME.iter().map(Path::new).find(|p| p.exists()).map(Path::to_path_buf).ok_or_else(|| {
        "clock skew needs libfaketime: install Debian's `faketime` (apt-get install faketime)".to_string()
    })
}

/// Draws a skew in `±max_ms` (clamped to [`MAX_SKEW_MS`]), at least
/// [`MIN_SKEW_MS`] from zero when `max_ms` allows it.
/// Precondition: `max_ms > 0`.
pub fn draw(rng: &mut ChaCha8Rng, max_ms: i64) -> i64 {
    assert!(max_ms > 0, "a skew needs a range");
    let max_ms = max_ms.min(MAX_SKEW_MS);
    let min_ms = MIN_SKEW_MS.min(max_ms);
    let magnitude = rng.random_range(min_ms..=max_ms);
    if rng.random_bool(0.5) { magnitude } else { -magnitude }
}

/// The environment that runs a process `skew_ms` off the real clock.
pub fn env(lib: &Path, skew_ms: i64) -> Vec<(String, String)> {
    let sign = if skew_ms < 0 { "-" } else { "+" };
    let abs = skew_ms.unsigned_abs();
    vec![
        ("LD_PRELOAD".into(), lib.display().to_string()),
        ("FAKETIME".into(), format!("{sign}{}.{:03}", abs / 1_000, abs % 1_000)),
    ]
}

/// How a skew reads in the fault log: `2.345 s ahead`.
pub fn describe(skew_ms: i64) -> String {
    let way = if skew_ms < 0 { "behind" } else { "ahead" };
    format!("{}.{:03} s {way}", skew_ms.unsigned_abs() / 1_000, skew_ms.unsigned_abs() % 1_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn draws_stay_in_range_and_away_from_zero() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draws: Vec<i64> = (0..1_000).map(|_| draw(&mut rng, 30_000)).collect();
        assert!(draws.iter().all(|d| (MIN_SKEW_MS..=MAX_SKEW_MS).contains(&d.abs())));
        assert!(draws.iter().any(|d| *d < 0) && draws.iter().any(|d| *d > 0));
        assert!((0..100).all(|_| draw(&mut rng, 400).abs() == 400), "a range under the minimum is used whole");
        assert!((0..100).all(|_| draw(&mut rng, 90_000).abs() <= MAX_SKEW_MS));
    }

    #[test]
    fn the_environment_states_the_offset_in_seconds() {
        let lib = Path::new("/lib/f.so");
        assert_eq!(env(lib, -2_005)[1], ("FAKETIME".to_string(), "-2.005".to_string()));
        assert_eq!(env(lib, 30_000)[1], ("FAKETIME".to_string(), "+30.000".to_string()));
        assert_eq!(describe(-1_500), "1.500 s behind");
    }
}
