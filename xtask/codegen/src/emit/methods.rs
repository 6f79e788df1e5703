//! Emitting the method tables of a protocol version (`methods.rs`): a marker type per method, the
//! table of rows, and per receiving side the request/notification/response enums with their
//! `decode`, a handler trait whose defaults answer method-not-found, and the dispatch functions.
//! Reads only the IR's methods and the names of their params and result types.

use super::common::{cfg_for, docs, ident, render, support};
use crate::error::EmitError;
use crate::ir::*;
use crate::naming;
use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeSet;

/// A method with the Rust names it gets.
struct Named<'a> {
    m: &'a Method,
    /// Marker type, unique in the version.
    marker: String,
    /// Enum variant, unique within its side and kind.
    variant: String,
    /// Handler method, unique within its side.
    handler: String,
}

/// The names lowering gave each method.
fn name_methods(p: &Protocol) -> Vec<Named<'_>> {
    p.methods
        .iter()
        .map(|m| Named {
            m,
            marker: m.rust.marker.clone(),
            variant: m.rust.variant.clone(),
            handler: m.rust.handler.clone(),
        })
        .collect()
}

/// The `rpc::Stability` of a method: a stable-only method is stable where it exists.
fn stability_tokens(s: Stability) -> TokenStream {
    match s {
        Stability::Unstable => quote! { rpc::Stability::Unstable },
        Stability::Stable | Stability::StableOnly => quote! { rpc::Stability::Stable },
    }
}

fn kind_tokens(k: MethodKind) -> TokenStream {
    match k {
        MethodKind::Request => quote! { rpc::MessageKind::Request },
        MethodKind::Notification => quote! { rpc::MessageKind::Notification },
    }
}

