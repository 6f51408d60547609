//! [`SimError`]: every way building or running a simulation can be refused.
//!
//! Nothing reachable from the public API panics on user input: an unknown preset, an
//! unknown override key, a value that does not parse or is out of range, a topology whose
//! indices do not line up, or a guard setting guards-core rejects all come back as a
//! `SimError` that names the offending key or field. The Python layer maps them to
//! `KeyError` / `ValueError`.

use core::fmt;

use guards_core::ConfigError;

/// Why a simulation could not be built or run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SimError {
    /// No preset has this name.
    UnknownPreset {
        /// The name asked for.
        name: String,
        /// The valid names.
        known: Vec<&'static str>,
    },
    /// No override has this key (or a topology has a field of this path that its object
    /// does not know).
    UnknownKey {
        /// The key or path given.
        key: String,
    },
    /// The value does not parse or is out of range for the key (an override key, or the
    /// JSON path of a topology's value, down to a guard config's field).
    BadValue {
        /// The key or path.
        key: String,
        /// The value given.
        value: String,
        /// What would be accepted.
        expected: String,
    },
    /// An override was not of the form `key=value`.
    BadOverride {
        /// The text given.
        text: String,
    },
    /// The topology is inconsistent (an index out of range, a missing operation, ...).
    Topology {
        /// What is wrong, naming the element.
        what: String,
    },
    /// guards-core rejected a guard's settings.
    Guard {
        /// Where in the topology the guard sits.
        place: String,
        /// The guard's own error.
        error: ConfigError,
    },
}

impl SimError {
    /// A topology error.
    pub(crate) fn topology(what: impl Into<String>) -> Self {
        SimError::Topology { what: what.into() }
    }

    /// A bad value for a key.
    pub(crate) fn bad_value(key: &str, value: &str, expected: &str) -> Self {
        SimError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }

    /// A guard configuration error.
    pub(crate) fn guard(place: impl Into<String>, error: ConfigError) -> Self {
        SimError::Guard {
            place: place.into(),
            error,
        }
    }

    /// A guards-ffi failure (a config its schema or core refused) at `place`.
    pub(crate) fn failure(place: impl Into<String>, f: &guards::error::Failure) -> Self {
        match f.detail {
            guards::error::Detail::Config(e) => SimError::guard(place, e),
            _ => SimError::Topology {
                what: format!("{}: {f}", place.into()),
            },
        }
    }

    /// Stable snake_case name of the error kind, for bindings.
    pub fn kind(&self) -> &'static str {
        match self {
            SimError::UnknownPreset { .. } => "unknown_preset",
            SimError::UnknownKey { .. } => "unknown_key",
            SimError::BadValue { .. } => "bad_value",
            SimError::BadOverride { .. } => "bad_override",
            SimError::Topology { .. } => "topology",
            SimError::Guard { .. } => "guard",
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::UnknownPreset { name, known } => {
                write!(f, "unknown preset {name:?}; known: {}", known.join(", "))
            }
            SimError::UnknownKey { key } => write!(f, "{key}: unknown key"),
            SimError::BadValue {
                key,
                value,
                expected,
            } => write!(f, "{key}: bad value {value}: expected {expected}"),
            SimError::BadOverride { text } => {
                write!(f, "override {text:?} is not of the form key=value")
            }
            SimError::Topology { what } => write!(f, "invalid topology: {what}"),
            SimError::Guard { place, error } => write!(f, "{place}: {error}"),
        }
    }
}

impl std::error::Error for SimError {}
