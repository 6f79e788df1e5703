//! The facade's `MethodName` enum: one variant per distinct wire name across every version's
//! method tables, so that the runtime and the tool route a message by a `match` on a closed set
//! the schemas define, instead of comparing strings with constants. The names are collected from
//! each version's merged IR ([`collect`]) and emitted once (`method_name_enum`).

use crate::error::EmitError;
use crate::ir::{Protocol, Stability};
use crate::naming::method_base;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeMap;

/// Every wire name of every version's methods: by wire name, the versions (by number: `schema/vN/`)
/// that have it and in which of their schema files.
pub type WireNames = BTreeMap<String, BTreeMap<u16, Stability>>;

/// Adds the wire names of `version`'s merged methods to `names`. One wire name that is two
/// methods (a request and a notification) is in the stable schema when either is.
pub fn collect(names: &mut WireNames, version: u16, merged: &Protocol) {
    for m in &merged.methods {
        let by_version = names.entry(m.name.clone()).or_default();
        let stability = by_version.entry(version).or_insert(m.stability);
        if m.stability == Stability::Stable {
            *stability = Stability::Stable;
        }
    }
}

/// The `MethodName` enum with `of`, `as_str`, `versions` and `ALL`; `Err` when two wire names
/// would take one variant name (`method_base`).
pub(super) fn method_name_enum(names: &WireNames) -> Result<TokenStream, EmitError> {
    let mut by_variant: BTreeMap<String, &str> = BTreeMap::new();
    for wire in names.keys() {
        if let Some(other) = by_variant.insert(method_base(wire), wire) {
            return Err(EmitError::MethodNameClash {
                first: other.to_string(),
                second: wire.clone(),
                variant: method_base(wire),
            });
        }
    }
    let rows: Vec<(&String, proc_macro2::Ident, &BTreeMap<u16, Stability>)> =
        names.iter().map(|(wire, versions)| (wire, format_ident!("{}", method_base(wire)), versions)).collect();
    let variants = rows.iter().map(|(wire, name, versions)| {
        let doc = format!(" `{wire}`: in {}.", where_defined(versions));
        quote! { #[doc = #doc] #name, }
    });
    let all = rows.iter().map(|(_, name, _)| quote! { MethodName::#name, });
    let of = rows.iter().map(|(wire, name, _)| quote! { #wire => Some(MethodName::#name), });
    let as_str = rows.iter().map(|(wire, name, _)| quote! { MethodName::#name => #wire, });
    let in_versions = rows.iter().map(|(_, name, versions)| {
        let list = versions.keys().map(|n| {
            let (feature, variant) = (format!("v{n}"), format_ident!("V{n}"));
            quote! { #[cfg(feature = #feature)] Version::#variant, }
        });
        quote! { MethodName::#name => &[#(#list)*], }
    });
    Ok(quote! {
        /// A method name the schemas define: one variant per distinct wire name across every
        /// version's method tables (a request and a notification of one name are one variant),
        /// each documented with the versions that have it and whether only their unstable schema
        /// does. Every name is here whatever the features: whether a version's crate has the
        /// method is that crate's business ([`Self::versions`] for the versions compiled in).
        ///
        /// Decode a received name once with [`MethodName::of`] and `match` on it; a name no schema
        /// defines (a vendor `_x/...` extension, a later draft's method) is `None` there, and the
        /// caller keeps its string.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum MethodName {
            #(#variants)*
        }

        impl MethodName {
            /// Every method name, in wire-name order.
            pub const ALL: &'static [MethodName] = &[#(#all)*];

            /// The method of this wire name, if a schema defines it (exact match, no allocation).
            pub fn of(wire: &str) -> Option<MethodName> {
                match wire {
                    #(#of)*
                    _ => None,
                }
            }

            /// Its wire name, e.g. `session/prompt`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    #(#as_str)*
                }
            }

            /// The versions compiled in whose schemas define it (in their stable or unstable file).
            pub fn versions(self) -> &'static [Version] {
                match self {
                    #(#in_versions)*
                }
            }
        }

        impl std::fmt::Display for MethodName {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    })
}

/// `v1 (unstable), v2` for a variant's doc.
fn where_defined(versions: &BTreeMap<u16, Stability>) -> String {
    let each = versions.iter().map(|(v, s)| match s {
        Stability::Stable => format!("v{v}"),
        Stability::Unstable => format!("v{v} (unstable)"),
        Stability::StableOnly => format!("v{v} (stable schema only)"),
    });
    each.collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_variant_per_wire_name_across_versions() {
        let mut names = WireNames::new();
        names.entry("session/prompt".into()).or_default().extend([(1, Stability::Stable), (2, Stability::Stable)]);
        names.entry("$/cancel_request".into()).or_default().insert(2, Stability::Unstable);
        let text = method_name_enum(&names).expect("emits").to_string();
        assert!(text.contains("SessionPrompt ,"), "{text}");
        assert!(text.contains("CancelRequest ,"), "{text}");
        assert!(text.contains("\"$/cancel_request\" => Some (MethodName :: CancelRequest)"), "{text}");
        assert!(text.contains("MethodName :: CancelRequest => \"$/cancel_request\""), "{text}");
        assert!(text.contains("`$/cancel_request`: in v2 (unstable)."), "{text}");
        assert!(text.contains("`session/prompt`: in v1, v2."), "{text}");
    }

    #[test]
    fn two_wire_names_of_one_variant_name_are_an_error_naming_both() {
        let mut names = WireNames::new();
        names.entry("session/prompt".into()).or_default().insert(1, Stability::Stable);
        names.entry("$session/prompt".into()).or_default().insert(2, Stability::Stable);
        let Err(e) = method_name_enum(&names) else { panic!("a clash") };
        assert_eq!(
            e.to_string(),
            "the method names `$session/prompt` and `session/prompt` would both be `MethodName::SessionPrompt`"
        );
    }
}
