//! The client's role: connecting a client handler to an agent, v1 and v2 in one binary. The
//! client asks for a protocol version in `initialize` ([`ClientConnection::negotiate`] falls back
//! to a lower version the agent answers) and decodes the agent's requests and notifications with
//! the version agreed.
//!
//! - [`connect`], [`connect_over`], [`spawn_agent`], [`spawn_agent_with`]: a [`ClientHandler`]
//!   on a connection (a spawned agent runs in a process group of its own, ended with it);
//! - [`ClientConnection`]: `negotiate` (or the strict `initialize_v1` / `initialize_v2`),
//!   `authenticate` when the agent asks for it ([`Error::AuthRequired`](crate::Error)), typed
//!   requests, `session/cancel`;
//! - [`v1::Session`], [`v2::Session`] and [`TurnUpdates`]: a handle per session, and each
//!   prompt's turn as its typed updates in order, then its outcome ([`TurnEnd`] in v2);
//! - a v2 session's state ([`v2::Session::state`]): the client's view of the session (messages,
//!   tool calls, plans, usage, …) kept by the rules the schema's `x-state` annotations give,
//!   generated as [`acp_types::v2::state::SessionState`];
//! - [`ClientContext`]: what each handler gets: calls to the agent, and cancellation.
//!
//! The runtime keeps the protocol's rules for the client, each named by its id in
//! [`crate::rules`]: `init.first` (the agent's requests before `initialize` are refused -32600)
//! and `turn.cancel-permission` (cancelling a session answers the agent's pending permission
//! requests for it `cancelled`).

mod connect;
mod connection;
mod context;
mod handler;
mod negotiate;
mod routes;
mod service;
mod session;
mod states;
mod turn_end;

pub use connect::{connect, connect_over, spawn_agent, spawn_agent_with};
pub use connection::ClientConnection;
pub use context::ClientContext;
pub use handler::ClientHandler;
pub use negotiate::{Initialized, Offer};
pub use session::{v1, v2, TurnUpdates};
pub use turn_end::TurnEnd;
