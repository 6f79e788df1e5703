//! MCP over ACP (feature `mcp`): MCP servers offered and called over the ACP connection
//! (`mcp/message`).
