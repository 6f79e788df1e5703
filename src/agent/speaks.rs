//! What the runtime serves: an [`Agent`] of both versions, or one version's handler alone
//! ([`V1`], [`V2`]), so that speaking both versions is a choice, not a tax.

use super::{Agent, PromptTurn};
use crate::connection::Raw;
use crate::dispatch;
use crate::session::Context;
use crate::turn::Turn;
use acp_types::support::rpc::RpcError;
use acp_types::{v1, v2, Version};
use std::future::Future;

/// The versions an agent speaks and how each is dispatched; implemented for every [`Agent`] and
/// for [`V1`] and [`V2`]. Not meant to be implemented by hand.
pub trait Speaks: Send + Sync + 'static {
    /// The protocol versions served (those asked for in `serve` are narrowed to these).
    const VERSIONS: &'static [Version];
    /// See [`PromptTurn::V2_SESSIONS`].
    const V2_SESSIONS: bool;

    /// A request of the negotiated `version`, decoded and handled; the result as JSON.
    fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: Context,
    ) -> impl Future<Output = Result<serde_json::Value, RpcError>> + Send;

    /// A notification of the negotiated `version`, decoded and handled.
    fn handle_notification(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: Context,
    ) -> impl Future<Output = ()> + Send;

    /// The v2 prompt turn ([`PromptTurn::prompt_turn`]).
    fn handle_turn(
        &self,
        prompt: v2::PromptRequest,
        turn: Turn,
    ) -> impl Future<Output = Result<v2::IdleStateUpdate, RpcError>> + Send;
}

/// A handler of v1 alone: an agent's (served as `V1(agent)`) or a client's (connected as
/// `V1(client)`); the other version is never negotiated.
pub struct V1<H>(pub H);

/// A handler of v2 alone: an agent's, with its prompt turn (served as `V2(agent)`), or a
/// client's (connected as `V2(client)`).
pub struct V2<H>(pub H);

fn not_spoken(version: Version) -> RpcError {
    RpcError::internal(format!("this agent does not speak v{}", version.number()))
}

fn ignored(method: &str, e: RpcError) {
    tracing::warn!("acp: notification {method} ignored: {e}");
}

async fn v1_notification<H: v1::methods::agent::Handler<Context>>(
    handler: &H,
    method: &str,
    params: Option<Raw>,
    cx: Context,
) {
    match v1::methods::agent::Notification::decode_raw(method, params.into()) {
        Ok(n) => v1::methods::agent::dispatch_notification(handler, n, cx).await,
        Err(e) => ignored(method, e),
    }
}

async fn v2_notification<H: v2::methods::agent::Handler<Context>>(
    handler: &H,
    method: &str,
    params: Option<Raw>,
    cx: Context,
) {
    match v2::methods::agent::Notification::decode_raw(method, params.into()) {
        Ok(n) => v2::methods::agent::dispatch_notification(handler, n, cx).await,
        Err(e) => ignored(method, e),
    }
}

impl<A: Agent> Speaks for A {
    const VERSIONS: &'static [Version] = Version::ALL;
    const V2_SESSIONS: bool = <A as PromptTurn>::V2_SESSIONS;

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: Context,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V1 => dispatch::agent::v1::request(self, method, params, cx).await,
            Version::V2 => dispatch::agent::v2::request(self, method, params, cx).await,
        }
    }

    async fn handle_notification(&self, version: Version, method: &str, params: Option<Raw>, cx: Context) {
        match version {
            Version::V1 => v1_notification(self, method, params, cx).await,
            Version::V2 => v2_notification(self, method, params, cx).await,
        }
    }

    async fn handle_turn(&self, prompt: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        PromptTurn::prompt_turn(self, prompt, turn).await
    }
}

impl<A: v1::methods::agent::Handler<Context> + 'static> Speaks for V1<A> {
    const VERSIONS: &'static [Version] = &[Version::V1];
    const V2_SESSIONS: bool = false;

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: Context,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V1 => dispatch::agent::v1::request(&self.0, method, params, cx).await,
            other => Err(not_spoken(other)),
        }
    }

    async fn handle_notification(&self, version: Version, method: &str, params: Option<Raw>, cx: Context) {
        match version {
            Version::V1 => v1_notification(&self.0, method, params, cx).await,
            other => ignored(method, not_spoken(other)),
        }
    }

    async fn handle_turn(&self, _: v2::PromptRequest, _: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        Err(not_spoken(Version::V2))
    }
}

impl<A: v2::methods::agent::Handler<Context> + PromptTurn> Speaks for V2<A> {
    const VERSIONS: &'static [Version] = &[Version::V2];
    const V2_SESSIONS: bool = <A as PromptTurn>::V2_SESSIONS;

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: Context,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V2 => dispatch::agent::v2::request(&self.0, method, params, cx).await,
            other => Err(not_spoken(other)),
        }
    }

    async fn handle_notification(&self, version: Version, method: &str, params: Option<Raw>, cx: Context) {
        match version {
            Version::V2 => v2_notification(&self.0, method, params, cx).await,
            other => ignored(method, not_spoken(other)),
        }
    }

    async fn handle_turn(&self, prompt: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        self.0.prompt_turn(prompt, turn).await
    }
}
