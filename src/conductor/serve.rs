//! [`Conductor`]: a chain of components presented as one agent, on stdio, over any transport, or
//! per client connection of the network server; and the life of one chain: started when its
//! editor connects, routed by `router`, recorded by `trace`, ended as one unit by `chain`.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use super::chain::{self, Component, Started};
use super::router::{ComponentSide, EditorSide, Routes};
use super::trace::{Link, Trace};
use crate::jsonrpc::{Config, Connection, Pipe, Transport};
use crate::spawn::SpawnOptions;

/// How long a component is given to exit after its stdin closed (as the official conductor's
/// `SHUTDOWN_GRACE_PERIOD`, agent-client-protocol 5.0.0 src/acp_agent.rs:26).
const COMPONENT_GRACE: Duration = Duration::from_secs(1);
/// How long after `SIGTERM` a component's group is sent `SIGKILL`.
const COMPONENT_TERM_GRACE: Duration = Duration::from_millis(500);

/// A chain of components (zero or more proxies, then the agent) presented as one agent. Each
/// editor connection gets a chain of its own, started when it connects and ended when it leaves.
///
/// ```no_run
/// use acp_rpc::conductor::{Component, Conductor};
/// # async fn run() -> std::io::Result<()> {
/// let conductor = Conductor::new([
///     Component::new("my-proxy", ["--prefix", "> "]),
///     Component::new("my-agent", Vec::<String>::new()),
/// ])
/// .trace("chain.jsonl");
/// conductor.serve_stdio().await
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Conductor {
    components: Vec<Component>,
    options: SpawnOptions,
    config: Config,
    trace: Option<PathBuf>,
}

impl Conductor {
    /// A conductor of `components`, first to last (the last is the agent), with the default
    /// [`Config`] for every link but its cancellation grace (below). Components' stderr is passed through, and each is given 1 s
    /// to exit after its stdin closed, then `SIGTERM`, then `SIGKILL` 500 ms later: 1.5 s in
    /// all, within the 2 s that a client ending the conductor with
    /// [`AgentProcess::shutdown`](crate::spawn::AgentProcess::shutdown) gives it by default
    /// before its own `SIGTERM`, so the chain is gone before the conductor is signalled (nested
    /// graces must shrink; the official conductor's 1 s and 2 s, up to 3 s, outlast that
    /// client's 2.5 s).
    ///
    /// The links' cancellation grace (how long a cancelled request may wait for the answer from
    /// downstream before the conductor answers -32800 itself) is the default's times the number
    /// of components plus one: each proxy waits twice the default for its successor
    /// ([`proxy_config`](crate::proxy::proxy_config)), so the answer of the agent, or of the
    /// proxy nearest to it, reaches the editor instead of the conductor's own -32800.
    pub fn new(components: impl IntoIterator<Item = Component>) -> Conductor {
        let components: Vec<Component> = components.into_iter().collect();
        let default = Config::default();
        let hops = u32::try_from(components.len()).unwrap_or(u32::MAX).saturating_add(1);
        Conductor {
            options: SpawnOptions::default().grace(COMPONENT_GRACE).term_grace(COMPONENT_TERM_GRACE),
            config: Config { cancel_grace: default.cancel_grace.saturating_mul(hops), ..default },
            components,
            trace: None,
        }
    }

    /// How the components are started and ended ([`SpawnOptions::grace`] is the time each is
    /// given to exit after its stdin closed).
    pub fn spawn_options(mut self, options: SpawnOptions) -> Self {
        self.options = options;
        self
    }

    /// The configuration of every link (the editor's, on the network server, is the server's).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Records every message of every link to `path` (created or truncated when the chain
    /// starts), in the chain transcript format that `acp check` reads (see the module's
    /// documentation). On the network server, each client connection's chain writes
    /// `path.N`, N counting connections from 1.
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// The components, first to last.
    pub fn components(&self) -> &[Component] {
        &self.components
    }

    /// Serves the editor on stdin/stdout until it closes its side (or a component ends), then
    /// ends the chain.
    pub async fn serve_stdio(&self) -> io::Result<()> {
        self.serve_stdio_until(CancellationToken::new()).await
    }

    /// [`Conductor::serve_stdio`], also ended (as if the editor had closed its side) when `stop`
    /// fires: for a program that ends the chain on a signal.
    pub async fn serve_stdio_until(&self, stop: CancellationToken) -> io::Result<()> {
        self.serve_over_until(Pipe { reader: tokio::io::stdin(), writer: tokio::io::stdout() }, stop).await
    }

    /// Serves the editor on `transport` (a [`Pipe`], or the [`Channels`](crate::jsonrpc::Channels)
    /// of a network transport) until it closes its side, then ends the chain.
    ///
    /// Resolves once every component is gone. An error: a component could not be started, the
    /// trace file could not be created, reading the editor failed, or a component ended before
    /// the editor left (its pending requests were answered with an error naming it, and the
    /// rest of the chain was ended).
    pub async fn serve_over<T: Transport>(&self, transport: T) -> io::Result<()> {
        self.serve_over_until(transport, CancellationToken::new()).await
    }

