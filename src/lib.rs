//! `acp-rpc`: the runtime half of the toolkit. JSON-RPC 2.0 over newline-delimited JSON on any
//! tokio `AsyncRead`/`AsyncWrite`, with the protocol's types, methods and handler traits generated
//! in [`acp_types`].
//!
//! - [`framing`]: linear-time line framing with a maximum message size;
//! - [`connection`]: correlation, concurrent dispatch, cancellation, faults;
//! - [`agent`] and [`client`]: the two ends, v1 and v2 in one process, with version negotiation;
//! - [`sessions`]: the client's typed API: `initialize_v1`/`initialize_v2`, a session handle per
//!   `session/new`, and each prompt's turn as a stream of typed updates, then its outcome;
//! - [`turn`]: the v2 prompt turn (running, idle, cancellation), kept by the runtime at both ends.
//!
//! The `acp` command (`check`, `tap`) is the `acp-tool` package, beside this one.

pub mod agent;
pub mod client;
pub mod connection;
pub mod framing;
pub mod session;
pub mod sessions;
pub mod turn;

pub use agent::{V1, V2};
pub use connection::{Config, Connection, Error};
pub use session::Context;

pub use acp_types as types;
