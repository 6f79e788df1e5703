//! Serving an agent on a connection: each message of the client routed to `initialize`, the v2
//! prompt turn, or the handler of the negotiated version, with the lifecycle rules the runtime
//! keeps for the agent (ids in [`crate::rules`]): nothing but `initialize` first (`init.first`), a
//! v1 prompt answered `cancelled` once its session was cancelled (`turn.v1-cancelled`), and a
//! v2 session's turns ended before `session/close` is answered.

use super::context::{Advertised, AgentContext};
use super::handler::AgentHandler;
use super::initialize::initialize;
use super::prompt::{v2_prompt, Turns};
use crate::jsonrpc::{BoxFuture, Config, Connection, Pipe, Raw, RequestContext, Service, Transport};
use crate::lifecycle::{not_initialized, session_of, Negotiated, SessionWork};
use crate::rules::RuleId;
use acp_types::support::rpc::RpcError;
use acp_types::{MethodName, Version};
use serde_json::json;
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// Serves `agent` over `reader`/`writer`, speaking the protocol `versions` (e.g.
/// [`Version::ALL`]). Returns the connection and the future that drives it (spawn or await it).
///
/// An agent and a client in one process, over an in-memory pipe:
///
/// ```no_run
/// use acp_rpc::types::{v1, Version};
/// use acp_rpc::{AgentContext, ClientContext, Config, V1};
///
/// struct Agent;
/// impl v1::methods::agent::Handler<AgentContext> for Agent {}
/// struct Client;
/// impl v1::methods::client::Handler<ClientContext> for Client {}
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let (agent_end, client_end) = tokio::io::duplex(64 * 1024);
/// let (read, write) = tokio::io::split(agent_end);
/// let (_, agent) = acp_rpc::agent::serve(V1(Agent), &[Version::V1], read, write, Config::default());
/// tokio::spawn(agent);
/// let (read, write) = tokio::io::split(client_end);
/// let (conn, client) = acp_rpc::client::connect(V1(Client), read, write, Config::default());
/// tokio::spawn(client);
/// conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await?;
/// # Ok(()) }
/// ```
pub fn serve<A, R, W>(
    agent: A,
    versions: &[Version],
    reader: R,
    writer: W,
    config: Config,
) -> (Connection, impl Future<Output = std::io::Result<()>> + Send)
where
    A: AgentHandler,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_over(Arc::new(agent), versions, Pipe { reader, writer }, config)
}

/// Serves `agent` over any [`Transport`] (a [`Pipe`], or the
/// [`Channels`](crate::jsonrpc::Channels) a network listener hands each of its connections). One
/// `Arc` of the agent serves any number of connections, each with its own sessions and
/// negotiated version.
pub fn serve_over<A: AgentHandler, T: Transport>(
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
///
/// ```no_run
/// use acp_rpc::types::{v1, Version};
/// use acp_rpc::AgentContext;
///
/// struct Agent; // answers -32601 to all but what it implements
/// impl v1::methods::agent::Handler<AgentContext> for Agent {}
///
/// #[tokio::main]
/// async fn main() -> std::io::Result<()> {
///     acp_rpc::agent::serve_stdio(acp_rpc::V1(Agent), &[Version::V1]).await
/// }
/// ```
pub async fn serve_stdio<A: AgentHandler>(agent: A, versions: &[Version]) -> std::io::Result<()> {
    let (_, driver) = serve(agent, versions, tokio::io::stdin(), tokio::io::stdout(), Config::default());
    driver.await
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
    /// Running work by session, for `session/cancel` and `session/close`.
    work: Arc<SessionWork>,
    /// v2: the turns of each session, one at a time.
    turns: Turns,
    /// What the client advertised in `initialize`.
    advertised: Advertised,
}

/// -32600 for anything but `initialize` before `initialize` has succeeded (rule `init.first`).
fn refused(method: &str) -> RpcError {
    not_initialized(method, "the first request must be initialize", Some(RuleId::InitFirst))
}

fn to_raw(value: serde_json::Value) -> Result<Raw, RpcError> {
    acp_types::support::json::to_raw_value(&value)
        .map_err(|e| RpcError::internal(format!("cannot encode the result: {e}")))
}

impl<A: AgentHandler> Service for AgentService<A> {
    fn request(&self, method: String, params: Option<Raw>, cx: RequestContext) -> BoxFuture<Result<Raw, RpcError>> {
        let session = session_of(params.as_deref());
        let name = MethodName::of(&method);
        if matches!(name, Some(MethodName::SessionClose)) {
            // Closing a session ends its turns (`cancelled`).
            if let Some(session) = &session {
                self.shared.work.cancel(session);
            }
        }
        let agent = self.agent.clone();
        let versions = self.versions.clone();
        let negotiated = self.version.clone();
        let shared = self.shared.clone();
        // Registered now, while the reader is still on this message: a `session/cancel` right
        // behind it must find it.
        let cancel = cx.cancellation().child_token();
        let registered = session.clone().map(|s| self.shared.work.register(s, cancel.clone()));
        Box::pin(async move {
            let _registered = registered;
            let acx =
                AgentContext::new(cx.connection().clone(), Version::V1, cancel.clone(), shared.advertised.clone());
            if matches!(name, Some(MethodName::Initialize)) {
                return to_raw(initialize(&*agent, &versions, &negotiated, params, acx).await?);
            }
            let Some(v) = negotiated.get() else {
                return Err(refused(&method));
            };
            if v == Version::V2 && matches!(name, Some(MethodName::SessionPrompt)) && A::V2_SESSIONS {
                return to_raw(v2_prompt(agent, params, cx, &shared.turns, &shared.work, &shared.advertised).await?);
            }
            // "When closing cancels active foreground work, the Agent MUST send the final updates
            // for that work and the idle `state_update` with `stopReason: \"cancelled\"` before
            // responding successfully to `session/close`" (v2 `CloseSessionRequest`): the
            // session's turns, cancelled above, end before the handler answers.
            let _closing = match (&session, name) {
                (Some(session), Some(MethodName::SessionClose)) => Some(shared.turns.of(session).lock_owned().await),
                _ => None,
            };
            let acx = AgentContext { version: v, ..acx };
            let result = agent.handle_request(v, &method, params, acx).await;
            if v == Version::V1 && matches!(name, Some(MethodName::SessionPrompt)) && cancel.is_cancelled() {
                // Rule `turn.v1-cancelled`: "the Agent MUST respond to the session/prompt with
                // StopReason::Cancelled", errors of the aborted work included (v1
                // `CancelNotification`); what else the handler answered (usage, `_meta`) is kept.
                let mut answer = result.ok().filter(serde_json::Value::is_object).unwrap_or_else(|| json!({}));
                answer["stopReason"] = json!("cancelled");
                return to_raw(answer);
            }
            to_raw(result?)
        })
    }

    fn notification(&self, method: String, params: Option<Raw>, _conn: Connection) -> BoxFuture<()> {
        if matches!(MethodName::of(&method), Some(MethodName::SessionCancel)) {
            if let Some(session) = session_of(params.as_deref()) {
                self.shared.work.cancel(&session);
            }
        }
        let Some(version) = self.version.get() else {
            tracing::warn!("acp: notification {method} ignored: {}", refused(&method));
            return Box::pin(async {});
        };
        let agent = self.agent.clone();
        let cx = AgentContext::new(self.conn.clone(), version, Default::default(), self.shared.advertised.clone());
        Box::pin(async move { agent.handle_notification(version, &method, params, cx).await })
    }
}
