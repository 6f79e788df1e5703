//! Starting a connection: [`Connection::new`] and [`Connection::over`] build its shared state and
//! return the future that drives it, which starts the writer and the notification task, runs the
//! reader, and once the peer is gone closes in order.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicUsize};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::Config;
use super::connection::{Connection, Inner};
use super::note::Note;
use super::service::Service;
use super::transport::{Pipe, Sink, Source, Transport};
use super::{notifications, reader, writer};
use crate::sync::lock;

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

    /// Starts a connection over any [`Transport`]: a [`Pipe`], or the
    /// [`Channels`](super::transport::Channels) of a network transport. Otherwise as
    /// [`Connection::new`].
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
        (conn.clone(), drive(conn, service, source, sink, out_rx))
    }
}

/// Runs the connection until the peer closes its side, then closes it (see [`close`]).
async fn drive(
    conn: Connection,
    service: Arc<dyn Service>,
    mut frames: impl Source,
    sink: impl Sink,
    queue: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    let writing = tokio::spawn(writer::write_queued(queue, sink, conn.inner.closed.clone()));
    let (note_tx, note_rx) = mpsc::unbounded_channel::<Note>();
    *lock(&conn.inner.notes) = Some(note_tx.clone());
    let notes = tokio::spawn(notifications::handle_in_order(note_rx, service.clone(), conn.clone()));
    // `frames` is dropped at the end, not when reading stops: a peer still writing would meet a
    // broken pipe while its last answers are being written.
    let result = reader::read(&conn, &mut frames, &service, &note_tx).await;
    close(conn, note_tx, notes, writing).await;
    result
}

/// The peer is gone: our calls fail now; its requests being handled get a short while to
/// finish, so that answers already computed are still written.
async fn close(
    conn: Connection,
    notes: mpsc::UnboundedSender<Note>,
    handling: JoinHandle<()>,
    writing: JoinHandle<()>,
) {
    conn.inner.peer_done.cancel();
    conn.fail_pending();
    lock(&conn.inner.notes).take();
    drop(notes);
    let _ = handling.await;
    conn.inner.notes_drained.cancel();
    conn.inner.tasks.close();
    let grace = conn.inner.config.cancel_grace;
    if tokio::time::timeout(grace, conn.inner.tasks.wait()).await.is_err() {
        tracing::warn!("acp: closing with requests still being handled");
    }
    conn.shut_down();
    // Answers of handlers still running are dropped; what was queued is written, unless the
    // peer stopped reading altogether.
    drop(conn);
    let abort = writing.abort_handle();
    if tokio::time::timeout(grace, writing).await.is_err() {
        tracing::warn!("acp: the peer does not read; queued messages dropped");
        abort.abort();
    }
}

impl Connection {
    /// Marks the connection closed, fails pending calls and cancels running handlers.
    fn shut_down(&self) {
        self.inner.closed.cancel();
        self.fail_pending();
        for (_, token) in lock(&self.inner.running).drain() {
            token.cancel();
        }
    }
}
