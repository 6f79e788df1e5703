//! The consumer side: calling a server that a peer declared with `{"type": "acp"}`. Each call is
//! one `mcp/message` request with the MCP 2026-07-28 metadata added; its outcome is the inner
//! result or error; the provider's `mcp/message` notifications for it are routed to the call
//! while it is active. Typed conveniences speak rmcp's model types. Works on an agent's
//! [`AgentContext`] (the request's cancellation cancels the call) and on a raw [`Connection`]
//! (a proxy calling toward its predecessor).

use super::wire::{with_meta, Envelope, McpAnswer, Outcome, METHOD};
use crate::agent::AgentContext;
use crate::error::{Error, Misuse};
use crate::jsonrpc::Connection;
use crate::sync::lock;
use acp_types::{v1, v2};
use rmcp::model::ConstString;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What a call goes over: a connection, and the cancellation that cancels the call (if any).
pub trait McpPeer {
    /// The connection the `mcp/message` request goes on.
    fn mcp_connection(&self) -> &Connection;
    /// Cancels the call when it fires (`$/cancel_request` is sent, the call fails with
    /// [`Error::Cancelled`]).
    fn mcp_cancellation(&self) -> Option<CancellationToken>;
}

impl McpPeer for Connection {
    fn mcp_connection(&self) -> &Connection {
        self
    }

    fn mcp_cancellation(&self) -> Option<CancellationToken> {
        None
    }
}

impl McpPeer for AgentContext {
    fn mcp_connection(&self) -> &Connection {
        self.connection()
    }

    /// The request's (or its session's) cancellation.
    fn mcp_cancellation(&self) -> Option<CancellationToken> {
        Some(self.cancellation().clone())
    }
}

/// An inner MCP notification the provider sent for an active call (progress, subscription
/// events, …).
#[derive(Debug, Clone, PartialEq)]
pub struct McpNotification {
    /// The inner MCP method (`notifications/progress`, …).
    pub method: String,
    /// The inner params, as sent.
    pub params: Option<Map<String, Value>>,
    /// The `mcp/message` envelope's own `_meta` (ACP metadata of the hop), when it had one.
    pub meta: Option<Map<String, Value>>,
}

/// The options of one call.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Cancels the call when it fires (besides the peer's own cancellation).
    pub cancel: Option<CancellationToken>,
    /// Where the provider's notifications for this call go (dropped without one).
    pub notifications: Option<mpsc::UnboundedSender<McpNotification>>,
    /// The inner request id (a fresh `mcp-request:UUID` without one).
    pub request_id: Option<String>,
    /// The `mcp/message` envelope's own `_meta` (ACP metadata of this hop; the inner MCP
    /// `_meta` goes in the params). As the TypeScript SDK's `McpOverAcpCaller` option `_meta`.
    pub meta: Option<Map<String, Value>>,
}

impl CallOptions {
    /// No options.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// Cancelled by `cancel`.
    pub fn cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// The call's notifications sent to `to`.
    pub fn notifications(mut self, to: mpsc::UnboundedSender<McpNotification>) -> Self {
        self.notifications = Some(to);
        self
    }

    /// The inner request id.
    pub fn request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// The envelope's `_meta`.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// Why a typed call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum McpCallError {
    /// The ACP request failed: a binding error of the provider (-33001 unknown server, -33000,
    /// -33002, -32602), cancellation, a closed connection.
    Acp(Error),
    /// The MCP server answered with an error (inner).
    Mcp(rmcp::ErrorData),
    /// The MCP result does not decode as the method's result type.
    Decode(String),
}

impl std::fmt::Display for McpCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpCallError::Acp(e) => write!(f, "mcp/message failed: {e}"),
            McpCallError::Mcp(e) => write!(f, "the MCP server answered error {}: {}", e.code.0, e.message),
            McpCallError::Decode(why) => write!(f, "the MCP result does not decode: {why}"),
        }
    }
}

impl std::error::Error for McpCallError {}

impl From<Error> for McpCallError {
    fn from(e: Error) -> Self {
        McpCallError::Acp(e)
    }
}

