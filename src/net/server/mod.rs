//! The agent's side of the network profile: one listener serving an agent to many clients over
//! Streamable HTTP (POST + SSE) and, with feature `ws`, WebSocket, as the TypeScript SDK 2.4.0
//! `AcpServer` does (see [`crate::net`] for the profile).
//!
//! Each ACP connection runs the agent through [`serve_over`](crate::agent::serve_over) on
//! [`Channels`](crate::jsonrpc::Channels): the same connection core as stdio. The modules:
//! [`Limits`] and [`Auth`]; `listener` ([`Server`] and its shutdown, [`ServerHandle`]); `shared`
//! (what every request of one server shares); `conn` (one connection's streams and routing),
//! `mailbox` (one stream's queue), `registry` (connections by id), `body` (bodies in and out),
//! `initialize` (which message opens a connection), `routes` (the HTTP methods), `cors` (what an
//! allowed web page is told), `ws` (WebSocket sessions).
//!
//! Secure by default: a request with an `Origin` header (a web page's) is refused unless
//! [`Server::allow_origins`] lists it, one whose `Host` is not a name of the listener (DNS
//! rebinding) is refused unless [`Server::allow_hosts`] lists it, and [`Server::serve`] refuses a
//! listener beyond loopback without [`Server::auth`] (see SECURITY.md for the threat model).
//!
//! ```no_run
//! # async fn run<A: acp_rpc::agent::AgentHandler>(agent: A) -> std::io::Result<()> {
//! use acp_rpc::net::server::{Auth, Server};
//! use std::sync::Arc;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! let server = Server::new(Arc::new(agent), acp_rpc::types::Version::ALL).auth(Auth::bearer("s3cret"));
//! let handle = server.handle();
//! tokio::spawn(async move { tokio::signal::ctrl_c().await.ok(); handle.shutdown().await });
//! server.serve(listener).await
//! # }
//! ```

mod auth;
mod body;
mod conn;
mod cors;
mod initialize;
mod limits;
mod listener;
mod mailbox;
mod registry;
mod routes;
mod shared;
#[cfg(feature = "ws")]
mod ws;

pub use auth::{Auth, Rejection};
pub use limits::Limits;
pub use listener::{Server, ServerHandle};
