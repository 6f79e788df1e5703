//! Emitting the `state` module of a version (`state.rs`) from its [`StateModel`]: one struct per
//! `x-state` scope (`SessionState`, `AgentState`) with a member per target, the rules of each
//! annotated type or variant as a table, `Stateful` for those types, and the same tables by type
//! name for tools that hold JSON. The interpreter of the rules is hand-written, once, in
//! `support::state`; nothing here is written per update variant.

use super::common::{cfg_for, docs, ident, render, support, Emitter};
use crate::error::EmitError;
use crate::ir::*;
use crate::naming;
use heck::ToShoutySnakeCase;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeMap;

/// The module, or `None` when the version's schemas carry no `x-state` / `x-scope`.
pub fn state_module(p: &Protocol, sources: &str) -> Result<Option<String>, EmitError> {
    let m = &p.state;
    if m.rules.is_empty() && m.silent.is_empty() && m.scopes.is_empty() {
        return Ok(None);
    }
    let e = Emitter::new(p);
    let support = support();
    let mut scopes: Vec<&str> = m.targets.iter().map(|t| t.scope.as_str()).collect();
    scopes.dedup();
    let structs = scopes.iter().map(|s| state_struct(&e, s));
    let sources_by_type = by_type(m);
    let impls = sources_by_type.iter().map(|(ty, entries)| stateful_impl(&e, *ty, entries));
    let by_name = by_name_fns(&e, &sources_by_type);
    let nested = nested_fn(p, &sources_by_type);
    let methods = methods_fn(p, &sources_by_type);
    let scope_table = scope_fn(p);
    let tokens = quote! {
        //! The state a client keeps, generated from the schema's `x-state` annotations: each scope's
        //! struct (`SessionState`: what one session shows, `AgentState`: what the agent as a whole
        //! does) has a member per target, and each annotated message implements
        //! `support::state::Stateful` with its rules, applied by `support::state`.
        //! Generated: change the generator, not this file.
        #![allow(unused_imports)]

        use crate::types::*;
        use #support::state::{self, Action, Append, Applied, Collection, Rule, Single, Slot, Stateful, Targets};
        use #support::Meta;

        #(#structs)*

        #(#impls)*

        #by_name

        #nested

        #methods

        #scope_table
    };
    render(sources, tokens).map(Some)
}

/// The Rust name of a scope's struct: `session` → `SessionState`.
fn struct_name(scope: &str) -> syn::Ident {
    format_ident!("{}State", naming::type_name(scope))
}

fn state_struct(e: &Emitter, scope: &str) -> TokenStream {
    let name = struct_name(scope);
    let targets: Vec<&StateTarget> = e.p.state.targets.iter().filter(|t| t.scope == scope).collect();
    let members = targets.iter().map(|t| state_member(e, t));
    let arms = targets.iter().map(|t| {
        let field = ident(&naming::field(&t.name));
        let wire = &t.name;
        let cfg = cfg_for(t.stability);
        quote! { #cfg #wire => Some(&mut self.#field), }
    });
    let doc = format!(
        " The `{scope}` state, from the schema's `x-state` annotations of scope `{scope}`: one member per \
         target, collections keyed by id in the order first seen, other targets as one value. Messages \
         without an annotation are kept in `unapplied`."
    );
    let apply = apply_impl(&name, scope);
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
        pub struct #name {
            #(#members)*
            /// The messages no annotation describes (an unknown update variant, say), as received.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            pub unapplied: Vec<serde_json::Value>,
        }

        impl Targets for #name {
            fn slot(&mut self, target: &str) -> Option<&mut dyn Slot> {
                match target {
                    #(#arms)*
                    _ => None,
                }
            }

            fn keep_unapplied(&mut self, message: serde_json::Value) {
                self.unapplied.push(message);
            }
        }

        #apply
    }
}