/// Calls servers declared with `{"type": "acp"}`. Cheap to clone; keep one per agent (or
/// proxy) and pass the `mcp/message` notifications its handler receives to
/// [`McpCaller::route`] (or `route_v1` / `route_v2`), so that they reach their call. A proxy
/// calls its predecessor's servers on its one connection ([`ProxyContext::connection`]: plain
/// messages go to the predecessor) and routes from its `client_notification` hook, as
/// `McpHttpProxy` does.
///
/// [`ProxyContext::connection`]: crate::proxy::ProxyContext::connection
#[derive(Clone)]
pub struct McpCaller {
    inner: Arc<Inner>,
}

type Key = (String, String);

struct Inner {
    routes: Mutex<HashMap<Key, Option<mpsc::UnboundedSender<McpNotification>>>>,
    capabilities: Value,
    client_info: Option<Value>,
}

impl Default for McpCaller {
    fn default() -> Self {
        McpCaller::new()
    }
}

impl std::fmt::Debug for McpCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpCaller").field("active", &lock(&self.inner.routes).len()).finish_non_exhaustive()
    }
}

impl McpCaller {
    /// A caller that declares empty MCP client capabilities and no client info.
    pub fn new() -> Self {
        McpCaller::with(json!({}), None)
    }

    /// A caller that sends `capabilities` (`io.modelcontextprotocol/clientCapabilities`, an
    /// object) and `client_info` (`io.modelcontextprotocol/clientInfo`, e.g. `{"name", "version"}`)
    /// with each request.
    pub fn with(capabilities: Value, client_info: Option<Value>) -> Self {
        let capabilities = if capabilities.is_object() { capabilities } else { json!({}) };
        McpCaller { inner: Arc::new(Inner { routes: Mutex::default(), capabilities, client_info }) }
    }

    /// One MCP request to the server `server_id` over `peer`; the inner outcome. The required
    /// `_meta` is added to `params` unless the caller put it there. Outer failures (binding
    /// errors, cancellation, a closed connection) are the error.
    ///
    /// Not from a notification handler: the call waits for the notifications received before
    /// its answer to be handled.
    pub async fn request(
        &self,
        peer: &impl McpPeer,
        server_id: &str,
        method: &str,
        params: Option<Map<String, Value>>,
    ) -> Result<Outcome, Error> {
        self.request_with(peer, server_id, method, params, CallOptions::default()).await
    }

