//! Routing between the links of a chain: the [`Service`] of the editor's link and of each
//! component's, over the state they share ([`Routes`]). Messages are forwarded as raw JSON; only
//! the `proxy/successor` envelope is taken off or put on, and `initialize` renamed.
//!
//! - The editor's messages go to component 0 (`initialize` as `proxy/initialize` when component 0
//!   is a proxy, its `protocolVersion` as `version` says).
//! - A component's `proxy/successor` goes, unwrapped, to the next component (`initialize` renamed
//!   `proxy/initialize` when that one has a successor too); a plain message from component i+1
//!   goes to component i wrapped in `proxy/successor`, and from component 0 plain to the editor.
//! - A request goes on after the notifications its sender wrote before it (a
//!   `session/request_permission` after the `session/update` of its tool call, a
//!   `session/prompt` after the `session/cancel` before it).
//! - Answers go back unchanged, after the notifications their sender wrote before them and
//!   before those it wrote after them (each request is relayed:
//!   [`Connection::request_raw_relayed`]).
//! - Refused with -32600 (a notification dropped with a warning): `proxy/successor` from the
//!   editor, from the agent, or wrapped in another one; `proxy/initialize` from anyone;
//!   `$/cancel_request` inside an envelope (cancellation is per hop). A malformed envelope is
//!   -32602 (inner `params` omitted or `null` are none, as the schema says). The official conductor 5.0.0 does the same
//!   (`reject_misplaced_successor_message`, conductor.rs:1232-1255; `forward_message_from_client_to_proxy`,
//!   conductor.rs:1155-1200).
//! - Ids are per link (each link is its own connection, numbering its own requests), and
//!   `$/cancel_request` is hop-local: it cancels the handler of the request it names on its link,
//!   whose cancellation cancels the conductor's own request downstream with the conductor's own
//!   `$/cancel_request`, and the downstream answer is still passed back (the official conductor: conductor.rs:766-778 drops a forwarded
//!   `$/cancel_request`, the SDK passes the cancellation on hop by hop, `forward_response_to` and
//!   `forward_cancellation_from` at conductor.rs:1186).

use acp_types::support::rpc::RpcError;
use acp_types::MethodName;
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex, OnceLock};
use tokio_util::sync::CancellationToken;

use super::version;
use crate::envelope::{self, PROXY_INITIALIZE, PROXY_SUCCESSOR};
use crate::error::Error;
use crate::jsonrpc::{BoxFuture, Connection, Raw, RequestContext, Service};
use crate::lifecycle::INITIALIZE;
use crate::sync::lock;

/// -32600 for a `proxy/successor` request from the editor or from the agent: only the conductor
/// and the proxies it initialized exchange envelopes (the official conductor 5.0.0 answers the
/// same: `reject_misplaced_successor_message`, conductor.rs:1232-1261). One wrapped in another is
/// refused by [`envelope::unwrap`].
fn misplaced() -> RpcError {
    RpcError::new(
        RpcError::INVALID_REQUEST,
        format!("`{PROXY_SUCCESSOR}` is only exchanged between the conductor and the proxies it initialized"),
    )
}

/// -32600 for a `proxy/initialize` that does not come from the conductor (official conductor
/// 5.0.0: `initialize_proxy_from_outside`, conductor.rs:1263-1269).
fn initialize_from_outside() -> RpcError {
    RpcError::new(RpcError::INVALID_REQUEST, format!("`{PROXY_INITIALIZE}` requests are only sent by the conductor"))
}

/// What the links of one chain share: the connections (set once, before any is read) and
/// whether the chain has ended.
pub(super) struct Routes {
    editor: OnceLock<Connection>,
    components: OnceLock<Vec<Connection>>,
    /// The components' names, for errors and logs (`component 1 (proxy)`).
    names: Vec<String>,
    /// Fired when the chain ends (the editor left, a component ended, or the conductor was told
    /// to stop): every forwarded request still waiting fails with [`Routes::ended_error`].
    ended: CancellationToken,
    why: Mutex<Option<String>>,
}

impl Routes {
    pub(super) fn new(names: Vec<String>) -> Arc<Routes> {
        Arc::new(Routes {
            editor: OnceLock::new(),
            components: OnceLock::new(),
            names,
            ended: CancellationToken::new(),
            why: Mutex::new(None),
        })
    }

    /// Sets the connections; called once, before any of them is driven.
    pub(super) fn connect(&self, editor: Connection, components: Vec<Connection>) {
        let _ = self.editor.set(editor);
        let _ = self.components.set(components);
    }

