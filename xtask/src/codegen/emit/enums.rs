//! Emitting enums: string enums (`union::WireStr`, open ones with a catch-all that keeps any other
//! string) and integer enums (error codes, open ones keeping any other integer).

use super::{cfg_for, docs, ident, int_type, schema_impl, variant_lists};
use crate::codegen::ir::*;
use proc_macro2::TokenStream;
use quote::quote;

/// A string enum: the enum, its `union::WireStr` (wire string ↔ variant), `as_str`, serde and
/// `Display` through the wire string, and its schema.
pub(super) fn string_enum(
    values: &[EnumValue],
    open: Option<&CatchAll>,
    name: &syn::Ident,
    cfg: &TokenStream,
) -> TokenStream {
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
    let variant_consts = variant_lists("VARIANTS", false, values.iter().map(|v| (v.origin.wire.clone(), v.stability)));
    let StringCatchAll { variant, from_wire, as_wire, from_wire_owned, derives } = StringCatchAll::of(open);
    let open_flag = open.is_some();
    let schema_impl = schema_impl(
        name,
        cfg,
        quote! { crate::support::schema::string_enum(<Self as union::WireStr>::VARIANTS, #open_flag) },
    );
    let wire_impls = string_enum_wire_impls(name, cfg);
    quote! {
        #cfg
        #[derive(#derives)]
        pub enum #name {
            #(#variants)*
            #variant
        }
        #cfg
        impl union::WireStr for #name {
            #variant_consts
            fn from_wire(value: &str) -> Option<Self> {
                match value {
                    #(#from_arms)*
                    #from_wire
                }
            }
            #from_wire_owned
            fn as_wire(&self) -> &str {
                match self {
                    #(#as_arms)*
                    #as_wire
                }
            }
        }
        #wire_impls
        #schema_impl
    }
}

/// What a string enum's catch-all adds (or, for a closed enum, what stands in its place).
struct StringCatchAll {
    /// The variant that keeps any other string.
    variant: TokenStream,
    /// The last arm of `from_wire`.
    from_wire: TokenStream,
    /// The last arm of `as_wire`.
    as_wire: TokenStream,
    /// `from_wire_owned`, which keeps the received string instead of copying it.
    from_wire_owned: TokenStream,
    /// A closed enum is `Copy`; an open one holds a `String`.
    derives: TokenStream,
}

impl StringCatchAll {
    fn of(open: Option<&CatchAll>) -> Self {
        let Some(c) = open else {
            return StringCatchAll {
                variant: quote! {},
                from_wire: quote! { _ => None, },
                as_wire: quote! {},
                from_wire_owned: quote! {},
                derives: quote! { Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash },
            };
        };
        let cn = ident(&c.name);
        let d = catch_all_docs(c);
        StringCatchAll {
            variant: quote! { #d #cn(String), },
            from_wire: quote! { other => Some(Self::#cn(other.to_string())), },
            as_wire: quote! { Self::#cn(other) => other, },
            from_wire_owned: quote! {
                fn from_wire_owned(value: String) -> Option<Self> {
                    match Self::from_wire(&value) {
                        Some(Self::#cn(_)) | None => Some(Self::#cn(value)),
                        known => known,
                    }
                }
            },
            derives: quote! { Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash },
        }
    }
}

/// `as_str`, `Serialize`, `Deserialize` and `Display` of a string enum, all through its
/// `union::WireStr`.
fn string_enum_wire_impls(name: &syn::Ident, cfg: &TokenStream) -> TokenStream {
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
                union::deserialize_str(deserializer)
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

/// An integer enum: the enum, `code()`, serde through the integer, and its schema.
pub(super) fn int_enum(
    repr: IntKind,
    values: &[IntValue],
    open: Option<&CatchAll>,
    name: &syn::Ident,
    cfg: &TokenStream,
) -> TokenStream {
    let ty = int_type(repr);
    let variants = values.iter().map(|v| {
        let vn = ident(&v.name);
        let d = docs(v.origin.docs.as_deref());
        let c = cfg_for(v.stability);
        quote! { #d #c #vn, }
    });
    let to_arms = values.iter().map(|v| {
        let (vn, c, l) = (ident(&v.name), cfg_for(v.stability), int_literal(v.value));
        quote! { #c Self::#vn => #l, }
    });
    let (catch_variant, catch_to) = match open {
        Some(c) => {
            let (cn, d) = (ident(&c.name), catch_all_docs(c));
            (quote! { #d #cn(#ty), }, quote! { Self::#cn(other) => *other, })
        }
        None => (quote! {}, quote! {}),
    };
    let schema_impl = int_enum_schema_impl(values, open, name, cfg);
    let serde_impls = int_enum_serde_impls(values, open, &ty, name, cfg);
    quote! {
        #schema_impl
        #cfg
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum #name {
            #(#variants)*
            #catch_variant
        }
        #cfg
        impl #name {
            /// The wire value.
            pub fn code(&self) -> #ty {
                match self {
                    #(#to_arms)*
                    #catch_to
                }
            }
        }
        #serde_impls
    }
}

/// The schema of an integer enum: its known values (each under its `#[cfg]`), open or not.
fn int_enum_schema_impl(
    values: &[IntValue],
    open: Option<&CatchAll>,
    name: &syn::Ident,
    cfg: &TokenStream,
) -> TokenStream {
    let known = values.iter().map(|v| {
        let (c, l) = (cfg_for(v.stability), int_literal(v.value));
        quote! { #c known.push(#l); }
    });
    let open_flag = open.is_some();
    schema_impl(
        name,
        cfg,
        quote! {{
            let mut known: Vec<i64> = Vec::new();
            #(#known)*
            crate::support::schema::int_enum(&known, #open_flag)
        }},
    )
}

/// `Serialize` and `Deserialize` of an integer enum: through `code()`, and from the integer (an
/// unknown value is the catch-all's, or an error for a closed enum).
fn int_enum_serde_impls(
    values: &[IntValue],
    open: Option<&CatchAll>,
    ty: &TokenStream,
    name: &syn::Ident,
    cfg: &TokenStream,
) -> TokenStream {
    let from_arms = values.iter().map(|v| {
        let (vn, c, l) = (ident(&v.name), cfg_for(v.stability), int_literal(v.value));
        quote! { #c #l => Ok(Self::#vn), }
    });
    let catch_from = match open {
        Some(c) => {
            let cn = ident(&c.name);
            quote! { other => Ok(Self::#cn(other)), }
        }
        None => quote! { other => Err(serde::de::Error::custom(format_args!("unknown value {other}"))), },
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
