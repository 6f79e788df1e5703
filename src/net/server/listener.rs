//! The listener: [`Server`], which accepts TCP connections and serves HTTP/1.1 (and WebSocket
//! upgrades) on each, over TLS when it was given an identity (feature `tls`), and
//! [`ServerHandle`], which shuts it down.

use super::auth::Auth;
use super::limits::Limits;
use super::registry::Registry;
use super::routes;
use super::shared::{Shared, Slot, Spawner};
use crate::agent::{serve_over, AgentHandler};
use crate::jsonrpc::{Channels, Config};
use crate::net::guard::Guard;
use acp_types::Version;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// An agent served on a listener; see the module's documentation.
pub struct Server {
    spawn: Spawner,
    limits: Limits,
    auth: Option<Auth>,
    origins: Vec<String>,
    hosts: Vec<String>,
    insecure_no_auth: bool,
    config: Config,
    #[cfg(feature = "tls")]
    tls: Option<crate::net::tls::Identity>,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("Server");
        debug.field("limits", &self.limits).field("auth", &self.auth);
        debug.field("origins", &self.origins).field("hosts", &self.hosts);
        #[cfg(feature = "tls")]
        debug.field("tls", &self.tls.is_some());
        debug.finish_non_exhaustive()
    }
}

impl Server {
    /// Serves `agent`, speaking `versions` (e.g. [`Version::ALL`]), with the default
    /// [`Limits`], no authentication and the default connection [`Config`].
    pub fn new<A: AgentHandler>(agent: Arc<A>, versions: &[Version]) -> Self {
        let versions = versions.to_vec();
        Server::per_connection(move |channels, config| serve_over(agent.clone(), &versions, channels, config).1)
    }

    /// Serves, on each client connection, whatever `start` runs on the connection's
    /// [`Channels`] (the client's messages in, ours out) with its [`Config`]: the generic entry
    /// point under [`Server::new`], for what is not one [`AgentHandler`] (a raw
    /// [`Service`](crate::jsonrpc::Service) through [`Connection::over`](crate::jsonrpc::Connection::over),
    /// or a conductor's chain per client). The future `start` returns is awaited on the
    /// server's tasks, so [`ServerHandle::shutdown`] waits for it (at most
    /// [`Limits::shutdown_grace`]); it should end once the client's side of the channels closes.
    pub fn per_connection<F, Fut>(start: F) -> Self
    where
        F: Fn(Channels, Config) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = std::io::Result<()>> + Send + 'static,
    {
        let tasks = TaskTracker::new();
        let agent_tasks = tasks.clone();
        let spawn = move |channels: Channels, config: Config| {
            let serving = start(channels, config);
            agent_tasks.spawn(async move {
                if let Err(e) = serving.await {
                    tracing::debug!("acp server: connection ended: {e}");
                }
            });
        };
        Server {
            spawn: Arc::new(spawn),
            limits: Limits::default(),
            auth: None,
            origins: Vec::new(),
            hosts: Vec::new(),
            insecure_no_auth: false,
            config: Config::default(),
            #[cfg(feature = "tls")]
            tls: None,
            stop: CancellationToken::new(),
            tasks,
        }
    }

    /// Replaces the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Checks every request with `auth` before anything else (refused: `401` by default).
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Serves requests from web pages of these origins (`https://app.example`, `http://localhost:3000`:
    /// scheme, host and port, as a browser sends them in `Origin`; `null` allows sandboxed and
    /// `file://` pages, which any page can open), and answers their CORS preflights. Requests
    /// with any other `Origin` are refused `403` (a WebSocket upgrade too: browsers apply no CORS
    /// to WebSockets, this check is all that keeps a page out); requests without one (editors,
    /// command-line and SDK clients) are not affected. Adds to the origins already allowed.
    pub fn allow_origins<S: Into<String>>(mut self, origins: impl IntoIterator<Item = S>) -> Self {
        self.origins.extend(origins.into_iter().map(Into::into));
        self
    }

    /// Serves requests whose `Host` is one of these names too (`agent.example`, any port, or
    /// `agent.example:8443`), besides the names of the bound address: for a loopback bind
    /// `localhost`, `127.0.0.1` and `[::1]` with the bound port. Other names are refused `403`
    /// (a name rebound to our address by DNS shows up there). Beyond loopback with [`Server::auth`]
    /// every name is served.
    pub fn allow_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.hosts.extend(hosts.into_iter().map(Into::into));
        self
    }

    /// Lets [`Server::serve`] serve beyond loopback without [`Server::auth`]: anyone who reaches
    /// the port drives the agent. Without it, a listener bound to another address than
    /// loopback needs `auth`.
    pub fn insecure_no_auth(mut self) -> Self {
        self.insecure_no_auth = true;
        self
    }

