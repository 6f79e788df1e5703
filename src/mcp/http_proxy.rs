//! [`McpHttpProxy`]: a proxy that puts the HTTP bridge in a chain, for an agent that speaks only
//! HTTP MCP behind it (features `mcp` and `http`). What the official polyfill
//! (`agent-client-protocol-polyfill` 5.0.0, `McpOverAcpPolyfill::http()`) does, as a
//! [`ProxyHandler`]: the agent's `initialize` answer says `acp` MCP servers are taken; each
//! session setup request's `{"type": "acp"}` entries become the bridge's `{"type": "http"}`
//! ones (everything else forwarded as it came); the bridge calls the servers on the proxy's
//! client side; the client's `mcp/message` notifications for those calls are routed to them
//! and go no further.

use super::bridge::HttpBridge;
use super::caller::McpCaller;
use super::servers::acp_servers;
use crate::proxy::{Notification, ProxyContext, ProxyHandler, Request, Response};
use acp_types::support::rpc::RpcError;
use acp_types::MethodName;
use serde_json::{json, Value};
use tokio::sync::OnceCell;

/// Whether `method` is a session setup request, whose `mcpServers` are rewritten (v1's; v2 has
/// the same ones, less `session/load`).
fn is_setup(method: &str) -> bool {
    use acp_types::MethodName::{SessionFork, SessionLoad, SessionNew, SessionResume};
    matches!(MethodName::of(method), Some(SessionNew | SessionLoad | SessionResume | SessionFork))
}

/// The HTTP bridge as a proxy (see the module). One per proxy process: its bridge listens from
/// the first session that offers an `acp` server until the proxy ends.
#[derive(Debug, Default)]
pub struct McpHttpProxy {
    caller: McpCaller,
    bridge: OnceCell<HttpBridge>,
}

impl McpHttpProxy {
    /// A proxy whose calls declare empty MCP client capabilities.
    pub fn new() -> Self {
        McpHttpProxy::default()
    }

    /// A proxy whose bridge calls through `caller` (its capabilities and client info).
    pub fn with_caller(caller: McpCaller) -> Self {
        McpHttpProxy { caller, bridge: OnceCell::new() }
    }
}

fn internal(why: impl std::fmt::Display) -> RpcError {
    RpcError::internal(format!("MCP HTTP bridge: {why}"))
}

fn raw(value: &Value) -> Result<Box<serde_json::value::RawValue>, RpcError> {
    serde_json::value::to_raw_value(value).map_err(internal)
}

impl ProxyHandler for McpHttpProxy {
    /// The successor's answer, saying that `acp` MCP servers are taken (v1
    /// `agentCapabilities.mcpCapabilities.acp`, v2 `capabilities.session.mcp.acp`).
    async fn initialize(&self, request: Request, cx: ProxyContext) -> Result<Response, RpcError> {
        let answer = cx.agent().forward_request(request).await?;
        let mut result: Value = serde_json::from_str(answer.result().get()).map_err(internal)?;
        let Some(object) = result.as_object_mut() else {
            return Ok(answer);
        };
        if object.contains_key("agentCapabilities") || object.get("protocolVersion") == Some(&json!(1)) {
            let capabilities = object.entry("agentCapabilities").or_insert_with(|| json!({}));
            if let Some(capabilities) = capabilities.as_object_mut() {
                let mcp = capabilities.entry("mcpCapabilities").or_insert_with(|| json!({}));
                if let Some(mcp) = mcp.as_object_mut() {
                    mcp.insert("acp".into(), json!(true));
                }
            }
        } else if let Some(session) = object.get_mut("capabilities").and_then(|c| c.get_mut("session")) {
            // v2: only where the agent serves sessions at all.
            if let Some(session) = session.as_object_mut() {
                let mcp = session.entry("mcp").or_insert_with(|| json!({}));
                if let Some(mcp) = mcp.as_object_mut() {
                    mcp.insert("acp".into(), json!({}));
                }
            }
        }
        Ok(Response::new(raw(&result)?, answer.version()))
    }

    async fn client_request(&self, mut request: Request, cx: ProxyContext) -> Result<Response, RpcError> {
        if is_setup(request.method()) {
            if let Some(params) = request.params() {
                let mut params: Value = serde_json::from_str(params.get()).map_err(internal)?;
                if !acp_servers(&params).is_empty() {
                    let conn = cx.connection().clone();
                    let bridge = self
                        .bridge
                        .get_or_try_init(|| HttpBridge::start(self.caller.clone(), conn))
                        .await
                        .map_err(internal)?;
                    bridge.rewrite(&mut params);
                    request.set_raw(Some(raw(&params)?));
                }
            }
        }
        cx.agent().forward_request(request).await
    }

    async fn client_notification(&self, notification: Notification, cx: ProxyContext) -> Result<(), RpcError> {
        if matches!(MethodName::of(notification.method()), Some(MethodName::McpMessage)) {
            let params: Option<Value> = notification.params().and_then(|p| serde_json::from_str(p.get()).ok());
            if params.is_some_and(|p| self.caller.route(&p)) {
                return Ok(());
            }
        }
        cx.agent().forward_notification(notification).await
    }
}
