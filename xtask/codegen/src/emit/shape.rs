//! The kinds of lenient decoding function a field asks for (`x-deserialize-*`): the `Emitter`
//! collects them while emitting fields, and `lenient` emits one shared function per kind.

use crate::ir::*;

/// The Rust wrapper of a lenient field that has a shared `lenient_fns::*` function; a field with
/// a schema default gets a function of its own instead (its default is its own). Declared in the
/// order of the functions' names, which is their order in the generated file.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum LenientShape {
    /// `Option<T>`: a required nullable or an optional field.
    Optional,
    /// `Patch<T>`.
    Patch,
    /// `T`.
    Required,
}

impl LenientShape {
    pub(super) fn of(presence: &Presence) -> Option<LenientShape> {
        match presence {
            Presence::Required => Some(LenientShape::Required),
            Presence::RequiredNullable | Presence::Optional => Some(LenientShape::Optional),
            Presence::Patch => Some(LenientShape::Patch),
            Presence::Defaulted(_) => None,
        }
    }

    pub(super) fn prefix(self) -> &'static str {
        match self {
            LenientShape::Optional => "option",
            LenientShape::Patch => "patch",
            LenientShape::Required => "required",
        }
    }
}

/// Lenient deserialize functions, shared by all fields of the same shape.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct LenientFn {
    pub(super) shape: LenientShape,
    pub(super) items: bool,
    pub(super) on_null: bool,
    pub(super) on_error: bool,
}

impl LenientFn {
    pub(super) fn name(&self) -> String {
        let mut n = self.shape.prefix().to_string();
        if self.items {
            n.push_str("_items");
        }
        if self.on_null {
            n.push_str("_on_null");
        }
        if self.on_error {
            n.push_str("_on_error");
        }
        n
    }
}
