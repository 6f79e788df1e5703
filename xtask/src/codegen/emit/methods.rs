//! Emitting the method tables of a protocol version (`methods.rs`): a marker type per method, the
//! table of rows, and per receiving side the request/notification/response enums with their
//! `decode`, a handler trait whose defaults answer method-not-found, and the dispatch functions.
//! Reads only the IR's methods and the names of their params and result types.

use crate::emit::{cfg, docs, ident, render};
use crate::ir::*;
use crate::naming;
use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::{BTreeMap, BTreeSet};

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

fn kind_word(k: MethodKind) -> &'static str {
    match k {
        MethodKind::Request => "Request",
        MethodKind::Notification => "Notification",
    }
}

fn name_methods(p: &Protocol) -> Vec<Named<'_>> {
    let base = |m: &Method| naming::type_name(&m.name.replace('$', ""));
    let mut by_base: BTreeMap<String, Vec<&Method>> = BTreeMap::new();
    for m in &p.methods {
        by_base.entry(base(m)).or_default().push(m);
    }
    p.methods
        .iter()
        .map(|m| {
            let b = base(m);
            let clash = &by_base[&b];
            let marker = if clash.len() == 1 {
                b.clone()
            } else if clash.iter().filter(|o| o.kind == m.kind).count() == 1 {
                format!("{b}{}", kind_word(m.kind))
            } else {
                format!("{b}{}{}", kind_word(m.kind), naming::type_name(&m.side))
            };
            let same_side = clash.iter().filter(|o| o.side == m.side).count();
            let handler =
                if same_side == 1 { b.to_snake_case() } else { format!("{b}{}", kind_word(m.kind)).to_snake_case() };
            Named { m, marker, variant: b, handler }
        })
        .collect()
}

fn stability_tokens(s: Stability) -> TokenStream {
    match s {
        Stability::Unstable => quote! { rpc::Stability::Unstable },
        _ => quote! { rpc::Stability::Stable },
    }
}

/// Names the generated methods module defines besides the markers.
const RESERVED: &[&str] = &["Side", "Tables", "METHODS"];

