//! The proxy role (feature `unstable`): a component between a client and an agent in a chain that
//! a conductor runs (`proxy/initialize`, `proxy/successor`), in both protocol versions.
//!
//! A chain is editor ↔ conductor ↔ proxy … ↔ agent. The conductor runs each component on its
//! stdio and is the proxy's only peer: plain messages from it come from the proxy's
//! predecessor (the client side), and what the proxy sends its successor (the agent side)
//! travels wrapped in `proxy/successor` envelopes, as do the successor's messages to the proxy.
//! This module hides the envelopes: a proxy is a [`ProxyHandler`] with one hook per flow
//! (requests and notifications from the client, and from the agent; and the `initialize` that
//! `proxy/initialize` carries), each passing its message on unchanged by default, so that
//! [`PassThrough`] is a complete proxy and a useful one overrides a hook or two.
//!
//! - [`serve_proxy_stdio`], [`serve_proxy`], [`serve_proxy_over`]: a proxy on its connection;
//! - [`ProxyHandler`], [`PassThrough`]: the hooks (observe, change, answer locally, drop,
//!   inject);
//! - [`Message`] ([`Request`], [`Notification`]) and [`Response`]: what the hooks get, raw JSON
//!   with typed access on demand (`decode::<v1::methods::SessionUpdate>()`, `edit`, `set`) in
//!   the negotiated version's generated types; what no hook changed is forwarded byte for byte;
//! - [`ProxyContext`]: the two sides ([`ClientSide`], [`AgentSide`]) to pass messages on to or
//!   to send new ones to (typed, bounded by the generated `ToClient` / `ToAgent` markers, or
//!   raw), the negotiated version, the request's cancellation.
//!
//! What the runtime keeps for the proxy (rule ids in [`crate::rules`]):
//! - `proxy/initialize` is answered by forwarding `initialize` to the successor, with the
//!   successor's answer and `protocolVersion` (`proxy.forward-initialize`,
//!   `proxy.same-version`); nothing else is served before it (`init.first`, -32600), and a
//!   plain `initialize` is refused (-32600: a proxy runs under a conductor);
//! - ids are per hop: a forwarded request gets an id of ours, and its answer goes back under
//!   the id it came with;
//! - cancellation: a cancelled forwarded request (`$/cancel_request` from the conductor) is
//!   cancelled downstream with our own `$/cancel_request`, and the successor's answer (its
//!   -32800, or its result) is the answer; `session/cancel` passes through like any
//!   notification;
//! - order: notifications are passed on one at a time in the order they came; a request goes
//!   on after the notifications that came before it, and a forwarded answer goes back after the
//!   notifications the successor sent before it and before those it sent after it (a v1
//!   `session/prompt` answer after its updates, a v2 one before its `running` update);
//! - a malformed envelope is answered -32602 naming the field (`proxy.successor-params`), a
//!   message that never crosses a hop inside one (`proxy/successor`, `proxy/initialize`,
//!   `$/cancel_request`) -32600; the envelope's `_meta` belongs to its hop and is not carried.
//!
//! ```no_run
//! use acp_rpc::proxy::{serve_proxy_stdio, PassThrough};
//! # async fn run() -> std::io::Result<()> {
//! serve_proxy_stdio(PassThrough).await
//! # }
//! ```

mod context;
mod handler;
mod merge;
mod message;
mod serve;
mod service;

pub use context::{AgentSide, ClientSide, ProxyContext};
pub use handler::{PassThrough, ProxyHandler};
pub use message::{Marker, Message, Notification, NotificationKind, Request, RequestKind, Response, VersionOf};
pub use serve::{proxy_config, serve_proxy, serve_proxy_over, serve_proxy_stdio};
