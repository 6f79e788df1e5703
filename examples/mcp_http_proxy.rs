//! A proxy that re-exports the MCP servers offered over ACP as Streamable HTTP MCP on loopback,
//! for an agent behind it that speaks only HTTP MCP (`acp_rpc::mcp::McpHttpProxy`): the agent's
//! `initialize` answer gains `acp` MCP servers, each `{"type": "acp"}` entry of a session setup
//! request reaches the agent as `{"type": "http", "url", "headers"}`, and each MCP request the
//! agent POSTs there goes to the client as `mcp/message`.
//!
//! Run by a conductor: `agent-client-protocol-conductor agent "mcp_http_proxy" "AGENT"`.

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // stdout is the protocol's: logs go to stderr.
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).init();
    acp_rpc::proxy::serve_proxy_stdio(acp_rpc::mcp::McpHttpProxy::new()).await
}
