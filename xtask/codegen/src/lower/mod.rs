//! Lowering: the JSON Schema model of one file becomes a [`Protocol`].
//!
//! Every `$defs` entry gets its id first; then each is converted (`types`). Anonymous object,
//! enum and union schemas become types named after their parent and property or variant. `$ref`,
//! `allOf: [{$ref}]`, `anyOf`/`oneOf` and `not` do not survive: what they meant is recorded as
//! presence, tags, catch-alls (the schema's, or ones `catch_alls` adds so that values a newer
//! revision sends are kept) and untagged branches. Methods and their sides come from
//! `x-method`/`x-side` and the envelopes that carry them (`methods`). The decisions that need the
//! whole graph of types are made here too, by one analysis of how types contain each other
//! (`cycles`): which cycles are errors, and which references a `Box` holds ([`place_boxes`]; with
//! `sizes`, the union variants too large to hold inline).
//! `validation` checks the Rust names the emitters will print; `defaults` types each schema
//! `default` against its field's type, once every type is known.
//!
//! This module holds the entry point, [`lower`], and the context every part shares (`Lowerer`):
//! the document, the reserved ids and names, and the errors collected so far.

mod catch_alls;
mod cycles;
mod defaults;
mod methods;
mod sizes;
pub mod state;
mod types;
mod validation;

pub use cycles::place_boxes;

use crate::error::{Construct, Errors, LoadError, SchemaErrorKind};
use crate::ir::*;
use crate::load::{Document, Schema};
use crate::naming;
use crate::warning::{Warning, WarningKind};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Lowers a parsed schema file.
pub fn lower(doc: &Document) -> Result<Protocol, LoadError> {
    let mut errors = Errors::default();
    let protocol = {
        let mut l = Lowerer {
            doc,
            defs: doc.defs.iter().map(|(n, s)| (n.as_str(), s)).collect(),
            ids: HashMap::new(),
            types: Vec::new(),
            names: BTreeMap::new(),
            defaults: BTreeMap::new(),
            errors: &mut errors,
            warnings: doc.warnings.clone(),
        };
        for (name, schema) in &doc.defs {
            let id = l.reserve(&naming::type_name(name), name, schema, true);
            l.ids.insert(name.clone(), id);
        }
        for (name, schema) in &doc.defs {
            let id = l.ids[name];
            let kind = l.kind(schema, &l.types[id.0].name.clone());
            l.types[id.0].kind = kind;
        }
        let methods = l.methods();
        l.check_identifiers();
        let cycles = cycles::cycle_errors(&l.types);
        // Typing a default follows the types it goes through: only without a cycle among them.
        if cycles.is_empty() {
            l.type_defaults();
        }
        for (pointer, path) in cycles {
            l.error(&pointer, SchemaErrorKind::Cycle { path });
        }
        place_boxes(&mut l.types);
        let mut protocol = Protocol {
            source: doc.file.clone(),
            types: l.types,
            methods,
            warnings: l.warnings,
            state: StateModel::default(),
        };
        let checked = state::model(&protocol);
        for (pointer, kind) in checked.errors {
            errors.push(&doc.file, &pointer, kind);
        }
        protocol.warnings.extend(checked.warnings.into_iter().map(|(pointer, kind)| Warning {
            file: doc.file.clone(),
            pointer,
            kind,
        }));
        protocol.warnings.sort();
        protocol.state = checked.model;
        protocol
    };
    errors.into_result(protocol)
}

/// The state every part of lowering shares: the document, the ids reserved for its `$defs`, the
/// types made so far, the Rust names taken, and the errors collected (all reported at the end).
struct Lowerer<'a> {
    doc: &'a Document,
    defs: HashMap<&'a str, &'a Schema>,
    ids: HashMap<String, TypeId>,
    types: Vec<TypeDef>,
    /// Rust name → pointer of the schema that took it, to report collisions with both sources.
    names: BTreeMap<String, String>,
    /// Pointer of a property schema → its `default`, until [`Lowerer::type_defaults`] types it.
    defaults: BTreeMap<String, Value>,
    errors: &'a mut Errors,
    /// The loader's warnings, then lowering's.
    warnings: Vec<Warning>,
}

impl<'a> Lowerer<'a> {
    fn error(&mut self, pointer: &str, kind: SchemaErrorKind) {
        let file = self.doc.file.clone();
        self.errors.push(&file, pointer, kind);
    }

    fn warn(&mut self, pointer: &str, kind: WarningKind) {
        self.warnings.push(Warning { file: self.doc.file.clone(), pointer: pointer.to_string(), kind });
    }

    fn unsupported(&mut self, pointer: &str, construct: Construct) {
        self.error(pointer, SchemaErrorKind::Unsupported(construct));
    }

    fn origin(s: &Schema, wire: &str) -> Origin {
        Origin {
            wire: wire.to_string(),
            pointer: s.pointer.clone(),
            docs: s.description.clone(),
            annotations: annotations(s),
        }
    }

    fn maturity(s: &Schema) -> Maturity {
        maturity_of(s.description.as_deref())
    }

    /// Takes a Rust name for a new type; a name already taken is an error naming both schemas.
    fn reserve(&mut self, name: &str, wire: &str, s: &Schema, named: bool) -> TypeId {
        if let Some(first) = self.names.get(name).cloned() {
            self.error(&s.pointer, SchemaErrorKind::TypeNameTaken { name: name.to_string(), first });
        } else {
            self.names.insert(name.to_string(), s.pointer.clone());
        }
        self.types.push(TypeDef {
            name: name.to_string(),
            origin: Self::origin(s, wire),
            stability: Stability::Stable,
            maturity: Self::maturity(s),
            named,
            kind: TypeKind::Any,
        });
        TypeId(self.types.len() - 1)
    }

    /// A new anonymous type named after its parent.
    fn inline(&mut self, s: &Schema, name: &str) -> TypeId {
        let id = self.reserve(name, name, s, false);
        let kind = self.kind(s, name);
        self.types[id.0].kind = kind;
        id
    }

    fn resolve(&mut self, s: &Schema) -> Option<TypeId> {
        let reference = s.reference.as_deref()?;
        let target = reference.strip_prefix("#/$defs/").or_else(|| reference.strip_prefix("#/definitions/"));
        match target.map(|t| self.ids.get(t).copied()) {
            Some(Some(id)) => Some(id),
            Some(None) => {
                self.error(&s.pointer, SchemaErrorKind::DanglingRef { reference: reference.to_string() });
                None
            }
            None => {
                self.unsupported(&s.pointer, Construct::Ref(reference.to_string()));
                None
            }
        }
    }

    fn def_schema(&self, reference: &str) -> Option<&'a Schema> {
        let name = reference.strip_prefix("#/$defs/").or_else(|| reference.strip_prefix("#/definitions/"))?;
        self.defs.get(name).copied()
    }
}

/// The unknown `x-` keywords of a node, each with its own pointer.
fn annotations(s: &Schema) -> Vec<Annotation> {
    let at = |keyword: &str| format!("{}/{}", s.pointer, crate::load::escape(keyword));
    s.annotations
        .iter()
        .map(|(keyword, value)| Annotation { keyword: keyword.clone(), value: value.clone(), pointer: at(keyword) })
        .collect()
}

/// `Unstable` when a description carries the schema's marker.
fn maturity_of(docs: Option<&str>) -> Maturity {
    if naming::marked_unstable(docs) {
        Maturity::Unstable
    } else {
        Maturity::Stable
    }
}
