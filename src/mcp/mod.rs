//! MCP over ACP (feature `mcp`): MCP servers offered and called over the ACP connection itself
//! (`mcp/message`, unstable in both versions), MCP itself through [`rmcp`], the official Rust MCP
//! SDK (re-exported). The binding speaks MCP 2026-07-28 only: stateless, each inner request
//! carrying `_meta` `io.modelcontextprotocol/protocolVersion` and `…/clientCapabilities`, no
//! `initialize`.
//!
//! - The provider (usually the client, or a proxy): [`McpProvider`] registers rmcp servers,
//!   hands out their [`AcpServer`] declarations for `session/new`'s `mcpServers`, and answers
//!   `mcp/message` (from the client handler's `mcp_message`: [`McpProvider::handle_v1`],
//!   [`McpProvider::handle_v2`]; from a proxy hook: [`McpProvider::handle`] on the raw params).
//! - The consumer (an agent, or a proxy): [`McpCaller`] sends `mcp/message` over an
//!   [`AgentContext`](crate::AgentContext) or a [`Connection`](crate::Connection)
//!   ([`McpCaller::request`] for the inner outcome, [`McpCaller::list_tools`] and
//!   [`McpCaller::call_tool`] with rmcp's types) and routes the provider's notifications to
//!   their call ([`McpCaller::route_v1`] from the agent handler's `mcp_message`).
//! - [`acp_servers_v1`], [`acp_servers_v2`], [`acp_servers`]: the `acp` entries of a session's
//!   `mcpServers`; [`rewrite_acp_servers`]: replace them (raw JSON kept) for a successor.
//! - `bridge` (features `mcp` and `http`): the ACP servers re-exported as Streamable HTTP MCP
//!   on loopback for an agent that speaks only HTTP MCP (`bridge::HttpBridge`), and the
//!   `session/new` rewrite for its successor; [`McpHttpProxy`] (same features) puts it in a chain
//!   as a proxy, in front of such an agent. (No stdio MCP re-export.)
//!
//! One module per job: `wire` (the envelope, the outcome carrier, the metadata, the error
//! codes), `serve` (one request on an rmcp server), `provider`, `caller`, `servers` (the
//! declarations), `bridge`, `events` (the bridge's bounded SSE queue), `http_proxy`.
//!
//! ```no_run
//! use acp_rpc::mcp::{rmcp, McpProvider};
//! use acp_rpc::mcp::rmcp::handler::server::wrapper::Parameters;
//! use acp_rpc::mcp::rmcp::{schemars, tool, tool_router};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct EchoArgs { text: String }
//!
//! #[derive(Clone)]
//! struct Tools;
//!
//! #[tool_router(server_handler)]
//! impl Tools {
//!     #[tool(description = "Returns its text")]
//!     fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
//!         text
//!     }
//! }
//!
//! let provider = McpProvider::new();
//! let declared = provider.register("tools", Tools);
//! // new_session.mcp_servers.push(declared.v1()); and in the client handler:
//! // async fn mcp_message(&self, p, cx) { self.provider.handle_v1(p, &cx).await }
//! ```

#[cfg(feature = "http")]
pub mod bridge;
mod caller;
#[cfg(feature = "http")]
mod events;
#[cfg(feature = "http")]
mod http_proxy;
mod provider;
mod serve;
mod servers;
mod wire;

pub use caller::{CallOptions, McpCallError, McpCaller, McpNotification, McpPeer};
#[cfg(feature = "http")]
pub use http_proxy::McpHttpProxy;
pub use provider::{McpProvider, DEFAULT_MAX_ACTIVE};
pub use servers::{acp_servers, acp_servers_v1, acp_servers_v2, http_entry, rewrite_acp_servers, AcpServer};
pub use wire::{
    code, EnvelopeMeta, McpAnswer, Outcome, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, METHOD,
    PROTOCOL_VERSION, UNSUPPORTED_PROTOCOL_VERSION,
};

/// The rmcp crate (the official Rust MCP SDK) this module is built on: write the MCP servers you
/// offer ([`McpProvider::register`]) and read the answers of those you call with its types and
/// macros, through this path, so that your rmcp is the version the runtime uses.
pub use rmcp;
