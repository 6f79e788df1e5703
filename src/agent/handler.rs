//! What the runtime serves: the generated agent handler traits of both versions (with the v2
//! prompt turn, [`PromptTurn`]), or one version's handler alone ([`V1`], [`V2`]); and how a
//! message of the negotiated version reaches the handler ([`AgentHandler`], sealed).

use super::context::AgentContext;
use super::turn::Turn;
use crate::extension::{extension_of, Extended};
use crate::jsonrpc::Raw;
use crate::versions::{V1, V2};
use acp_types::support::rpc::{Extension, MessageKind, RpcError};
use acp_types::{v1, v2, Version};
use std::future::Future;

/// The v2 prompt turn: what an agent that speaks v2 adds to its v2 handler. The runtime answers
/// `session/prompt` itself and runs [`PromptTurn::prompt_turn`] as the turn.
pub trait PromptTurn: Send + Sync + 'static {
    /// Whether the v2 `initialize` answer advertises the session methods when the handler left
    /// `capabilities.session` out (an omitted one means the agent serves no `session/*` at all).
    const V2_SESSIONS: bool = true;

    /// One v2 prompt turn: the work a `session/prompt` starts, after the runtime has inserted
    /// and reported the user message, answered the request and reported `running`. Returns the
    /// `idle` update that ends it (its stop reason, and usage where known). The runtime reports
    /// `cancelled` instead when the turn was cancelled, and an `error` stop reason when this
    /// fails; it drops the work `Config::cancel_grace` after a cancel that it ignores.
    /// (The v2 handler's own `session_prompt` is not called while [`PromptTurn::V2_SESSIONS`]
    /// holds.)
    fn prompt_turn(
        &self,
        prompt: v2::PromptRequest,
        turn: Turn,
    ) -> impl Future<Output = Result<v2::IdleStateUpdate, RpcError>> + Send {
        let _ = (prompt, turn);
        async { Err(RpcError::internal("this agent does not implement v2 prompt turns (PromptTurn::prompt_turn)")) }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An agent the runtime can serve: implemented for every type that implements the generated
/// agent handler traits of both versions (`v1::methods::agent::Handler<AgentContext>`,
/// `v2::methods::agent::Handler<AgentContext>`) and [`PromptTurn`], and for [`V1`]`(handler)`
/// and [`V2`]`(handler)` of one version. Sealed: implement the generated traits instead.
pub trait AgentHandler: sealed::Sealed + Send + Sync + 'static {
    /// The protocol versions served (those asked for in `serve` are narrowed to these).
    const VERSIONS: &'static [Version];
    /// See [`PromptTurn::V2_SESSIONS`].
    const V2_SESSIONS: bool;

    /// A request of the negotiated `version`, decoded and handled; the result as JSON.
    #[doc(hidden)]
    fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: AgentContext,
    ) -> impl Future<Output = Result<serde_json::Value, RpcError>> + Send;

    /// A notification of the negotiated `version`, decoded and handled.
    #[doc(hidden)]
    fn handle_notification(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: AgentContext,
    ) -> impl Future<Output = ()> + Send;

    /// The v2 prompt turn ([`PromptTurn::prompt_turn`]).
    #[doc(hidden)]
    fn handle_turn(
        &self,
        prompt: v2::PromptRequest,
        turn: Turn,
    ) -> impl Future<Output = Result<v2::IdleStateUpdate, RpcError>> + Send;
}

fn not_spoken(version: Version) -> RpcError {
    RpcError::internal(format!("this agent does not speak v{}", version.number()))
}

fn ignored(method: &str, e: RpcError) {
    tracing::warn!("acp: notification {method} ignored: {e}");
}

/// Decodes a request of `method` with one version's agent table and answers it with `handler`.
macro_rules! dispatch_fns {
    ($request:ident, $notification:ident, $version:ident) => {
        async fn $request<H: $version::methods::agent::Handler<AgentContext>>(
            handler: &H,
            method: &str,
            params: Option<Raw>,
            cx: AgentContext,
        ) -> Result<serde_json::Value, RpcError> {
            let request = $version::methods::agent::Request::decode_raw(method, params.into())?;
            $version::methods::agent::dispatch_request(handler, request, cx).await?.result()
        }

        async fn $notification<H: $version::methods::agent::Handler<AgentContext>>(
            handler: &H,
            method: &str,
            params: Option<Raw>,
            cx: AgentContext,
        ) {
            match $version::methods::agent::Notification::decode_raw(method, params.into()) {
                Ok(n) => $version::methods::agent::dispatch_notification(handler, n, cx).await,
                Err(e) => ignored(method, e),
            }
        }
    };
}

