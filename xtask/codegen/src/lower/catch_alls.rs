//! The catch-alls lowering adds where the schema has none ([`CatchAllSource::Generator`]): every
//! string and integer enum, and every tagged union, keeps a value that a newer revision of the
//! same protocol version may send, instead of failing the message that carries it.
//!
//! Naming, deterministic and collision-free: the added variant is named like the catch-alls the
//! schemas declare, `Other`, so that Rust code keeps its name when a later revision declares the
//! catch-all itself (as v2 does for most of v1's closed types). When a sibling is already called
//! that (a value `"other"`, as in `ToolKind`), it is `Unknown`, then the first of `Unknown2`,
//! `Unknown3`, … that no sibling is called.

use super::Lowerer;
use crate::ir::*;
use crate::load::Schema;

/// What an added catch-all keeps.
pub(super) enum Keeps {
    /// Any other value of an enum.
    Value,
    /// Any other variant of a tagged union (an object whose tag is a string no variant names).
    Variant,
}

impl Lowerer<'_> {
    /// The catch-all added to the enum or union `s`, whose other variants are named `taken`.
    pub(super) fn added_catch_all<'n>(
        s: &Schema,
        taken: impl IntoIterator<Item = &'n String>,
        keeps: Keeps,
    ) -> CatchAll {
        let name = free_name(taken);
        let what = match keeps {
            Keeps::Value => "Any other value, kept as received",
            Keeps::Variant => "Any other variant, kept whole as received",
        };
        let docs = format!(
            "{what}.\n\nAdded by the generator (the schema has no catch-all here), for the values a newer\n\
             revision of this schema may send; decoding records each one it keeps\n\
             (`lenient::LenientEvent::NotInSchema`)."
        );
        CatchAll {
            origin: Origin {
                wire: name.clone(),
                pointer: s.pointer.clone(),
                docs: Some(docs),
                annotations: Vec::new(),
            },
            name,
            stability: Stability::Stable,
            maturity: Maturity::Stable,
            source: CatchAllSource::Generator,
        }
    }
}

/// `Other`, else `Unknown`, else the first `UnknownN` (N = 2, 3, …) not in `taken`.
fn free_name<'n>(taken: impl IntoIterator<Item = &'n String>) -> String {
    let taken: Vec<&String> = taken.into_iter().collect();
    let free = |name: &String| !taken.contains(&name);
    ["Other", "Unknown"]
        .map(String::from)
        .into_iter()
        .chain((2..).map(|n| format!("Unknown{n}")))
        .find(free)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::free_name;

    #[test]
    fn the_added_name_avoids_its_siblings() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(free_name(&names(&["Text", "Image"])), "Other");
        assert_eq!(free_name(&names(&["Read", "Other"])), "Unknown");
        assert_eq!(free_name(&names(&["Other", "Unknown", "Running"])), "Unknown2");
        assert_eq!(free_name(&names(&["Unknown2", "Other", "Unknown"])), "Unknown3");
    }
}
