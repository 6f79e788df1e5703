//! The JSON-RPC 2.0 layer under the roles, for transports, tools and tests: most users need none
//! of it (the [`agent`](crate::agent) and [`client`](crate::client) modules build on it). One
//! connection: correlation of our requests with their responses, concurrent handling of the
//! peer's requests (a handler may await requests to the peer: the reading loop never waits on a
//! handler), notifications handled one at a time in arrival order, `$/cancel_request` both ways,
//! and the JSON-RPC error a peer expects for anything malformed. The connection keeps serving
//! after every fault; it ends when the peer closes its side.
//!
//! One job per module: [`framing`] cuts the byte stream into lines (linear time, bounded size);
//! `classify` judges a line alone (pure); `reader` reads the transport and routes each line;
//! `handlers` runs the peer's requests; `notifications` queues the peer's notifications and
//! handles them in order; `calls` makes our calls and correlates the answers; `writer` owns the
//! write queue; `driver` starts these tasks and closes them in order; `transport` is what the
//! reader reads and the writer writes (a pipe, or message channels).

mod calls;
mod classify;
mod driver;
pub mod framing;
mod handlers;
mod notifications;
mod reader;
mod transport;
mod writer;

pub use classify::{classify, classify_line, Incoming};
pub use transport::{ChannelSource, Channels, Pipe, PipeWriter, Sink, Source, Transport};

use acp_types::support::rpc::RpcError;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::Error;
use crate::sync::lock;
use notifications::Note;

/// `$/cancel_request`, the protocol-level method both ends send (the same in every version).
pub(crate) const CANCEL_REQUEST: &str =
    <acp_types::v1::methods::CancelRequest as acp_types::support::rpc::Method>::METHOD;

/// Raw params or result, as received.
pub type Raw = Box<RawValue>;

/// A boxed future, as the [`Service`] returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Limits and timings of a connection.
#[derive(Debug, Clone)]
pub struct Config {
    /// The longest message accepted, in bytes; a longer one is discarded as it streams in and
    /// answered -32600 when its id could be read. Default 128 MiB.
    pub max_message_size: usize,
    /// How long a cancelled handler may still finish with its own answer before it is dropped
    /// and the request answered -32800. Default 2 s.
    pub cancel_grace: Duration,
    /// Messages queued for writing before senders wait (backpressure when the peer stops
    /// reading). Default 1024.
    pub write_queue: usize,
    /// A warning is logged when this many notifications wait for their handler. Default 10 000.
    pub notification_backlog_warning: usize,
    /// Bytes of notifications waiting for their handler at which reading pauses until the
    /// handlers catch up (the peer's writes then block: backpressure). Reading goes on while one
    /// of our calls awaits its answer, which may be behind what we would stop reading (a handler
    /// awaiting it would deadlock). Default 16 MiB.
    pub notification_queue_pause: usize,
    /// Bytes of notifications waiting at which a peer that keeps sending while one of our calls
    /// is pending (so that reading cannot pause) is given up on: the connection closes, its
    /// pending calls fail with [`Error::Closed`], and what was queued is still handled. Default
    /// 256 MiB.
    pub notification_queue_limit: usize,
    /// The peer's requests handled at once (answers not yet written included); one more is
    /// answered -32603 at once, so a peer that sends requests but does not read the answers
    /// meets backpressure instead of growing our memory. Default 1024.
    pub max_concurrent_requests: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_message_size: 128 << 20,
            cancel_grace: Duration::from_secs(2),
            write_queue: 1024,
            notification_backlog_warning: 10_000,
            notification_queue_pause: 16 << 20,
            notification_queue_limit: 256 << 20,
            max_concurrent_requests: 1024,
        }
    }
}

/// What a connection does with the peer's messages.
pub trait Service: Send + Sync + 'static {
    /// Answers a request; runs concurrently with everything else.
    fn request(&self, method: String, params: Option<Raw>, cx: RequestContext) -> BoxFuture<Result<Raw, RpcError>>;
    /// Handles a notification; notifications are handled one at a time, in arrival order.
    fn notification(&self, method: String, params: Option<Raw>, conn: Connection) -> BoxFuture<()>;
}