    /// Ends the chain for `why` (the first reason given is kept); true for the first call.
    pub(super) fn end(&self, why: impl Into<String>) -> bool {
        let first = {
            let mut slot = lock(&self.why);
            let first = slot.is_none();
            if first {
                *slot = Some(why.into());
            }
            first
        };
        self.ended.cancel();
        first
    }

    /// Why the chain ended, once it has.
    pub(super) fn why(&self) -> Option<String> {
        lock(&self.why).clone()
    }

    /// The component's name for messages: `component 1 (`proxy`)`.
    pub(super) fn name(&self, index: usize) -> String {
        match self.names.get(index) {
            Some(name) => format!("component {index} (`{name}`)"),
            None => format!("component {index}"),
        }
    }

    fn len(&self) -> usize {
        self.names.len()
    }

    fn component(&self, index: usize) -> Result<&Connection, RpcError> {
        self.components.get().and_then(|c| c.get(index)).ok_or_else(|| self.ended_error())
    }

    fn editor(&self) -> Result<&Connection, RpcError> {
        self.editor.get().ok_or_else(|| self.ended_error())
    }

    /// The error of a request that cannot be forwarded because the chain has ended.
    fn ended_error(&self) -> RpcError {
        let why = self.why().unwrap_or_else(|| "the chain is not running".into());
        RpcError::internal(format!("the conductor's chain has ended: {why}"))
    }

    /// Forwards a request on `to` for the request `cx` is handling, after the notifications its
    /// sender wrote before it, and passes the answer back unchanged. Relayed ([`Connection::request_raw_relayed`]): when `cx` is cancelled, our own
    /// `$/cancel_request` goes to `to` and its answer (its -32800, or what it had already) is
    /// still the one passed back (the handler is dropped, and -32800 answered, after
    /// [`Config::cancel_grace`](crate::jsonrpc::Config::cancel_grace)); the answer comes after
    /// the notifications `to` sent before it, and those it sent after it wait until our answer
    /// is queued.
    async fn call(
        &self,
        to: &Connection,
        to_name: impl FnOnce() -> String,
        method: &str,
        params: Option<&RawValue>,
        cx: &RequestContext,
    ) -> Result<Raw, RpcError> {
        let forward = async {
            // What the sender wrote before this request goes on before it: the notifications
            // are passed on by another task, which this request's task would overtake.
            cx.connection().sync_notifications().await;
            to.request_raw_relayed(method, params, cx.cancellation()).await
        };
        let (answer, hold) = tokio::select! {
            answer = forward => answer,
            _ = self.ended.cancelled() => return Err(self.ended_error()),
        };
        // Released once our answer is queued (or dropped with the handler if it fails).
        cx.after_response(async move { drop(hold) });
        match answer {
            Ok(result) => Ok(result),
            Err(Error::Peer(error)) => Err(error),
            Err(Error::Closed) => match self.why() {
                Some(_) => Err(self.ended_error()),
                None => {
                    Err(RpcError::internal(format!("{} closed its connection before answering {method}", to_name())))
                }
            },
            Err(other) => Err(RpcError::internal(format!("{} answered {method} wrongly: {other}", to_name()))),
        }
    }

    /// A request from the editor: to component 0.
    async fn request_from_editor(
        &self,
        method: String,
        params: Option<Raw>,
        cx: RequestContext,
    ) -> Result<Raw, RpcError> {
        match MethodName::of(&method) {
            Some(MethodName::ProxySuccessor) => {
                tracing::warn!("acp conductor: refused a `{PROXY_SUCCESSOR}` request from the editor");
                Err(misplaced())
            }
            Some(MethodName::ProxyInitialize) => Err(initialize_from_outside()),
            Some(MethodName::Initialize) => {
                let first = self.component(0)?;
                let lowered = version::forwarded(params.as_deref())?;
                let params = lowered.as_deref().or(params.as_deref());
                let method = if self.len() > 1 { PROXY_INITIALIZE } else { INITIALIZE };
                self.call(first, || self.name(0), method, params, &cx).await
            }
            _ => self.call(self.component(0)?, || self.name(0), &method, params.as_deref(), &cx).await,
        }
    }

    /// A notification from the editor: to component 0.
    async fn note_from_editor(&self, method: String, params: Option<Raw>) {
        if matches!(MethodName::of(&method), Some(MethodName::ProxySuccessor)) {
            tracing::warn!("acp conductor: dropped a `{PROXY_SUCCESSOR}` notification from the editor");
            return;
        }
        if let Ok(first) = self.component(0) {
            if let Err(e) = first.notify_raw(&method, params.as_deref()).await {
                tracing::debug!("acp conductor: {method} not passed to {}: {e}", self.name(0));
            }
        }
    }