dispatch_fns!(v1_request, v1_notification, v1);
dispatch_fns!(v2_request, v2_notification, v2);

impl<A> sealed::Sealed for A where
    A: v1::methods::agent::Handler<AgentContext> + v2::methods::agent::Handler<AgentContext> + PromptTurn
{
}

impl<A> AgentHandler for A
where
    A: v1::methods::agent::Handler<AgentContext> + v2::methods::agent::Handler<AgentContext> + PromptTurn,
{
    const VERSIONS: &'static [Version] = Version::ALL;
    const V2_SESSIONS: bool = <A as PromptTurn>::V2_SESSIONS;

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: AgentContext,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V1 => v1_request(self, method, params, cx).await,
            Version::V2 => v2_request(self, method, params, cx).await,
        }
    }

    async fn handle_notification(&self, version: Version, method: &str, params: Option<Raw>, cx: AgentContext) {
        match version {
            Version::V1 => v1_notification(self, method, params, cx).await,
            Version::V2 => v2_notification(self, method, params, cx).await,
        }
    }

    async fn handle_turn(&self, prompt: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        PromptTurn::prompt_turn(self, prompt, turn).await
    }
}

impl<A: v1::methods::agent::Handler<AgentContext> + 'static> sealed::Sealed for V1<A> {}

impl<A: v1::methods::agent::Handler<AgentContext> + 'static> AgentHandler for V1<A> {
    const VERSIONS: &'static [Version] = &[Version::V1];
    const V2_SESSIONS: bool = false;

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: AgentContext,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V1 => v1_request(&self.0, method, params, cx).await,
            other => Err(not_spoken(other)),
        }
    }

    async fn handle_notification(&self, version: Version, method: &str, params: Option<Raw>, cx: AgentContext) {
        match version {
            Version::V1 => v1_notification(&self.0, method, params, cx).await,
            other => ignored(method, not_spoken(other)),
        }
    }

    async fn handle_turn(&self, _: v2::PromptRequest, _: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        Err(not_spoken(Version::V2))
    }
}

impl<A: v2::methods::agent::Handler<AgentContext> + PromptTurn> sealed::Sealed for V2<A> {}

impl<A: v2::methods::agent::Handler<AgentContext> + PromptTurn> AgentHandler for V2<A> {
    const VERSIONS: &'static [Version] = &[Version::V2];
    const V2_SESSIONS: bool = <A as PromptTurn>::V2_SESSIONS;

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: AgentContext,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V2 => v2_request(&self.0, method, params, cx).await,
            other => Err(not_spoken(other)),
        }
    }

    async fn handle_notification(&self, version: Version, method: &str, params: Option<Raw>, cx: AgentContext) {
        match version {
            Version::V2 => v2_notification(&self.0, method, params, cx).await,
            other => ignored(method, not_spoken(other)),
        }
    }

    async fn handle_turn(&self, prompt: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        self.0.prompt_turn(prompt, turn).await
    }
}

impl<A: AgentHandler, E: Extension<AgentContext>> sealed::Sealed for Extended<A, E> {}

/// The agent `A` with an extension's agent side `E`: the requests and notifications `E`
/// receives go to it, the rest to `A`.
impl<A: AgentHandler, E: Extension<AgentContext>> AgentHandler for Extended<A, E> {
    const VERSIONS: &'static [Version] = A::VERSIONS;
    const V2_SESSIONS: bool = A::V2_SESSIONS;

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: AgentContext,
    ) -> Result<serde_json::Value, RpcError> {
        if extension_of::<E, _>(version, method, MessageKind::Request) {
            self.1.request(method, params.into(), cx).await
        } else {
            self.0.handle_request(version, method, params, cx).await
        }
    }

    async fn handle_notification(&self, version: Version, method: &str, params: Option<Raw>, cx: AgentContext) {
        if extension_of::<E, _>(version, method, MessageKind::Notification) {
            if let Err(e) = self.1.notification(method, params.into(), cx).await {
                ignored(method, e);
            }
        } else {
            self.0.handle_notification(version, method, params, cx).await
        }
    }

    async fn handle_turn(&self, prompt: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        self.0.handle_turn(prompt, turn).await
    }
}
