//! Emitting schema defaults: the Rust expression of a `default` value, the function that gives a
//! field its default, and `impl Default` for structs whose every field may be omitted.

use super::common::{cfg_for, ident, int_type, Emitter};
use crate::ir::*;
use heck::ToSnakeCase;
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use serde_json::Value;

impl Emitter<'_> {
    /// A Rust expression for a schema `default` value of type `r` (held through a `Box` when `boxed`).
    pub(super) fn default_expr(&self, r: &TypeRef, boxed: bool, value: &Value) -> Result<TokenStream, String> {
        Ok(match (r, value) {
            (TypeRef::Bool, Value::Bool(b)) => quote! { #b },
            (TypeRef::String, Value::String(s)) => quote! { String::from(#s) },
            (TypeRef::Int(k), Value::Number(n)) => {
                let lit = n.as_i64().map(|i| i.to_string()).or_else(|| n.as_u64().map(|u| u.to_string()));
                let lit = lit.ok_or("not an integer")?;
                let ty = int_type(*k);
                let lit: TokenStream = lit.parse().map_err(|_| "bad integer literal")?;
                quote! { #lit as #ty }
            }
            (TypeRef::Float(_), Value::Number(n)) => {
                let f = n.as_f64().ok_or("not a number")?;
                let lit = Literal::f64_unsuffixed(f);
                quote! { #lit }
            }
            (TypeRef::Array(_), Value::Array(items)) if items.is_empty() => quote! { Vec::new() },
            (TypeRef::Object, Value::Object(m)) if m.is_empty() => quote! { Meta::new() },
            (TypeRef::Map(_), Value::Object(m)) if m.is_empty() => quote! { Default::default() },
            (TypeRef::Named(id), v) => {
                let expr = self.named_default(*id, v)?;
                if boxed {
                    quote! { Box::new(#expr) }
                } else {
                    expr
                }
            }
            (r, v) => return Err(format!("{} does not fit a field of type {}", kind_of(v), self.describe(r))),
        })
    }

    fn named_default(&self, id: TypeId, value: &Value) -> Result<TokenStream, String> {
        let t = self.p.get(id);
        let name = self.name(id);
        match (&t.kind, value) {
            (TypeKind::Struct(s), Value::Object(given)) if s.flatten.is_none() => {
                for key in given.keys() {
                    if !s.fields.iter().any(|f| &f.origin.wire == key) {
                        return Err(format!("`{key}` is not a field of {}", t.name));
                    }
                }
                let mut inits = Vec::new();
                for f in &s.fields {
                    let fname = ident(&f.name);
                    let fcfg = cfg_for(f.stability);
                    let init = match (given.get(&f.origin.wire), &f.presence) {
                        (None, Presence::Required | Presence::RequiredNullable) => {
                            return Err(format!("required field `{}` of {} is missing", f.origin.wire, t.name))
                        }
                        (None, Presence::Defaulted(_)) => {
                            let fn_ident = default_fn(t, f);
                            quote! { #fn_ident() }
                        }
                        (None, Presence::Optional | Presence::Patch) => quote! { Default::default() },
                        (Some(Value::Null), Presence::Patch) => quote! { Patch::Null },
                        (Some(Value::Null), Presence::Optional | Presence::RequiredNullable) => {
                            quote! { None }
                        }
                        (Some(v), Presence::Required) => self.default_expr(&f.ty, f.boxed, v)?,
                        (Some(v), Presence::Optional | Presence::RequiredNullable) => {
                            let e = self.default_expr(&f.ty, f.boxed, v)?;
                            quote! { Some(#e) }
                        }
                        (Some(v), Presence::Patch) => {
                            let e = self.default_expr(&f.ty, f.boxed, v)?;
                            quote! { Patch::Value(#e) }
                        }
                        (Some(v), Presence::Defaulted(_)) => {
                            let e = self.default_expr(&f.ty, f.boxed, v)?;
                            quote! { Defaulted::explicit(#e) }
                        }
                    };
                    inits.push(quote! { #fcfg #fname: #init, });
                }
                Ok(quote! { #name { #(#inits)* } })
            }
            (TypeKind::StringEnum { values, catch_all: c }, Value::String(s)) => {
                if let Some(v) = values.iter().find(|v| &v.origin.wire == s) {
                    let variant = ident(&v.name);
                    Ok(quote! { #name::#variant })
                } else if c.source.declared() {
                    // A value only an added catch-all keeps is not the schema's: a bad default.
                    let variant = ident(&c.name);
                    Ok(quote! { #name::#variant(String::from(#s)) })
                } else {
                    Err(format!("`{s}` is not a value of {}", t.name))
                }
            }
            (TypeKind::Newtype { inner, boxed }, v) => {
                let e = self.default_expr(inner, *boxed, v)?;
                Ok(quote! { #name(#e) })
            }
            _ => Err(format!("a default for {} is not supported", t.name)),
        }
    }

    /// A short description of a type for error messages.
    fn describe(&self, r: &TypeRef) -> String {
        match r {
            TypeRef::Named(id) => self.p.get(*id).name.clone(),
            TypeRef::Array(inner) => format!("array of {}", self.describe(inner)),
            TypeRef::Map(inner) => format!("map of {}", self.describe(inner)),
            TypeRef::Int(_) => "integer".into(),
            TypeRef::Float(_) => "number".into(),
            TypeRef::Bool => "boolean".into(),
            TypeRef::String => "string".into(),
            TypeRef::Null => "null".into(),
            TypeRef::Object => "object".into(),
            TypeRef::Any | TypeRef::MethodKeyed => "any".into(),
        }
    }
}

/// `impl Default` for a struct whose every field may be omitted (nothing when one may not).
pub(super) fn default_impl(t: &TypeDef, s: &Struct, name: &syn::Ident, cfg: &TokenStream) -> TokenStream {
    let all_optional = s.flatten.is_none()
        && s.fields.iter().all(|f| !matches!(f.presence, Presence::Required | Presence::RequiredNullable));
    if !all_optional {
        return quote! {};
    }
    let inits = s.fields.iter().map(|f| {
        let fname = ident(&f.name);
        let fcfg = cfg_for(f.stability);
        let init = match &f.presence {
            Presence::Defaulted(_) => {
                let fn_ident = default_fn(t, f);
                quote! { #fn_ident() }
            }
            Presence::Required | Presence::RequiredNullable | Presence::Optional | Presence::Patch => {
                quote! { Default::default() }
            }
        };
        quote! { #fcfg #fname: #init, }
    });
    quote! {
        #cfg
        impl Default for #name {
            fn default() -> Self {
                Self { #(#inits)* }
            }
        }
    }
}

/// The function that gives field `f` of struct `t` its schema default.
pub(super) fn default_fn(t: &TypeDef, f: &Field) -> syn::Ident {
    format_ident!("default_{}_{}", t.name.to_snake_case(), f.name.trim_start_matches("r#"))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(a) if a.is_empty() => "an empty array",
        Value::Array(_) => "a non-empty array",
        Value::Object(_) => "an object",
    }
}
