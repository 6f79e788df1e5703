//! [`Connection`], the handle to a connection, and the state its tasks share; here only what
//! reads that state: whether it is closed, and how long cancelled work may take. The tasks are
//! started in `driver`, and each file adds the methods of its job.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::Config;
use super::note::Note;
use super::pending::Waiter;

/// A handle to a connection: cheap to clone, usable from any task.
#[derive(Clone)]
pub struct Connection {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) out: mpsc::Sender<Vec<u8>>,
    pub(super) pending: Mutex<HashMap<i64, Waiter>>,
    pub(super) next_id: AtomicI64,
    /// The peer's requests being handled, by canonical id text.
    pub(super) running: Mutex<HashMap<String, CancellationToken>>,
    pub(super) closed: CancellationToken,
    /// The ordered notification queue (taken away when the connection closes).
    pub(super) notes: Mutex<Option<mpsc::UnboundedSender<Note>>>,
    /// Set when every notification received has been handled and no more will come.
    pub(super) notes_drained: CancellationToken,
    /// Bytes of the notifications queued and not yet handled.
    pub(super) queued_bytes: AtomicUsize,
    /// Woken when queued notifications were handled or a call started: a paused reader looks
    /// again whether it may read.
    pub(super) resume: Notify,
    /// Set when the peer closed its side: no answer can come any more, but ours can still be sent.
    pub(super) peer_done: CancellationToken,
    /// The handlers of the peer's requests, awaited (briefly) before closing.
    pub(super) tasks: TaskTracker,
    pub(super) config: Config,
}

impl Connection {
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
