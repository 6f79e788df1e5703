//! The ordered queue of the peer's notifications: the task that hands them to the service one at a
//! time in arrival order, the bytes they hold while they wait, the backpressure those bytes put on
//! the reader, the holds of relayed answers, and [`Connection::sync_notifications`].

use futures_util::FutureExt as _;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

use super::connection::Connection;
use super::note::{Held, Note};
use super::raw::Raw;
use super::service::Service;
use crate::sync::lock;

/// Hands each queued notification to `service`, in order, until the queue closes and is empty.
pub(super) async fn handle_in_order(
    mut queue: mpsc::UnboundedReceiver<Note>,
    service: Arc<dyn Service>,
    conn: Connection,
) {
    while let Some(note) = queue.recv().await {
        if queue.len() == conn.inner.config.notification_backlog_warning {
            tracing::warn!("acp: {} notifications wait for their handler", queue.len());
        }
        let (method, params, size) = match note {
            Note::Message(method, params, size) => (method, params, size),
            Note::Barrier(done) => {
                let _ = done.send(());
                continue;
            }
            Note::Hold { reached, release } => {
                // Nothing after the answer is handled until its caller passed it on; once the
                // peer is gone, for the grace at most, so that closing never waits on a stuck
                // handler (`close` awaits this task before it cancels the handlers).
                if reached.send(()).is_ok() {
                    let grace = conn.inner.config.cancel_grace;
                    let gone = async {
                        conn.inner.peer_done.cancelled().await;
                        tokio::time::sleep(grace).await
                    };
                    tokio::select! {
                        _ = release => {}
                        _ = gone => tracing::warn!("acp: a relayed answer was not passed on within the grace after the peer left"),
                    }
                }
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
}

impl Connection {
    /// Queues a notification for its handler, counting its bytes towards the pause and the limit.
    pub(super) fn queue_notification(&self, queue: &mpsc::UnboundedSender<Note>, method: String, params: Option<Raw>) {
        let size = std::mem::size_of::<Note>() + method.len() + params.as_ref().map_or(0, |p| p.get().len());
        self.inner.queued_bytes.fetch_add(size, Ordering::SeqCst);
        if queue.send(Note::Message(method, params, size)).is_err() {
            self.inner.queued_bytes.fetch_sub(size, Ordering::SeqCst);
            tracing::warn!("acp: notification dropped: the connection is closing");
        }
    }

    /// Backpressure on the peer's notifications: waits while the queue is over
    /// [`Config::notification_queue_pause`](super::config::Config::notification_queue_pause)
    /// and no call of ours awaits an answer; fails (closing the connection) when it reaches
    /// [`Config::notification_queue_limit`](super::config::Config::notification_queue_limit)
    /// while one does.
    pub(super) async fn make_room(&self) -> std::io::Result<()> {
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

    /// Puts a hold in the queue, behind what it has now (see `Note::Hold`); `None` once the
    /// queue is gone.
    pub(super) fn hold_notifications(&self) -> Option<Held> {
        let queue = lock(&self.inner.notes).clone()?;
        let (reached_tx, reached) = oneshot::channel();
        let (release, release_rx) = oneshot::channel();
        queue.send(Note::Hold { reached: reached_tx, release: release_rx }).ok()?;
        Some(Held { reached, release })
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
}