/// A state struct's member for one target: a `Collection` of its entries when keyed by id, else a
/// `Single` value.
fn state_member(e: &Emitter, t: &StateTarget) -> TokenStream {
    let field = ident(&naming::field(&t.name));
    let wire = &t.name;
    let entry = t.entry.as_ref().map_or_else(|| quote! { serde_json::Value }, |r| e.rust(r, false));
    let cfg = cfg_for(t.stability);
    let doc = docs(Some(&target_docs(e.p, t)));
    let (ty, skip) = if t.keyed {
        (quote! { Collection<#entry> }, "Collection::is_empty")
    } else {
        (quote! { Single<#entry> }, "Single::is_none")
    };
    quote! {
        #doc
        #cfg
        #[serde(rename = #wire, skip_serializing_if = #skip)]
        pub #field: #ty,
    }
}

/// A state struct's `SCOPE` and its `apply` (typed messages) and `apply_json` (JSON of a named
/// schema type).
fn apply_impl(name: &syn::Ident, scope: &str) -> TokenStream {
    quote! {
        impl #name {
            /// The scope of `x-state` this struct keeps.
            pub const SCOPE: &'static str = #scope;

            /// Applies a message's rules of this scope (a message without any is kept in
            /// `unapplied`).
            pub fn apply<M: Stateful + ?Sized>(&mut self, message: &M) -> Applied {
                state::apply(self, Self::SCOPE, message)
            }

            /// Applies the JSON of a message whose schema type is `type_name` (for a union, the
            /// variant is read from its tag), for tools that hold JSON rather than typed values.
            ///
            /// A type without rules of its own whose fields hold annotated messages (the params
            /// of `session/update` hold a `SessionUpdate`) applies those fields'; the changes are
            /// those of the last one.
            pub fn apply_json(&mut self, type_name: &str, message: serde_json::Value) -> Applied {
                let tag = tag_of(type_name);
                let value = tag.and_then(|t| message.get(t)).and_then(serde_json::Value::as_str);
                let rules = rules_of(type_name, value);
                let fields = nested_of(type_name);
                if rules.is_none() && tag.is_none() && fields.is_empty() {
                    // A type no annotation names (a request's params, the client's answer):
                    // nothing in it is state. (An unknown variant of an annotated union is kept.)
                    return Applied::NoState;
                }
                if rules.is_none() && !fields.is_empty() {
                    let mut applied = Applied::NoState;
                    if let serde_json::Value::Object(mut members) = message {
                        for (field, ty) in fields {
                            if let Some(inner) = members.remove(*field) {
                                applied = self.apply_json(ty, inner);
                            }
                        }
                    }
                    return applied;
                }
                state::apply_json(self, Self::SCOPE, rules, tag, message)
            }
        }
    }
}

/// A member's docs: the target and what writes it.
fn target_docs(p: &Protocol, t: &StateTarget) -> String {
    let writers: Vec<String> = p
        .state
        .rules
        .iter()
        .filter(|r| r.scope == t.scope && r.target == t.name)
        .map(|r| {
            let source = match &r.source.variant {
                Some(v) => format!("`{}::{v}`", p.get(r.source.ty).name),
                None => format!("`{}`", p.get(r.source.ty).name),
            };
            let what = match (r.action, r.field.is_empty()) {
                (StateAction::Append, _) => format!("appends to `{}`", r.field.join(".")),
                (a, false) => format!("{}s `{}`", a.as_str(), r.field.join(".")),
                (a, true) => format!("{}s", a.as_str()),
            };
            format!("{source} {what}")
        })
        .collect();
    let kind = if t.keyed { "entries keyed by id, in the order first seen" } else { "one value" };
    format!("Target `{}` ({kind}): {}.", t.name, writers.join("; "))
}

/// What stands on one type: its own annotation and its variants'.
#[derive(Default)]
struct OnType<'a> {
    /// The type's own rules (`Some(empty)`: `x-state: {}`).
    whole: Option<Vec<&'a StateRule>>,
    /// Variant name → its source and rules.
    variants: BTreeMap<String, (&'a StateSource, Vec<&'a StateRule>)>,
}

fn by_type(m: &StateModel) -> BTreeMap<TypeId, OnType<'_>> {
    let mut out: BTreeMap<TypeId, OnType> = BTreeMap::new();
    let all = m.rules.iter().map(|r| (&r.source, Some(r))).chain(m.silent.iter().map(|s| (s, None)));
    for (source, rule) in all {
        let on = out.entry(source.ty).or_default();
        let list = match &source.variant {
            None => on.whole.get_or_insert_with(Vec::new),
            Some(v) => &mut on.variants.entry(v.clone()).or_insert_with(|| (source, Vec::new())).1,
        };
        list.extend(rule);
    }
    out
}

/// A table of rules as a constant expression.
fn rules_tokens(p: &Protocol, rules: &[&StateRule]) -> TokenStream {
    let support = support();
    let items = rules.iter().map(|r| {
        let scope = &r.scope;
        let target = &r.target;
        let action = format_ident!("{}", naming::type_name(r.action.as_str()));
        let (id, field, value) = (&r.id, &r.field, &r.value);
        let entry_id = p
            .state
            .targets
            .iter()
            .find(|t| t.scope == r.scope && t.name == r.target)
            .map(|t| t.entry_id.clone())
            .unwrap_or_default();
        let append = if r.appends_text {
            quote! { Text }
        } else {
            quote! { Item }
        };
        quote! {
            #support::state::Rule {
                scope: #scope,
                action: #support::state::Action::#action,
                target: #target,
                id: &[#(#id),*],
                field: &[#(#field),*],
                value: &[#(#value),*],
                entry_id: &[#(#entry_id),*],
                append: #support::state::Append::#append,
            }
        }
    });
    quote! { &[#(#items),*] }
}

fn const_name(p: &Protocol, ty: TypeId, variant: Option<&str>) -> syn::Ident {
    let name = match variant {
        Some(v) => format!("{}_{v}", p.get(ty).name),
        None => p.get(ty).name.clone(),
    };
    format_ident!("RULES_{}", name.to_shouty_snake_case())
}

/// The rule tables of one type and `Stateful` for it.
fn stateful_impl(e: &Emitter, ty: TypeId, on: &OnType) -> TokenStream {
    let p = e.p;
    let t = p.get(ty);
    let name = e.name(ty);
    let cfg = cfg_for(t.stability);
    let mut consts = Vec::new();
    let whole = on.whole.as_ref().map(|rules| {
        let c = const_name(p, ty, None);
        let table = rules_tokens(p, rules);
        consts.push(quote! { #cfg const #c: &[Rule] = #table; });
        quote! { Some(#c) }
    });
    let fallback = whole.clone().unwrap_or_else(|| quote! { None });
    let body = if on.variants.is_empty() {
        fallback
    } else {
        let arms = on.variants.iter().map(|(v, (source, rules))| {
            let c = const_name(p, ty, Some(v));
            let table = rules_tokens(p, rules);
            let vcfg = cfg_for(merged_stability(t.stability, source.stability));
            consts.push(quote! { #vcfg const #c: &[Rule] = #table; });
            let variant = ident(v);
            quote! { #vcfg #name::#variant { .. } => Some(#c), }
        });
        let arms: Vec<TokenStream> = arms.collect();
        quote! {
            #[allow(unreachable_patterns)]
            match self {
                #(#arms)*
                _ => #fallback,
            }
        }
    };
    let tag = match &t.kind {
        TypeKind::Union(Union { tag: Some(tag), .. }) => {
            quote! { fn state_tag(&self) -> Option<&'static str> { Some(#tag) } }
        }
        _ => quote! {},
    };
    quote! {
        #(#consts)*

        #cfg
        impl Stateful for #name {
            fn state_rules(&self) -> Option<&'static [Rule]> {
                #body
            }
            #tag
        }
    }
}

/// The stability of a variant of a type: the narrower of the two.
fn merged_stability(ty: Stability, item: Stability) -> Stability {
    if ty == Stability::Stable {
        item
    } else {
        ty
    }
}

/// `rules_of(type_name, tag)` and `tag_of(type_name)`: the tables by schema type name.
fn by_name_fns(e: &Emitter, on: &BTreeMap<TypeId, OnType>) -> TokenStream {
    let p = e.p;
    let mut rule_arms = Vec::new();
    let mut tag_arms = Vec::new();
    for (ty, o) in on {
        let t = p.get(*ty);
        let wire = &t.name;
        let cfg = cfg_for(t.stability);
        for (v, (source, _)) in &o.variants {
            let Some(tag) = &source.tag else { continue };
            let c = const_name(p, *ty, Some(v));
            let vcfg = cfg_for(merged_stability(t.stability, source.stability));
            rule_arms.push(quote! { #vcfg (#wire, Some(#tag)) => Some(#c), });
        }
        if o.whole.is_some() {
            let c = const_name(p, *ty, None);
            rule_arms.push(quote! { #cfg (#wire, _) => Some(#c), });
        }
        if let TypeKind::Union(Union { tag: Some(tag), .. }) = &t.kind {
            tag_arms.push(quote! { #cfg #wire => Some(#tag), });
        }
    }
    quote! {
        /// The rules of a message by its schema type name and, for a union, its tag value: `None`
        /// when it has no annotation (then `apply_json` keeps it as unapplied).
        #[allow(unreachable_patterns)]
        pub fn rules_of(type_name: &str, tag: Option<&str>) -> Option<&'static [Rule]> {
            match (type_name, tag) {
                #(#rule_arms)*
                _ => None,
            }
        }

        /// The tag of an annotated union (its discriminating property), by schema type name.
        pub fn tag_of(type_name: &str) -> Option<&'static str> {
            match type_name {
                #(#tag_arms)*
                _ => None,
            }
        }
    }
}

/// `scopes_of(type_name)`: the `x-scope` declarations by schema type name.
fn scope_fn(p: &Protocol) -> TokenStream {
    let mut by: BTreeMap<TypeId, Vec<&ScopeDecl>> = BTreeMap::new();
    for s in &p.state.scopes {
        by.entry(s.ty).or_default().push(s);
    }
    let arms = by.iter().map(|(ty, decls)| {
        let t = p.get(*ty);
        let wire = &t.name;
        let cfg = cfg_for(t.stability);
        let entries = decls.iter().map(|d| {
            let scope = &d.scope;
            let paths = d.paths.iter().map(|path| quote! { &[#(#path),*] });
            quote! { (#scope, &[#(#paths),*]) }
        });
        quote! { #cfg #wire => &[#(#entries),*], }
    });
    quote! {
        /// The `x-scope` of a message by its schema type name: for each scope (`session`,
        /// `toolCall`, …) the paths that may carry its id, first match wins.
        pub fn scopes_of(type_name: &str) -> &'static [(&'static str, &'static [&'static [&'static str]])] {
            match type_name {
                #(#arms)*
                _ => &[],
            }
        }

        /// The id of `scope` a message's JSON carries, by its schema type name (`None` when its
        /// type declares no such scope or the message omits it).
        pub fn scope_id<'v>(type_name: &str, scope: &str, message: &'v serde_json::Value) -> Option<&'v serde_json::Value> {
            scopes_of(type_name)
                .iter()
                .filter(|(s, _)| *s == scope)
                .flat_map(|(_, paths)| paths.iter())
                .find_map(|path| state::at(message, path))
        }
    }
}

/// `nested_of(type_name)`: the fields of a struct that hold annotated messages, with their types.
fn nested_fn(p: &Protocol, on: &BTreeMap<TypeId, OnType>) -> TokenStream {
    let mut arms = Vec::new();
    for (i, t) in p.types.iter().enumerate() {
        let TypeKind::Struct(s) = &t.kind else { continue };
        if on.contains_key(&TypeId(i)) {
            continue;
        }
        let fields: Vec<TokenStream> = s
            .fields
            .iter()
            .filter_map(|f| match &f.ty {
                TypeRef::Named(id) if on.contains_key(id) => {
                    let (wire, ty) = (&f.origin.wire, &p.get(*id).name);
                    Some(quote! { (#wire, #ty) })
                }
                _ => None,
            })
            .collect();
        if fields.is_empty() {
            continue;
        }
        let (wire, cfg) = (&t.name, cfg_for(t.stability));
        arms.push(quote! { #cfg #wire => &[#(#fields),*], });
    }
    quote! {
        /// The fields of a message type without rules of its own that hold annotated messages,
        /// with their schema type names (`UpdateSessionNotification`: `update`, a `SessionUpdate`).
        pub fn nested_of(type_name: &str) -> &'static [(&'static str, &'static str)] {
            match type_name {
                #(#arms)*
                _ => &[],
            }
        }
    }
}

/// `message_types(method)`: the schema types of the params and result of each method whose
/// messages change state (directly, or through a field).
fn methods_fn(p: &Protocol, on: &BTreeMap<TypeId, OnType>) -> TokenStream {
    let holds = |id: TypeId| -> bool {
        on.contains_key(&id)
            || matches!(&p.get(id).kind, TypeKind::Struct(s) if s.fields.iter().any(|f| matches!(&f.ty, TypeRef::Named(n) if on.contains_key(n))))
    };
    let mut arms = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for m in &p.methods {
        let stateful = holds(m.params) || m.result.is_some_and(holds);
        if !stateful || !seen.insert((m.name.clone(), m.stability)) {
            continue;
        }
        let name = &m.name;
        let params = &p.get(m.params).name;
        let result = match m.result {
            Some(r) => {
                let r = &p.get(r).name;
                quote! { Some(#r) }
            }
            None => quote! { None },
        };
        let cfg = cfg_for(m.stability);
        arms.push(quote! { #cfg #name => Some((#params, #result)), });
    }
    quote! {
        /// The schema type names of a method's params and (for a request) result, for the methods
        /// whose messages change state: what `apply_json` takes for a message known by method.
        #[allow(unreachable_patterns)]
        pub fn message_types(method: &str) -> Option<(&'static str, Option<&'static str>)> {
            match method {
                #(#arms)*
                _ => None,
            }
        }
    }
}