    /// The configuration of each agent connection (its `max_message_size` is set to
    /// [`Limits::max_message_size`]).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Serves TLS (`https://`, `wss://`) with `identity`, and nothing in the clear (feature
    /// `tls`). The handshake counts against [`Limits::header_read_timeout`]: a client that does
    /// not finish it in time is dropped.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, identity: crate::net::tls::Identity) -> Self {
        self.tls = Some(identity);
        self
    }

    /// A handle that shuts the server down.
    pub fn handle(&self) -> ServerHandle {
        ServerHandle { stop: self.stop.clone(), tasks: self.tasks.clone(), grace: self.limits.shutdown_grace }
    }

    fn shared(self, addr: std::net::SocketAddr) -> Arc<Shared> {
        let guard = Guard::new(addr, self.auth.is_some(), &self.origins, &self.hosts);
        #[cfg(feature = "tls")]
        let tls = self.tls.map(|identity| tokio_rustls::TlsAcceptor::from(identity.config));
        let mut config = self.config;
        config.max_message_size = self.limits.max_message_size;
        Arc::new(Shared {
            spawn: self.spawn,
            config,
            limits: Arc::new(self.limits),
            auth: self.auth,
            guard,
            registry: Registry::default(),
            #[cfg(feature = "tls")]
            tls,
            stop: self.stop,
            tasks: self.tasks,
        })
    }

    /// Accepts connections on `listener` until [`ServerHandle::shutdown`], then waits (at most
    /// [`Limits::shutdown_grace`]) for them to end. Past [`Limits::max_tcp_connections`] a
    /// connection is closed as soon as it is accepted.
    ///
    /// A listener bound beyond loopback (`0.0.0.0`, a LAN address) without [`Server::auth`] is
    /// an error of kind `PermissionDenied`, unless [`Server::insecure_no_auth`] was called.
    pub async fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() && self.auth.is_none() && !self.insecure_no_auth {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("refusing to serve on {addr} without a credential: beyond loopback anyone who reaches the port would drive the agent (set Server::auth, or Server::insecure_no_auth)"),
            ));
        }
        let shared = self.shared(addr);
        let slots = Arc::new(Semaphore::new(shared.limits.max_tcp_connections));
        loop {
            let accepted = tokio::select! {
                _ = shared.stop.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, or a connection reset before it was accepted: the
                    // listener itself is fine; pause so a persistent error does not spin.
                    tracing::warn!("acp server: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Ok(permit) = slots.clone().try_acquire_owned() else {
                tracing::warn!("acp server: {} connections open; refusing one more", shared.limits.max_tcp_connections);
                drop(stream);
                continue;
            };
            let slot = Slot::new(permit);
            let _ = stream.set_nodelay(true);
            let shared = shared.clone();
            shared.tasks.clone().spawn(async move {
                #[cfg(feature = "tls")]
                if let Some(acceptor) = shared.tls.clone() {
                    if let Some(stream) = accept_tls(&shared, &acceptor, stream).await {
                        serve_io(shared, stream, slot).await;
                    }
                    return;
                }
                serve_io(shared, stream, slot).await;
            });
        }
        drop(listener);
        shared.registry.close_all();
        shared.tasks.close();
        let _ = tokio::time::timeout(shared.limits.shutdown_grace, shared.tasks.wait()).await;
        Ok(())
    }
}

/// The TLS handshake of one connection, within the header timeout and until shutdown; `None`
/// (logged) when it fails, the stream then closed.
#[cfg(feature = "tls")]
async fn accept_tls(
    shared: &Shared,
    acceptor: &tokio_rustls::TlsAcceptor,
    stream: tokio::net::TcpStream,
) -> Option<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    let handshake = tokio::time::timeout(shared.limits.header_read_timeout, acceptor.accept(stream));
    tokio::select! {
        _ = shared.stop.cancelled() => None,
        result = handshake => match result {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(e)) => {
                tracing::debug!("acp server: TLS handshake failed: {e}");
                None
            }
            Err(_) => {
                tracing::debug!("acp server: TLS handshake not done within the header timeout");
                None
            }
        },
    }
}

/// Serves HTTP/1.1 (and upgrades) on one stream until it closes or the server stops. Each
/// request carries the connection's `slot`, so that a WebSocket session keeps it after the upgrade.
async fn serve_io<IO: AsyncRead + AsyncWrite + Unpin + Send + 'static>(shared: Arc<Shared>, io: IO, slot: Slot) {
    let service = {
        let shared = shared.clone();
        hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(slot.clone());
            let shared = shared.clone();
            async move { Ok::<_, Infallible>(routes::handle(shared, req).await) }
        })
    };
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(shared.limits.header_read_timeout)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!("acp server: HTTP connection ended: {e}");
            }
        }
        _ = shared.stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(shared.limits.shutdown_grace, conn).await;
        }
    }
}

/// Stops a [`Server`]: see [`ServerHandle::shutdown`].
#[derive(Debug, Clone)]
pub struct ServerHandle {
    stop: CancellationToken,
    tasks: TaskTracker,
    grace: std::time::Duration,
}

impl ServerHandle {
    /// Stops accepting, closes every connection (SSE streams end, WebSockets get close 1001,
    /// agents see their peer gone), and waits for them, at most [`Limits::shutdown_grace`].
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.tasks.close();
        let _ = tokio::time::timeout(self.grace, self.tasks.wait()).await;
    }

    /// Whether shutdown has begun.
    pub fn is_shut_down(&self) -> bool {
        self.stop.is_cancelled()
    }
}
