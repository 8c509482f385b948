//! The fault seam in a real process (`bookingd` built with the
//! `fault-injection` feature, for crash-safety and chaos tests): exit
//! abruptly right after the store commits at chosen points, and run with a
//! planted bug.

use super::{CommitPoint, Injector, Plant};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Exit code of a process that crashed itself after a commit.
pub const CRASH_EXIT_CODE: i32 = 86;

/// Crashes the process (exit [`CRASH_EXIT_CODE`], no cleanup, no answer
/// sent) right after a commit at one of `points`, once `skip` such commits
/// have passed; plants `plant`.
#[derive(Debug, Clone)]
pub struct ProcessInjector {
    points: Vec<CommitPoint>,
    plant: Option<Plant>,
    /// Commits at `points` still to let pass before crashing.
    skip_left: Arc<AtomicU64>,
}

impl ProcessInjector {
    /// An injector crashing after `points` and planting `plant`.
    pub fn new(points: Vec<CommitPoint>, plant: Option<Plant>) -> Self {
        Self { points, plant, skip_left: Arc::new(AtomicU64::new(0)) }
    }

    /// The same injector, letting `commits` commits at its points pass before
    /// crashing at the next one (chaos mode seeds it, so a restarted process
    /// makes progress before it crashes again).
    pub fn skipping(self, commits: u64) -> Self {
        self.skip_left.store(commits, Ordering::SeqCst);
        self
    }

    /// Parses `--crash-after-commit` values (commit point names) and `--plant`.
    pub fn parse(points: &[String], plant: Option<&str>) -> Result<Self, String> {
        let points = points
            .iter()
            .map(|p| {
                CommitPoint::parse(p).ok_or_else(|| {
                    let known: Vec<&str> = CommitPoint::ALL.iter().map(|c| c.as_str()).collect();
                    format!("unknown commit point {p:?} (known: {})", known.join(", "))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let plant = plant
            .map(|name| {
                Plant::parse(name).ok_or_else(|| {
                    let known: Vec<&str> = Plant::ALL.iter().map(|p| p.name()).collect();
                    format!("unknown plant {name:?} (known: {})", known.join(", "))
                })
            })
            .transpose()?;
        Ok(Self::new(points, plant))
    }
}

impl Injector for ProcessInjector {
    fn crash_after(&self, point: CommitPoint) -> bool {
        if !self.points.contains(&point) {
            return false;
        }
        // Let `skip_left` commits pass: count down, never below zero.
        if self.skip_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            return false;
        }
        eprintln!("bookingd: crash-after-commit at {point} (test fault)");
        std::process::exit(CRASH_EXIT_CODE);
    }

    fn plant(&self) -> Option<Plant> {
        self.plant
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_points_and_plants_and_names_the_known_ones() {
        let i = ProcessInjector::parse(&["checkout".into(), "sweep".into()], Some("sweep-early")).unwrap();
        assert_eq!(i.points, vec![CommitPoint::Checkout, CommitPoint::Sweep]);
        assert_eq!(i.plant, Some(Plant::SweepEarly));
        let e = ProcessInjector::parse(&["nope".into()], None).unwrap_err();
        assert!(e.contains("known: hold, release, checkout"), "{e}");
        assert!(ProcessInjector::parse(&[], Some("nope")).unwrap_err().contains("unconditional-checkout"));
    }

    #[test]
    fn skipping_lets_that_many_commits_pass_and_ignores_other_points() {
        let i = ProcessInjector::parse(&["hold".into()], None).unwrap().skipping(2);
        assert!(!i.crash_after(CommitPoint::Checkout), "not a chosen point");
        assert!(!i.crash_after(CommitPoint::Hold));
        assert!(!i.crash_after(CommitPoint::Hold));
        assert_eq!(i.skip_left.load(Ordering::SeqCst), 0, "the third hold commit would crash");
    }
}
