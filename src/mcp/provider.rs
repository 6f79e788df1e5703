//! The provider side: MCP servers (rmcp services) registered under a name, declared in
//! `session/new` as `{"type": "acp", "name", "serverId"}`, and the `mcp/message` requests for
//! them answered: the envelope and the MCP 2026-07-28 metadata checked, the request routed by
//! `serverId`, its notifications sent as `mcp/message` notifications while it is active, its
//! outcome returned in the response carrier. The binding's rules (duplicate, limit, unknown
//! server, cancellation, backend failure) are those of the TypeScript SDK 2.4.0's
//! `McpOverAcpProvider` (`dist/mcp/core.js`).

use super::serve::{serve_one, Note, Shared};
use super::servers::AcpServer;
use super::wire::{binding_error, check_meta, code, Envelope, METHOD};
use crate::client::ClientContext;
use crate::jsonrpc::Connection;
use crate::sync::lock;
use acp_types::support::rpc::RpcError;
use acp_types::{v1, v2};
use rmcp::service::ServiceExt as _;
use rmcp::RoleServer;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How many requests one server serves at a time unless told otherwise (the TypeScript SDK's
/// default); one more is refused with -33000.
pub const DEFAULT_MAX_ACTIVE: usize = 64;

/// The MCP servers one component offers over its ACP connection, and the answer to the peer's
/// `mcp/message` requests for them. Cheap to clone (one registry shared by the clones): keep one
/// in the client handler (or the proxy) and call [`McpProvider::handle_v1`] /
/// [`McpProvider::handle_v2`] from its `mcp_message` method, or [`McpProvider::handle`] with the
/// raw params.
#[derive(Clone)]
pub struct McpProvider {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Mutex<HashMap<String, Entry>>,
    max_active: usize,
}

struct Entry {
    server: Shared,
    /// The inner request ids being served.
    active: Arc<Mutex<HashSet<String>>>,
    /// Cancelled when the server is unregistered: its active requests end with -32800.
    gone: CancellationToken,
}

impl Default for McpProvider {
    fn default() -> Self {
        McpProvider::new()
    }
}

impl std::fmt::Debug for McpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let servers: Vec<String> = lock(&self.inner.servers).keys().cloned().collect();
        f.debug_struct("McpProvider").field("servers", &servers).finish_non_exhaustive()
    }
}

impl McpProvider {
    /// A provider with no servers, each to serve at most [`DEFAULT_MAX_ACTIVE`] requests at once.
    pub fn new() -> Self {
        McpProvider::with_max_active(DEFAULT_MAX_ACTIVE)
    }

    /// A provider whose servers each serve at most `max_active` requests at once (at least 1).
    pub fn with_max_active(max_active: usize) -> Self {
        McpProvider { inner: Arc::new(Inner { servers: Mutex::default(), max_active: max_active.max(1) }) }
    }

    /// Registers an MCP server (any rmcp server: a `ServerHandler`, e.g. written with
    /// `#[tool_router(server_handler)]`) under `name`, ready at once; returns its declaration.
    /// One instance serves every request to it, concurrently.
    pub fn register<S: rmcp::Service<RoleServer>>(&self, name: impl Into<String>, server: S) -> AcpServer {
        let name = name.into();
        let server_id = format!("{name}:{}", uuid::Uuid::new_v4());
        let entry =
            Entry { server: Shared(Arc::from(server.into_dyn())), active: Arc::default(), gone: Default::default() };
        lock(&self.inner.servers).insert(server_id.clone(), entry);
        AcpServer { name, server_id }
    }

    /// Removes a server: later requests for it fail with -33001, active ones end with -32800.
    /// False when there was none by that id.
    pub fn unregister(&self, server_id: &str) -> bool {
        match lock(&self.inner.servers).remove(server_id) {
            Some(entry) => {
                entry.gone.cancel();
                true
            }
            None => false,
        }
    }

    /// Answers one `mcp/message` request from its raw params, sending the server's notifications
    /// on `conn` while it runs; `cancel` is the request's cancellation. The result is the
    /// response carrier (`{"result": …}` or `{"error": …}`); binding failures are the outer
    /// error: -32602 (malformed envelope, duplicate active `(serverId, requestId)`), -33001
    /// (unknown server), -33000 (too many active), -32800 (cancelled), -33002 (the server
    /// failed). Missing or wrong MCP metadata is an inner error (-32602, -32022).
    ///
    /// The envelope's own `_meta` reaches the server in its request's extensions, as
    /// [`EnvelopeMeta`](super::EnvelopeMeta) (`context.extensions.get::<EnvelopeMeta>()` in a
    /// tool). rmcp gives a server no place to set the carrier's `_meta`, so these carriers have
    /// none; code that answers `mcp/message` itself sets one with
    /// [`McpAnswer::to_carrier`](super::McpAnswer::to_carrier).
    pub async fn handle(
        &self,
        conn: &Connection,
        params: Option<&RawValue>,
        cancel: &CancellationToken,
    ) -> Result<Value, RpcError> {
        self.handle_with(params, cancel, |note| async move { conn.notify_raw(METHOD, Some(&note)).await }).await
    }