    /// [`McpCaller::request`] with options (cancellation, the notifications' destination, the
    /// inner request id, the envelope's `_meta`).
    pub async fn request_with(
        &self,
        peer: &impl McpPeer,
        server_id: &str,
        method: &str,
        params: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<Outcome, Error> {
        Ok(self.request_answer(peer, server_id, method, params, options).await?.outcome)
    }

    /// [`McpCaller::request_with`], answered with the whole carrier: the outcome and the
    /// carrier's `_meta` (ACP metadata the provider put on its response).
    pub async fn request_answer(
        &self,
        peer: &impl McpPeer,
        server_id: &str,
        method: &str,
        params: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<McpAnswer, Error> {
        let request_id = options.request_id.unwrap_or_else(|| format!("mcp-request:{}", uuid::Uuid::new_v4()));
        let key = (server_id.to_string(), request_id.clone());
        {
            let mut routes = lock(&self.inner.routes);
            if routes.contains_key(&key) {
                return Err(Misuse::Params(format!("MCP request {request_id} is already active on {server_id}")).into());
            }
            routes.insert(key.clone(), options.notifications);
        }
        let _route = Route { inner: &self.inner, key };
        let params = with_meta(params, &self.inner.capabilities, self.inner.client_info.as_ref());
        let envelope = Envelope {
            server_id: server_id.into(),
            request_id,
            method: method.into(),
            params: Some(params),
            meta: options.meta,
        };
        let raw = acp_types::support::json::to_raw_value(&envelope.to_value())
            .map_err(|e| Misuse::Params(format!("cannot encode the params of {METHOD}: {e}")))?;
        let (cancel, _watcher) = match (peer.mcp_cancellation(), options.cancel) {
            (Some(a), Some(b)) => {
                let both = either(a, b);
                (Some(both.clone()), Some(both.drop_guard()))
            }
            (a, b) => (a.or(b), None),
        };
        let conn = peer.mcp_connection();
        let answer = conn.request_raw_cancellable(METHOD, Some(&raw), cancel).await?;
        // The provider's notifications for this call came before its answer: route them first.
        conn.sync_notifications().await;
        let carrier: Value = serde_json::from_str(answer.get())
            .map_err(|e| Error::Protocol(format!("the {METHOD} answer is not JSON: {e}")))?;
        McpAnswer::from_carrier(&carrier)
            .ok_or_else(|| Error::Protocol(format!("the {METHOD} answer carries neither result nor error: {carrier}")))
    }

    /// Routes one `mcp/message` notification (its raw params) to the active call it names;
    /// false when none is active (it is dropped, as the binding says).
    pub fn route(&self, params: &Value) -> bool {
        let raw = match serde_json::value::to_raw_value(params) {
            Ok(raw) => raw,
            Err(_) => return false,
        };
        let Ok(envelope) = Envelope::parse(Some(&raw)) else {
            tracing::debug!("acp: a malformed {METHOD} notification dropped");
            return false;
        };
        let routes = lock(&self.inner.routes);
        match routes.get(&(envelope.server_id, envelope.request_id)) {
            Some(to) => {
                if let Some(to) = to {
                    let _ = to.send(McpNotification {
                        method: envelope.method,
                        params: envelope.params,
                        meta: envelope.meta,
                    });
                }
                true
            }
            None => false,
        }
    }

    /// [`McpCaller::route`] for a v1 agent handler's `mcp_message` notification.
    pub fn route_v1(&self, params: &v1::MessageMcpNotification) -> bool {
        serde_json::to_value(params).is_ok_and(|v| self.route(&v))
    }

    /// [`McpCaller::route`] for a v2 agent handler's `mcp_message` notification.
    pub fn route_v2(&self, params: &v2::MessageMcpNotification) -> bool {
        serde_json::to_value(params).is_ok_and(|v| self.route(&v))
    }

    /// `tools/list` (the first page).
    pub async fn list_tools(
        &self,
        peer: &impl McpPeer,
        server_id: &str,
    ) -> Result<rmcp::model::ListToolsResult, McpCallError> {
        typed(self.request(peer, server_id, <rmcp::model::ListToolsRequestMethod as ConstString>::VALUE, None).await?)
    }

    /// `tools/call` of the tool `name` with `arguments`.
    pub async fn call_tool(
        &self,
        peer: &impl McpPeer,
        server_id: &str,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<rmcp::model::CallToolResult, McpCallError> {
        let mut params = Map::new();
        params.insert("name".into(), name.into());
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        typed(
            self.request(peer, server_id, <rmcp::model::CallToolRequestMethod as ConstString>::VALUE, Some(params))
                .await?,
        )
    }
}

/// The outcome as `T`, or the inner error as rmcp's.
fn typed<T: serde::de::DeserializeOwned>(outcome: Outcome) -> Result<T, McpCallError> {
    match outcome {
        Outcome::Result(result) => serde_json::from_value(result).map_err(|e| McpCallError::Decode(e.to_string())),
        Outcome::Error(error) => Err(serde_json::from_value(error)
            .map(McpCallError::Mcp)
            .unwrap_or_else(|e| McpCallError::Decode(e.to_string()))),
    }
}

/// A token cancelled when either `a` or `b` is; its watcher ends when it is cancelled (the
/// caller drops a guard of it when the call is over).
fn either(a: CancellationToken, b: CancellationToken) -> CancellationToken {
    let both = CancellationToken::new();
    let fire = both.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = a.cancelled() => fire.cancel(),
            _ = b.cancelled() => fire.cancel(),
            _ = fire.cancelled() => {}
        }
    });
    both
}

/// A call's route, removed when the call ends (however it ends).
struct Route<'a> {
    inner: &'a Inner,
    key: Key,
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        lock(&self.inner.routes).remove(&self.key);
    }
}