/// A schema type by path (`t::Name`): a marker may share its name with a schema type.
fn type_path(p: &Protocol, id: TypeId) -> TokenStream {
    let name = ident(&p.get(id).name);
    quote! { t::#name }
}

/// Names the generated methods module defines besides the markers.
const RESERVED: &[&str] = &["Side", "Tables", "METHODS"];

/// The `methods.rs` module of a version.
pub fn methods_module(p: &Protocol, sources: &str) -> Result<String, EmitError> {
    let named = name_methods(p);
    if let Some(n) = named.iter().find(|n| RESERVED.contains(&n.marker.as_str())) {
        return Err(EmitError::ReservedMarker {
            file: sources.to_string(),
            method: n.m.name.clone(),
            side: n.m.side.wire.clone(),
            marker: n.marker.clone(),
        });
    }
    let markers = named.iter().map(|n| marker(p, n));
    let table = methods_table(p, &named);
    let sides: BTreeSet<&Side> = p.methods.iter().map(|m| &m.side).collect();
    let side_modules: Vec<TokenStream> = sides.iter().map(|side| side_module(p, &named, side)).collect();
    let side_enum = side_enum(&sides);
    let tables = tables(&sides);
    let tests = marker_tests(&named);
    let support = support();
    let tokens = quote! {
        //! Method tables: a marker type per method (see [`rpc::Method`]; by who receives it,
        //! [`rpc::ToAgent`], [`rpc::ToClient`] or [`rpc::ToProxy`]), the [`METHODS`] table, and
        //! per receiving side the decoding enums, a handler trait and its dispatch.
        #![allow(clippy::large_enum_variant)]

        use #support::rpc::{self, RpcError};
        #[allow(unused_imports)]
        use serde_json::value::RawValue;
        // Types by path: a marker may share its name with a schema type.
        #[allow(unused_imports)]
        use super::types as t;

        #(#markers)*

        #table

        #side_enum

        #tables

        #(#side_modules)*

        #tests
    };
    render(sources, tokens)
}

/// A method's marker type: `rpc::Method`, and `rpc::Request` (with its response) or
/// `rpc::Notification`.
fn marker(p: &Protocol, n: &Named<'_>) -> TokenStream {
    let m = n.m;
    let marker = format_ident!("{}", n.marker);
    let c = cfg_for(m.stability);
    let wire = &m.name;
    let side_variant = side_variant(&m.side);
    let params = type_path(p, m.params);
    let stability = stability_tokens(m.stability);
    let session_scoped = session_scoped_const(m.session_scoped);
    let receivers = receiver_traits(&m.side).into_iter().map(|to| quote! { #c impl rpc::#to for #marker {} });
    let doc = format!(
        " `{wire}`: {} received by the {} side.",
        if m.kind == MethodKind::Request { "a request" } else { "a notification" },
        m.side.wire
    );
    let params_docs = docs(p.get(m.params).origin.docs.as_deref());
    let kind_impl = match m.kind {
        MethodKind::Request => {
            // Raw JSON when the draft declares no response type (lowering warned).
            let r_ident = result_type(p, m);
            quote! {
                #c
                impl rpc::Request for #marker {
                    type Response = #r_ident;
                }
            }
        }
        MethodKind::Notification => quote! {
            #c
            impl rpc::Notification for #marker {}
        },
    };
    quote! {
        #[doc = #doc]
        #[doc = ""]
        #params_docs
        #c
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct #marker;
        #c
        impl rpc::Method for #marker {
            const METHOD: &'static str = #wire;
            type Side = Side;
            const SIDE: Side = #side_variant;
            const STABILITY: rpc::Stability = #stability;
            #session_scoped
            type Params = #params;
        }
        #kind_impl
        #(#receivers)*
    }
}

/// `SESSION_SCOPED` of a marker: once, or once per feature setting where the two files disagree
/// (see [`ByFeature`]).
fn session_scoped_const(scoped: ByFeature<bool>) -> TokenStream {
    match scoped.same() {
        Some(scoped) => quote! { const SESSION_SCOPED: bool = #scoped; },
        None => {
            let (off, on) = (scoped.stable, scoped.unstable);
            quote! {
                #[cfg(not(feature = "unstable"))]
                const SESSION_SCOPED: bool = #off;
                #[cfg(feature = "unstable")]
                const SESSION_SCOPED: bool = #on;
            }
        }
    }
}

/// The marker traits of a method of `side`: one per recipient ([`Receiver::recipients`]).
fn receiver_traits(side: &Side) -> Vec<syn::Ident> {
    side.receiver.recipients().into_iter().map(|r| format_ident!("{}", r.marker_trait())).collect()
}

/// `METHODS`: one row per method, once per feature setting when the two lists differ (a method of
/// one setting only, or one whose params name a session in one setting only).
fn methods_table(p: &Protocol, named: &[Named<'_>]) -> TokenStream {
    let mut rows_on = Vec::new();
    let mut rows_off = Vec::new();
    for n in named {
        let m = n.m;
        let (wire, side_variant) = (&m.name, side_variant(&m.side));
        let (kind, stability) = (kind_tokens(m.kind), stability_tokens(m.stability));
        let params_name = &p.get(m.params).name;
        let result_name = match m.result {
            Some(r) => {
                let name = &p.get(r).name;
                quote! { Some(#name) }
            }
            None => quote! { None },
        };
        let row = |session_scoped: bool| {
            quote! {
                rpc::MethodInfo { name: #wire, side: #side_variant, kind: #kind, stability: #stability, params: #params_name, result: #result_name, session_scoped: #session_scoped },
            }
        };
        if m.stability != Stability::StableOnly {
            rows_on.push(row(m.session_scoped.unstable));
        }
        if m.stability != Stability::Unstable {
            rows_off.push(row(m.session_scoped.stable));
        }
    }
    let same = named.iter().all(|n| n.m.stability == Stability::Stable && n.m.session_scoped.same().is_some());
    if same {
        quote! {
            /// Every method of this version: wire name, receiving side, kind, stability, types, and
            /// whether its params name a session.
            pub const METHODS: &[rpc::MethodInfo<Side>] = &[#(#rows_on)*];
        }
    } else {
        quote! {
            /// Every method of this version: wire name, receiving side, kind, stability, types, and
            /// whether its params name a session.
            #[cfg(feature = "unstable")]
            pub const METHODS: &[rpc::MethodInfo<Side>] = &[#(#rows_on)*];
            /// Every method of this version: wire name, receiving side, kind, stability, types, and
            /// whether its params name a session.
            #[cfg(not(feature = "unstable"))]
            pub const METHODS: &[rpc::MethodInfo<Side>] = &[#(#rows_off)*];
        }
    }
}

/// The generated test that each marker's constants agree with its row of the table, and its
/// marker traits (`ToAgent`, …) with its side's `received_by` and `role`.
fn marker_tests(named: &[Named<'_>]) -> TokenStream {
    let marker_checks = named.iter().map(|n| {
        let marker = format_ident!("{}", n.marker);
        let (c, kind) = (cfg_for(n.m.stability), kind_tokens(n.m.kind));
        let traits = receiver_traits(&n.m.side);
        let [agent, client, proxy] = Recipient::ALL.map(|r| n.m.side.receiver.receives(r));
        let bounds = traits.iter().map(|t| {
            let f = format_ident!("{}", t.to_string().to_snake_case());
            quote! { #c #f::<#marker>(); }
        });
        quote! {
            #c
            check::<#marker>(#kind, [#agent, #client, #proxy]);
            #(#bounds)*
        }
    });
    quote! {
        #[cfg(test)]
        mod tests {
            use super::*;

            /// Each marker's constants agree with its row of the table; `to` is whether it
            /// implements `ToAgent`, `ToClient` and `ToProxy`, which its side must agree with.
            fn check<M: rpc::Method<Side = Side>>(kind: rpc::MessageKind, to: [bool; 3]) {
                let row = METHODS
                    .iter()
                    .find(|r| r.name == M::METHOD && r.side == M::SIDE && r.kind == kind)
                    .unwrap_or_else(|| panic!("{} ({}) is not in METHODS", M::METHOD, M::SIDE));
                assert_eq!(row.stability, M::STABILITY);
                assert_eq!(row.session_scoped, M::SESSION_SCOPED, "{}", M::METHOD);
                let params = std::any::type_name::<M::Params>();
                assert!(params.ends_with(&format!("::{}", row.params)), "{params} vs {}", row.params);
                let [agent, client, proxy] = to;
                let side = M::SIDE;
                assert_eq!(rpc::Side::received_by(side, rpc::Role::Agent), agent, "{} ToAgent", M::METHOD);
                assert_eq!(rpc::Side::received_by(side, rpc::Role::Client), client, "{} ToClient", M::METHOD);
                if let Some(role) = rpc::Side::role(side) {
                    assert!(rpc::Side::received_by(side, role), "{} ({side}) is not received by its role", M::METHOD);
                }
                assert!(!proxy || rpc::Side::role(side).is_none(), "{} ToProxy with a role", M::METHOD);
            }

            // The marker traits as bounds: a marker checked here implements the trait.
            #[allow(dead_code)]
            fn to_agent<M: rpc::ToAgent>() {}
            #[allow(dead_code)]
            fn to_client<M: rpc::ToClient>() {}
            #[allow(dead_code)]
            fn to_proxy<M: rpc::ToProxy>() {}

            #[test]
            fn markers_match_the_table() {
                #(#marker_checks)*
            }
        }
    }
}

/// `Side::Agent` for the `x-side` value `agent`.
fn side_variant(side: &Side) -> TokenStream {
    let v = format_ident!("{}", naming::type_name(&side.wire));
    quote! { Side::#v }
}

/// `rpc::Role::Agent` for the recipient that is the agent's end (none for a proxy).
fn role_path(r: Recipient) -> Option<TokenStream> {
    let v = format_ident!("{}", r.role()?);
    Some(quote! { rpc::Role::#v })
}

/// `role()` of a side: the end of a connection that receives its messages ([`Receiver::role`]).
fn role(side: &Side) -> TokenStream {
    match side.receiver.role().and_then(role_path) {
        Some(path) => quote! { Some(#path) },
        None => quote! { None },
    }
}

/// The `rpc::Role`s of the ends of a connection that receive a side's messages
/// ([`Receiver::receives`]).
fn ends(side: &Side) -> Vec<TokenStream> {
    side.receiver.recipients().into_iter().filter_map(role_path).collect()
}

/// `received_by(role)` of a side: whether `role`'s end receives its messages, as the marker traits
/// say: one end, both (`true`) or neither (`false`).
fn received_by(side: &Side) -> TokenStream {
    match ends(side).as_slice() {
        [] => quote! { false },
        [one] => quote! { role == #one },
        _ => quote! { true },
    }
}

/// The version's `Side` enum: one variant per `x-side` value its methods use.
fn side_enum(sides: &BTreeSet<&Side>) -> TokenStream {
    let variants = sides.iter().map(|side| {
        let v = format_ident!("{}", naming::type_name(&side.wire));
        let d = format!(" `{}`: the methods of [`{}`].", side.wire, naming::field(&side.wire));
        quote! { #[doc = #d] #v, }
    });
    let all = sides.iter().map(|side| side_variant(side));
    let names = sides.iter().map(|side| {
        let (v, wire) = (side_variant(side), &side.wire);
        quote! { #v => #wire, }
    });
    let roles = sides.iter().map(|side| {
        let (v, r) = (side_variant(side), role(side));
        quote! { #v => #r, }
    });
    let received = sides.iter().map(|side| {
        let (v, r) = (side_variant(side), received_by(side));
        quote! { #v => #r, }
    });
    // Only the sides of one end read `role` (a draft without methods has no sides at all).
    let unused_role = match sides.iter().any(|s| ends(s).len() == 1) {
        true => quote! {},
        false => quote! { let _ = role; },
    };
    quote! {
        /// The sides of this version (the `x-side` values of its methods): who receives a method.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Side {
            #(#variants)*
        }

        impl rpc::Side for Side {
            const ALL: &'static [Self] = &[#(#all),*];

            fn name(self) -> &'static str {
                match self {
                    #(#names)*
                }
            }

            fn role(self) -> Option<rpc::Role> {
                match self {
                    #(#roles)*
                }
            }

            fn received_by(self, role: rpc::Role) -> bool {
                #unused_role
                match self {
                    #(#received)*
                }
            }
        }

        impl std::fmt::Display for Side {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(rpc::Side::name(*self))
            }
        }
    }
}

/// `Tables`: the version's [`METHODS`] and decoding by side and kind, as one type.
fn tables(sides: &BTreeSet<&Side>) -> TokenStream {
    let decode = sides.iter().map(|side| {
        let (v, m) = (side_variant(side), ident(&naming::field(&side.wire)));
        quote! {
            #v => match kind {
                rpc::MessageKind::Request => #m::Request::decode(method, params)?.params(),
                rpc::MessageKind::Notification => #m::Notification::decode(method, params)?.params(),
            },
        }
    });
    let responses = sides.iter().map(|side| {
        let (v, m) = (side_variant(side), ident(&naming::field(&side.wire)));
        quote! { #v => #m::Response::decode(method, result)?.result(), }
    });
    // A draft without methods has no sides: the matches below are then on an empty enum.
    let (unused_decode, unused_response) = match sides.is_empty() {
        true => (quote! { let _ = (kind, method, params); }, quote! { let _ = (method, result); }),
        false => (quote! {}, quote! {}),
    };
    quote! {
        /// This version's tables as a type (see [`rpc::Tables`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct Tables;

        impl rpc::Tables for Tables {
            type Side = Side;
            const METHODS: &'static [rpc::MethodInfo<Side>] = METHODS;

            fn decode(side: Side, kind: rpc::MessageKind, method: &str, params: Option<&RawValue>) -> Result<Option<serde_json::Value>, RpcError> {
                #unused_decode
                match side {
                    #(#decode)*
                }
            }

            fn decode_response(side: Side, method: &str, result: Option<&RawValue>) -> Result<serde_json::Value, RpcError> {
                #unused_response
                match side {
                    #(#responses)*
                }
            }
        }
    }
}

/// The module of one receiving side: the request, notification and response enums, the handler
/// trait and the dispatch functions.
fn side_module(p: &Protocol, named: &[Named<'_>], side: &Side) -> TokenStream {
    let module = ident(&naming::field(&side.wire));
    let of = |kind: MethodKind| -> Vec<&Named<'_>> {
        named.iter().filter(|n| n.m.side == *side && n.m.kind == kind).collect()
    };
    let requests = of(MethodKind::Request);
    let notifications = of(MethodKind::Notification);
    let request_enum = request_enum(p, &requests, &notifications);
    let notification_enum = notification_enum(p, &notifications, &requests);
    let response_enum = response_enum(p, &requests);
    let handler_trait = handler_trait(p, &requests, &notifications);
    let dispatch_fns = dispatch_fns(&requests, &notifications);
    let side_doc = format!(" Messages received by the `{}` side.", side.wire);
    quote! {
        #[doc = #side_doc]
        pub mod #module {
            use super::*;

            #request_enum

            #notification_enum

            #response_enum

            #handler_trait

            #dispatch_fns
        }
    }
}

/// The variants of a request or notification enum: one per method, holding its params.
fn message_variants(p: &Protocol, list: &[&Named<'_>]) -> Vec<TokenStream> {
    list.iter()
        .map(|n| {
            let v = format_ident!("{}", n.variant);
            let t = type_path(p, n.m.params);
            let c = cfg_for(n.m.stability);
            let d = format!(" `{}`", n.m.name);
            quote! { #[doc = #d] #c #v(#t), }
        })
        .collect()
}

/// The `decode_raw` arms of the methods in `list`, and an error for those of the other kind.
fn decode_arms(list: &[&Named<'_>], wrong: &[&Named<'_>], wrong_kind: TokenStream) -> TokenStream {
    let ok = list.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let c = cfg_for(n.m.stability);
        let wire = &n.m.name;
        quote! { #c #wire => rpc::decode_raw(method, params).map(Self::#v), }
    });
    // A name that is both a request and a notification of this side is decoded as the kind asked.
    let bad = wrong.iter().filter(|w| !list.iter().any(|n| n.m.name == w.m.name)).map(|n| {
        let c = cfg_for(n.m.stability);
        let wire = &n.m.name;
        quote! { #c #wire => Err(RpcError::wrong_kind(method, #wrong_kind)), }
    });
    quote! { #(#ok)* #(#bad)* }
}

/// `method()` arms: the wire name of each variant.
fn method_arms(list: &[&Named<'_>]) -> Vec<TokenStream> {
    list.iter()
        .map(|n| {
            let v = format_ident!("{}", n.variant);
            let c = cfg_for(n.m.stability);
            let wire = &n.m.name;
            quote! { #c Self::#v(_) => #wire, }
        })
        .collect()
}

/// `params()` arms: each variant's params as JSON.
fn params_arms(list: &[&Named<'_>]) -> Vec<TokenStream> {
    list.iter()
        .map(|n| {
            let v = format_ident!("{}", n.variant);
            let c = cfg_for(n.m.stability);
            quote! { #c Self::#v(p) => rpc::encode(p).map(Some), }
        })
        .collect()
}

/// The texts that differ between the `Request` and the `Notification` enum of a side.
struct MessageEnum {
    name: &'static str,
    doc: &'static str,
    ext_doc: &'static str,
    decode_doc: &'static [&'static str],
    decode_raw_doc: &'static [&'static str],
    /// The kind a method of the other list is, for `RpcError::wrong_kind`.
    other_kind: TokenStream,
}

/// `Request`: the requests this side receives, decoded by method, with an extension variant.
fn request_enum(p: &Protocol, requests: &[&Named<'_>], notifications: &[&Named<'_>]) -> TokenStream {
    let spec = MessageEnum {
        name: "Request",
        doc: " A request this side receives, decoded by its method.",
        ext_doc: " An extension method (its name starts with `_`), kept as received.",
        decode_doc: &[
            " Decodes `params` by `method`: -32601 for a method this side does not receive as a",
            " request, -32602 (with the field path) for params that do not decode.",
        ],
        decode_raw_doc: &[
            " [`Request::decode`], the params borrowed or handed over: owned, a large message's",
            " longest string is moved into the value, not copied ([`rpc::decode_raw`]).",
        ],
        other_kind: quote! { rpc::MessageKind::Notification },
    };
    message_enum(p, requests, notifications, spec)
}

/// `Notification`: the notifications this side receives, decoded by method, with an extension
/// variant.
fn notification_enum(p: &Protocol, notifications: &[&Named<'_>], requests: &[&Named<'_>]) -> TokenStream {
    let spec = MessageEnum {
        name: "Notification",
        doc: " A notification this side receives, decoded by its method.",
        ext_doc: " An extension notification (its name starts with `_`), kept as received.",
        decode_doc: &[" Decodes `params` by `method` (errors as for [`Request::decode`])."],
        decode_raw_doc: &[
            " [`Notification::decode`], the params borrowed or handed over (see",
            " [`Request::decode_raw`]).",
        ],
        other_kind: quote! { rpc::MessageKind::Request },
    };
    message_enum(p, notifications, requests, spec)
}

/// A message enum of one kind: its variants, `decode`/`decode_raw` by method (a method of the
/// other kind is `wrong_kind`), `method()` and `params()`.
fn message_enum(p: &Protocol, list: &[&Named<'_>], others: &[&Named<'_>], spec: MessageEnum) -> TokenStream {
    let variants = message_variants(p, list);
    let decode = decode_arms(list, others, spec.other_kind);
    let (method, params) = (method_arms(list), params_arms(list));
    let (name, doc, ext_doc) = (format_ident!("{}", spec.name), spec.doc, spec.ext_doc);
    let (decode_doc, decode_raw_doc) = (spec.decode_doc, spec.decode_raw_doc);
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, PartialEq)]
        pub enum #name {
            #(#variants)*
            #[doc = #ext_doc]
            Ext {
                /// The method name, underscore included.
                method: String,
                /// The raw params.
                params: Option<serde_json::Value>,
            },
        }

        impl #name {
            #(#[doc = #decode_doc])*
            pub fn decode(method: &str, params: Option<&RawValue>) -> Result<Self, RpcError> {
                Self::decode_raw(method, rpc::RawParams::Borrowed(params))
            }

            #(#[doc = #decode_raw_doc])*
            pub fn decode_raw(method: &str, params: rpc::RawParams<'_>) -> Result<Self, RpcError> {
                match method {
                    #decode
                    _ if method.starts_with('_') => Ok(Self::Ext { method: method.to_string(), params: rpc::raw_to_value(params.get()) }),
                    _ => Err(RpcError::method_not_found(method)),
                }
            }

            /// The wire method name.
            pub fn method(&self) -> &str {
                match self {
                    #(#method)*
                    Self::Ext { method, .. } => method,
                }
            }

            /// The params as JSON.
            pub fn params(&self) -> Result<Option<serde_json::Value>, RpcError> {
                match self {
                    #(#params)*
                    Self::Ext { params, .. } => Ok(params.clone()),
                }
            }
        }
    }
}

/// The Rust type of a request's result (raw JSON when the schema gives none).
fn result_type(p: &Protocol, m: &Method) -> TokenStream {
    m.result.map(|r| type_path(p, r)).map_or_else(|| quote! { serde_json::Value }, |t| quote! { #t })
}

/// `Response`: what this side answers to each of its requests, decoded by the method called.
fn response_enum(p: &Protocol, requests: &[&Named<'_>]) -> TokenStream {
    let variants = requests.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let c = cfg_for(n.m.stability);
        let t = result_type(p, n.m);
        let d = format!(" The response to `{}`.", n.m.name);
        quote! { #[doc = #d] #c #v(#t), }
    });
    let decode = requests.iter().map(|n| {
        let (v, c, wire) = (format_ident!("{}", n.variant), cfg_for(n.m.stability), &n.m.name);
        quote! { #c #wire => rpc::decode_raw(method, result).map(Self::#v), }
    });
    let method = requests.iter().map(|n| {
        let (v, c, wire) = (format_ident!("{}", n.variant), cfg_for(n.m.stability), &n.m.name);
        quote! { #c Self::#v(_) => Some(#wire), }
    });
    let result = requests.iter().map(|n| {
        let (v, c) = (format_ident!("{}", n.variant), cfg_for(n.m.stability));
        quote! { #c Self::#v(r) => rpc::encode(r), }
    });
    quote! {
        /// A response this side sends (and its peer decodes, knowing the method it called).
        #[derive(Debug, Clone, PartialEq)]
        pub enum Response {
            #(#variants)*
            /// The result of an extension method.
            Ext(serde_json::Value),
        }

        impl Response {
            /// Decodes the `result` of a call to `method`; `_`-prefixed methods give [`Response::Ext`].
            pub fn decode(method: &str, result: Option<&RawValue>) -> Result<Self, RpcError> {
                Self::decode_raw(method, rpc::RawParams::Borrowed(result))
            }

            /// [`Response::decode`], the result borrowed or handed over (see
            /// [`Request::decode_raw`]).
            pub fn decode_raw(method: &str, result: rpc::RawParams<'_>) -> Result<Self, RpcError> {
                match method {
                    #(#decode)*
                    _ if method.starts_with('_') => Ok(Self::Ext(rpc::raw_to_value(result.get()).unwrap_or(serde_json::Value::Null))),
                    _ => Err(RpcError::method_not_found(method)),
                }
            }

            /// The method this answers (`None` for an extension method).
            pub fn method(&self) -> Option<&'static str> {
                match self {
                    #(#method)*
                    Self::Ext(_) => None,
                }
            }

            /// The result as JSON.
            pub fn result(&self) -> Result<serde_json::Value, RpcError> {
                match self {
                    #(#result)*
                    Self::Ext(v) => Ok(v.clone()),
                }
            }
        }
    }
}

/// `Handler`: one method per protocol method, each with a default (method-not-found for a
/// request, nothing for a notification), and the two extension methods.
fn handler_trait(p: &Protocol, requests: &[&Named<'_>], notifications: &[&Named<'_>]) -> TokenStream {
    let methods = requests.iter().chain(notifications).map(|n| handler_method(p, n));
    quote! {
        /// What this side does with each message. Every method has a default (requests answer
        /// method-not-found, notifications are ignored), so a method added to the schema never
        /// breaks an implementation. `Cx` is whatever the caller passes along (a connection
        /// handle, a cancellation token, `()`).
        pub trait Handler<Cx: Send + 'static = ()>: Send + Sync {
            #(#methods)*

            /// An extension request (`_vendor/...`); the default answers method-not-found.
            fn ext_method(&self, method: String, params: Option<serde_json::Value>, cx: Cx) -> impl std::future::Future<Output = Result<serde_json::Value, RpcError>> + Send {
                let _ = (params, cx);
                async move { Err(RpcError::method_not_found(&method)) }
            }

            /// An extension notification; the default ignores it.
            fn ext_notification(&self, method: String, params: Option<serde_json::Value>, cx: Cx) -> impl std::future::Future<Output = ()> + Send {
                let _ = (method, params, cx);
                async {}
            }
        }
    }
}

/// One handler method, with its default.
fn handler_method(p: &Protocol, n: &Named<'_>) -> TokenStream {
    let f = ident(&naming::field(&n.handler));
    let c = cfg_for(n.m.stability);
    let params = type_path(p, n.m.params);
    let wire = &n.m.name;
    let d = docs(p.get(n.m.params).origin.docs.as_deref());
    match n.m.kind {
        MethodKind::Request => {
            let result = result_type(p, n.m);
            let head = format!(" `{wire}`. The default answers method-not-found (-32601).");
            quote! {
                #[doc = #head]
                #[doc = ""]
                #d
                #c
                fn #f(&self, params: #params, cx: Cx) -> impl std::future::Future<Output = Result<#result, RpcError>> + Send {
                    let _ = (params, cx);
                    async { Err(RpcError::method_not_found(#wire)) }
                }
            }
        }
        MethodKind::Notification => {
            let head = format!(" `{wire}`. The default ignores it.");
            quote! {
                #[doc = #head]
                #[doc = ""]
                #d
                #c
                fn #f(&self, params: #params, cx: Cx) -> impl std::future::Future<Output = ()> + Send {
                    let _ = (params, cx);
                    async {}
                }
            }
        }
    }
}

/// `dispatch_request` and `dispatch_notification`: a decoded message to its handler method.
fn dispatch_fns(requests: &[&Named<'_>], notifications: &[&Named<'_>]) -> TokenStream {
    let dispatch_req = requests.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let f = ident(&naming::field(&n.handler));
        let c = cfg_for(n.m.stability);
        quote! { #c Request::#v(p) => handler.#f(p, cx).await.map(Response::#v), }
    });
    let dispatch_note = notifications.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let f = ident(&naming::field(&n.handler));
        let c = cfg_for(n.m.stability);
        quote! { #c Notification::#v(p) => handler.#f(p, cx).await, }
    });
    quote! {
        /// Calls the handler method for `request`.
        pub async fn dispatch_request<H: Handler<Cx>, Cx: Send + 'static>(handler: &H, request: Request, cx: Cx) -> Result<Response, RpcError> {
            match request {
                #(#dispatch_req)*
                Request::Ext { method, params } => handler.ext_method(method, params, cx).await.map(Response::Ext),
            }
        }

        /// Calls the handler method for `notification`.
        pub async fn dispatch_notification<H: Handler<Cx>, Cx: Send + 'static>(handler: &H, notification: Notification, cx: Cx) {
            match notification {
                #(#dispatch_note)*
                Notification::Ext { method, params } => handler.ext_notification(method, params, cx).await,
            }
        }
    }
}
