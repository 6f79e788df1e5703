//! The checks lowering makes on the Rust names it hands to the emitters: each is an identifier,
//! and the variants and fields of one type are distinct. (A type name taken twice is reported
//! where names are reserved, [`Lowerer::reserve`].)

use super::Lowerer;
use crate::error::SchemaErrorKind;
use crate::ir::*;
use crate::load::Schema;
use crate::naming;
use std::collections::BTreeMap;

impl Lowerer<'_> {
    /// Variant names of an enum, its catch-all included, must differ.
    pub(super) fn check_enum_names<'n>(
        &mut self,
        s: &Schema,
        values: impl Iterator<Item = (&'n String, &'n String)>,
        open: Option<&'n CatchAll>,
    ) {
        let names = values.chain(open.map(|c| (&c.name, &c.origin.pointer)));
        self.check_unique(s, names);
    }

    /// The names of one type's members (variants, fields) must differ: an error per clash, naming
    /// both sources.
    pub(super) fn check_unique<'n>(&mut self, s: &Schema, names: impl Iterator<Item = (&'n String, &'n String)>) {
        let mut seen: BTreeMap<&String, &String> = BTreeMap::new();
        let mut clashes = Vec::new();
        for (name, pointer) in names {
            if let Some(first) = seen.insert(name, pointer) {
                clashes.push(SchemaErrorKind::MemberNameTaken {
                    name: name.clone(),
                    first: first.clone(),
                    second: pointer.clone(),
                });
            }
        }
        for c in clashes {
            self.error(&s.pointer, c);
        }
    }

    /// Every Rust name the emitters will print must be an identifier: schema text can hold
    /// characters `heck` keeps but Rust does not accept (`x²`).
    pub(super) fn check_identifiers(&mut self) {
        let mut bad: Vec<(String, String, String)> = Vec::new();
        let mut check = |name: &str, origin: &Origin| {
            if !naming::is_identifier(name) {
                bad.push((origin.pointer.clone(), origin.wire.clone(), name.to_string()));
            }
        };
        for t in &self.types {
            check(&t.name, &t.origin);
            match &t.kind {
                TypeKind::Struct(s) => {
                    s.fields.iter().for_each(|f| check(&f.name, &f.origin));
                    if let Some(flatten) = &s.flatten {
                        check(&flatten.name, &t.origin);
                    }
                }
                TypeKind::StringEnum { values, catch_all } => {
                    values.iter().for_each(|v| check(&v.name, &v.origin));
                    check(&catch_all.name, &catch_all.origin);
                }
                TypeKind::IntEnum { values, catch_all, .. } => {
                    values.iter().for_each(|v| check(&v.name, &v.origin));
                    check(&catch_all.name, &catch_all.origin);
                }
                TypeKind::Union(u) => u.variants.iter().for_each(|v| check(&v.name, &v.origin)),
                TypeKind::Newtype { .. } | TypeKind::Any => {}
            }
        }
        for (pointer, wire, name) in bad {
            self.error(&pointer, SchemaErrorKind::NotIdentifier { wire, name });
        }
    }
}
