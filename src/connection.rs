//! One JSON-RPC connection: correlation of our requests with their responses, concurrent handling
//! of the peer's requests (a handler may await requests to the peer: the reading loop never waits
//! on a handler), notifications handled one at a time in arrival order, `$/cancel_request` both
//! ways, and the JSON-RPC error a peer expects for anything malformed. The connection keeps
//! serving after every fault; it ends when the peer closes its side.

use crate::framing::{nesting_exceeds, scan_prefix, write_frames, Frame, FrameReader, MAX_DEPTH};
use acp_types::support::rpc::{self, RpcError};
use futures_util::FutureExt as _;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Bytes read from the peer at a time (fewer reads for long messages than the default 8 KiB).
const READ_BUFFER: usize = 64 << 10;

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

/// Why an outgoing call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The peer answered with a JSON-RPC error.
    Rpc(RpcError),
    /// The connection closed before the answer came.
    Closed,
    /// We cancelled the call (`$/cancel_request` was sent).
    Cancelled,
    /// The params could not be encoded, or the answer did not decode as the method's response.
    Invalid(String),
}

impl Error {
    /// The error as a JSON-RPC error object, e.g. to pass a failure on to our own peer.
    pub fn to_rpc(&self) -> RpcError {
        match self {
            Error::Rpc(e) => e.clone(),
            Error::Closed => RpcError::internal("connection closed"),
            Error::Cancelled => RpcError::new(RpcError::REQUEST_CANCELLED, "request cancelled"),
            Error::Invalid(m) => RpcError::internal(m.clone()),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Rpc(e) => write!(f, "peer error: {e}"),
            Error::Closed => f.write_str("connection closed"),
            Error::Cancelled => f.write_str("request cancelled"),
            Error::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl From<RpcError> for Error {
    fn from(e: RpcError) -> Self {
        Error::Rpc(e)
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

/// An item of the ordered notification queue.
enum Note {
    /// Method, params, and the bytes they count for in the queue.
    Message(String, Option<Raw>, usize),
    /// Answered once everything queued before it was handled.
    Barrier(oneshot::Sender<()>),
}

/// One message as it arrives, before we know what it is (raw members borrowed from the line).
#[derive(Deserialize)]
struct Envelope<'a> {
    jsonrpc: Option<String>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    method: Option<String>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    error: Option<RpcError>,
}

/// A member that is present, even with the value `null`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Whether JSON text is a usable request id: a string, a number or null.
fn valid_id(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v.is_string() || v.is_number() || v.is_null())
}

/// The canonical text of an id (`1` and `1.0` differ; key order inside objects does not matter).
fn id_key(raw: &RawValue) -> String {
    serde_json::from_str::<serde_json::Value>(raw.get())
        .map(|v| v.to_string())
        .unwrap_or_else(|_| raw.get().to_string())
}

/// What one line from the peer is, judged from its envelope alone: what a connection does with
/// each complete line it reads (params and results stay raw; the service decodes them).
#[derive(Debug)]
pub enum Incoming {
    /// A request, to be answered.
    Request {
        /// The method name.
        method: String,
        /// The id (a string, a number or null), as received.
        id: Raw,
        /// The params, as received (`null` included).
        params: Option<Raw>,
    },
    /// A notification (`$/cancel_request` included).
    Notification {
        /// The method name.
        method: String,
        /// The params, as received.
        params: Option<Raw>,
    },
    /// A well-formed response: the answer to the call whose id this is, if it is one of ours.
    Response {
        /// The id's JSON text.
        id: Option<String>,
        /// The `result`, or the `error` the peer sent.
        answer: Result<Raw, RpcError>,
    },
    /// Shaped like a response but not a valid one. Never answered: it fails the call its id
    /// names, if that is one of ours.
    BadResponse {
        /// The id's JSON text.
        id: Option<String>,
        /// What is wrong with it (the call fails with this).
        reason: String,
    },
    /// A notification that cannot be handled (nested too deeply): logged, never answered.
    Dropped {
        /// Why, for the log.
        reason: String,
    },
    /// Anything else: answered with `error`, carrying the id when a usable one could be read.
    Invalid {
        /// The id's JSON text (a string, a number or null), if usable.
        id: Option<String>,
        /// The JSON-RPC error to send back (-32700 or -32600).
        error: RpcError,
    },
}

/// Params and results at least this long are moved to the front of the line they came in, whose
/// allocation they keep, rather than copied out of it (see [`classify_line`]); at the same size the
/// decoder moves their longest string out of that allocation in turn (`support::moved`), so the
/// message is never copied whole.
const IN_PLACE: usize = acp_types::support::moved::MOVE_MIN;

/// Classifies one line (see [`Incoming`]). Pure and total: any bytes give an answer.
pub fn classify(line: &[u8]) -> Incoming {
    classify_with(line, |raw| raw.to_owned())
}

/// [`classify`] for a line the caller gives up: long params or a long result (64 KiB or more)
/// keep the line's allocation instead of being copied out of it, so a large message is in
/// memory once, not twice, until it is decoded.
pub fn classify_line(line: Vec<u8>) -> Incoming {
    let mut long = None;
    let mut incoming = classify_with(&line, |raw| {
        let text = raw.get();
        if text.len() < IN_PLACE {
            return raw.to_owned();
        }
        // `raw` borrows from `line`: its place there.
        let start = text.as_ptr() as usize - line.as_ptr() as usize;
        long = Some(start..start + text.len());
        RawValue::NULL.to_owned()
    });
    let (Some(range), Some(slot)) = (long, long_raw(&mut incoming)) else {
        return incoming;
    };
    let mut bytes = line;
    bytes.copy_within(range.clone(), 0);
    bytes.truncate(range.len());
    // The text was valid UTF-8 and JSON as part of the line, so neither check fails.
    match String::from_utf8(bytes).ok().and_then(|text| RawValue::from_string(text).ok()) {
        Some(raw) => *slot = raw,
        None => {
            let error = RpcError::new(RpcError::PARSE_ERROR, "parse error: not valid JSON");
            return Incoming::Invalid { id: None, error };
        }
    }
    incoming
}

/// The params or result an [`Incoming`] carries, if any.
fn long_raw(incoming: &mut Incoming) -> Option<&mut Raw> {
    match incoming {
        Incoming::Request { params, .. } | Incoming::Notification { params, .. } => params.as_mut(),
        Incoming::Response { answer: Ok(result), .. } => Some(result),
        _ => None,
    }
}

/// [`classify`], with `own` making the owned copy of the params or result (only one of them is
/// kept by any [`Incoming`]).
fn classify_with(line: &[u8], own: impl FnOnce(&RawValue) -> Raw) -> Incoming {
    if nesting_exceeds(line, MAX_DEPTH) {
        return too_deep(line);
    }
    let first = line.iter().find(|b| !b.is_ascii_whitespace());
    let envelope = match (first, serde_json::from_slice::<Envelope>(line)) {
        (Some(b'{'), Ok(envelope)) => envelope,
        (_, envelope) => return not_a_message(line, envelope.err()),
    };
    // Responses first: they are never answered, whatever is wrong with them.
    if envelope.method.is_none() && (envelope.result.is_some() || envelope.error.is_some()) {
        let id = envelope.id.as_ref().map(|id| id.get().to_string());
        let answer = match (envelope.result, envelope.error) {
            _ if envelope.jsonrpc.as_deref() != Some("2.0") => None,
            (Some(result), None) => Some(Ok(own(result))),
            (None, Some(error)) => Some(Err(error)),
            _ => None,
        };
        return match answer {
            Some(answer) => Incoming::Response { id, answer },
            None => Incoming::BadResponse { id, reason: BAD_RESPONSE.into() },
        };
    }
    let id_ok = envelope.id.as_ref().is_none_or(|id| valid_id(id.get()));
    if envelope.jsonrpc.as_deref() != Some("2.0") || !id_ok {
        let id = envelope.id.as_ref().filter(|_| id_ok).map(|id| id.get().to_string());
        let error = RpcError::new(
            RpcError::INVALID_REQUEST,
            "invalid request: needs \"jsonrpc\": \"2.0\" and a string, number or null id",
        );
        return Incoming::Invalid { id, error };
    }
    match envelope {
        Envelope { method: Some(method), id: Some(id), params, .. } => {
            Incoming::Request { method, id: id.to_owned(), params: params.map(own) }
        }
        Envelope { method: Some(method), id: None, params, .. } => {
            Incoming::Notification { method, params: params.map(own) }
        }
        Envelope { id, .. } => Incoming::Invalid {
            id: id.map(|id| id.get().to_string()),
            error: RpcError::new(RpcError::INVALID_REQUEST, "not a JSON-RPC request, notification or response"),
        },
    }
}

/// A line that is not one message object. Not JSON at all: -32700; JSON, but not a message (a
/// batch, a number, duplicate members): -32600, with the id where there is a usable one.
/// Something shaped like a response is never answered.
fn not_a_message(line: &[u8], envelope_error: Option<serde_json::Error>) -> Incoming {
    let value = match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(value) => value,
        Err(_) => {
            let what = if std::str::from_utf8(line).is_err() { "UTF-8" } else { "JSON" };
            let error = RpcError::new(RpcError::PARSE_ERROR, format!("parse error: not valid {what}"));
            return Incoming::Invalid { id: None, error };
        }
    };
    let reason = envelope_error.map(|e| e.to_string()).unwrap_or_default();
    let duplicate = reason.strip_prefix("duplicate field `").and_then(|r| r.split('`').next());
    // With two ids there is none to answer to.
    let id = value.get("id").map(|id| id.to_string()).filter(|id| valid_id(id) && duplicate != Some("id"));
    if value.get("method").is_none() && (value.get("result").is_some() || value.get("error").is_some()) {
        return Incoming::BadResponse { id, reason: BAD_RESPONSE.into() };
    }
    let message = if value.is_array() {
        "invalid request: a batch (JSON array); ACP sends one message object per line".to_string()
    } else if let Some(member) = duplicate {
        format!("invalid request: duplicate member `{member}`")
    } else {
        "not a JSON-RPC request, notification or response".to_string()
    };
    Incoming::Invalid { id, error: RpcError::new(RpcError::INVALID_REQUEST, message) }
}

const BAD_RESPONSE: &str = "the peer's response is not a valid JSON-RPC response";

/// A line nested deeper than [`MAX_DEPTH`]: refused before any parsing, handled like an
/// over-long one (the id and whether it is a call come from its first bytes).
fn too_deep(line: &[u8]) -> Incoming {
    let prefix = scan_prefix(line);
    let id = prefix.id.filter(|id| valid_id(id));
    let reason = format!("JSON nested more than {MAX_DEPTH} levels deep");
    match (prefix.has_method, id) {
        (true, None) => Incoming::Dropped { reason: format!("a notification with {reason}") },
        (false, Some(id)) => {
            Incoming::BadResponse { id: Some(id), reason: format!("the peer's response has {reason}") }
        }
        (_, id) => Incoming::Invalid {
            id,
            error: RpcError::new(RpcError::INVALID_REQUEST, format!("invalid request: {reason}")),
        },
    }
}

/// Lines the reader handles before it lets other tasks run. A read can bring a thousand small
/// messages at once; handled in one go, their wake-ups and handler tasks overflow the worker's run
/// queue into the shared one, which is polled rarely, and some calls wait several times longer
/// than the rest (latency bench, 1,000 in flight: p99 11–25 ms with no yield, 4–5 ms at 16–64).
const YIELD_EVERY: usize = 32;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding one of these short locks cannot leave the maps inconsistent.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
        let (out_tx, mut out_rx) = mpsc::channel::<Vec<u8>>(config.write_queue);
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
                config: config.clone(),
            }),
        };
        let service: Arc<dyn Service> = Arc::new(service(conn.clone()));
        let handle = conn.clone();
        let driver = async move {
            let closed = conn.inner.closed.clone();
            let mut writer = writer;
            let mut batch = Vec::new();
            let writing = tokio::spawn(async move {
                loop {
                    // The service holds a handle of its own, so the queue never closes by itself:
                    // on close, write what is queued and stop.
                    let message = tokio::select! {
                        biased;
                        message = out_rx.recv() => message,
                        _ = closed.cancelled() => out_rx.try_recv().ok(),
                    };
                    let Some(message) = message else { break };
                    // What else is queued goes in the same write (at most 64 messages, so that a
                    // busy sender cannot hold the writer here).
                    let mut messages = vec![message];
                    while messages.len() < 64 {
                        match out_rx.try_recv() {
                            Ok(message) => messages.push(message),
                            Err(_) => break,
                        }
                    }
                    if let Err(e) = write_frames(&mut writer, messages, &mut batch).await {
                        tracing::warn!("acp: cannot write to the peer: {e}");
                        closed.cancel();
                        break;
                    }
                }
            });
            let (note_tx, mut note_rx) = mpsc::unbounded_channel::<Note>();
            *lock(&conn.inner.notes) = Some(note_tx.clone());
            let notes = {
                let (service, conn) = (service.clone(), conn.clone());
                tokio::spawn(async move {
                    while let Some(note) = note_rx.recv().await {
                        if note_rx.len() == conn.inner.config.notification_backlog_warning {
                            tracing::warn!("acp: {} notifications wait for their handler", note_rx.len());
                        }
                        let (method, params, size) = match note {
                            Note::Message(method, params, size) => (method, params, size),
                            Note::Barrier(done) => {
                                let _ = done.send(());
                                continue;
                            }
                        };
                        // A panicking handler is contained: the next notification still runs.
                        let run = AssertUnwindSafe(service.notification(method.clone(), params, conn.clone()));
                        if run.catch_unwind().await.is_err() {
                            tracing::error!("acp: notification handler for {method} panicked");
                        }
                        conn.inner.queued_bytes.fetch_sub(size, Ordering::SeqCst);
                        conn.inner.resume.notify_waiters();
                    }
                })
            };
            let mut frames = FrameReader::new(BufReader::with_capacity(READ_BUFFER, reader), config.max_message_size);
            let mut lines_since_yield = 0usize;
            let result = loop {
                if let Err(e) = conn.make_room().await {
                    break Err(e);
                }
                lines_since_yield += 1;
                if lines_since_yield == YIELD_EVERY {
                    lines_since_yield = 0;
                    tokio::task::yield_now().await;
                }
                tokio::select! {
                    frame = frames.next() => match frame {
                        Ok(Some(Frame::Line(line))) => conn.on_line(line, &service, &note_tx).await,
                        Ok(Some(Frame::TooLong { prefix, len })) => conn.on_too_long(prefix, len).await,
                        Ok(None) => break Ok(()),
                        Err(e) => break Err(e),
                    },
                    _ = conn.inner.closed.cancelled() => break Ok(()),
                }
            };
            // The peer is gone: our calls fail now; its requests being handled get a short while to
            // finish, so that answers already computed are still written.
            conn.inner.peer_done.cancel();
            conn.fail_pending();
            lock(&conn.inner.notes).take();
            drop(note_tx);
            let _ = notes.await;
            conn.inner.notes_drained.cancel();
            conn.inner.tasks.close();
            if tokio::time::timeout(conn.inner.config.cancel_grace, conn.inner.tasks.wait()).await.is_err() {
                tracing::warn!("acp: closing with requests still being handled");
            }
            conn.shut_down();
            // Answers of handlers still running are dropped; what was queued is written, unless the
            // peer stopped reading altogether.
            drop(conn);
            let abort = writing.abort_handle();
            if tokio::time::timeout(config.cancel_grace, writing).await.is_err() {
                tracing::warn!("acp: the peer does not read; queued messages dropped");
                abort.abort();
            }
            result
        };
        (handle, driver)
    }

    /// Backpressure on the peer's notifications: waits while the queue is over
    /// [`Config::notification_queue_pause`] and no call of ours awaits an answer; fails (closing
    /// the connection) when it reaches [`Config::notification_queue_limit`] while one does.
    async fn make_room(&self) -> std::io::Result<()> {
        let config = &self.inner.config;
        loop {
            // Registered before looking, so that a wake-up between the look and the wait counts.
            let resumed = self.inner.resume.notified();
            tokio::pin!(resumed);
            resumed.as_mut().enable();
            let queued = self.inner.queued_bytes.load(Ordering::SeqCst);
            if queued < config.notification_queue_pause {
                return Ok(());
            }
            if !lock(&self.inner.pending).is_empty() {
                if queued < config.notification_queue_limit {
                    return Ok(());
                }
                let limit = config.notification_queue_limit;
                tracing::error!("acp: closing: {queued} bytes of notifications wait for their handler (limit {limit})");
                return Err(std::io::Error::other(format!(
                    "the peer sent {queued} bytes of notifications faster than they were handled (limit {limit})"
                )));
            }
            tokio::select! {
                _ = resumed => {}
                _ = self.inner.closed.cancelled() => return Ok(()),
            }
        }
    }

    /// Fails every pending call with [`Error::Closed`].
    fn fail_pending(&self) {
        for (_, tx) in lock(&self.inner.pending).drain() {
            let _ = tx.send(Err(Error::Closed));
        }
    }

    /// Marks the connection closed, fails pending calls and cancels running handlers.
    fn shut_down(&self) {
        self.inner.closed.cancel();
        self.fail_pending();
        for (_, token) in lock(&self.inner.running).drain() {
            token.cancel();
        }
    }

    /// Waits until every notification received so far has been handled. Call it after a
    /// response to be sure that the notifications the peer sent before it were all seen (a
    /// v1 `session/prompt` answer and the updates of its turn, say).
    ///
    /// Do not call it from a notification handler: it would wait for itself.
    pub async fn sync_notifications(&self) {
        let queue = lock(&self.inner.notes).clone();
        if let Some(queue) = queue {
            let (tx, rx) = oneshot::channel();
            if queue.send(Note::Barrier(tx)).is_ok() && rx.await.is_ok() {
                return;
            }
        }
        // The peer has gone: what it sent is still being handled; wait for that to finish.
        self.inner.notes_drained.cancelled().await;
    }

    /// True once the peer closed its side (or writing to it failed).
    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }

    /// Resolves when the connection closes.
    pub async fn closed(&self) {
        self.inner.closed.cancelled().await
    }

    async fn send(&self, message: Vec<u8>) -> Result<(), Error> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        self.inner.out.send(message).await.map_err(|_| Error::Closed)
    }

    async fn send_error(&self, id: Option<&str>, error: RpcError) {
        let error =
            serde_json::to_string(&error).unwrap_or_else(|_| r#"{"code":-32603,"message":"internal error"}"#.into());
        let message = format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id.unwrap_or("null"));
        let _ = self.send(message.into_bytes()).await;
    }

    /// Fails our call `id` (JSON text) with `why`, if it is one of ours; true when it was.
    fn fail_call(&self, id: &str, why: String) -> bool {
        let waiter = serde_json::from_str::<i64>(id).ok().and_then(|k| lock(&self.inner.pending).remove(&k));
        match waiter {
            Some(tx) => {
                let _ = tx.send(Err(Error::Invalid(why)));
                true
            }
            None => false,
        }
    }

    async fn on_too_long(&self, prefix: crate::framing::Prefix, len: usize) {
        let limit = self.inner.config.max_message_size;
        tracing::warn!("acp: discarded a message of {len} bytes (limit {limit})");
        let Some(id) = prefix.id.filter(|id| valid_id(id)) else { return };
        // A response to one of our calls (no `method` before the cut) fails that call; nothing
        // is ever sent back for a response.
        if !prefix.has_method
            && self.fail_call(&id, format!("the response of {len} bytes exceeds the limit of {limit}"))
        {
            return;
        }
        if prefix.has_method {
            let error = RpcError::new(
                RpcError::INVALID_REQUEST,
                format!("message of {len} bytes exceeds the limit of {limit}"),
            );
            self.send_error(Some(&id), error).await;
        }
    }

    async fn on_line(&self, line: Vec<u8>, service: &Arc<dyn Service>, notes: &mpsc::UnboundedSender<Note>) {
        match classify_line(line) {
            Incoming::Request { method, id, params } => self.on_request(method, id, params, service).await,
            Incoming::Notification { method, params } => {
                if method == "$/cancel_request" {
                    self.on_cancel(params.as_deref());
                    return;
                }
                let size = std::mem::size_of::<Note>() + method.len() + params.as_ref().map_or(0, |p| p.get().len());
                self.inner.queued_bytes.fetch_add(size, Ordering::SeqCst);
                if notes.send(Note::Message(method, params, size)).is_err() {
                    self.inner.queued_bytes.fetch_sub(size, Ordering::SeqCst);
                    tracing::warn!("acp: notification dropped: the connection is closing");
                }
            }
            Incoming::Response { id, answer } => {
                let waiter = id
                    .as_deref()
                    .and_then(|id| serde_json::from_str::<i64>(id).ok())
                    .and_then(|k| lock(&self.inner.pending).remove(&k));
                match waiter {
                    Some(tx) => {
                        let _ = tx.send(answer.map_err(Error::Rpc));
                    }
                    None => tracing::warn!(
                        "acp: response to unknown request id {} dropped",
                        id.as_deref().unwrap_or("(none)")
                    ),
                }
            }
            Incoming::BadResponse { id, reason } => {
                if !id.as_deref().is_some_and(|id| self.fail_call(id, reason)) {
                    tracing::warn!("acp: malformed response dropped");
                }
            }
            Incoming::Dropped { reason } => tracing::warn!("acp: dropped {reason}"),
            Incoming::Invalid { id, error } => self.send_error(id.as_deref(), error).await,
        }
    }

    fn on_cancel(&self, params: Option<&RawValue>) {
        #[derive(Deserialize)]
        struct Cancel {
            #[serde(rename = "requestId")]
            request_id: Raw,
        }
        match params.map(|p| serde_json::from_str::<Cancel>(p.get())) {
            Some(Ok(cancel)) => {
                if let Some(token) = lock(&self.inner.running).get(&id_key(&cancel.request_id)) {
                    token.cancel();
                }
            }
            _ => tracing::warn!("acp: $/cancel_request without a valid requestId"),
        }
    }

    async fn on_request(&self, method: String, id: Raw, params: Option<Raw>, service: &Arc<dyn Service>) {
        let max = self.inner.config.max_concurrent_requests;
        if self.inner.tasks.len() >= max {
            // Answered from the reader: when the peer does not read, this waits for room in the
            // write queue, and reading stops.
            let error = RpcError::internal(format!(
                "too many requests in progress ({max}); send more when some have been answered"
            ))
            .with_data(serde_json::json!({ "method": method, "limit": max }));
            self.send_error(Some(id.get()), error).await;
            return;
        }
        let key = id_key(&id);
        let token = CancellationToken::new();
        let duplicate = {
            let mut running = lock(&self.inner.running);
            let duplicate = running.contains_key(&key);
            if !duplicate {
                running.insert(key.clone(), token.clone());
            }
            duplicate
        };
        if duplicate {
            let error = RpcError::new(RpcError::INVALID_REQUEST, "a request with this id is already being handled");
            self.send_error(Some(id.get()), error).await;
            return;
        }
        let cx = RequestContext { conn: self.clone(), cancel: token.clone(), id: id.get().to_string() };
        let work = service.request(method, params, cx);
        let conn = self.clone();
        let grace = self.inner.config.cancel_grace;
        self.inner.tasks.spawn(async move {
            // One task per request, the handler polled inside it: a panic is caught and becomes
            // -32603, not a dead loop. (A second task for the handler doubled the tasks a burst
            // of requests queues in the scheduler, which widened the latency tail.)
            let work = AssertUnwindSafe(work).catch_unwind();
            let result = tokio::select! {
                done = work => done.unwrap_or_else(|_| Err(RpcError::internal("internal error: the handler panicked"))),
                // Past the grace period the handler is dropped where it stands.
                _ = async { token.cancelled().await; tokio::time::sleep(grace).await } => {
                    Err(RpcError::new(RpcError::REQUEST_CANCELLED, "request cancelled"))
                }
            };
            lock(&conn.inner.running).remove(&key);
            let message = match result {
                Ok(result) => {
                    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#, id.get(), result.get()).into_bytes()
                }
                Err(error) => {
                    conn.send_error(Some(id.get()), error).await;
                    return;
                }
            };
            let _ = conn.send(message).await;
        });
    }

    /// Sends a request and waits for its answer. Dropping the future cancels the call: the
    /// peer is sent `$/cancel_request`.
    pub async fn request_raw(&self, method: &str, params: Option<&RawValue>) -> Result<Raw, Error> {
        self.request_raw_cancellable(method, params, None).await
    }

    /// [`Connection::request_raw`], also resolved (with [`Error::Cancelled`], after sending
    /// `$/cancel_request`) when `cancel` fires.
    pub async fn request_raw_cancellable(
        &self,
        method: &str,
        params: Option<&RawValue>,
        cancel: Option<CancellationToken>,
    ) -> Result<Raw, Error> {
        if self.inner.peer_done.is_cancelled() {
            return Err(Error::Closed);
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.pending).insert(id, tx);
        // A reader paused for backpressure must read again: this call's answer is coming.
        self.inner.resume.notify_waiters();
        let mut guard = CallGuard { conn: self, id, live: true };
        // The peer may have gone between the check above and the insert: nothing would fail it.
        if self.inner.peer_done.is_cancelled() {
            guard.forget();
            return Err(Error::Closed);
        }
        let method_json = serde_json::to_string(method).map_err(|e| Error::Invalid(e.to_string()))?;
        let message = match params {
            Some(p) => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method_json},"params":{}}}"#, p.get()),
            None => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method_json}}}"#),
        };
        self.send(message.into_bytes()).await?;
        let cancel = cancel.unwrap_or_default();
        let result = tokio::select! {
            answer = rx => answer.unwrap_or(Err(Error::Closed)),
            _ = cancel.cancelled() => {
                guard.cancel().await;
                Err(Error::Cancelled)
            }
        };
        guard.live = false;
        result
    }

    /// Sends a notification.
    pub async fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<(), Error> {
        let method_json = serde_json::to_string(method).map_err(|e| Error::Invalid(e.to_string()))?;
        let message = match params {
            Some(p) => format!(r#"{{"jsonrpc":"2.0","method":{method_json},"params":{}}}"#, p.get()),
            None => format!(r#"{{"jsonrpc":"2.0","method":{method_json}}}"#),
        };
        self.send(message.into_bytes()).await
    }

    /// A typed request: `conn.request::<v1::methods::SessionPrompt>(&params)`.
    pub async fn request<M: rpc::Request>(&self, params: &M::Params) -> Result<M::Response, Error> {
        self.request_cancellable::<M>(params, None).await
    }

    /// A typed request that `cancel` can cancel.
    pub async fn request_cancellable<M: rpc::Request>(
        &self,
        params: &M::Params,
        cancel: Option<CancellationToken>,
    ) -> Result<M::Response, Error> {
        let params = serde_json::value::to_raw_value(params)
            .map_err(|e| Error::Invalid(format!("cannot encode params: {e}")))?;
        let result = self.request_raw_cancellable(M::METHOD, Some(&params), cancel).await?;
        rpc::decode_raw::<M::Response>(M::METHOD, result.into()).map_err(|e| {
            // The error names params; here it is the result, so only its path and reason are kept.
            let field = |k: &str| e.data.as_ref().and_then(|d| d.get(k)).and_then(serde_json::Value::as_str);
            let why = match (field("path"), field("reason")) {
                (Some(path), Some(reason)) if !path.is_empty() && path != "." => format!("{path}: {reason}"),
                (_, Some(reason)) => reason.to_string(),
                _ => e.message.clone(),
            };
            Error::Invalid(format!("the response to {} does not decode: {why}", M::METHOD))
        })
    }

    /// A typed notification.
    pub async fn notify<M: rpc::Notification>(&self, params: &M::Params) -> Result<(), Error> {
        // Encoded straight into the message, without an intermediate string of the params.
        let mut message = Vec::with_capacity(256);
        message.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
        serde_json::to_writer(&mut message, M::METHOD).map_err(|e| Error::Invalid(e.to_string()))?;
        message.extend_from_slice(br#","params":"#);
        serde_json::to_writer(&mut message, params)
            .map_err(|e| Error::Invalid(format!("cannot encode params: {e}")))?;
        message.push(b'}');
        self.send(message).await
    }
}

/// Removes an abandoned call and tells the peer (on drop, or when cancelled explicitly).
struct CallGuard<'a> {
    conn: &'a Connection,
    id: i64,
    live: bool,
}

impl CallGuard<'_> {
    fn forget(&mut self) -> bool {
        self.live = false;
        lock(&self.conn.inner.pending).remove(&self.id).is_some()
    }

    fn cancel_message(&self) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","method":"$/cancel_request","params":{{"requestId":{}}}}}"#, self.id).into_bytes()
    }

    async fn cancel(&mut self) {
        if self.forget() {
            let _ = self.conn.send(self.cancel_message()).await;
        }
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if self.live && self.forget() && !self.conn.is_closed() {
            // Best effort: a full queue means the peer is not reading anyway.
            let _ = self.conn.inner.out.try_send(self.cancel_message());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deep(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn lines_nested_too_deeply_are_judged_by_their_first_bytes() {
        let request = format!(r#"{{"jsonrpc":"2.0","id":"a","method":"m","params":{}}}"#, deep(MAX_DEPTH + 1));
        assert!(matches!(
            classify(request.as_bytes()),
            Incoming::Invalid { id: Some(id), error } if id == r#""a""# && error.code == RpcError::INVALID_REQUEST
        ));
        let note = format!(r#"{{"jsonrpc":"2.0","method":"m","params":{}}}"#, deep(MAX_DEPTH + 1));
        assert!(matches!(classify(note.as_bytes()), Incoming::Dropped { .. }));
        let response = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{}}}"#, deep(MAX_DEPTH + 1));
        assert!(matches!(
            classify(response.as_bytes()),
            Incoming::BadResponse { id: Some(id), reason } if id == "3" && reason.contains("nested more than 100")
        ));
        // Within the limit, the same request is a request.
        let fine = format!(r#"{{"jsonrpc":"2.0","id":"a","method":"m","params":{}}}"#, deep(MAX_DEPTH - 1));
        assert!(matches!(classify(fine.as_bytes()), Incoming::Request { .. }));
    }

    #[test]
    fn two_ids_leave_none_to_answer_to() {
        let Incoming::Invalid { id, error } = classify(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#) else {
            panic!("not refused");
        };
        assert_eq!((id, error.message.as_str()), (None, "invalid request: duplicate member `id`"));
    }

    /// `classify_line` (long params and results moved within the line) judges every line as
    /// `classify` (copies) does, on both sides of the in-place threshold.
    #[test]
    fn classifying_an_owned_line_gives_what_classifying_a_borrowed_one_gives() {
        // `{"text":"…"}` of exactly `len` bytes; escapes and non-ASCII text in the longer ones.
        let text = |len: usize| {
            let mixed = "\\u00e9é".repeat(len.saturating_sub(11) / 9);
            format!(r#"{{"text":"{mixed}{}"}}"#, "x".repeat(len.saturating_sub(11 + mixed.len())))
        };
        assert_eq!((text(IN_PLACE - 1).len(), text(IN_PLACE).len()), (IN_PLACE - 1, IN_PLACE));
        let mut lines = Vec::new();
        for body in [text(11), text(IN_PLACE - 1), text(IN_PLACE), text(3 * IN_PLACE), "null".into()] {
            lines.push(format!(r#"{{"jsonrpc":"2.0","id":7,"method":"m","params":{body}}}"#));
            lines.push(format!(r#"{{"params": {body} ,"method":"m","jsonrpc":"2.0"}}"#));
            lines.push(format!(r#"{{"jsonrpc":"2.0","id":"r","result":{body}}}"#));
            lines.push(format!(r#"{{"jsonrpc":"2.0","id":"r","result":{body},"error":{{"code":1,"message":"m"}}}}"#));
            lines.push(format!(r#"{{"jsonrpc":"2.0","id":[1],"method":"m","params":{body}}}"#));
            lines.push(format!(r#"{{"jsonrpc":"2.0","method":"m","params":{body},"params":1}}"#));
            lines.push(format!(r#"{{"jsonrpc":"2.0","method":"m","params":{body}"#));
        }
        let mut long = 0;
        for line in &lines {
            let (borrowed, owned) = (classify(line.as_bytes()), classify_line(line.clone().into_bytes()));
            assert_eq!(format!("{borrowed:?}"), format!("{owned:?}"), "{line}");
            if let Incoming::Request { params: Some(p), .. } | Incoming::Notification { params: Some(p), .. } = owned {
                long += usize::from(p.get().len() >= IN_PLACE);
            }
        }
        assert_eq!(long, 4, "a request and a notification with each of the two long params");
    }
}
