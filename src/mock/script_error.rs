//! What both mocks' scripts fail with: [`ScriptError`], the JSON pointer of the problem and what
//! is wrong there, and the pointer of a serde path.

use std::fmt;

/// A script a mock could not use: where (a JSON pointer into the script (RFC 6901), `""` for
/// the whole document, whose message then gives the line and column of JSON that does not
/// parse) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// The JSON pointer of the problem, e.g. `/turns/0/steps/2/delay`.
    pub pointer: String,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pointer.as_str() {
            "" => write!(f, "script: {}", self.message),
            pointer => write!(f, "script at {pointer}: {}", self.message),
        }
    }
}

impl std::error::Error for ScriptError {}

impl ScriptError {
    pub(super) fn at(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        ScriptError { pointer: pointer.into(), message: message.into() }
    }
}

/// One reference token of a JSON pointer (`~` and `/` escaped).
pub(super) fn token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The JSON pointer of a serde path (a tagged step's kind is the key of its one-key object).
pub(super) fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(format!("/{index}")),
            Segment::Map { key: name } | Segment::Enum { variant: name } => Some(format!("/{}", token(name))),
            Segment::Unknown => None,
        })
        .collect()
}