/// What a request handler gets besides its params.
#[derive(Clone)]
pub struct RequestContext {
    /// The connection, to call the peer while handling.
    pub conn: Connection,
    /// Cancelled when the peer sends `$/cancel_request` for this request (or the connection
    /// closes). A handler that notices may still answer (within [`Config::cancel_grace`]).
    pub cancel: CancellationToken,
    /// The request id, as JSON text.
    pub id: String,
    /// Work to start once the response is queued (see [`RequestContext::after_response`]).
    pub(crate) after: Arc<Mutex<Option<BoxFuture<()>>>>,
}

impl RequestContext {
    /// Starts `work` once this request's successful response is queued for writing, so that
    /// everything `work` sends reaches the peer after the response (a v2 prompt turn, which
    /// outlives its `session/prompt` request). Not started when the request fails or is
    /// cancelled; a later call replaces an earlier one.
    pub fn after_response(&self, work: impl Future<Output = ()> + Send + 'static) {
        *lock(&self.after) = Some(Box::pin(work));
    }
}

/// A handle to a connection: cheap to clone, usable from any task.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

struct Inner {
    out: mpsc::Sender<Vec<u8>>,
    pending: Mutex<HashMap<i64, oneshot::Sender<Result<Raw, Error>>>>,
    next_id: AtomicI64,
    /// The peer's requests being handled, by canonical id text.
    running: Mutex<HashMap<String, CancellationToken>>,
    closed: CancellationToken,
    /// The ordered notification queue (taken away when the connection closes).
    notes: Mutex<Option<mpsc::UnboundedSender<Note>>>,
    /// Set when every notification received has been handled and no more will come.
    notes_drained: CancellationToken,
    /// Bytes of the notifications queued and not yet handled.
    queued_bytes: AtomicUsize,
    /// Woken when queued notifications were handled or a call started: a paused reader looks
    /// again whether it may read.
    resume: Notify,
    /// Set when the peer closed its side: no answer can come any more, but ours can still be sent.
    peer_done: CancellationToken,
    /// The handlers of the peer's requests, awaited (briefly) before closing.
    tasks: TaskTracker,
    config: Config,
}

impl Connection {
    /// Starts a connection over `reader`/`writer`. `service` is built with the connection's
    /// handle, so that it can call the peer. Returns the handle and the future that drives the
    /// connection (spawn or await it); it resolves when the peer closes its side.
    pub fn new<R, W, S>(
        reader: R,
        writer: W,
        config: Config,
        service: impl FnOnce(Connection) -> S,
    ) -> (Connection, impl Future<Output = std::io::Result<()>> + Send + 'static)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
        S: Service,
    {
        Connection::over(Pipe { reader, writer }, config, service)
    }

    /// Starts a connection over any [`Transport`]: a [`Pipe`], or the [`Channels`] of a network
    /// transport. Otherwise as [`Connection::new`].
    pub fn over<T: Transport, S: Service>(
        transport: T,
        config: Config,
        service: impl FnOnce(Connection) -> S,
    ) -> (Connection, impl Future<Output = std::io::Result<()>> + Send + 'static) {
        let (source, sink) = transport.split(&config);
        let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(config.write_queue);
        let conn = Connection {
            inner: Arc::new(Inner {
                out: out_tx,
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicI64::new(0),
                running: Mutex::new(HashMap::new()),
                closed: CancellationToken::new(),
                notes: Mutex::new(None),
                notes_drained: CancellationToken::new(),
                queued_bytes: AtomicUsize::new(0),
                resume: Notify::new(),
                peer_done: CancellationToken::new(),
                tasks: TaskTracker::new(),
                config,
            }),
        };
        let service: Arc<dyn Service> = Arc::new(service(conn.clone()));
        (conn.clone(), driver::drive(conn, service, source, sink, out_rx))
    }

    /// True once the peer closed its side (or writing to it failed).
    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }

    /// Resolves when the connection closes.
    pub async fn closed(&self) {
        self.inner.closed.cancelled().await
    }

    /// How long cancelled work may take to wrap up ([`Config::cancel_grace`]).
    pub fn cancel_grace(&self) -> Duration {
        self.inner.config.cancel_grace
    }
}