    /// [`McpProvider::handle`], each notification's params handed to `notify` (which sends
    /// them as an `mcp/message` notification toward the caller): for a proxy that provides
    /// servers to its successor, whose notifications go wrapped in `proxy/successor`
    /// (`|note| async move { cx.agent().notify_raw(METHOD, Some(&note)).await }`).
    pub async fn handle_with<F, Fut>(
        &self,
        params: Option<&RawValue>,
        cancel: &CancellationToken,
        notify: F,
    ) -> Result<Value, RpcError>
    where
        F: Fn(Box<RawValue>) -> Fut,
        Fut: std::future::Future<Output = Result<(), crate::Error>>,
    {
        let envelope = Envelope::parse(params)?;
        let (server, active, gone) = {
            let servers = lock(&self.inner.servers);
            let Some(entry) = servers.get(&envelope.server_id) else {
                return Err(binding_error(
                    code::UNKNOWN_SERVER,
                    "MCP server registration unavailable",
                    json!({ "serverId": envelope.server_id }),
                ));
            };
            (entry.server.clone(), entry.active.clone(), entry.gone.clone())
        };
        let _active = {
            let mut requests = lock(&active);
            if requests.contains(&envelope.request_id) {
                return Err(binding_error(
                    code::INVALID_PARAMS,
                    "duplicate active MCP request ID",
                    json!({ "serverId": envelope.server_id, "requestId": envelope.request_id }),
                ));
            }
            if requests.len() >= self.inner.max_active {
                return Err(binding_error(
                    code::LIMIT,
                    "MCP-over-ACP active request limit exceeded",
                    json!({ "serverId": envelope.server_id }),
                ));
            }
            requests.insert(envelope.request_id.clone());
            Active { set: active.clone(), id: envelope.request_id.clone() }
        };
        if let Err(inner) = check_meta(envelope.params.as_ref()) {
            return Ok(inner.to_carrier());
        }
        let (notes, mut queued) = mpsc::unbounded_channel::<Note>();
        let cancelled = async {
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = gone.cancelled() => {}
            }
        };
        let work =
            serve_one(server, &envelope.request_id, &envelope.method, envelope.params, envelope.meta, notes, cancelled);
        // Notifications go out in order, all before the response: the forwarder ends when
        // `work` has returned and dropped the sender.
        let forward = async {
            while let Some((method, params)) = queued.recv().await {
                let note = Envelope {
                    server_id: envelope.server_id.clone(),
                    request_id: envelope.request_id.clone(),
                    method,
                    params,
                    // Hop-local: the TypeScript provider's `notify` sends none either.
                    meta: None,
                };
                match serde_json::value::to_raw_value(&note.to_value()) {
                    Ok(raw) => {
                        if let Err(e) = notify(raw).await {
                            tracing::debug!("acp: an MCP notification was not sent: {e}");
                        }
                    }
                    Err(e) => tracing::warn!("acp: an MCP notification does not encode: {e}"),
                }
            }
        };
        let (outcome, ()) = tokio::join!(work, forward);
        Ok(outcome?.to_carrier())
    }

    /// [`McpProvider::handle`] for a v1 client handler's `mcp_message`. The answer goes through
    /// the generated `MessageMcpResponse`, whose `McpError` keeps `code`, `message` and `data`
    /// (all an rmcp error has); [`McpProvider::handle`] returns the carrier as raw JSON.
    pub async fn handle_v1(
        &self,
        params: v1::MessageMcpRequest,
        cx: &ClientContext,
    ) -> Result<v1::MessageMcpResponse, RpcError> {
        self.handle_typed(&params, cx).await
    }

    /// [`McpProvider::handle`] for a v2 client handler's `mcp_message`.
    pub async fn handle_v2(
        &self,
        params: v2::MessageMcpRequest,
        cx: &ClientContext,
    ) -> Result<v2::MessageMcpResponse, RpcError> {
        self.handle_typed(&params, cx).await
    }

    /// [`McpProvider::handle`] on a version's generated request, answered with its response.
    async fn handle_typed<R: serde::de::DeserializeOwned>(
        &self,
        params: &impl serde::Serialize,
        cx: &ClientContext,
    ) -> Result<R, RpcError> {
        let raw = acp_types::support::json::to_raw_value(params)
            .map_err(|e| RpcError::internal(format!("the mcp/message params do not encode: {e}")))?;
        let carrier = self.handle(cx.connection(), Some(&raw), cx.cancellation()).await?;
        serde_json::from_value(carrier).map_err(|e| RpcError::internal(format!("the MCP outcome does not decode: {e}")))
    }
}

/// An inner request id marked active until dropped.
struct Active {
    set: Arc<Mutex<HashSet<String>>>,
    id: String,
}

impl Drop for Active {
    fn drop(&mut self) {
        lock(&self.set).remove(&self.id);
    }
}
