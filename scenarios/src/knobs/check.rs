//! Checking one knob's value against its row: the range of its own type,
//! then its rule with other keys. Errors name the file and the key path.

use super::{Check, Knob, Value};
use crate::error::ScenarioError;
use crate::model::Scenario;
use crate::validator::Validator;

impl Knob {
    /// Checks this knob of `s` (nothing when it is absent); `origin` starts
    /// the error message.
    pub fn validate(&self, s: &Scenario, origin: &str) -> Result<(), ScenarioError> {
        let Some(value) = (self.access.get)(s) else { return Ok(()) };
        let (v, key) = (Validator { origin }, self.key);
        match (self.check, &value) {
            (Check::Count { min, max }, Value::Int(n)) => v.count(key, *n, min.of(s), max.of(s))?,
            (Check::Duration { min, max }, Value::Int(n)) => v.duration(key, *n, min.of(s), max.of(s))?,
            (Check::Probability, Value::Share(p)) => v.probability(key, *p)?,
            (Check::Range { max }, Value::Range(r)) => v.range(key, *r, max.of(s))?,
            (Check::Name { known, .. }, Value::Name(n)) => v.known(key, n, known)?,
            (Check::Names { known, noun, non_empty }, Value::Names(names)) => {
                if non_empty && names.is_empty() {
                    return Err(v.inconsistent(key, &format!("names no {noun}")));
                }
                for (i, n) in names.iter().enumerate() {
                    v.known(&format!("{key}[{i}]"), n, known)?;
                }
            }
            (Check::Flag, Value::Flag(_)) | (Check::Table, Value::Table) => {}
            (check, value) => unreachable!("{}: row {:?} read {value:?}", self.key, kind_name(check)),
        }
        match self.rule {
            Some(rule) if (rule.broken)(s) => Err(v.inconsistent(key, rule.message)),
            _ => Ok(()),
        }
    }
}

fn kind_name(check: Check) -> &'static str {
    match check {
        Check::Count { .. } => "count",
        Check::Duration { .. } => "duration",
        Check::Probability => "probability",
        Check::Range { .. } => "range",
        Check::Flag => "flag",
        Check::Name { .. } => "name",
        Check::Names { .. } => "names",
        Check::Table => "table",
        Check::Special(_) => "special",
    }
}
