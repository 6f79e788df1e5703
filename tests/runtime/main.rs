//! The tests of the runtime (`acp-rpc`), one binary: each module is one former `tests/*.rs` file
//! (a module whose feature is off compiles to nothing). `tests/net_server.rs` stays a binary of its
//! own: it measures the memory of its whole process.

use acp_testkit as common;
/// The network tests' agent, shared with `tests/net_server.rs`.
#[cfg(all(feature = "ws", feature = "tls"))]
mod echo;

mod agent_helpers;
mod client_sessions;
mod conductor;
mod examples;
mod hostile;
mod mcp;
mod mock_agent;
mod mock_client;
mod net_client;
mod net_tls;
mod production_agents;
mod proxy;
mod review_findings;
mod runtime;
mod runtime_turns;
mod runtime_unknown;
mod single_version;
mod spawn;
