//! What an agent's handler gets besides its params: [`AgentContext`], the client of this
//! connection as the agent may call it (what the client advertised in `initialize`, checked
//! before each call that a capability gates), and the request's cancellation.

use crate::error::{Error, Misuse};
use crate::jsonrpc::Connection;
use crate::lifecycle::INITIALIZE;
use crate::rules;
use crate::sync::lock;
use acp_types::support::rpc::{decode_params, Notification, Request, ToClient};
use acp_types::{v1, v2, Version};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The context of an agent's handler: calls to the client (typed, checked against what the
/// client advertised), the negotiated version, and the cancellation of the request (by
/// `$/cancel_request`) or of its session (`session/cancel`, `session/close`). The typed helpers
/// per version are [`AgentContext::v1`] and [`AgentContext::v2`].
#[derive(Clone)]
pub struct AgentContext {
    pub(super) conn: Connection,
    pub(super) version: Version,
    pub(super) cancel: CancellationToken,
    pub(super) advertised: Advertised,
}

impl AgentContext {
    pub(super) fn new(conn: Connection, version: Version, cancel: CancellationToken, advertised: Advertised) -> Self {
        AgentContext { conn, version, cancel, advertised }
    }

    /// The protocol version the connection speaks (in `initialize`, the version being answered).
    pub fn version(&self) -> Version {
        self.version
    }

    /// What the client advertised in its `initialize` (the last successful one); `None` before
    /// it (the `initialize` handler has them in its params).
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        self.advertised.get()
    }

    /// Resolves when the request or its session is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Whether the request or its session was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The cancellation itself, e.g. to hand a child token to other work, or to stop waiting
    /// for the client when the request is cancelled (`tokio::select!` on
    /// `cx.cancellation().cancelled()`).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// A typed request to the client (`cx.request::<v1::methods::FsReadTextFile>(&params)`):
    /// only methods the client receives. Fails with [`Misuse::NotAdvertised`], sending nothing,
    /// when the client did not advertise the capability the method needs.
    ///
    /// ```no_run
    /// # use acp_rpc::types::v1;
    /// # async fn f(cx: acp_rpc::AgentContext, read: v1::ReadTextFileRequest) {
    /// let file = cx.request::<v1::methods::FsReadTextFile>(&read).await;
    /// # }
    /// ```
    /// A method the agent receives is no call an agent makes, and does not compile:
    /// ```compile_fail
    /// # use acp_rpc::types::v1;
    /// # async fn f(cx: acp_rpc::AgentContext, new: v1::NewSessionRequest) {
    /// let session = cx.request::<v1::methods::SessionNew>(&new).await;
    /// # }
    /// ```
    pub async fn request<M: Request + ToClient>(&self, params: &M::Params) -> Result<M::Response, Error> {
        self.gate(M::METHOD)?;
        self.conn.request::<M>(params).await
    }

    /// A typed notification to the client (only methods the client receives).
    pub async fn notify<M: Notification + ToClient>(&self, params: &M::Params) -> Result<(), Error> {
        self.gate(M::METHOD)?;
        self.conn.notify::<M>(params).await
    }

    /// The connection, for what has no marker type (an extension method without a generated module:
    /// see [`Extended`](crate::Extended) for those that have one). Calls made
    /// on it are not checked against what the client advertised.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Whether the client advertised what `method` needs: in v1, the capability that
    /// [`rules::ClientGate`] names (rules `cap.client-fs`, `cap.client-terminal`). (v2 has no
    /// client methods that a capability gates.)
    pub(super) fn gate(&self, method: &str) -> Result<(), Error> {
        if self.version != Version::V1 {
            return Ok(());
        }
        let Some(gate) = rules::ClientGate::of_v1(method) else {
            return Ok(());
        };
        let capabilities = self.v1_capabilities();
        let advertised = match gate {
            rules::ClientGate::ReadTextFile => *capabilities.fs.read_text_file,
            rules::ClientGate::WriteTextFile => *capabilities.fs.write_text_file,
            rules::ClientGate::Terminal => *capabilities.terminal,
        };
        if advertised {
            Ok(())
        } else {
            Err(Misuse::NotAdvertised { capability: gate.capability(), rule: gate.rule() }.into())
        }
    }

    /// What a v1 client advertised (nothing, before `initialize` or on a v2 connection).
    pub(super) fn v1_capabilities(&self) -> v1::ClientCapabilities {
        match self.client_capabilities() {
            Some(ClientCapabilities::V1(c)) => c,
            _ => v1::ClientCapabilities::new(),
        }
    }

    /// What a v2 client advertised (nothing, before `initialize` or on a v1 connection).
    pub(super) fn v2_capabilities(&self) -> v2::ClientCapabilities {
        match self.client_capabilities() {
            Some(ClientCapabilities::V2(c)) => c,
            _ => v2::ClientCapabilities::new(),
        }
    }
}

impl std::fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentContext")
            .field("version", &self.version)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// What the client advertised in `initialize`, in the negotiated version's types.
#[derive(Debug, Clone, PartialEq)]
// One per connection, matched on rather than moved about: boxing would only cost an allocation.
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum ClientCapabilities {
    /// v1: `InitializeRequest.clientCapabilities` (`fs.readTextFile`, `fs.writeTextFile`,
    /// `terminal`, …), with the schema's defaults where the client left them out.
    V1(v1::ClientCapabilities),
    /// v2: `InitializeRequest.capabilities` (`auth`, `elicitation`; no `fs` or `terminal`).
    V2(v2::ClientCapabilities),
}

impl ClientCapabilities {
    /// The capabilities in an `initialize` request of `version`; `None` when the params do not
    /// decode (the request then fails anyway). Unreadable capabilities count as none advertised
    /// (the schema's `x-deserialize-default-on-error`).
    pub(super) fn of_initialize(version: Version, params: Option<&serde_json::value::RawValue>) -> Option<Self> {
        let method = INITIALIZE;
        match version {
            Version::V1 => decode_params::<v1::InitializeRequest>(method, params)
                .ok()
                .map(|r| ClientCapabilities::V1(r.client_capabilities.into_inner())),
            Version::V2 => decode_params::<v2::InitializeRequest>(method, params)
                .ok()
                .map(|r| ClientCapabilities::V2(r.capabilities.into_inner())),
        }
    }
}

/// The client's `initialize` capabilities, shared by the tasks of an agent's connection.
#[derive(Clone, Default)]
pub(super) struct Advertised(Arc<Mutex<Option<ClientCapabilities>>>);

impl Advertised {
    pub(super) fn get(&self) -> Option<ClientCapabilities> {
        lock(&self.0).clone()
    }

    pub(super) fn set(&self, capabilities: ClientCapabilities) {
        *lock(&self.0) = Some(capabilities);
    }
}
