//! Session-level cancellation: every running request that names a `sessionId` is registered
//! under it, so that `session/cancel` reaches all of that session's work at once.

use acp_types::Version;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The session a message is about: its top-level `sessionId`.
pub fn session_of(params: Option<&RawValue>) -> Option<String> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
    }
    params.and_then(|p| serde_json::from_str::<Probe>(p.get()).ok()).and_then(|p| p.session_id)
}

/// Running work by session.
#[derive(Default)]
pub struct Sessions {
    running: Mutex<HashMap<String, Vec<(u64, CancellationToken)>>>,
    next: std::sync::atomic::AtomicU64,
}

/// Unregisters on drop.
pub struct Registration {
    sessions: Arc<Sessions>,
    session: String,
    key: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut running = self.sessions.running.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(list) = running.get_mut(&self.session) {
            list.retain(|(k, _)| *k != self.key);
            if list.is_empty() {
                running.remove(&self.session);
            }
        }
    }
}

impl Sessions {
    /// Registers `token` under `session` until the registration is dropped.
    pub fn register(self: &Arc<Self>, session: String, token: CancellationToken) -> Registration {
        let key = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.running.lock().unwrap_or_else(|p| p.into_inner()).entry(session.clone()).or_default().push((key, token));
        Registration { sessions: self.clone(), session, key }
    }

    /// Cancels everything running for `session`.
    pub fn cancel(&self, session: &str) {
        if let Some(list) = self.running.lock().unwrap_or_else(|p| p.into_inner()).get(session) {
            for (_, token) in list {
                token.cancel();
            }
        }
    }
}

/// What a handler gets besides its params: the connection (to call the peer), the negotiated
/// protocol version, and a token cancelled when the request is (`$/cancel_request`) or its
/// session is (`session/cancel`).
#[derive(Clone)]
pub struct Context {
    /// The connection, to call the peer while handling.
    pub conn: crate::connection::Connection,
    /// The negotiated protocol version.
    pub version: Version,
    /// Cancelled when this request or its session is cancelled.
    pub cancel: CancellationToken,
    /// What the client advertised in `initialize` (agent side; empty on the client's side).
    pub(crate) advertised: Advertised,
}

/// The client's `initialize` capabilities, shared by the tasks of an agent's connection.
#[derive(Clone, Default)]
pub(crate) struct Advertised(Arc<Mutex<Option<crate::agent::ClientCapabilities>>>);

impl Advertised {
    pub(crate) fn get(&self) -> Option<crate::agent::ClientCapabilities> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn set(&self, capabilities: crate::agent::ClientCapabilities) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(capabilities);
    }
}

impl Context {
    /// Resolves when the request or its session is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Whether the request or its session was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// A typed request to the peer.
    pub async fn request<M: acp_types::support::rpc::Request>(
        &self,
        params: &M::Params,
    ) -> Result<M::Response, crate::connection::Error> {
        self.conn.request::<M>(params).await
    }

    /// A typed notification to the peer.
    pub async fn notify<M: acp_types::support::rpc::Notification>(
        &self,
        params: &M::Params,
    ) -> Result<(), crate::connection::Error> {
        self.conn.notify::<M>(params).await
    }
}

/// The protocol version a connection agreed on, shared by its tasks; none before `initialize`.
#[derive(Clone, Default)]
pub(crate) struct Negotiated(Arc<AtomicU16>);

impl Negotiated {
    /// The agreed version, if any.
    pub(crate) fn get(&self) -> Option<Version> {
        // 0 (no version) is no protocol version number.
        Version::from_number(self.0.load(Ordering::SeqCst))
    }

    pub(crate) fn set(&self, version: Version) {
        self.0.store(version.number(), Ordering::SeqCst);
    }

    /// No version agreed (an `initialize` that failed).
    pub(crate) fn clear(&self) {
        self.0.store(0, Ordering::SeqCst);
    }
}