    /// A request from component `index`: unwrapped to its successor, or wrapped to its
    /// predecessor (plain to the editor from component 0).
    async fn request_from_component(
        &self,
        index: usize,
        method: String,
        params: Option<Raw>,
        cx: RequestContext,
    ) -> Result<Raw, RpcError> {
        if matches!(MethodName::of(&method), Some(MethodName::ProxySuccessor)) {
            let next = index + 1;
            if next == self.len() {
                tracing::warn!(
                    "acp conductor: refused a `{PROXY_SUCCESSOR}` request from the agent, {}",
                    self.name(index)
                );
                return Err(misplaced());
            }
            // A malformed envelope is -32602; a second envelope, `proxy/initialize` or
            // `$/cancel_request` inside one is -32600.
            let inner = envelope::unwrap(params.as_deref()).inspect_err(|e| {
                tracing::warn!("acp conductor: refused an envelope from {}: {}", self.name(index), e.message)
            })?;
            let method = match MethodName::of(&inner.method) {
                Some(MethodName::Initialize) if next + 1 < self.len() => PROXY_INITIALIZE,
                _ => inner.method.as_str(),
            };
            let to = self.component(next)?;
            return self.call(to, || self.name(next), method, inner.params.as_deref(), &cx).await;
        }
        match index.checked_sub(1) {
            None => self.call(self.editor()?, || "the editor".into(), &method, params.as_deref(), &cx).await,
            Some(previous) => {
                let wrapped = envelope::wrap(&method, params.as_deref()).map_err(|e| e.to_rpc())?;
                let to = self.component(previous)?;
                self.call(to, || self.name(previous), PROXY_SUCCESSOR, Some(&wrapped), &cx).await
            }
        }
    }

    /// A notification from component `index`: as [`Routes::request_from_component`], dropped (with a
    /// warning) where a request would be refused.
    async fn note_from_component(&self, index: usize, method: String, params: Option<Raw>) {
        let sent = if matches!(MethodName::of(&method), Some(MethodName::ProxySuccessor)) {
            let next = index + 1;
            if next == self.len() {
                tracing::warn!("acp conductor: dropped a `{PROXY_SUCCESSOR}` notification from the agent");
                return;
            }
            let inner = match envelope::unwrap(params.as_deref()) {
                Ok(inner) => inner,
                Err(e) => {
                    tracing::warn!("acp conductor: dropped an envelope from {}: {}", self.name(index), e.message);
                    return;
                }
            };
            match self.component(next) {
                Ok(to) => to.notify_raw(&inner.method, inner.params.as_deref()).await,
                Err(_) => return,
            }
        } else {
            match index.checked_sub(1) {
                None => match self.editor() {
                    Ok(editor) => editor.notify_raw(&method, params.as_deref()).await,
                    Err(_) => return,
                },
                Some(previous) => match (self.component(previous), envelope::wrap(&method, params.as_deref())) {
                    (Ok(to), Ok(wrapped)) => to.notify_raw(PROXY_SUCCESSOR, Some(&wrapped)).await,
                    (Err(_), _) => return,
                    (_, Err(e)) => Err(e),
                },
            }
        };
        if let Err(e) = sent {
            tracing::debug!("acp conductor: a notification from {} was not passed on: {e}", self.name(index));
        }
    }
}

/// The service of the editor's link.
pub(super) struct EditorSide(pub(super) Arc<Routes>);

impl Service for EditorSide {
    fn request(&self, method: String, params: Option<Raw>, cx: RequestContext) -> BoxFuture<Result<Raw, RpcError>> {
        let routes = self.0.clone();
        Box::pin(async move { routes.request_from_editor(method, params, cx).await })
    }

    fn notification(&self, method: String, params: Option<Raw>, _: Connection) -> BoxFuture<()> {
        let routes = self.0.clone();
        Box::pin(async move { routes.note_from_editor(method, params).await })
    }
}

/// The service of component `index`'s link.
pub(super) struct ComponentSide {
    pub(super) routes: Arc<Routes>,
    pub(super) index: usize,
}

impl Service for ComponentSide {
    fn request(&self, method: String, params: Option<Raw>, cx: RequestContext) -> BoxFuture<Result<Raw, RpcError>> {
        let (routes, index) = (self.routes.clone(), self.index);
        Box::pin(async move { routes.request_from_component(index, method, params, cx).await })
    }

    fn notification(&self, method: String, params: Option<Raw>, _: Connection) -> BoxFuture<()> {
        let (routes, index) = (self.routes.clone(), self.index);
        Box::pin(async move { routes.note_from_component(index, method, params).await })
    }
}
