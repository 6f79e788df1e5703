//! Where the agent's updates of each session go on the client: to the handle of that session
//! ([`Session`](super::session::v1::Session)), after the client's handler has seen them. While a
//! `session/new` (or load, resume) is in flight, updates of sessions without a handle are held,
//! so that the new handle gets those its session sent before the answer.

use crate::sync::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio::sync::mpsc;

/// Where each session's updates go, per version (only sessions with a handle). While a
/// `session/new` is in flight, updates of sessions without a handle are held, so that the new
/// handle gets those its session sent before the answer.
#[derive(Default)]
pub(super) struct Routes {
    v1: Mutex<Route<acp_types::v1::SessionUpdate>>,
    v2: Mutex<Route<acp_types::v2::SessionUpdate>>,
    opening: AtomicUsize,
}

struct Route<U> {
    to: HashMap<String, mpsc::UnboundedSender<U>>,
    held: HashMap<String, Vec<U>>,
}

impl<U> Default for Route<U> {
    fn default() -> Self {
        Route { to: HashMap::new(), held: HashMap::new() }
    }
}

impl<U> Route<U> {
    fn wants(&self, session: &str, opening: bool) -> bool {
        opening || self.to.contains_key(session)
    }

    fn send(&mut self, session: &str, update: U, opening: bool) {
        match self.to.get(session) {
            Some(tx) => {
                if let Err(mpsc::error::SendError(_)) = tx.send(update) {
                    self.to.remove(session); // the handle was dropped
                }
            }
            None if opening => self.held.entry(session.to_string()).or_default().push(update),
            None => {}
        }
    }

    /// A handle for `session`: its channel, with what was held for it first.
    fn open(&mut self, session: &str) -> mpsc::UnboundedReceiver<U> {
        let (tx, rx) = mpsc::unbounded_channel();
        for update in self.held.remove(session).unwrap_or_default() {
            let _ = tx.send(update);
        }
        self.to.insert(session.to_string(), tx);
        rx
    }
}

/// Counts a `session/new` in flight; the last one to end drops what no handle claimed.
pub(super) struct Opening<'a>(&'a Routes);

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        if self.0.opening.fetch_sub(1, Ordering::SeqCst) == 1 {
            lock(&self.0.v1).held.clear();
            lock(&self.0.v2).held.clear();
        }
    }
}

impl Routes {
    /// Holds updates of sessions without a handle until the returned guard is dropped.
    pub(super) fn opening(&self) -> Opening<'_> {
        self.opening.fetch_add(1, Ordering::SeqCst);
        Opening(self)
    }

    fn is_opening(&self) -> bool {
        self.opening.load(Ordering::SeqCst) > 0
    }

    /// Whether an update of `session` is wanted (a handle, or a `session/new` in flight).
    pub(super) fn wants_v1(&self, session: &str) -> bool {
        lock(&self.v1).wants(session, self.is_opening())
    }

    pub(super) fn wants_v2(&self, session: &str) -> bool {
        lock(&self.v2).wants(session, self.is_opening())
    }

    pub(super) fn send_v1(&self, session: &str, update: acp_types::v1::SessionUpdate) {
        lock(&self.v1).send(session, update, self.is_opening());
    }

    pub(super) fn send_v2(&self, session: &str, update: acp_types::v2::SessionUpdate) {
        lock(&self.v2).send(session, update, self.is_opening());
    }

    /// A handle's channel for `session` (v1), with what was held for it first.
    pub(super) fn open_v1(&self, session: &str) -> mpsc::UnboundedReceiver<acp_types::v1::SessionUpdate> {
        lock(&self.v1).open(session)
    }

    /// A handle's channel for `session` (v2), with what was held for it first.
    pub(super) fn open_v2(&self, session: &str) -> mpsc::UnboundedReceiver<acp_types::v2::SessionUpdate> {
        lock(&self.v2).open(session)
    }

    /// The handle of `session` (v1) is gone.
    pub(super) fn close_v1(&self, session: &str) {
        lock(&self.v1).to.remove(session);
    }

    /// The handle of `session` (v2) is gone.
    pub(super) fn close_v2(&self, session: &str) {
        lock(&self.v2).to.remove(session);
    }
}
