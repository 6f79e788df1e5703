//! Emitting schema defaults: the Rust expression of a `default` value, the function that gives a
//! field its default, and `impl Default` for structs whose every field may be omitted.

use super::common::{cfg_for, ident, int_type, Emitter};
use crate::error::{DefaultProblem, EmitError};
use crate::ir::*;
use heck::ToSnakeCase;
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

impl Emitter<'_> {
    /// The Rust expression of `default`, the default of field `f`, as lowering typed it.
    pub(super) fn default_expr(&self, f: &Field, default: &SchemaDefault) -> Result<TokenStream, EmitError> {
        self.value_expr(&f.ty, f.boxed, &default.value).map_err(|problem| EmitError::Default {
            file: self.p.source.clone(),
            pointer: f.origin.pointer.clone(),
            value: default.json.to_string(),
            problem: Box::new(problem),
        })
    }

    /// A typed default as a Rust expression of type `r`. It fits the type lowering typed it
    /// against; it may not fit the type `merge` made of the two files' (a problem then).
    fn value_expr(&self, r: &TypeRef, boxed: bool, value: &DefaultValue) -> Result<TokenStream, DefaultProblem> {
        Ok(match (r, value) {
            (TypeRef::Bool, DefaultValue::Bool(b)) => quote! { #b },
            (TypeRef::String, DefaultValue::String(s)) => quote! { String::from(#s) },
            (TypeRef::Int(k), DefaultValue::Int(i)) => {
                let lit = Literal::u128_unsuffixed(i.unsigned_abs());
                let sign = (*i < 0).then(|| quote! { - });
                let ty = int_type(*k);
                quote! { #sign #lit as #ty }
            }
            (TypeRef::Float(_), DefaultValue::Float(f)) => {
                let lit = Literal::f64_unsuffixed(*f);
                quote! { #lit }
            }
            (TypeRef::Array(_), DefaultValue::EmptyArray) => quote! { Vec::new() },
            (TypeRef::Object, DefaultValue::EmptyObject) => quote! { Meta::new() },
            (TypeRef::Map(_), DefaultValue::EmptyObject) => quote! { Default::default() },
            (TypeRef::Named(id), v) => {
                let expr = self.named_value(*id, v)?;
                if boxed {
                    quote! { Box::new(#expr) }
                } else {
                    expr
                }
            }
            _ => return Err(self.unfit(r)),
        })
    }

    fn named_value(&self, id: TypeId, value: &DefaultValue) -> Result<TokenStream, DefaultProblem> {
        let t = self.p.get(id);
        let name = self.name(id);
        match (&t.kind, value) {
            (TypeKind::Struct(s), DefaultValue::Struct(given)) if s.flatten.is_none() => {
                if let Some((key, _)) = given.iter().find(|(key, _)| !s.fields.iter().any(|f| &f.origin.wire == key)) {
                    return Err(DefaultProblem::UnknownField { field: key.clone(), ty: t.name.clone() });
                }
                let mut inits = Vec::new();
                for f in &s.fields {
                    let fname = ident(&f.name);
                    let fcfg = cfg_for(f.stability);
                    let given = given.iter().find(|(key, _)| key == &f.origin.wire).map(|(_, v)| v);
                    let init = match (given, &f.presence) {
                        (None, Presence::Required | Presence::RequiredNullable) => {
                            return Err(DefaultProblem::MissingField {
                                field: f.origin.wire.clone(),
                                ty: t.name.clone(),
                            })
                        }
                        (None, Presence::Defaulted(_)) => {
                            let fn_ident = default_fn(t, f);
                            quote! { #fn_ident() }
                        }
                        (None, Presence::Optional | Presence::Patch) => quote! { Default::default() },
                        (Some(DefaultValue::Null), Presence::Patch) => quote! { Patch::Null },
                        (Some(DefaultValue::Null), Presence::Optional | Presence::RequiredNullable) => {
                            quote! { None }
                        }
                        (Some(v), Presence::Required) => self.value_expr(&f.ty, f.boxed, v)?,
                        (Some(v), Presence::Optional | Presence::RequiredNullable) => {
                            let e = self.value_expr(&f.ty, f.boxed, v)?;
                            quote! { Some(#e) }
                        }
                        (Some(v), Presence::Patch) => {
                            let e = self.value_expr(&f.ty, f.boxed, v)?;
                            quote! { Patch::Value(#e) }
                        }
                        (Some(v), Presence::Defaulted(_)) => {
                            let e = self.value_expr(&f.ty, f.boxed, v)?;
                            quote! { Defaulted::explicit(#e) }
                        }
                    };
                    inits.push(quote! { #fcfg #fname: #init, });
                }
                Ok(quote! { #name { #(#inits)* } })
            }
            (TypeKind::StringEnum { values, .. }, DefaultValue::Variant(variant))
                if values.iter().any(|v| &v.name == variant) =>
            {
                let variant = ident(variant);
                Ok(quote! { #name::#variant })
            }
            (TypeKind::StringEnum { catch_all: c, .. }, DefaultValue::CatchAll { variant, value })
                if &c.name == variant =>
            {
                let variant = ident(variant);
                Ok(quote! { #name::#variant(String::from(#value)) })
            }
            (TypeKind::Newtype { inner, boxed }, DefaultValue::Newtype(v)) => {
                let e = self.value_expr(inner, *boxed, v)?;
                Ok(quote! { #name(#e) })
            }
            _ => Err(DefaultProblem::NotSupported { ty: t.name.clone() }),
        }
    }

    /// The problem of a typed default that does not fit `r`.
    fn unfit(&self, r: &TypeRef) -> DefaultProblem {
        DefaultProblem::Mismatch { found: "a value of another type", expected: describe(&self.p.types, r) }
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

#[cfg(test)]
mod tests {
    use crate::error::{DefaultProblem, EmitError, Error};
    use crate::ir::*;

    /// A typed default that does not fit the type it is emitted as (what `merge` could make of
    /// two files' types) is an emit error at the field, not a panic or wrong code.
    #[test]
    fn a_default_that_no_longer_fits_is_an_emit_error() {
        let text = r#"{ "$defs": { "A": { "type": "object", "properties": { "on": { "type": "boolean", "default": true } } } } }"#;
        let mut p = crate::load_text(text, "t.json").expect("lowers");
        let id = p.find("A").expect("A");
        assert!(crate::emit::types_module(&p, "t.json").is_ok());
        let TypeKind::Struct(s) = &mut p.types[id.0].kind else { panic!("a struct") };
        let Presence::Defaulted(d) = &mut s.fields[0].presence else { panic!("defaulted") };
        assert_eq!(d.value, DefaultValue::Bool(true));
        d.value = DefaultValue::String("yes".into());
        match crate::emit::types_module(&p, "t.json") {
            Err(Error::Emit(EmitError::Default { pointer, problem, .. })) => {
                assert_eq!(pointer, "/$defs/A/properties/on");
                assert_eq!(
                    *problem,
                    DefaultProblem::Mismatch { found: "a value of another type", expected: "boolean".into() }
                );
            }
            other => panic!("expected an emit error, got {:?}", other.map(|_| ())),
        }
    }
}
