//! What a proxy's hooks get besides the message: [`ProxyContext`], the two sides of the proxy as
//! it may send to them ([`ClientSide`]: plain messages to the predecessor; [`AgentSide`]:
//! messages wrapped in `proxy/successor` for the successor), the negotiated version, and the
//! cancellation of the request being handled.

use super::message::{encode, Marker, Notification, NotificationKind, Request, RequestKind, Response};
use crate::envelope::{wrap, PROXY_SUCCESSOR};
use crate::error::{Error, Misuse};
use crate::jsonrpc::{Connection, NotificationHold, Raw};
use crate::sync::lock;
use acp_types::support::rpc::{self, RpcError, ToAgent, ToClient};
use acp_types::{MethodName, Version};
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The context of a proxy's hook: the proxy's two sides ([`ProxyContext::client`],
/// [`ProxyContext::agent`]), the protocol version the chain negotiated, and the cancellation of
/// the request being handled (the peer's `$/cancel_request`; a forwarded request passes it on).
#[derive(Clone)]
pub struct ProxyContext {
    conn: Connection,
    version: Option<Version>,
    cancel: CancellationToken,
    /// Set in a request hook: what its forwards leave for the runtime.
    scope: Option<Arc<Scope>>,
}

/// What the forwards of one request hook leave for the runtime that answers the request.
pub(super) struct Scope {
    /// The hold on the notifications after the last forwarded answer, released once the
    /// request's own answer is queued.
    hold: Mutex<Hold>,
    /// In `proxy/initialize`: the `protocolVersion` the successor answered `initialize` with.
    successor_version: Mutex<Option<serde_json::Value>>,
}

/// Where a request hook's hold is kept.
#[derive(Default)]
enum Hold {
    /// The hook runs; the hold of its last forward, if any.
    Open(Option<NotificationHold>),
    /// The request was answered (or dropped): a forward from a context kept beyond it holds
    /// nothing.
    #[default]
    Closed,
}

impl Scope {
    pub(super) fn open() -> Self {
        Scope { hold: Mutex::new(Hold::Open(None)), successor_version: Mutex::default() }
    }

    /// The hold of the last forward; none is kept from now on.
    pub(super) fn close(&self) -> Option<NotificationHold> {
        match std::mem::take(&mut *lock(&self.hold)) {
            Hold::Open(hold) => hold,
            Hold::Closed => None,
        }
    }

    /// Keeps `hold` until the request is answered (releases it at once when it was).
    fn keep(&self, hold: NotificationHold) {
        if let Hold::Open(slot) = &mut *lock(&self.hold) {
            *slot = Some(hold);
        }
    }

    /// Releases the hold of an earlier forward.
    fn release(&self) {
        if let Hold::Open(slot) = &mut *lock(&self.hold) {
            drop(slot.take());
        }
    }

    pub(super) fn successor_version(&self) -> Option<serde_json::Value> {
        lock(&self.successor_version).clone()
    }
}

/// Which way a message goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Toward {
    /// The predecessor: plain messages.
    Client,
    /// The successor: wrapped in `proxy/successor`.
    Agent,
}

impl ProxyContext {
    pub(super) fn new(
        conn: Connection,
        version: Option<Version>,
        cancel: CancellationToken,
        scope: Option<Arc<Scope>>,
    ) -> Self {
        ProxyContext { conn, version, cancel, scope }
    }

    /// The protocol version the chain negotiated (the one the successor answered
    /// `initialize` with); `None` during `proxy/initialize`, or when it is one this build does
    /// not know (messages then pass through as raw JSON, and typed access matches nothing).
    pub fn version(&self) -> Option<Version> {
        self.version
    }

