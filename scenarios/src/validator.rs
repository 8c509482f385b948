//! Range and name checks whose errors name the file and the key path.

use crate::error::ScenarioError;
use crate::model::RangeMs;

/// Range checks that name the file and key.
pub(crate) struct Validator<'a> {
    /// The file (or `library:<file>`) every message starts with.
    pub(crate) origin: &'a str,
}

impl Validator<'_> {
    pub(crate) fn probability(&self, key_path: &str, value: f64) -> Result<(), ScenarioError> {
        if (0.0..=1.0).contains(&value) {
            Ok(())
        } else {
            Err(ScenarioError::ProbabilityOutOfRange { origin: self.origin.into(), key_path: key_path.into(), value })
        }
    }

    pub(crate) fn duration(&self, key_path: &str, value: i64, min: i64, max: i64) -> Result<(), ScenarioError> {
        if (min..=max).contains(&value) {
            Ok(())
        } else {
            Err(ScenarioError::BadDuration {
                origin: self.origin.into(),
                key_path: key_path.into(),
                value,
                reason: format!("must be within {min}..={max} ms"),
            })
        }
    }

    pub(crate) fn range(&self, key_path: &str, r: RangeMs, max: i64) -> Result<(), ScenarioError> {
        self.duration(&format!("{key_path}.min"), r.min, 0, max)?;
        self.duration(&format!("{key_path}.max"), r.max, 0, max)?;
        if r.min > r.max {
            return Err(ScenarioError::BadDuration {
                origin: self.origin.into(),
                key_path: format!("{key_path}.max"),
                value: r.max,
                reason: format!("smaller than {key_path}.min = {}", r.min),
            });
        }
        Ok(())
    }

    pub(crate) fn count(&self, key_path: &str, value: i64, min: i64, max: i64) -> Result<(), ScenarioError> {
        if (min..=max).contains(&value) {
            Ok(())
        } else {
            Err(ScenarioError::OutOfRange { origin: self.origin.into(), key_path: key_path.into(), value, min, max })
        }
    }

    /// A pinned fault's window: `0 <= start_ms < end_ms <= fault_ms`.
    pub(crate) fn window(
        &self,
        key_path: &str,
        start_ms: i64,
        end_ms: i64,
        fault_ms: i64,
    ) -> Result<(), ScenarioError> {
        self.duration(&format!("{key_path}.start_ms"), start_ms, 0, fault_ms - 1)?;
        self.duration(&format!("{key_path}.end_ms"), end_ms, start_ms + 1, fault_ms)
    }

    pub(crate) fn known(&self, key_path: &str, name: &str, known: &[&str]) -> Result<(), ScenarioError> {
        if known.contains(&name) {
            Ok(())
        } else {
            Err(ScenarioError::UnknownName {
                origin: self.origin.into(),
                key_path: key_path.into(),
                name: name.into(),
                known: known.join(", "),
            })
        }
    }

    pub(crate) fn inconsistent(&self, key_path: &str, message: &str) -> ScenarioError {
        ScenarioError::Inconsistent { origin: self.origin.into(), key_path: key_path.into(), message: message.into() }
    }
}
