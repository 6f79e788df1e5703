//! [`Shared`]: what every request of one server shares (the agent to start per connection, the
//! limits, the request checks, the registry of connections, TLS, the shutdown token and the tasks to wait for), and
//! [`Slot`], one TCP connection's place under `Limits::max_tcp_connections`.

use super::auth::Auth;
use super::limits::Limits;
use super::registry::Registry;
use crate::jsonrpc::{Channels, Config};
use crate::net::guard::Guard;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Starts the agent on one connection's channels (the agent's type erased).
pub(super) type Spawner = Arc<dyn Fn(Channels, Config) + Send + Sync>;

/// What every request of one server shares.
pub(super) struct Shared {
    pub(super) spawn: Spawner,
    pub(super) config: Config,
    pub(super) limits: Arc<Limits>,
    pub(super) auth: Option<Auth>,
    /// The `Origin` and `Host` checks, run before `auth`.
    pub(super) guard: Guard,
    pub(super) registry: Registry,
    /// TLS on every connection, when the server was given an identity.
    #[cfg(feature = "tls")]
    pub(super) tls: Option<tokio_rustls::TlsAcceptor>,
    /// Cancelled by [`ServerHandle::shutdown`](super::listener::ServerHandle::shutdown); each connection's token is a child.
    pub(super) stop: CancellationToken,
    pub(super) tasks: TaskTracker,
}

/// One TCP connection's place under [`Limits::max_tcp_connections`], held by the task serving
/// it and, through each request's extensions, by a WebSocket session it is upgraded to: the
/// place is free again only when both have ended (hyper ends the HTTP task at the upgrade, while
/// the socket lives on in the session).
#[derive(Clone)]
pub(super) struct Slot {
    _permit: Arc<tokio::sync::OwnedSemaphorePermit>,
}

impl Slot {
    pub(super) fn new(permit: tokio::sync::OwnedSemaphorePermit) -> Slot {
        Slot { _permit: Arc::new(permit) }
    }
}

type Inbound = tokio::sync::mpsc::Sender<Vec<u8>>;
type Outbound = tokio::sync::mpsc::Receiver<Vec<u8>>;

impl Shared {
    /// A new agent connection: the agent started on fresh channels, whose other ends are
    /// returned (its output bounded: the back-pressure that makes its sends wait).
    pub(super) fn start_agent(&self) -> (Inbound, Outbound) {
        let queue = self.limits.agent_output_queue.max(1);
        let (in_tx, in_rx) = tokio::sync::mpsc::channel(queue);
        let (out_tx, out_rx) = tokio::sync::mpsc::channel(queue);
        tracing::debug!("acp server: agent connection started");
        (self.spawn)(Channels { incoming: in_rx, outgoing: out_tx }, self.config.clone());
        (in_tx, out_rx)
    }
}