    /// The client's side (the predecessor): messages sent as they are.
    pub fn client(&self) -> ClientSide<'_> {
        ClientSide(self)
    }

    /// The agent's side (the successor): messages sent wrapped in `proxy/successor`.
    pub fn agent(&self) -> AgentSide<'_> {
        AgentSide(self)
    }

    /// Resolves when the request being handled is cancelled (never in a notification hook).
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Whether the request being handled was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The cancellation itself, e.g. to hand a child token to other work.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The connection to the conductor, on which both sides' messages travel.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Passes `request` on and returns the answer as it came. In a request hook the call is
    /// relayed: the hook's cancellation is passed on as our own `$/cancel_request` and the
    /// answer still awaited, and the notifications that came after the answer wait until the
    /// request's own answer is queued.
    async fn forward(&self, toward: Toward, request: Request) -> Result<Response, RpcError> {
        let (method, params) = request.into_parts();
        let (target, params) = self.addressed(toward, &method, params)?;
        let result = match &self.scope {
            Some(scope) => {
                // A second forward of one hook: the first answer has been passed on by now.
                scope.release();
                let (result, hold) = self.conn.request_raw_relayed(target, params.as_deref(), &self.cancel).await;
                scope.keep(hold);
                result
            }
            None => self.conn.request_raw(target, params.as_deref()).await,
        };
        let result = result.map_err(|e| e.to_rpc())?;
        let mut version = self.version;
        if matches!(MethodName::of(&method), Some(MethodName::Initialize)) {
            let answered = protocol_version(&result);
            version = answered.as_ref().and_then(version_of);
            if let (Some(scope), Toward::Agent) = (&self.scope, toward) {
                *lock(&scope.successor_version) = answered;
            }
        }
        Ok(Response::new(result, version))
    }

    async fn forward_notification(&self, toward: Toward, notification: Notification) -> Result<(), RpcError> {
        let (method, params) = notification.into_parts();
        let (target, params) = self.addressed(toward, &method, params).map_err(|e| e.to_rpc())?;
        self.conn.notify_raw(target, params.as_deref()).await.map_err(|e| e.to_rpc())
    }

    /// The method and params to send for `method` with `params` toward a side.
    fn addressed<'m>(
        &self,
        toward: Toward,
        method: &'m str,
        params: Option<Raw>,
    ) -> Result<(&'m str, Option<Raw>), Error> {
        match toward {
            Toward::Client => Ok((method, params)),
            Toward::Agent => Ok((PROXY_SUCCESSOR, Some(wrap(method, params.as_deref())?))),
        }
    }

    async fn request_raw(&self, toward: Toward, method: &str, params: Option<&RawValue>) -> Result<Raw, Error> {
        match toward {
            Toward::Client => self.conn.request_raw(method, params).await,
            Toward::Agent => self.conn.request_raw(PROXY_SUCCESSOR, Some(&wrap(method, params)?)).await,
        }
    }

    async fn notify_raw(&self, toward: Toward, method: &str, params: Option<&RawValue>) -> Result<(), Error> {
        match toward {
            Toward::Client => self.conn.notify_raw(method, params).await,
            Toward::Agent => self.conn.notify_raw(PROXY_SUCCESSOR, Some(&wrap(method, params)?)).await,
        }
    }

    async fn request<M: Marker<RequestKind> + rpc::Request>(
        &self,
        toward: Toward,
        params: &M::Params,
    ) -> Result<M::Response, Error> {
        self.check_version(M::METHOD, M::VERSION)?;
        let params = encode::<M>(params)?;
        let result = self.request_raw(toward, M::METHOD, Some(&params)).await?;
        rpc::decode_raw::<M::Response>(M::METHOD, result.into())
            .map_err(|e| Error::Protocol(format!("the response to {} does not decode: {}", M::METHOD, e.message)))
    }

    async fn notify<M: Marker<NotificationKind>>(&self, toward: Toward, params: &M::Params) -> Result<(), Error> {
        self.check_version(M::METHOD, M::VERSION)?;
        let params = encode::<M>(params)?;
        self.notify_raw(toward, M::METHOD, Some(&params)).await
    }

    /// A typed call of `method` in `wanted`'s types is refused, unsent, on a chain of another version.
    fn check_version(&self, method: &str, wanted: Version) -> Result<(), Error> {
        match self.version {
            None => Err(Misuse::NotInitialized { method: method.into() }.into()),
            Some(negotiated) if negotiated != wanted => Err(Misuse::WrongVersion { wanted, negotiated }.into()),
            Some(_) => Ok(()),
        }
    }
}

