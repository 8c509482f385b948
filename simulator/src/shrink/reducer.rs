//! The greedy loop of `simulator shrink`: passes over every step, each
//! keeping the first smaller candidate that still fails with the target,
//! then pinning the fault schedule once, within a budget of runs.

use super::oracle::{self, Oracle, Trial};
use super::steps::Step;
use super::{MAX_PASSES, Request, ShrinkError, pinned, progress};
use scenarios::Scenario;

/// The reduction under way: the smallest failing scenario so far and what it took.
pub struct Reducer<'r> {
    /// What was asked.
    pub req: &'r Request,
    /// Runs candidates.
    pub oracle: &'r Oracle,
    /// The failure every kept candidate must show.
    pub target: String,
    /// The smallest scenario that still fails with `target`.
    pub current: Scenario,
    /// Its run.
    pub best: Trial,
    /// The changes kept, in order.
    pub changes: Vec<String>,
    /// Runs made so far.
    pub runs: u64,
}

/// How one pass over the steps ended.
enum Pass {
    /// A candidate was kept: pass again.
    Kept,
    /// Nothing smaller helps.
    Stuck,
    /// The run budget is spent.
    Spent,
}

impl Reducer<'_> {
    /// Passes until nothing smaller helps, the schedule pinned once on the
    /// way, or until the budget (one run kept back for the capsule's check)
    /// or [`MAX_PASSES`] ends it.
    pub fn run(&mut self) -> Result<(), ShrinkError> {
        let mut all = super::steps::all();
        all.extend(pinned::steps());
        let mut pin_tried = false;
        for _pass in 0..MAX_PASSES {
            match self.pass(&all)? {
                Pass::Kept => continue,
                Pass::Spent => return Ok(()),
                Pass::Stuck if pin_tried => return Ok(()),
                Pass::Stuck => {
                    pin_tried = true;
                    if !self.pin()? {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    /// One pass: the first candidate of any step that keeps the target is kept.
    fn pass(&mut self, all: &[Step]) -> Result<Pass, ShrinkError> {
        let mut kept = false;
        for step in all {
            for cand in (step.smaller)(&self.current) {
                if self.runs + 1 >= self.req.max_runs {
                    progress(self.req.progress, || format!("run budget ({}) spent", self.req.max_runs));
                    return Ok(Pass::Spent);
                }
                if !oracle::validates(&cand.scenario) {
                    continue;
                }
                let trial = self.oracle.try_candidate(&cand.scenario)?;
                self.runs += 1;
                let keeps = trial.labels.contains(&self.target);
                self.report(&cand.change, keeps, &trial);
                if keeps {
                    self.keep(cand.scenario, trial, cand.change);
                    kept = true;
                    break;
                }
            }
        }
        Ok(if kept { Pass::Kept } else { Pass::Stuck })
    }

    /// Pins the fault schedule; whether the pinned scenario was kept.
    fn pin(&mut self) -> Result<bool, ShrinkError> {
        let Some((cand, change)) = pinned::pin(&self.current, self.req.seed) else { return Ok(false) };
        if self.runs + 1 >= self.req.max_runs || !oracle::validates(&cand) {
            return Ok(false);
        }
        let trial = self.oracle.try_candidate(&cand)?;
        self.runs += 1;
        let keeps = trial.labels.contains(&self.target);
        progress(self.req.progress, || {
            let what = if keeps { "kept" } else { "not the same failure" };
            format!("run {}/{}: {change}: {what}", self.runs, self.req.max_runs)
        });
        if keeps {
            self.keep(cand, trial, change);
        }
        Ok(keeps)
    }

    fn keep(&mut self, scenario: Scenario, trial: Trial, change: String) {
        self.current = scenario;
        self.best = trial;
        self.changes.push(change);
    }

    fn report(&self, change: &str, keeps: bool, trial: &Trial) {
        progress(self.req.progress, || {
            let what = if keeps {
                format!("kept, {} trace events", trial.verdict.trace_events)
            } else if trial.labels.is_empty() {
                "passes".to_string()
            } else {
                format!("fails otherwise ({})", trial.labels.join(", "))
            };
            format!("run {}/{}: {change}: {what}", self.runs, self.req.max_runs)
        });
    }
}
