//! Running one candidate: the scenario is written to a file and its seed run
//! in a process of its own (`simulator seed`), exactly as `run` runs seeds
//! (see [`crate::run::pool`]: worlds sharing a process are not reproducible), so
//! every candidate's verdict is the one its capsule would replay.

use super::ShrinkError;
use crate::run::failure::Failure;
use crate::run::runner::SeedVerdict;
use crate::world::plan;
use booking::fault::Plant;
use scenarios::{Expect, Outcome, Scenario};
use std::path::{Path, PathBuf};

/// What one run of a candidate showed.
#[derive(Debug, Clone)]
pub struct Trial {
    /// Its failures by name ([`labels`]), in the order the run reported them.
    pub labels: Vec<String>,
    /// The run's verdict.
    pub verdict: SeedVerdict,
}

/// The name of each failure of `v` that shrinking can aim at: a violated
/// invariant's stable name, `panic`, `run-error`, `no-verdict` (the seed's
/// process died) or `no-process`; first occurrence only, in order.
pub fn labels(v: &SeedVerdict) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in &v.failures {
        let name = match f {
            Failure::Violated { violation } | Failure::Unexpected { violation } => violation.invariant.as_str(),
            Failure::Panic { .. } => "panic",
            Failure::RunError { .. } => "run-error",
            Failure::NoVerdict { .. } => "no-verdict",
            Failure::NoProcess { .. } => "no-process",
            _ => continue,
        };
        if !out.iter().any(|l| l == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The expectation a candidate runs under: must pass, so that every
/// violation comes back as a failure and nothing else does.
pub fn neutral_expect() -> Expect {
    Expect {
        outcome: Outcome::Pass,
        violations: Vec::new(),
        classification: None,
        tolerated: Vec::new(),
        must_happen: Vec::new(),
    }
}

/// Whether the scenario loader accepts `s` (written and read back).
pub fn validates(s: &Scenario) -> bool {
    s.to_toml().ok().is_some_and(|text| Scenario::parse(&text, "candidate").is_ok())
}

/// Runs one seed of candidate scenarios under one planted bug.
#[derive(Debug)]
pub struct Oracle {
    seed: u64,
    plant: Option<Plant>,
    dir: PathBuf,
}

impl Oracle {
    /// An oracle for `seed` under `plant`, writing its candidate files in a
    /// directory of its own under the system's temporary directory.
    pub fn new(seed: u64, plant: Option<Plant>) -> Result<Self, ShrinkError> {
        let dir = std::env::temp_dir().join(format!("holdfast-shrink-{}-{seed}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|source| ShrinkError::Io { path: dir.display().to_string(), source })?;
        Ok(Self { seed, plant, dir })
    }

    /// Runs candidate `s` under [`neutral_expect`].
    pub fn try_candidate(&self, s: &Scenario) -> Result<Trial, ShrinkError> {
        let mut probe = s.clone();
        probe.expect = neutral_expect();
        let path = self.dir.join("candidate.toml");
        let text = probe.to_toml()?;
        std::fs::write(&path, text).map_err(|source| ShrinkError::Io { path: path.display().to_string(), source })?;
        Ok(self.run_file(&path))
    }

    /// Runs the scenario file at `path` as it is (its own expectation).
    pub fn run_file(&self, path: &Path) -> Trial {
        let verdict = match plan::from_file(&path.display().to_string()) {
            Ok(mut p) => {
                p.plant = self.plant;
                crate::run::pool::seed_in_process(&p, self.seed)
            }
            Err(e) => SeedVerdict::without_run(
                path.display().to_string(),
                self.seed,
                String::new(),
                Failure::RunError { error: e },
            ),
        };
        Trial { labels: labels(&verdict), verdict }
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
