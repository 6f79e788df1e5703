//! `acp-rpc`: the runtime half of the toolkit. JSON-RPC 2.0 over newline-delimited JSON on any
//! tokio `AsyncRead`/`AsyncWrite`, with the protocol's types, methods and handler traits generated
//! in [`acp_types`].
//!
//! - [`framing`]: linear-time line framing with a maximum message size;
//! - [`connection`]: correlation, concurrent dispatch, cancellation, faults;
//! - [`agent`] and [`client`]: the two ends, v1 and v2 in one process, with version negotiation;
//! - [`spawn`]: starting an agent process and ending it with everything it started;
//! - [`turn`]: the v2 prompt turn (running, idle, cancellation), kept by the runtime at both ends.
//!
//! The `acp` command (`check`, `tap`) is the `acp-tool` package, beside this one.

pub mod agent;
pub mod client;
pub mod connection;
pub mod framing;
pub mod session;
pub mod spawn;
pub mod turn;

pub use connection::{Config, Connection, Error};
pub use session::Context;

pub use acp_types as types;