/// The `protocolVersion` of an `initialize` answer, as it is.
pub(super) fn protocol_version(result: &RawValue) -> Option<serde_json::Value> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "protocolVersion")]
        protocol_version: Option<serde_json::Value>,
    }
    serde_json::from_str::<Probe>(result.get()).ok().and_then(|p| p.protocol_version)
}

/// The version a `protocolVersion` names, when this build knows it.
pub(super) fn version_of(protocol_version: &serde_json::Value) -> Option<Version> {
    protocol_version.as_u64().and_then(|n| u16::try_from(n).ok()).and_then(Version::from_number)
}

impl std::fmt::Debug for ProxyContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyContext")
            .field("version", &self.version)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// The proxy's client side, its predecessor, from a hook ([`ProxyContext::client`]): what is
/// sent here goes out as it is. Typed calls take only methods the client receives.
#[derive(Debug, Clone, Copy)]
pub struct ClientSide<'a>(&'a ProxyContext);

/// The proxy's agent side, its successor, from a hook ([`ProxyContext::agent`]): what is sent
/// here goes out wrapped in `proxy/successor`. Typed calls take only methods the agent
/// receives.
#[derive(Debug, Clone, Copy)]
pub struct AgentSide<'a>(&'a ProxyContext);

/// The methods of one side; `$bound` limits its typed calls to the methods that side receives.
macro_rules! side {
    ($side:ident, $toward:expr, $bound:ident, $who:literal) => {
        impl $side<'_> {
            #[doc = concat!("Passes `request` on to the ", $who, " and returns its answer unchanged (its error")]
            /// too). In a request hook the hook's cancellation goes on as our own
            /// `$/cancel_request` and the answer is still awaited, and the notifications that
            /// came after the answer are passed on after the hook's own answer.
            pub async fn forward_request(&self, request: Request) -> Result<Response, RpcError> {
                self.0.forward($toward, request).await
            }

            #[doc = concat!("Passes `notification` on to the ", $who, ".")]
            pub async fn forward_notification(&self, notification: Notification) -> Result<(), RpcError> {
                self.0.forward_notification($toward, notification).await
            }

            #[doc = concat!("A typed request to the ", $who, " of a method it receives, in the negotiated")]
            /// version's types: refused unsent ([`Misuse::WrongVersion`],
            /// [`Misuse::NotInitialized`]) for a marker of another version.
            pub async fn request<M: Marker<RequestKind> + rpc::Request + $bound>(
                &self,
                params: &M::Params,
            ) -> Result<M::Response, Error> {
                self.0.request::<M>($toward, params).await
            }

            #[doc = concat!("A typed notification to the ", $who, " of a method it receives (see `request`).")]
            pub async fn notify<M: Marker<NotificationKind> + $bound>(&self, params: &M::Params) -> Result<(), Error> {
                self.0.notify::<M>($toward, params).await
            }

            #[doc = concat!("A request to the ", $who, " by name, params as raw JSON (extension methods).")]
            pub async fn request_raw(&self, method: &str, params: Option<&RawValue>) -> Result<Raw, Error> {
                self.0.request_raw($toward, method, params).await
            }

            #[doc = concat!("A notification to the ", $who, " by name, params as raw JSON.")]
            pub async fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<(), Error> {
                self.0.notify_raw($toward, method, params).await
            }
        }
    };
}

side!(ClientSide, Toward::Client, ToClient, "client");
side!(AgentSide, Toward::Agent, ToAgent, "agent");
