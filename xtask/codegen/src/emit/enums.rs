//! Emitting enums: string enums (`union::WireStr`, with a catch-all that keeps any other string)
//! and integer enums (error codes, with a catch-all keeping any other integer). A value that only
//! a catch-all the generator added keeps is recorded (`lenient::note_not_in_schema`).

use super::common::{cfg_for, docs, ident, int_type, schema_impl, support, variant_lists};
use crate::ir::*;
use proc_macro2::TokenStream;
use quote::quote;

/// A string enum: the enum, its `union::WireStr` (wire string ↔ variant), `as_str`, serde and
/// `Display` through the wire string, and its schema. The catch-all keeps any other string.
pub(super) fn string_enum(values: &[EnumValue], c: &CatchAll, name: &syn::Ident, cfg: &TokenStream) -> TokenStream {
    let variants = values.iter().map(|v| {
        let vn = ident(&v.name);
        let d = docs(v.origin.docs.as_deref().or(Some(&format!("`{}`", v.origin.wire))));
        let c = cfg_for(v.stability);
        quote! { #d #c #vn, }
    });
    let from_arms = values.iter().map(|v| {
        let (vn, wire, c) = (ident(&v.name), &v.origin.wire, cfg_for(v.stability));
        quote! { #c #wire => Some(Self::#vn), }
    });
    let as_arms = values.iter().map(|v| {
        let (vn, wire, c) = (ident(&v.name), &v.origin.wire, cfg_for(v.stability));
        quote! { #c Self::#vn => #wire, }
    });
    let variant_consts =
        variant_lists("VARIANTS", false, None, values.iter().map(|v| (v.origin.wire.clone(), v.stability)));
    let (cn, d) = (ident(&c.name), catch_all_docs(c));
    let support = support();
    let schema_impl =
        schema_impl(name, cfg, quote! { #support::schema::string_enum(<Self as union::WireStr>::VARIANTS, true) });
    let wire_impls = string_enum_wire_impls(name, c, cfg);
    quote! {
        #cfg
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum #name {
            #(#variants)*
            #d #cn(String),
        }
        #cfg
        impl union::WireStr for #name {
            #variant_consts
            fn from_wire(value: &str) -> Option<Self> {
                match value {
                    #(#from_arms)*
                    other => Some(Self::#cn(other.to_string())),
                }
            }
            fn from_wire_owned(value: String) -> Option<Self> {
                match Self::from_wire(&value) {
                    Some(Self::#cn(_)) | None => Some(Self::#cn(value)),
                    known => known,
                }
            }
            fn as_wire(&self) -> &str {
                match self {
                    #(#as_arms)*
                    Self::#cn(other) => other,
                }
            }
        }
        #wire_impls
        #schema_impl
    }
}

/// `as_str`, `Serialize`, `Deserialize` and `Display` of a string enum, all through its
/// `union::WireStr`. A value kept by a catch-all the generator added is recorded.
fn string_enum_wire_impls(name: &syn::Ident, c: &CatchAll, cfg: &TokenStream) -> TokenStream {
    let deserialize = if c.source.declared() {
        quote! { union::deserialize_str(deserializer) }
    } else {
        let (cn, ty) = (ident(&c.name), name.to_string());
        quote! {
            let value = union::deserialize_str(deserializer)?;
            if let Self::#cn(other) = &value {
                lenient::note_not_in_schema_str(#ty, None, other);
            }
            Ok(value)
        }
    };
    quote! {
        #cfg
        impl #name {
            /// The wire value.
            pub fn as_str(&self) -> &str {
                union::WireStr::as_wire(self)
            }
        }
        #cfg
        impl Serialize for #name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                union::serialize_str(self, serializer)
            }
        }
        #cfg
        impl<'de> Deserialize<'de> for #name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                #deserialize
            }
        }
        #cfg
        impl std::fmt::Display for #name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    }
}

/// An integer literal (its value's digits, typed by context).
fn int_literal(v: i64) -> TokenStream {
    v.to_string().parse().unwrap_or_else(|_| quote! { 0 })
}

/// An integer enum: the enum, `code()`, serde through the integer, and its schema. The catch-all
/// keeps any other integer.
pub(super) fn int_enum(
    repr: IntKind,
    values: &[IntValue],
    c: &CatchAll,
    name: &syn::Ident,
    cfg: &TokenStream,
) -> TokenStream {
    let ty = int_type(repr);
    let variants = values.iter().map(|v| {
        let vn = ident(&v.name);
        let d = docs(v.origin.docs.as_deref().or(Some(&format!("`{}`", v.value))));
        let c = cfg_for(v.stability);
        quote! { #d #c #vn, }
    });
    let to_arms = values.iter().map(|v| {
        let (vn, c, l) = (ident(&v.name), cfg_for(v.stability), int_literal(v.value));
        quote! { #c Self::#vn => #l, }
    });
    let (cn, d) = (ident(&c.name), catch_all_docs(c));
    let schema_impl = int_enum_schema_impl(values, name, cfg);
    let serde_impls = int_enum_serde_impls(values, c, &ty, name, cfg);
    // The enum first: the type's docs go before what this returns.
    quote! {
        #cfg
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum #name {
            #(#variants)*
            #d #cn(#ty),
        }
        #schema_impl
        #cfg
        impl #name {
            /// The wire value.
            pub fn code(&self) -> #ty {
                match self {
                    #(#to_arms)*
                    Self::#cn(other) => *other,
                }
            }
        }
        #serde_impls
    }
}

/// The schema of an integer enum: its known values (each under its `#[cfg]`), and any other
/// integer.
fn int_enum_schema_impl(values: &[IntValue], name: &syn::Ident, cfg: &TokenStream) -> TokenStream {
    let known = values.iter().map(|v| {
        let (c, l) = (cfg_for(v.stability), int_literal(v.value));
        quote! { #c known.push(#l); }
    });
    let support = support();
    schema_impl(
        name,
        cfg,
        quote! {{
            let mut known: Vec<i64> = Vec::new();
            #(#known)*
            #support::schema::int_enum(&known, true)
        }},
    )
}

/// `Serialize` and `Deserialize` of an integer enum: through `code()`, and from the integer (an
/// unknown value is the catch-all's, recorded when the generator added the catch-all).
fn int_enum_serde_impls(
    values: &[IntValue],
    c: &CatchAll,
    ty: &TokenStream,
    name: &syn::Ident,
    cfg: &TokenStream,
) -> TokenStream {
    let from_arms = values.iter().map(|v| {
        let (vn, c, l) = (ident(&v.name), cfg_for(v.stability), int_literal(v.value));
        quote! { #c #l => Ok(Self::#vn), }
    });
    let cn = ident(&c.name);
    let catch_from = if c.source.declared() {
        quote! { other => Ok(Self::#cn(other)), }
    } else {
        let type_name = name.to_string();
        quote! {
            other => {
                lenient::note_not_in_schema(#type_name, None, other.to_string());
                Ok(Self::#cn(other))
            }
        }
    };
    quote! {
        #cfg
        impl Serialize for #name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.code().serialize(serializer)
            }
        }
        #cfg
        impl<'de> Deserialize<'de> for #name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                match <#ty>::deserialize(deserializer)? {
                    #(#from_arms)*
                    #catch_from
                }
            }
        }
    }
}

/// The docs of an enum's catch-all variant.
fn catch_all_docs(c: &CatchAll) -> TokenStream {
    docs(c.origin.docs.as_deref().or(Some("Any other value, kept as received.")))
}
