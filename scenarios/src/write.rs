//! Writing a scenario back as TOML: the inverse of [`Scenario::parse`], so a
//! program (the simulator's `shrink`) can derive a scenario and hand it to
//! anyone as a file.

use crate::model::Scenario;

/// A scenario the TOML writer refused (it never should: every field of the
/// model has a TOML form).
#[derive(Debug, thiserror::Error)]
#[error("cannot write scenario {name} as TOML: {message}")]
pub struct WriteError {
    /// The scenario's name.
    pub name: String,
    /// The writer's message.
    pub message: String,
}

impl Scenario {
    /// The scenario as a TOML document that [`Scenario::parse`] reads back
    /// as an equal scenario (its `origin` aside, which is not in the file).
    pub fn to_toml(&self) -> Result<String, WriteError> {
        toml::to_string(self).map_err(|e| WriteError { name: self.name.clone(), message: e.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use crate::Scenario;

    #[test]
    fn every_library_scenario_reads_back_equal_from_its_toml() {
        for s in crate::library() {
            let text = s.to_toml().expect("writes");
            let mut back = Scenario::parse(&text, "written").unwrap_or_else(|e| panic!("{}: {e}\n{text}", s.name));
            back.origin = s.origin.clone();
            assert_eq!(back, s, "{}", s.name);
        }
    }
}
