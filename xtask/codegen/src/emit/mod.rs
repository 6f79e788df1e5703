//! Emitting: the IR of one protocol version becomes formatted Rust. This module owns the types
//! module (`types.rs`): the dispatch from a type's kind to the emitter of that kind, in `structs`
//! (structs and newtypes), `enums` (string and integer enums), `unions`, `defaults` (schema
//! defaults and `Default` impls) and `lenient` (lenient decoding). [`methods`] emits the method
//! tables (`methods.rs`), [`state`] the client state of `x-state` (`state.rs`), [`crates`] the
//! manifests and crate roots around them, [`method_names`] the facade's `MethodName` enum. The machinery they
//! share (rendering and the generated-file header, docs, `#[cfg]`s, identifiers, the `Emitter`) is
//! in the leaf module `common`, the kinds of lenient function in the leaf `shape`, so no child
//! imports its parent.
//!
//! Tokens are built with `quote`, parsed with `syn` and printed by `prettyplease`, so no rustfmt
//! is needed and the output is the same on every machine. Doc comments are `#[doc]` attributes
//! that prettyplease prints as `///` lines.

mod common;
pub mod crates;
mod defaults;
mod enums;
pub mod ext;
mod lenient;
pub mod method_names;
pub mod methods;
mod shape;
pub mod state;
mod structs;
mod unions;

use crate::error::{EmitError, Error};
use crate::ir::*;
use common::{cfg_for, docs, ident, render, support, undescribed, variant_lists, Emitter};
use proc_macro2::TokenStream;
use quote::quote;

/// The module of all types of a protocol (`types.rs`).
pub fn types_module(p: &Protocol, sources: &str) -> Result<String, Error> {
    types_module_of(p, sources, &|_| true, quote! {})
}

/// The types module of the types `keep` selects, with `prelude` after its imports (an
/// extension's module keeps its own types and imports the core's, see [`ext`]).
pub(crate) fn types_module_of(
    p: &Protocol,
    sources: &str,
    keep: &dyn Fn(TypeId) -> bool,
    prelude: TokenStream,
) -> Result<String, Error> {
    let e = Emitter::new(p);
    let mut order: Vec<usize> = (0..p.types.len()).filter(|&i| keep(TypeId(i))).collect();
    order.sort_by(|&a, &b| (&p.types[a].name, p.types[a].stability).cmp(&(&p.types[b].name, p.types[b].stability)));
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for i in order {
        match e.type_def(TypeId(i)) {
            Ok(tokens) => items.push(tokens),
            Err(err) => errors.push(Error::Emit(err)),
        }
    }
    if let Some(e) = Error::from_list(errors) {
        return Err(e);
    }
    let lenient = e.lenient_fns();
    let visit = e.visit_type(keep);
    let support = support();
    let tokens = quote! {
        //! Every type of the schema. Generated: change the generator, not this file.
        #![allow(clippy::large_enum_variant, clippy::derivable_impls)]

        use serde::{Deserialize, Deserializer, Serialize, Serializer};
        #[allow(unused_imports)]
        use #support::{lenient, union, Defaulted, Meta, Patch};
        #prelude

        #(#items)*

        #visit

        #lenient
    };
    Ok(render(sources, tokens)?)
}

/// The dispatch of the types module: `types_module` asks the `Emitter` for each type and the
/// type-name visitor; the emitters of each kind are in the sibling modules.
impl Emitter<'_> {
    /// `visit_type(name, visitor)`: the Rust type of a schema type name, for tools and tests.
    fn visit_type(&self, keep: &dyn Fn(TypeId) -> bool) -> TokenStream {
        let kept = self.p.types.iter().enumerate().filter(|(i, _)| keep(TypeId(*i)));
        let mut order: Vec<&TypeDef> = kept.map(|(_, t)| t).collect();
        order.sort_by(|a, b| (&a.name, a.stability).cmp(&(&b.name, b.stability)));
        let arms = order.iter().map(|t| {
            let name = ident(&t.name);
            let wire = &t.name;
            let c = cfg_for(t.stability);
            quote! { #c #wire => Some(visitor.visit::<#name>(#wire)), }
        });
        let names = variant_lists(
            "TYPE_NAMES",
            true,
            Some("Every type name of the schema (with the features enabled), sorted."),
            order.iter().map(|t| (t.name.clone(), t.stability)),
        );
        let support = support();
        quote! {
            #names

            /// Calls `visitor` with the Rust type that the schema names `name`; `None` for an unknown
            /// name. Tools use it to decode a value whose type is known only by name.
            pub fn visit_type<V: #support::TypeVisitor>(name: &str, visitor: V) -> Option<V::Output> {
                match name {
                    #(#arms)*
                    _ => None,
                }
            }
        }
    }

    /// One type, with its docs: dispatched by kind to `structs`, `enums` or `unions`.
    fn type_def(&self, id: TypeId) -> Result<TokenStream, EmitError> {
        let t = self.p.get(id);
        let name = self.name(id);
        let cfg = cfg_for(t.stability);
        let mut doc_text = t.origin.docs.clone().unwrap_or_default();
        if doc_text.trim().is_empty() {
            doc_text = match t.kind {
                TypeKind::Any => "Any JSON value.".into(),
                _ => undescribed(&t.origin.wire),
            };
        }
        let docs = docs(Some(&doc_text));
        let body = match &t.kind {
            TypeKind::Struct(s) => self.structure(id, s, &name, &cfg)?,
            TypeKind::Newtype { inner, boxed } => self.newtype(inner, *boxed, &name, &cfg),
            TypeKind::Any => quote! {
                #cfg
                pub type #name = serde_json::Value;
            },
            TypeKind::StringEnum { values, catch_all } => enums::string_enum(values, catch_all, &name, &cfg),
            TypeKind::IntEnum { repr, values, catch_all } => enums::int_enum(*repr, values, catch_all, &name, &cfg),
            TypeKind::Union(u) => self.union(id, u, &name, &cfg),
        };
        Ok(quote! { #docs #body })
    }
}
