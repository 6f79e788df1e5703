//! ACP over the network: Streamable HTTP and WebSocket, both ends.
//!
//! The profile is the one the TypeScript SDK 2.4.0 implements (`@agentclientprotocol/sdk`,
//! `dist/transports/{server,connection,http-stream,ws-stream,ws-server}.js`), which the official
//! Rust and Python SDKs follow:
//! - `POST /` with a JSON body carries each client message. An `initialize` request without an
//!   `Acp-Connection-Id` header creates a connection: its answer is the `initialize` response, with
//!   the new id in `Acp-Connection-Id`. Later messages carry the header and are accepted with
//!   `202`; their answers, and everything else the agent sends, come on SSE streams.
//! - `GET /` with `Accept: text/event-stream` opens the connection's stream, or with
//!   `Acp-Session-Id` a session's stream: messages whose params name a session (and responses to
//!   requests that did) go to that session's stream, the rest to the connection's.
//! - `DELETE /` with `Acp-Connection-Id` ends the connection.
//! - A WebSocket upgrade on the same path answers `101` with `Acp-Connection-Id`; then one
//!   JSON-RPC message per text frame, both ways, everything on the one socket.
//! - ACP has no batches: a JSON array is answered with one -32600 error with `id: null`.
//!
//! With feature `tls` both ends also speak TLS (rustls): `https://` and `wss://` URLs for the
//! clients (see `net::tls` for the roots trusted and the errors), and `Server::tls` for the
//! server.
//!
//! Both ends plug into the same connection core as stdio (through
//! [`Channels`](crate::jsonrpc::Channels)): same handlers, concurrency, cancellation and limits.

#[cfg(feature = "http")]
pub(crate) mod guard;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
mod link;
#[cfg(feature = "http")]
pub(crate) mod secret;
#[cfg(feature = "http")]
pub mod server;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "http")]
mod wire;
#[cfg(feature = "ws")]
pub mod ws;

#[cfg(feature = "http")]
pub use link::{ClientOptions, TransportHandle, DEFAULT_MAX_MESSAGE_SIZE};
// What both ends read and write of the wire, for the submodules (not part of the API).
#[cfg(feature = "http")]
use wire::{envelope, requires_session_header, Envelope, Kind, NotAMessage, BATCH_ERROR, EVENT_STREAM, JSON};
#[cfg(feature = "ws")]
use wire::{ws_config, PARSE_ERROR};

/// The header that names a connection (created by `initialize`).
pub const HEADER_CONNECTION_ID: &str = "Acp-Connection-Id";
/// The header that names a session on a POST or an SSE `GET`.
pub const HEADER_SESSION_ID: &str = "Acp-Session-Id";
