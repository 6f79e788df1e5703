//! Serving an agent: one binary speaks v1 and v2. On `initialize` the agent answers the highest
//! version it supports that is at most the one requested (-32022 when there is none), and decodes
//! everything after with that version's generated tables.

use crate::connection::{BoxFuture, Config, Connection, Raw, RequestContext, Service};
use crate::session::{session_of, Context, Negotiated, Sessions};
use acp_types::support::rpc::RpcError;
use acp_types::{v1, v2, Version};
use serde_json::json;
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// An agent: the generated handler traits of both versions (every method has a default, so an
/// agent implements only what it supports; an empty `impl` for a version it does not speak).
pub trait Agent: v1::methods::agent::Handler<Context> + v2::methods::agent::Handler<Context> + 'static {}
impl<T: v1::methods::agent::Handler<Context> + v2::methods::agent::Handler<Context> + 'static> Agent for T {}

/// -32600 for anything but `initialize` before `initialize` has succeeded.
pub fn not_initialized(method: &str) -> RpcError {
    RpcError::new(
        RpcError::INVALID_REQUEST,
        format!("{method} before initialize: the first request must be initialize"),
    )
    .with_data(json!({ "method": method }))
}

fn to_raw(value: serde_json::Value) -> Result<Raw, RpcError> {
    serde_json::value::to_raw_value(&value).map_err(|e| RpcError::internal(format!("cannot encode the result: {e}")))
}

struct AgentService<A> {
    agent: Arc<A>,
    versions: Vec<Version>,
    version: Negotiated,
    sessions: Arc<Sessions>,
    conn: Connection,
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
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let agent = Arc::new(agent);
    let mut versions = versions.to_vec();
    versions.sort();
    versions.dedup();
    Connection::new(reader, writer, config, move |conn| AgentService {
        agent,
        versions,
        version: Negotiated::default(),
        sessions: Arc::default(),
        conn,
    })
}

/// Serves `agent` on this process's stdin/stdout (all logging goes to stderr, never stdout).
pub async fn serve_stdio<A: Agent>(agent: A, versions: &[Version]) -> std::io::Result<()> {
    let (_, driver) = serve(agent, versions, tokio::io::stdin(), tokio::io::stdout(), Config::default());
    driver.await
}

impl<A: Agent> Service for AgentService<A> {
    fn request(&self, method: String, params: Option<Raw>, cx: RequestContext) -> BoxFuture<Result<Raw, RpcError>> {
        let agent = self.agent.clone();
        let versions = self.versions.clone();
        let version = self.version.clone();
        let sessions = self.sessions.clone();
        // Registered now, while the reader is still on this message: a `session/cancel` right
        // behind it must find it.
        let turn = cx.cancel.child_token();
        let registered = session_of(params.as_deref()).map(|s| sessions.register(s, turn.clone()));
        Box::pin(async move {
            let _registered = registered;
            if method == "initialize" {
                let requested = requested_version(params.as_deref())?;
                let chosen = versions.iter().copied().filter(|v| v.number() <= requested).max().ok_or_else(|| {
                    let supported: Vec<u16> = versions.iter().map(|v| v.number()).collect();
                    RpcError::new(-32022, "unsupported protocol version")
                        .with_data(json!({ "requested": requested, "supported": supported }))
                })?;
                let acx = Context { conn: cx.conn, version: chosen, cancel: turn };
                let mut result = dispatch(&*agent, chosen, &method, params, acx).await?;
                // The answer states the negotiated version, whatever the handler filled in.
                result["protocolVersion"] = json!(chosen.number());
                version.set(chosen);
                return to_raw(result);
            }
            let Some(v) = version.get() else {
                return Err(not_initialized(&method));
            };
            let acx = Context { conn: cx.conn, version: v, cancel: turn };
            to_raw(dispatch(&*agent, v, &method, params, acx).await?)
        })
    }

    fn notification(&self, method: String, params: Option<Raw>, _conn: Connection) -> BoxFuture<()> {
        if method == "session/cancel" {
            if let Some(session) = session_of(params.as_deref()) {
                self.sessions.cancel(&session);
            }
        }
        let Some(version) = self.version.get() else {
            tracing::warn!("acp: notification {method} ignored: {}", not_initialized(&method));
            return Box::pin(async {});
        };
        let agent = self.agent.clone();
        let cx = Context { conn: self.conn.clone(), version, cancel: Default::default() };
        Box::pin(async move {
            let ignored = |e: RpcError| tracing::warn!("acp: notification {method} ignored: {e}");
            match version {
                Version::V1 => match v1::methods::agent::Notification::decode_raw(&method, params.into()) {
                    Ok(n) => v1::methods::agent::dispatch_notification(&*agent, n, cx).await,
                    Err(e) => ignored(e),
                },
                Version::V2 => match v2::methods::agent::Notification::decode_raw(&method, params.into()) {
                    Ok(n) => v2::methods::agent::dispatch_notification(&*agent, n, cx).await,
                    Err(e) => ignored(e),
                },
            }
        })
    }
}

async fn dispatch<A: Agent>(
    agent: &A,
    version: Version,
    method: &str,
    params: Option<Raw>,
    cx: Context,
) -> Result<serde_json::Value, RpcError> {
    match version {
        Version::V1 => {
            let request = v1::methods::agent::Request::decode_raw(method, params.into())?;
            v1::methods::agent::dispatch_request(agent, request, cx).await?.result()
        }
        Version::V2 => {
            let request = v2::methods::agent::Request::decode_raw(method, params.into())?;
            v2::methods::agent::dispatch_request(agent, request, cx).await?.result()
        }
    }
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
