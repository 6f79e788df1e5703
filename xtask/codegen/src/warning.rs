//! The engine's warnings: what a schema has that the generator does not understand yet but can
//! still generate around (an annotation it does not know, a request without a response type).
//! They never stop generation; the drivers print them. A leaf beside `error`.

use crate::error::{fragment, quoted};
use std::fmt;

/// Something in a schema file that generated anyway, located by file and JSON pointer. Ordered by
/// file, pointer and text, as errors are.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Warning {
    /// The schema file.
    pub file: String,
    /// The JSON pointer of the item in it.
    pub pointer: String,
    /// What it is about.
    pub kind: WarningKind,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}: warning: {}", self.file, fragment(&self.pointer), self.kind)
    }
}

/// What a warning is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum WarningKind {
    /// An `x-` keyword the generator does not know: kept in the IR as a raw annotation of the
    /// item it stands on ([`crate::ir::Annotation`]). One warning per keyword and file, at its
    /// first occurrence; `count` says how many there are in the file.
    UnknownAnnotation {
        /// The keyword, e.g. `x-state`.
        keyword: String,
        /// How many times the file uses it.
        count: usize,
    },
    /// A request whose response type the schema does not declare: its response is raw JSON.
    NoResponse {
        /// The method's wire name.
        method: String,
    },
    /// An `x-state` rule whose action the generator does not know (a newer draft's): the rule is
    /// left out, so the messages it describes stay unapplied.
    UnknownStateAction {
        /// The action as the schema writes it.
        action: String,
    },
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WarningKind::UnknownAnnotation { keyword, count } => {
                write!(f, "annotation {} is not known to the generator; kept as raw data", quoted(keyword))?;
                match count {
                    1 => Ok(()),
                    n => write!(f, " ({n} places in this file)"),
                }
            }
            WarningKind::NoResponse { method } => {
                write!(f, "request {} has no response type; its response is raw JSON", quoted(method))
            }
            WarningKind::UnknownStateAction { action } => write!(
                f,
                "x-state action {} is not known to the generator; the rule is left out and its messages stay unapplied",
                quoted(action)
            ),
        }
    }
}
