//! Emitting structs: the fields with their presence (`Option`, `Patch`, `Defaulted`), renames and
//! `deserialize_with`, the flattened union, the `new` constructor; and newtypes (`pub struct
//! Id(pub String)`) with their conversions.

use super::common::{cfg_for, docs, ident, undescribed, Emitter};
use super::defaults::{default_fn, default_impl};
use super::shape::LenientShape;
use crate::error::EmitError;
use crate::ir::*;
use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::quote;

impl Emitter<'_> {
    /// A struct: its fields and flattened part, `new`, `Default` when every field may be omitted,
    /// and the functions its fields need.
    pub(super) fn structure(
        &self,
        id: TypeId,
        s: &Struct,
        name: &syn::Ident,
        cfg: &TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let t = self.p.get(id);
        let mut fields = Vec::new();
        let mut default_fns = Vec::new();
        for f in &s.fields {
            let (field, fns) = self.field(t, f)?;
            fields.push(field);
            default_fns.extend(fns);
        }
        if let Some(fl) = &s.flatten {
            let fname = ident(&fl.name);
            let ty = self.rust(&TypeRef::Named(fl.ty), fl.boxed);
            // A catch-all keeps its object as text, which serde's flattening cannot take in
            // place of entries: `union::flat` writes that one as a map.
            let kept = match &self.p.get(fl.ty).kind {
                TypeKind::Union(u) => u.variants.iter().any(|v| matches!(v.kind, VariantKind::CatchAll(_))),
                _ => false,
            };
            let attr = if kept {
                quote! { #[serde(flatten, serialize_with = "union::flat")] }
            } else {
                quote! { #[serde(flatten)] }
            };
            fields.push(quote! {
                /// The variant-dependent part of the object.
                #attr
                pub #fname: #ty,
            });
        }
        let constructor = self.constructor(t, s, name, cfg);
        let default_impl = default_impl(t, s, name, cfg);
        Ok(quote! {
            #cfg
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
            // A field a later schema adds must not break code built on this one: values are
            // made with `new` (the required fields) and set field by field.
            #[non_exhaustive]
            pub struct #name {
                #(#fields)*
            }
            #constructor
            #default_impl
            #(#default_fns)*
        })
    }

    /// One field of struct `t`, and the functions it needs (its default, its lenient decoding).
    fn field(&self, t: &TypeDef, f: &Field) -> Result<(TokenStream, Vec<TokenStream>), EmitError> {
        let fname = ident(&f.name);
        let fcfg = cfg_for(f.stability);
        let fdocs = docs(Some(
            f.origin.docs.as_deref().filter(|d| !d.trim().is_empty()).unwrap_or(&undescribed(&f.origin.wire)),
        ));
        let inner = self.rust(&f.ty, f.boxed);
        let mut fns = Vec::new();
        let mut serde_args: Vec<TokenStream> = Vec::new();
        if f.name.trim_start_matches("r#") != f.origin.wire {
            let wire = &f.origin.wire;
            serde_args.push(quote! { rename = #wire });
        }
        let default_fn = default_fn(t, f);
        let ty = match &f.presence {
            Presence::Required => inner.clone(),
            Presence::RequiredNullable => quote! { Option<#inner> },
            Presence::Optional => {
                serde_args.push(quote! { default, skip_serializing_if = "Option::is_none" });
                quote! { Option<#inner> }
            }
            Presence::Patch => {
                serde_args.push(quote! { default, skip_serializing_if = "Patch::is_omitted" });
                quote! { Patch<#inner> }
            }
            Presence::Defaulted(default) => {
                let default_name = default_fn.to_string();
                serde_args.push(quote! { default = #default_name, skip_serializing_if = "Defaulted::is_implicit" });
                let expr = self.default_expr(f, default)?;
                fns.push(quote! {
                    #fcfg
                    fn #default_fn() -> Defaulted<#inner> {
                        Defaulted::implicit(#expr)
                    }
                });
                quote! { Defaulted<#inner> }
            }
        };
        if f.lenient.any() {
            let with = match LenientShape::of(&f.presence) {
                Some(shape) => self.lenient_with(t, f, shape),
                None => {
                    let de_fn = format!("de_{}_{}", t.name.to_snake_case(), f.name.trim_start_matches("r#"));
                    fns.push(self.defaulted_lenient_fn(f, &de_fn, &default_fn, &inner, &fcfg));
                    de_fn
                }
            };
            serde_args.push(quote! { deserialize_with = #with });
        } else if matches!(f.presence, Presence::RequiredNullable)
            || (f.presence == Presence::Required && self.accepts_absence(&f.ty))
        {
            serde_args.push(quote! { deserialize_with = "lenient::required" });
        }
        let serde_attr = if serde_args.is_empty() {
            quote! {}
        } else {
            quote! { #[serde(#(#serde_args),*)] }
        };
        let field = quote! {
            #fdocs
            #fcfg
            #serde_attr
            pub #fname: #ty,
        };
        Ok((field, fns))
    }

    /// `new(required…)`: struct literals would break whenever a feature adds a field.
    fn constructor(&self, t: &TypeDef, s: &Struct, name: &syn::Ident, cfg: &TokenStream) -> TokenStream {
        let mut new_params = Vec::new();
        let mut new_inits = Vec::new();
        for f in &s.fields {
            let fname = ident(&f.name);
            let fcfg = cfg_for(f.stability);
            match &f.presence {
                Presence::Required | Presence::RequiredNullable => {
                    let inner = self.rust(&f.ty, f.boxed);
                    let ty = if f.presence == Presence::Required {
                        inner
                    } else {
                        quote! { Option<#inner> }
                    };
                    new_params.push(quote! { #fcfg #fname: #ty });
                    new_inits.push(quote! { #fcfg #fname, });
                }
                Presence::Defaulted(_) => {
                    let fn_ident = default_fn(t, f);
                    new_inits.push(quote! { #fcfg #fname: #fn_ident(), });
                }
                Presence::Optional | Presence::Patch => new_inits.push(quote! { #fcfg #fname: Default::default(), }),
            }
        }
        if let Some(fl) = &s.flatten {
            let fname = ident(&fl.name);
            let ty = self.rust(&TypeRef::Named(fl.ty), fl.boxed);
            new_params.push(quote! { #fname: #ty });
            new_inits.push(quote! { #fname, });
        }
        quote! {
            #cfg
            impl #name {
                /// A value with the required fields given and every optional field left out.
                #[allow(clippy::too_many_arguments)]
                pub fn new(#(#new_params),*) -> Self {
                    Self { #(#new_inits)* }
                }
            }
        }
    }

    /// Whether serde would decode a missing field of this type without an error.
    fn accepts_absence(&self, r: &TypeRef) -> bool {
        match r {
            TypeRef::Any | TypeRef::MethodKeyed | TypeRef::Null => true,
            TypeRef::Named(id) => match &self.p.get(*id).kind {
                TypeKind::Any => true,
                TypeKind::Newtype { inner, .. } => self.accepts_absence(inner),
                _ => false,
            },
            _ => false,
        }
    }

    /// A newtype over a scalar or collection: `From` and `Display` for ids, `Copy` when it can be.
    pub(super) fn newtype(&self, inner: &TypeRef, boxed: bool, name: &syn::Ident, cfg: &TokenStream) -> TokenStream {
        let ty = self.rust(inner, boxed);
        let (derives, extra) = match inner {
            TypeRef::String => (
                quote! { Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize },
                quote! {
                    #cfg
                    impl #name {
                        /// The wire value.
                        pub fn as_str(&self) -> &str {
                            &self.0
                        }
                    }
                    #cfg
                    impl From<String> for #name {
                        fn from(value: String) -> Self {
                            Self(value)
                        }
                    }
                    #cfg
                    impl From<&str> for #name {
                        fn from(value: &str) -> Self {
                            Self(value.to_string())
                        }
                    }
                    #cfg
                    impl std::fmt::Display for #name {
                        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                            f.write_str(&self.0)
                        }
                    }
                },
            ),
            TypeRef::Int(_) | TypeRef::Bool => (
                quote! { Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize },
                quote! {
                    #cfg
                    impl From<#ty> for #name {
                        fn from(value: #ty) -> Self {
                            Self(value)
                        }
                    }
                },
            ),
            TypeRef::Array(_) | TypeRef::Object | TypeRef::Any | TypeRef::Map(_) => {
                (quote! { Debug, Clone, Default, PartialEq, Serialize, Deserialize }, quote! {})
            }
            _ => (quote! { Debug, Clone, PartialEq, Serialize, Deserialize }, quote! {}),
        };
        quote! {
            #cfg
            #[derive(#derives)]
            #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
            #[serde(transparent)]
            pub struct #name(pub #ty);
            #extra
        }
    }
}
