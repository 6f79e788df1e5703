//! Emitting lenient decoding (`x-deserialize-*`): the `deserialize_with` functions of lenient
//! fields, shared by every field of one shape in the `lenient_fns` module, or a field's own when
//! it has a schema default.

use super::common::{cfg_for, support, Emitter};
use super::shape::{LenientFn, LenientShape};
use crate::ir::*;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

impl Emitter<'_> {
    /// The per-field `deserialize_with` function of a lenient field with a schema default.
    pub(super) fn defaulted_lenient_fn(
        &self,
        f: &Field,
        de_fn: &str,
        default_fn: &syn::Ident,
        inner: &TokenStream,
        fcfg: &TokenStream,
    ) -> TokenStream {
        let de_fn = format_ident!("{}", de_fn);
        let base = if f.lenient.skip_invalid_items {
            quote! { lenient::items }
        } else {
            quote! { lenient::value }
        };
        let chain = quote! { |v| lenient::explicit(v, #base) };
        let chain = if f.lenient.default_on_null {
            quote! { |v| lenient::null_default(v, #default_fn, #chain) }
        } else {
            chain
        };
        let on_error = if f.lenient.default_on_error {
            quote! { Some(#default_fn) }
        } else {
            quote! { None }
        };
        let direct = if f.lenient.default_on_null {
            quote! { |d| lenient::direct_null_default::<D, #inner, _>(d, #default_fn, Defaulted::explicit) }
        } else {
            quote! { |d| <#inner as serde::Deserialize>::deserialize(d).map(Defaulted::explicit) }
        };
        let support = support();
        quote! {
            #fcfg
            fn #de_fn<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Defaulted<#inner>, D::Error> {
                #support::lenient::field(deserializer, #on_error, #chain, #direct)
            }
        }
    }

    /// The `deserialize_with` path for lenient field `f` of type `t` (shared by all fields of its
    /// shape).
    pub(super) fn lenient_with(&self, t: &TypeDef, f: &Field, shape: LenientShape) -> String {
        let shape = LenientFn {
            shape,
            items: f.lenient.skip_invalid_items,
            on_null: f.lenient.default_on_null,
            on_error: f.lenient.default_on_error,
        };
        let name = shape.name();
        // An unstable field of a stable type, or a stable field of an unstable one: the narrower.
        let stability = if f.stability == Stability::Stable { t.stability } else { f.stability };
        self.lenient.borrow_mut().entry(shape).or_default().insert(stability);
        format!("lenient_fns::{name}")
    }

    pub(super) fn lenient_fns(&self) -> TokenStream {
        let shapes = self.lenient.borrow();
        if shapes.is_empty() {
            return quote! {};
        }
        let fns = shapes.iter().map(|(s, users)| {
            let cfg = shape_cfg(users);
            let name = format_ident!("{}", s.name());
            let base = if s.items {
                quote! { lenient::items }
            } else {
                quote! { lenient::value }
            };
            let value_ty = if s.items {
                quote! { Vec<T> }
            } else {
                quote! { T }
            };
            let (ret, chain, default) = match s.shape {
                LenientShape::Required => (value_ty.clone(), quote! { #base }, quote! { <#value_ty>::default }),
                LenientShape::Optional => {
                    (quote! { Option<#value_ty> }, quote! { |v| lenient::option(v, #base) }, quote! { || None })
                }
                LenientShape::Patch => {
                    (quote! { Patch<#value_ty> }, quote! { |v| lenient::patch(v, #base) }, quote! { Patch::default })
                }
            };
            // The same shape decoded in place, for `support::optimistic`.
            let direct = match (s.on_null, s.shape) {
                (true, shape) => {
                    let wrap = match shape {
                        LenientShape::Required => quote! { |v| v },
                        LenientShape::Optional => quote! { Some },
                        LenientShape::Patch => quote! { Patch::Value },
                    };
                    quote! { |d| lenient::direct_null_default::<D, #value_ty, _>(d, #default, #wrap) }
                }
                (false, LenientShape::Required) => quote! { <#value_ty as serde::Deserialize>::deserialize },
                (false, LenientShape::Optional) => quote! { <Option<#value_ty> as serde::Deserialize>::deserialize },
                (false, LenientShape::Patch) => quote! { lenient::direct_patch::<D, #value_ty> },
            };
            let chain = if s.on_null {
                quote! { |v| lenient::null_default(v, #default, #chain) }
            } else {
                chain
            };
            let on_error = if s.on_error {
                quote! { Some(#default) }
            } else {
                quote! { None }
            };
            let needs_default = s.shape == LenientShape::Required && !s.items && (s.on_null || s.on_error);
            let bound = if needs_default {
                quote! { T: serde::de::DeserializeOwned + Default }
            } else {
                quote! { T: serde::de::DeserializeOwned }
            };
            {
                quote! {
                    #cfg
                    pub(super) fn #name<'de, D: Deserializer<'de>, T>(deserializer: D) -> Result<#ret, D::Error>
                    where
                        #bound,
                    {
                        lenient::field(deserializer, #on_error, #chain, #direct)
                    }
                }
            }
        });
        let support = support();
        quote! {
            /// `deserialize_with` functions for the lenient fields, one per field shape.
            mod lenient_fns {
                #[allow(unused_imports)]
                use #support::{lenient, Defaulted, Patch};
                use serde::Deserializer;
                #(#fns)*
            }
        }
    }
}

/// The `cfg` of a shared lenient function: compiled in the builds that have one of its users
/// (a shape used only by unstable fields is not in the stable build, where it would be dead).
fn shape_cfg(users: &std::collections::BTreeSet<Stability>) -> TokenStream {
    let in_stable_build = users.iter().any(|s| *s != Stability::Unstable);
    let in_unstable_build = users.iter().any(|s| *s != Stability::StableOnly);
    match (in_stable_build, in_unstable_build) {
        (true, false) => cfg_for(Stability::StableOnly),
        (false, true) => cfg_for(Stability::Unstable),
        _ => quote! {},
    }
}
