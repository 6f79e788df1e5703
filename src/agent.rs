//! Serving an agent: one binary speaks v1 and v2. On `initialize` the agent answers the highest
//! version it supports that is at most the one requested (when there is none: -32022 from an
//! agent that speaks v2, its only version from a v1-only one), and decodes everything after with
//! that version's generated tables.
//!
//! The runtime keeps the protocol's lifecycle rules for the agent:
//! - v1: a `session/prompt` answered while (or after) its session was cancelled ends `cancelled`,
//!   whatever the handler returned;
//! - v2: the initialize answer advertises `capabilities.session` (unless [`PromptTurn::V2_SESSIONS`] is
//!   false), and `session/prompt` is a turn the runtime runs (see [`crate::turn`]): the user
//!   message is inserted and reported, the request answered with its `messageId`, `running` and
//!   `idle` reported around [`PromptTurn::prompt_turn`], which returns the outcome.
//!
//! It also keeps what the client advertised in `initialize`, for the typed calls to the client on
//! the handler's [`Context`] ([`Context::v1`], [`Context::v2`]), which check it before sending.

mod helpers;
mod speaks;
pub use speaks::{Speaks, V1, V2};

pub use helpers::{ClientCapabilities, ClientV1, ClientV2, TerminalHandle};

use crate::connection::{BoxFuture, Config, Connection, Pipe, Raw, RequestContext, Service, Transport};
use crate::session::{session_of, Advertised, Context, Negotiated, Sessions};
use crate::turn::{MessageIds, SessionLocks, Turn};
use acp_types::support::rpc::{decode_params, RpcError};
use acp_types::support::Patch;
use acp_types::{v1, v2, Version};
use futures_util::FutureExt as _;
use serde_json::json;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// The v2 prompt turn: what an agent that speaks v2 adds to its v2 handler. The runtime answers
/// `session/prompt` itself (see [`crate::turn`]) and runs [`PromptTurn::prompt_turn`] as the turn.
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

/// An agent that speaks v1 and v2: the generated handler traits of both versions (every method
/// has a default, so an agent implements only what it supports) and the v2 prompt turn. An agent
/// that speaks one version implements that version's handler alone and is served as
/// [`V1`]`(agent)` or [`V2`]`(agent)`.
pub trait Agent: v1::methods::agent::Handler<Context> + v2::methods::agent::Handler<Context> + PromptTurn {}
impl<T: v1::methods::agent::Handler<Context> + v2::methods::agent::Handler<Context> + PromptTurn> Agent for T {}

/// -32600 for anything but `initialize` before `initialize` has succeeded.
pub fn not_initialized(method: &str) -> RpcError {
    RpcError::new(
        RpcError::INVALID_REQUEST,
        format!("{method} before initialize: the first request must be initialize"),
    )
    .with_data(json!({ "method": method }))
}

fn to_raw(value: serde_json::Value) -> Result<Raw, RpcError> {
    acp_types::support::json::to_raw_value(&value)
        .map_err(|e| RpcError::internal(format!("cannot encode the result: {e}")))
}

struct AgentService<A> {
    agent: Arc<A>,
    versions: Vec<Version>,
    version: Negotiated,
    shared: Arc<Shared>,
    conn: Connection,
}

/// What the tasks of one agent connection share.
#[derive(Default)]
struct Shared {
    /// Running work by session, for `session/cancel`.
    sessions: Arc<Sessions>,
    /// v2: one turn at a time per session, and the `messageId`s of inserted messages.
    turns: SessionLocks,
    ids: Arc<MessageIds>,
    /// What the client advertised in `initialize`.
    advertised: Advertised,
}

/// Serves `agent` over `reader`/`writer`, speaking the protocol `versions` (e.g.
/// [`Version::ALL`]).
pub fn serve<A, R, W>(
    agent: A,
    versions: &[Version],
    reader: R,
    writer: W,
    config: Config,
) -> (Connection, impl Future<Output = std::io::Result<()>> + Send)
where
    A: Speaks,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_over(Arc::new(agent), versions, Pipe { reader, writer }, config)
}

