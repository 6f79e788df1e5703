//! `acp-rpc`: the runtime half of the toolkit (JSON-RPC framing, correlation and dispatch over the
//! generated [`acp_types`]). For now it only re-exports the generated types; the connection layer
//! arrives with the runtime issue.

pub use acp_types as types;
