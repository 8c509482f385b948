//! Why a scenario file was refused. Every message starts with the file (or
//! `library:<file>`) and names the key path, so the fix is obvious.

/// A refused scenario file.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{origin}:{line}:{column}: TOML syntax error: {message}")]
    Syntax {
        /// The file.
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A key the format does not have (a typo, or a key in the wrong table).
    #[error("{origin}: unknown key `{key_path}`")]
    UnknownKey {
        /// The file.
        origin: String,
        /// Dotted path of the unknown key.
        key_path: String,
    },
    /// A required key is absent.
    #[error("{origin}: missing key `{key_path}`")]
    MissingKey {
        /// The file.
        origin: String,
        /// Dotted path of the missing key.
        key_path: String,
    },
    /// A value of the wrong type or an unknown enum value.
    #[error("{origin}: `{key_path}`: {message}")]
    BadValue {
        /// The file.
        origin: String,
        /// Dotted path of the key.
        key_path: String,
        /// What was wrong.
        message: String,
    },
    /// A probability outside `0.0..=1.0` (or not a number).
    #[error("{origin}: `{key_path}` = {value}: a probability must be within 0.0..=1.0")]
    ProbabilityOutOfRange {
        /// The file.
        origin: String,
        /// Dotted path of the key.
        key_path: String,
        /// The value found.
        value: f64,
    },
    /// A duration (a `*_ms` key) out of its range, or a range with `min > max`.
    #[error("{origin}: `{key_path}` = {value}: bad duration: {reason}")]
    BadDuration {
        /// The file.
        origin: String,
        /// Dotted path of the key.
        key_path: String,
        /// The value found, ms.
        value: i64,
        /// The rule it breaks.
        reason: String,
    },
    /// A count out of its range.
    #[error("{origin}: `{key_path}` = {value}: must be within {min}..={max}")]
    OutOfRange {
        /// The file.
        origin: String,
        /// Dotted path of the key.
        key_path: String,
        /// The value found.
        value: i64,
        /// Smallest allowed.
        min: i64,
        /// Largest allowed.
        max: i64,
    },
    /// `name` is empty.
    #[error("{origin}: `name` is empty")]
    EmptyName {
        /// The file.
        origin: String,
    },
    /// `name` has characters outside `[a-z0-9-]` or is too long.
    #[error("{origin}: `name` = {name:?}: use 1..=64 characters of [a-z0-9-]")]
    BadName {
        /// The file.
        origin: String,
        /// The name found.
        name: String,
    },
    /// `seeds.default` is not a valid range.
    #[error("{origin}: `seeds.default` = {value:?}: {reason}")]
    BadSeeds {
        /// The file.
        origin: String,
        /// The value found.
        value: String,
        /// The rule it breaks.
        reason: String,
    },
    /// A name that is not one of the known invariants or classifications.
    #[error("{origin}: `{key_path}`: unknown name {name:?} (known: {known})")]
    UnknownName {
        /// The file.
        origin: String,
        /// Dotted path of the key.
        key_path: String,
        /// The name found.
        name: String,
        /// The known names, comma separated.
        known: String,
    },
    /// Keys that are valid alone but contradict each other.
    #[error("{origin}: `{key_path}`: {message}")]
    Inconsistent {
        /// The file.
        origin: String,
        /// Dotted path of the key at fault.
        key_path: String,
        /// The contradiction.
        message: String,
    },
}