/// Serves `agent` over any [`Transport`] (a [`Pipe`], or the [`Channels`](crate::connection::Channels) a network listener
/// hands each of its connections). One `Arc` of the agent serves any number of connections, each
/// with its own sessions and negotiated version.
pub fn serve_over<A: Speaks, T: Transport>(
    agent: Arc<A>,
    versions: &[Version],
    transport: T,
    config: Config,
) -> (Connection, impl Future<Output = std::io::Result<()>> + Send) {
    // Narrowed to what the agent speaks: a `V1(agent)` served with `Version::ALL` negotiates 1.
    let mut versions: Vec<Version> = versions.iter().copied().filter(|v| A::VERSIONS.contains(v)).collect();
    versions.sort();
    versions.dedup();
    Connection::over(transport, config, move |conn| AgentService {
        agent,
        versions,
        version: Negotiated::default(),
        shared: Arc::default(),
        conn,
    })
}

/// Serves `agent` on this process's stdin/stdout (all logging goes to stderr, never stdout).
pub async fn serve_stdio<A: Speaks>(agent: A, versions: &[Version]) -> std::io::Result<()> {
    let (_, driver) = serve(agent, versions, tokio::io::stdin(), tokio::io::stdout(), Config::default());
    driver.await
}

impl<A: Speaks> Service for AgentService<A> {
    fn request(&self, method: String, params: Option<Raw>, cx: RequestContext) -> BoxFuture<Result<Raw, RpcError>> {
        let session = session_of(params.as_deref());
        if method == "session/close" {
            // Closing a session ends its turns (`cancelled`).
            if let Some(session) = &session {
                self.shared.sessions.cancel(session);
            }
        }
        let agent = self.agent.clone();
        let versions = self.versions.clone();
        let negotiated = self.version.clone();
        let shared = self.shared.clone();
        // Registered now, while the reader is still on this message: a `session/cancel` right
        // behind it must find it.
        let turn = cx.cancel.child_token();
        let session_id = session.clone();
        let registered = session.map(|s| self.shared.sessions.register(s, turn.clone()));
        Box::pin(async move {
            let _registered = registered;
            if method == "initialize" {
                let cx = Context {
                    conn: cx.conn,
                    version: Version::V1,
                    cancel: turn,
                    advertised: shared.advertised.clone(),
                };
                return initialize(&*agent, &versions, &negotiated, params, cx).await;
            }
            let Some(v) = negotiated.get() else {
                return Err(not_initialized(&method));
            };
            if v == Version::V2 && method == "session/prompt" && A::V2_SESSIONS {
                return v2_prompt(agent, params, cx, &shared).await;
            }
            // "When closing cancels active foreground work, the Agent MUST send the final updates
            // for that work and the idle `state_update` with `stopReason: \"cancelled\"` before
            // responding successfully to `session/close`" (v2 `CloseSessionRequest`): the
            // session's turns, cancelled above, end before the handler answers.
            let _closing = match (&method[..], &session_id) {
                ("session/close", Some(session)) => Some(shared.turns.of(session).lock_owned().await),
                _ => None,
            };
            let acx =
                Context { conn: cx.conn, version: v, cancel: turn.clone(), advertised: shared.advertised.clone() };
            let result = agent.handle_request(v, &method, params, acx).await;
            if v == Version::V1 && method == "session/prompt" && turn.is_cancelled() {
                // "the Agent MUST respond to the session/prompt with StopReason::Cancelled",
                // errors of the aborted work included (v1 `CancelNotification`); what else the
                // handler answered (usage, `_meta`) is kept.
                let mut answer = result.ok().filter(serde_json::Value::is_object).unwrap_or_else(|| json!({}));
                answer["stopReason"] = json!("cancelled");
                return to_raw(answer);
            }
            to_raw(result?)
        })
    }