/// The `methods.rs` module of a version.
pub fn methods_module(p: &Protocol, sources: &str) -> Result<String, String> {
    let named = name_methods(p);
    if let Some(n) = named.iter().find(|n| RESERVED.contains(&n.marker.as_str())) {
        return Err(format!(
            "{sources}: the marker type of method `{}` ({} side) would be named `{}`, which the methods module \
             already defines",
            n.m.name, n.m.side, n.marker
        ));
    }
    let type_name = |id: TypeId| {
        let name = ident(&p.get(id).name);
        quote! { t::#name }
    };
    let mut markers = Vec::new();
    let mut rows_on = Vec::new();
    let mut rows_off = Vec::new();
    let mut marker_checks = Vec::new();
    for n in &named {
        let m = n.m;
        let marker = format_ident!("{}", n.marker);
        let c = cfg(m.stability);
        let (wire, side) = (&m.name, &m.side);
        let side_variant = side_variant(side);
        let params = type_name(m.params);
        let stability = stability_tokens(m.stability);
        let doc = format!(
            " `{wire}`: {} received by the {side} side.",
            if m.kind == MethodKind::Request { "a request" } else { "a notification" }
        );
        let params_docs = docs(p.get(m.params).origin.docs.as_deref());
        markers.push(quote! {
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
                type Params = #params;
            }
        });
        let kind = match m.kind {
            MethodKind::Request => quote! { rpc::MessageKind::Request },
            MethodKind::Notification => quote! { rpc::MessageKind::Notification },
        };
        let params_name = &p.get(m.params).name;
        let result_name = match m.result {
            Some(r) => {
                let r_ident = type_name(r);
                markers.push(quote! {
                    #c
                    impl rpc::Request for #marker {
                        type Response = #r_ident;
                    }
                });
                let name = &p.get(r).name;
                quote! { Some(#name) }
            }
            None => {
                markers.push(quote! {
                    #c
                    impl rpc::Notification for #marker {}
                });
                quote! { None }
            }
        };
        let row = quote! {
            rpc::MethodInfo { name: #wire, side: #side_variant, kind: #kind, stability: #stability, params: #params_name, result: #result_name },
        };
        if m.stability != Stability::StableOnly {
            rows_on.push(row.clone());
        }
        if m.stability != Stability::Unstable {
            rows_off.push(row);
        }
        marker_checks.push(quote! {
            #c
            check::<#marker>(#kind);
        });
    }
    let table = if rows_on.len() == rows_off.len() && named.iter().all(|n| n.m.stability == Stability::Stable) {
        quote! {
            /// Every method of this version: wire name, receiving side, kind, stability, types.
            pub const METHODS: &[rpc::MethodInfo<Side>] = &[#(#rows_on)*];
        }
    } else {
        quote! {
            /// Every method of this version: wire name, receiving side, kind, stability, types.
            #[cfg(feature = "unstable")]
            pub const METHODS: &[rpc::MethodInfo<Side>] = &[#(#rows_on)*];
            /// Every method of this version: wire name, receiving side, kind, stability, types.
            #[cfg(not(feature = "unstable"))]
            pub const METHODS: &[rpc::MethodInfo<Side>] = &[#(#rows_off)*];
        }
    };
    let sides: BTreeSet<&String> = p.methods.iter().map(|m| &m.side).collect();
    let side_modules: Vec<TokenStream> = sides.iter().map(|side| side_module(p, &named, side)).collect();
    let side_enum = side_enum(&sides);
    let tables = tables(&sides);
    let tokens = quote! {
        //! Method tables: a marker type per method (see [`rpc::Method`]), the [`METHODS`] table, and
        //! per receiving side the decoding enums, a handler trait and its dispatch.
        #![allow(clippy::large_enum_variant)]

        use crate::support::rpc::{self, RpcError};
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

        #[cfg(test)]
        mod tests {
            use super::*;

            /// Each marker's constants agree with its row of the table.
            fn check<M: rpc::Method<Side = Side>>(kind: rpc::MessageKind) {
                let row = METHODS
                    .iter()
                    .find(|r| r.name == M::METHOD && r.side == M::SIDE && r.kind == kind)
                    .unwrap_or_else(|| panic!("{} ({}) is not in METHODS", M::METHOD, M::SIDE));
                assert_eq!(row.stability, M::STABILITY);
                let params = std::any::type_name::<M::Params>();
                assert!(params.ends_with(&format!("::{}", row.params)), "{params} vs {}", row.params);
            }

            #[test]
            fn markers_match_the_table() {
                #(#marker_checks)*
            }
        }
    };
    render(sources, tokens)
}

/// `Side::Agent` for the `x-side` value `agent`.
fn side_variant(side: &str) -> TokenStream {
    let v = format_ident!("{}", naming::type_name(side));
    quote! { Side::#v }
}

/// The end of a connection that receives a side's messages. The protocol has two ends; other
/// `x-side` values (`protocol`: messages both ends receive; `proxy`) are none of them.
fn role(side: &str) -> TokenStream {
    match side {
        "agent" => quote! { Some(rpc::Role::Agent) },
        "client" => quote! { Some(rpc::Role::Client) },
        _ => quote! { None },
    }
}

/// The version's `Side` enum: one variant per `x-side` value its methods use.
fn side_enum(sides: &BTreeSet<&String>) -> TokenStream {
    let variants = sides.iter().map(|side| {
        let v = format_ident!("{}", naming::type_name(side));
        let d = format!(" `{side}`: the methods of [`{}`].", naming::field(side));
        quote! { #[doc = #d] #v, }
    });
    let all = sides.iter().map(|side| side_variant(side));
    let names = sides.iter().map(|side| {
        let v = side_variant(side);
        quote! { #v => #side, }
    });
    let roles = sides.iter().map(|side| {
        let (v, r) = (side_variant(side), role(side));
        quote! { #v => #r, }
    });
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
        }

        impl std::fmt::Display for Side {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(rpc::Side::name(*self))
            }
        }
    }
}

/// `Tables`: the version's [`METHODS`] and decoding by side and kind, as one type.
fn tables(sides: &BTreeSet<&String>) -> TokenStream {
    let decode = sides.iter().map(|side| {
        let (v, m) = (side_variant(side), ident(&naming::field(side)));
        quote! {
            (#v, rpc::MessageKind::Request) => #m::Request::decode(method, params)?.params(),
            (#v, rpc::MessageKind::Notification) => #m::Notification::decode(method, params)?.params(),
        }
    });
    let responses = sides.iter().map(|side| {
        let (v, m) = (side_variant(side), ident(&naming::field(side)));
        quote! { #v => #m::Response::decode(method, result)?.result(), }
    });
    quote! {
        /// This version's tables as a type (see [`rpc::Tables`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct Tables;

        impl rpc::Tables for Tables {
            type Side = Side;
            const METHODS: &'static [rpc::MethodInfo<Side>] = METHODS;

            fn decode(side: Side, kind: rpc::MessageKind, method: &str, params: Option<&RawValue>) -> Result<Option<serde_json::Value>, RpcError> {
                match (side, kind) {
                    #(#decode)*
                }
            }

            fn decode_response(side: Side, method: &str, result: Option<&RawValue>) -> Result<serde_json::Value, RpcError> {
                match side {
                    #(#responses)*
                }
            }
        }
    }
}

fn side_module(p: &Protocol, named: &[Named<'_>], side: &str) -> TokenStream {
    let module = ident(&naming::field(side));
    let of = |kind: MethodKind| -> Vec<&Named<'_>> {
        named.iter().filter(|n| n.m.side == side && n.m.kind == kind).collect()
    };
    let requests = of(MethodKind::Request);
    let notifications = of(MethodKind::Notification);
    let ty = |id: TypeId| {
        let name = ident(&p.get(id).name);
        quote! { t::#name }
    };

    // Request enum
    let req_variants = requests.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let t = ty(n.m.params);
        let c = cfg(n.m.stability);
        let d = format!(" `{}`", n.m.name);
        quote! { #[doc = #d] #c #v(#t), }
    });
    let decode_arms = |list: &[&Named<'_>], wrong: &[&Named<'_>], wrong_kind: TokenStream| {
        let ok = list.iter().map(|n| {
            let v = format_ident!("{}", n.variant);
            let c = cfg(n.m.stability);
            let wire = &n.m.name;
            quote! { #c #wire => rpc::decode_raw(method, params).map(Self::#v), }
        });
        // A name that is both a request and a notification of this side is decoded as the kind asked.
        let bad = wrong.iter().filter(|w| !list.iter().any(|n| n.m.name == w.m.name)).map(|n| {
            let c = cfg(n.m.stability);
            let wire = &n.m.name;
            quote! { #c #wire => Err(RpcError::wrong_kind(method, #wrong_kind)), }
        });
        quote! { #(#ok)* #(#bad)* }
    };
    let req_decode = decode_arms(&requests, &notifications, quote! { rpc::MessageKind::Notification });
    let note_decode = decode_arms(&notifications, &requests, quote! { rpc::MessageKind::Request });
    let method_arms = |list: &[&Named<'_>]| {
        list.iter()
            .map(|n| {
                let v = format_ident!("{}", n.variant);
                let c = cfg(n.m.stability);
                let wire = &n.m.name;
                quote! { #c Self::#v(_) => #wire, }
            })
            .collect::<Vec<_>>()
    };
    let params_arms = |list: &[&Named<'_>]| {
        list.iter()
            .map(|n| {
                let v = format_ident!("{}", n.variant);
                let c = cfg(n.m.stability);
                quote! { #c Self::#v(p) => rpc::encode(p).map(Some), }
            })
            .collect::<Vec<_>>()
    };
    let req_method = method_arms(&requests);
    let req_params = params_arms(&requests);
    let note_variants = notifications.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let t = ty(n.m.params);
        let c = cfg(n.m.stability);
        let d = format!(" `{}`", n.m.name);
        quote! { #[doc = #d] #c #v(#t), }
    });
    let note_method = method_arms(&notifications);
    let note_params = params_arms(&notifications);

    // Response enum
    let resp_variants = requests.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let c = cfg(n.m.stability);
        let t = n.m.result.map(ty).map_or_else(|| quote! { serde_json::Value }, |t| quote! { #t });
        let d = format!(" The response to `{}`.", n.m.name);
        quote! { #[doc = #d] #c #v(#t), }
    });
    let resp_decode = requests.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let c = cfg(n.m.stability);
        let wire = &n.m.name;
        quote! { #c #wire => rpc::decode_raw(method, result).map(Self::#v), }
    });
    let resp_method = requests.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let c = cfg(n.m.stability);
        let wire = &n.m.name;
        quote! { #c Self::#v(_) => Some(#wire), }
    });
    let resp_result = requests.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let c = cfg(n.m.stability);
        quote! { #c Self::#v(r) => rpc::encode(r), }
    });

    // Handler trait
    let handler_methods = requests.iter().chain(&notifications).map(|n| {
        let f = ident(&naming::field(&n.handler));
        let c = cfg(n.m.stability);
        let params = ty(n.m.params);
        let wire = &n.m.name;
        let d = docs(p.get(n.m.params).origin.docs.as_deref());
        match n.m.kind {
            MethodKind::Request => {
                let result = n.m.result.map(ty).map_or_else(|| quote! { serde_json::Value }, |t| quote! { #t });
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
    });
    let dispatch_req = requests.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let f = ident(&naming::field(&n.handler));
        let c = cfg(n.m.stability);
        quote! { #c Request::#v(p) => handler.#f(p, cx).await.map(Response::#v), }
    });
    let dispatch_note = notifications.iter().map(|n| {
        let v = format_ident!("{}", n.variant);
        let f = ident(&naming::field(&n.handler));
        let c = cfg(n.m.stability);
        quote! { #c Notification::#v(p) => handler.#f(p, cx).await, }
    });
    let side_doc = format!(" Messages received by the `{side}` side.");
    quote! {
        #[doc = #side_doc]
        pub mod #module {
            use super::*;

            /// A request this side receives, decoded by its method.
            #[derive(Debug, Clone, PartialEq)]
            pub enum Request {
                #(#req_variants)*
                /// An extension method (its name starts with `_`), kept as received.
                Ext {
                    /// The method name, underscore included.
                    method: String,
                    /// The raw params.
                    params: Option<serde_json::Value>,
                },
            }

            impl Request {
                /// Decodes `params` by `method`: -32601 for a method this side does not receive as a
                /// request, -32602 (with the field path) for params that do not decode.
                pub fn decode(method: &str, params: Option<&RawValue>) -> Result<Self, RpcError> {
                    Self::decode_raw(method, rpc::RawParams::Borrowed(params))
                }

                /// [`Request::decode`], the params borrowed or handed over: owned, a large message's
                /// longest string is moved into the value, not copied ([`rpc::decode_raw`]).
                pub fn decode_raw(method: &str, params: rpc::RawParams<'_>) -> Result<Self, RpcError> {
                    match method {
                        #req_decode
                        _ if method.starts_with('_') => Ok(Self::Ext { method: method.to_string(), params: rpc::raw_to_value(params.get()) }),
                        _ => Err(RpcError::method_not_found(method)),
                    }
                }

                /// The wire method name.
                pub fn method(&self) -> &str {
                    match self {
                        #(#req_method)*
                        Self::Ext { method, .. } => method,
                    }
                }

                /// The params as JSON.
                pub fn params(&self) -> Result<Option<serde_json::Value>, RpcError> {
                    match self {
                        #(#req_params)*
                        Self::Ext { params, .. } => Ok(params.clone()),
                    }
                }
            }

            /// A notification this side receives, decoded by its method.
            #[derive(Debug, Clone, PartialEq)]
            pub enum Notification {
                #(#note_variants)*
                /// An extension notification (its name starts with `_`), kept as received.
                Ext {
                    /// The method name, underscore included.
                    method: String,
                    /// The raw params.
                    params: Option<serde_json::Value>,
                },
            }

            impl Notification {
                /// Decodes `params` by `method` (errors as for [`Request::decode`]).
                pub fn decode(method: &str, params: Option<&RawValue>) -> Result<Self, RpcError> {
                    Self::decode_raw(method, rpc::RawParams::Borrowed(params))
                }

                /// [`Notification::decode`], the params borrowed or handed over (see
                /// [`Request::decode_raw`]).
                pub fn decode_raw(method: &str, params: rpc::RawParams<'_>) -> Result<Self, RpcError> {
                    match method {
                        #note_decode
                        _ if method.starts_with('_') => Ok(Self::Ext { method: method.to_string(), params: rpc::raw_to_value(params.get()) }),
                        _ => Err(RpcError::method_not_found(method)),
                    }
                }

                /// The wire method name.
                pub fn method(&self) -> &str {
                    match self {
                        #(#note_method)*
                        Self::Ext { method, .. } => method,
                    }
                }

                /// The params as JSON.
                pub fn params(&self) -> Result<Option<serde_json::Value>, RpcError> {
                    match self {
                        #(#note_params)*
                        Self::Ext { params, .. } => Ok(params.clone()),
                    }
                }
            }

            /// A response this side sends (and its peer decodes, knowing the method it called).
            #[derive(Debug, Clone, PartialEq)]
            pub enum Response {
                #(#resp_variants)*
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
                        #(#resp_decode)*
                        _ if method.starts_with('_') => Ok(Self::Ext(rpc::raw_to_value(result.get()).unwrap_or(serde_json::Value::Null))),
                        _ => Err(RpcError::method_not_found(method)),
                    }
                }

                /// The method this answers (`None` for an extension method).
                pub fn method(&self) -> Option<&'static str> {
                    match self {
                        #(#resp_method)*
                        Self::Ext(_) => None,
                    }
                }

                /// The result as JSON.
                pub fn result(&self) -> Result<serde_json::Value, RpcError> {
                    match self {
                        #(#resp_result)*
                        Self::Ext(v) => Ok(v.clone()),
                    }
                }
            }

            /// What this side does with each message. Every method has a default (requests answer
            /// method-not-found, notifications are ignored), so a method added to the schema never
            /// breaks an implementation. `Cx` is whatever the caller passes along (a connection
            /// handle, a cancellation token, `()`).
            pub trait Handler<Cx: Send + 'static = ()>: Send + Sync {
                #(#handler_methods)*

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
}
