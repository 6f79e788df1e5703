//! Starting the client's end: over a pipe or any transport, or by spawning the agent as a child
//! process in a process group of its own.

use super::connection::ClientConnection;
use super::handler::ClientHandler;
use super::service::ClientService;
use crate::jsonrpc::{Config, Connection, Pipe, Transport};
use crate::lifecycle::{Negotiated, SessionWork};
use crate::spawn::{AgentProcess, SpawnOptions};
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// Runs `client` over `reader`/`writer` (the agent's stdout and stdin). Returns the connection
/// and the future that drives it (spawn or await it).
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
pub fn connect<C, R, W>(
    client: C,
    reader: R,
    writer: W,
    config: Config,
) -> (ClientConnection, impl Future<Output = std::io::Result<()>> + Send)
where
    C: ClientHandler,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    connect_over(client, Pipe { reader, writer }, config)
}

/// Runs `client` over any [`Transport`]: a [`Pipe`], or the
/// [`Channels`](crate::jsonrpc::Channels) of a network transport (see the `http`/`ws` features).
pub fn connect_over<C: ClientHandler, T: Transport>(
    client: C,
    transport: T,
    config: Config,
) -> (ClientConnection, impl Future<Output = std::io::Result<()>> + Send) {
    let client = Arc::new(client);
    let version = Negotiated::default();
    let work: Arc<SessionWork> = Arc::default();
    let turns = Arc::default();
    let routes = Arc::default();
    let states = Arc::default();
    let (v, w, t, r, s) = (version.clone(), work.clone(), Arc::clone(&turns), Arc::clone(&routes), Arc::clone(&states));
    let (conn, driver) = Connection::over(transport, config, move |conn| ClientService {
        client,
        version: v,
        work: w,
        turns: t,
        routes: r,
        states: s,
        conn,
    });
    let auth_methods = Arc::default();
    (ClientConnection { conn, version, work, turns, routes, states, speaks: C::VERSIONS, auth_methods }, driver)
}

/// Spawns an agent process (`program args…`) with piped stdin/stdout (its stderr passes through)
/// and connects `client` to it: [`spawn_agent_with`] with the default [`SpawnOptions`].
pub fn spawn_agent<C: ClientHandler>(
    client: C,
    program: &str,
    args: &[String],
    config: Config,
) -> std::io::Result<(ClientConnection, impl Future<Output = std::io::Result<()>> + Send, AgentProcess)> {
    spawn_agent_with(client, program, args, config, &SpawnOptions::default())
}

/// Spawns an agent process (`program args…`, on Unix in a process group of its own, stderr as
/// `options` says) and connects `client` to it. Dropping the returned [`AgentProcess`] ends the
/// agent with its whole group; [`AgentProcess::shutdown`] does so gracefully.
pub fn spawn_agent_with<C: ClientHandler>(
    client: C,
    program: &str,
    args: &[String],
    config: Config,
    options: &SpawnOptions,
) -> std::io::Result<(ClientConnection, impl Future<Output = std::io::Result<()>> + Send, AgentProcess)> {
    let (process, stdin, stdout) = crate::spawn::spawn(program, args, options)?;
    let (conn, driver) = connect(client, stdout, stdin, config);
    Ok((conn, driver, process))
}