    fn notification(&self, method: String, params: Option<Raw>, _conn: Connection) -> BoxFuture<()> {
        if method == "session/cancel" {
            if let Some(session) = session_of(params.as_deref()) {
                self.shared.sessions.cancel(&session);
            }
        }
        let Some(version) = self.version.get() else {
            tracing::warn!("acp: notification {method} ignored: {}", not_initialized(&method));
            return Box::pin(async {});
        };
        let agent = self.agent.clone();
        let cx = Context {
            conn: self.conn.clone(),
            version,
            cancel: Default::default(),
            advertised: self.shared.advertised.clone(),
        };
        Box::pin(async move { agent.handle_notification(version, &method, params, cx).await })
    }
}

/// `initialize`: the version chosen, the handler of that version called, and its answer made to
/// state the version (and, in v2, the session capability).
async fn initialize<A: Speaks>(
    agent: &A,
    versions: &[Version],
    negotiated: &Negotiated,
    params: Option<Raw>,
    cx: Context,
) -> Result<Raw, RpcError> {
    let requested = requested_version(params.as_deref())?;
    let chosen = choose_version(versions, requested)?;
    let advertised = ClientCapabilities::of_initialize(chosen, params.as_deref());
    let advertise_to = cx.advertised.clone();
    let mut result = agent.handle_request(chosen, "initialize", params, Context { version: chosen, ..cx }).await?;
    // The answer states the negotiated version, whatever the handler filled in.
    result["protocolVersion"] = json!(chosen.number());
    if chosen == Version::V2 && A::V2_SESSIONS && result.is_object() {
        // v2: "Omitted and `null` are equivalent and mean the agent does not support the
        // `session/*` methods" (`AgentCapabilities.session`); the runtime serves them.
        let capabilities = &mut result["capabilities"];
        if !capabilities.is_object() {
            *capabilities = json!({});
        }
        if capabilities["session"].is_null() {
            capabilities["session"] = json!({});
        }
    }
    if let Some(advertised) = advertised {
        advertise_to.set(advertised);
    }
    negotiated.set(chosen);
    to_raw(result)
}

/// The version to answer an `initialize` asking for `requested` with, among the `versions`
/// served (sorted). The highest one at or below the one asked for, in both schemas' words:
/// "The protocol version the client specified if supported by the agent, or the latest protocol
/// version supported by the agent" (v1 `InitializeResponse.protocolVersion`), "The highest
/// protocol version supported by the agent that is at or below the version requested by the
/// client" (v2). When there is none (asked for 0, or a v2-only agent asked for 1) the texts
/// differ, and the newest version served decides: v2 says "If no such version exists,
/// initialization fails with error code -32022" (an error v1's `ErrorCode` does not have), v1
/// answers its latest version.
fn choose_version(versions: &[Version], requested: u16) -> Result<Version, RpcError> {
    if let Some(highest) = versions.iter().copied().filter(|v| v.number() <= requested).max() {
        return Ok(highest);
    }
    match versions.iter().copied().max() {
        Some(Version::V1) => Ok(Version::V1),
        _ => {
            let supported = versions.iter().map(|v| v2::ProtocolVersion(v.number())).collect();
            let data = v2::UnsupportedProtocolVersionErrorData::new(v2::ProtocolVersion(requested), supported);
            let error = RpcError::new(v2::ErrorCode::UnsupportedProtocolVersion.code(), "unsupported protocol version");
            Err(match serde_json::to_value(&data) {
                Ok(data) => error.with_data(data),
                Err(_) => error,
            })
        }
    }
}

