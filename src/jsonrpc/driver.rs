//! The future that drives a connection (what [`Connection::new`] returns): it starts the writer
//! and the notification task, runs the reader, and once the peer is gone closes in order.

use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::notifications::{self, Note};
use super::transport::{Sink, Source};
use super::{lock, reader, writer, Connection, Service};

/// Runs the connection until the peer closes its side, then closes it (see [`close`]).
pub(super) async fn drive(
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