    /// [`Conductor::serve_over`], also ended when `stop` fires.
    pub async fn serve_over_until<T: Transport>(&self, transport: T, stop: CancellationToken) -> io::Result<()> {
        self.run(transport, self.config.clone(), self.trace.clone(), stop).await
    }

    /// The network server (Streamable HTTP, and WebSocket with feature `ws`), each client
    /// connection served by a chain of its own.
    #[cfg(feature = "http")]
    pub fn server(self) -> crate::net::server::Server {
        let conductor = std::sync::Arc::new(self);
        let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        crate::net::server::Server::per_connection(move |channels, config| {
            let conductor = conductor.clone();
            let n = connections.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let trace = conductor.trace.as_ref().map(|path| {
                let mut numbered = path.clone().into_os_string();
                numbered.push(format!(".{n}"));
                PathBuf::from(numbered)
            });
            async move { conductor.run(channels, config, trace, CancellationToken::new()).await }
        })
    }

    /// One chain, for one editor connection.
    async fn run<T: Transport>(
        &self,
        transport: T,
        config: Config,
        trace: Option<PathBuf>,
        stop: CancellationToken,
    ) -> io::Result<()> {
        let trace =
            match trace {
                Some(path) => Some(Trace::create(&path).map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot create the trace {}: {e}", path.display()))
                })?),
                None => None,
            };
        let (spawned, started) = chain::start(&self.components, &self.options).await?;
        let routes = Routes::new(self.components.iter().map(Component::name).collect());
        let mut links = Vec::with_capacity(started.len());
        let mut drivers = Vec::with_capacity(started.len());
        // Cuts the components' links once their processes are gone: a process that left its
        // component's process group (`setsid`) may hold the pipe open for ever.
        let cut = CancellationToken::new();
        for (index, Started { stdin, stdout }) in started.into_iter().enumerate() {
            let link = Link {
                transport: Pipe { reader: stdout, writer: stdin },
                link: index + 1,
                trace: trace.clone(),
                stop: cut.child_token(),
            };
            let routes = routes.clone();
            let (conn, driver) = Connection::over(link, self.config.clone(), move |_| ComponentSide { routes, index });
            links.push(conn);
            drivers.push(driver);
        }
        // Cut when told to stop or when a component ends early: the editor's connection then
        // closes as if the editor had left, writing the answers it still has.
        let editor_stop = stop.child_token();
        let link = Link { transport, link: 0, trace, stop: editor_stop.clone() };
        let (editor, editor_driver) = Connection::over(link, config, |_| EditorSide(routes.clone()));
        routes.connect(editor, links);

        // Set once the editor's side is over: a component ending after that is the teardown.
        let teardown = CancellationToken::new();
        let early = CancellationToken::new();
        let watchers: Vec<_> = drivers
            .into_iter()
            .enumerate()
            .map(|(index, driver)| {
                let ends = Ends { editor_stop: editor_stop.clone(), teardown: teardown.clone(), early: early.clone() };
                tokio::spawn(watch(driver, index, routes.clone(), ends))
            })
            .collect();

        tokio::pin!(editor_driver);
        let served = tokio::select! {
            served = &mut editor_driver => served,
            _ = stop.cancelled() => {
                routes.end("the conductor was stopped");
                editor_driver.await
            }
        };
        teardown.cancel();
        routes.end("the editor closed its side");
        spawned.end().await;
        cut.cancel();
        for watcher in watchers {
            let _ = watcher.await;
        }
        match (early.is_cancelled(), routes.why()) {
            (true, Some(why)) => Err(io::Error::other(why)),
            _ => served,
        }
    }
}

/// What a component's end sets off in its chain.
struct Ends {
    /// Closes the editor's side.
    editor_stop: CancellationToken,
    /// Set once the editor's side is over: a component ending after that is the teardown.
    teardown: CancellationToken,
    /// Set when a component ended first: the chain's result is then the error that ended it.
    early: CancellationToken,
}

/// Drives the connection to component `index`; when it ends before the teardown, ends the chain
/// (the editor's side closes, naming the component).
async fn watch(
    driver: impl std::future::Future<Output = io::Result<()>>,
    index: usize,
    routes: Arc<Routes>,
    ends: Ends,
) {
    let result = driver.await;
    if ends.teardown.is_cancelled() {
        return;
    }
    let why = match result {
        Ok(()) => format!("{} ended", routes.name(index)),
        Err(e) => format!("{} failed: {e}", routes.name(index)),
    };
    if routes.end(why.clone()) {
        tracing::warn!("acp conductor: {why}; ending the chain");
        ends.early.cancel();
    }
    ends.editor_stop.cancel();
}