/// A v2 `session/prompt`: the prompt checked, the user message inserted and reported, the
/// answer (its `messageId`) returned, and the turn started once the answer is queued.
async fn v2_prompt<A: Speaks>(
    agent: Arc<A>,
    params: Option<Raw>,
    cx: RequestContext,
    shared: &Shared,
) -> Result<Raw, RpcError> {
    let prompt: v2::PromptRequest = decode_params("session/prompt", params.as_deref())?;
    if prompt.prompt.is_empty() {
        // "Clients MUST NOT send an empty array. Agents MAY reject one with `-32602` without
        // inserting it." (v2 `PromptRequest.prompt`)
        return Err(RpcError::invalid_params("session/prompt", "prompt", "an empty prompt (minItems: 1)"));
    }
    let message_id = shared.ids.next();
    let cancel = CancellationToken::new();
    let registered = shared.sessions.register(prompt.session_id.0.clone(), cancel.clone());
    let context =
        Context { conn: cx.conn.clone(), version: Version::V2, cancel, advertised: shared.advertised.clone() };
    let turn = Turn::new(context, prompt.session_id.clone(), message_id.clone(), shared.ids.clone());
    let mut inserted = v2::UserMessage::new(message_id.clone());
    inserted.content = Patch::Value(prompt.prompt.clone());
    turn.update(v2::SessionUpdate::UserMessage(inserted)).await.map_err(|e| e.to_rpc())?;
    let serial = shared.turns.of(&prompt.session_id.0);
    cx.after_response(async move {
        let _registered = registered;
        let _serial = serial.lock_owned().await;
        run_turn(&*agent, prompt, turn).await;
    });
    to_raw(acp_types::support::rpc::encode(&v2::PromptResponse::new(message_id))?)
}

/// The turn: `running`, the handler, `idle` with its stop reason.
async fn run_turn<A: Speaks>(agent: &A, prompt: v2::PromptRequest, turn: Turn) {
    let state = v2::SessionUpdate::from;
    if turn.is_cancelled() {
        return; // cancelled while queued behind another turn: no foreground work started
    }
    if turn.update(state(v2::StateUpdate::Running(v2::RunningStateUpdate::new()))).await.is_err() {
        return; // the connection is gone
    }
    let conn = turn.cx.conn.clone();
    let cancel = turn.cx.cancel.clone();
    let grace = conn.cancel_grace();
    let work = AssertUnwindSafe(agent.handle_turn(prompt, turn.clone())).catch_unwind();
    let outcome = tokio::select! {
        done = work => done.unwrap_or_else(|_| Err(RpcError::internal("the prompt turn panicked"))),
        _ = async { cancel.cancelled().await; tokio::time::sleep(grace).await } => {
            Err(RpcError::new(RpcError::REQUEST_CANCELLED, "the turn did not stop within the grace period"))
        }
        _ = conn.closed() => return,
    };
    let stop = match outcome {
        _ if turn.is_cancelled() => v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::Cancelled),
        Ok(idle) => idle,
        Err(e) => {
            let mut error = v2::ErrorStopReason::new();
            error.error = Patch::Value(v2::Error::new(error_code(e.code), e.message.clone()));
            v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::Error(Box::new(error)))
        }
    };
    if let Err(e) = turn.update(state(v2::StateUpdate::Idle(Box::new(stop)))).await {
        tracing::warn!("acp: cannot report the end of a turn: {e}");
    }
}

/// A JSON-RPC error code as v2's `ErrorCode` (a named one where the schema names it).
fn error_code(code: i32) -> v2::ErrorCode {
    serde_json::from_value(json!(code)).unwrap_or(v2::ErrorCode::Other(code))
}

/// The `protocolVersion` an `initialize` asks for: a `uint16`, as in both schemas, so that 70000
/// or -1 is the same -32602 (naming `protocolVersion`) in every version.
fn requested_version(params: Option<&serde_json::value::RawValue>) -> Result<u16, RpcError> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "protocolVersion")]
        protocol_version: u16,
    }
    acp_types::support::rpc::decode_params::<Probe>("initialize", params).map(|p| p.protocol_version)
}
