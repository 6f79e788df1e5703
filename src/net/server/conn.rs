//! One ACP connection of the HTTP profile: the agent connection it feeds, the streams its
//! output is routed to (the connection's and one per session), the routes recorded for answers,
//! and the accounting behind back-pressure (`max_buffered_bytes`, `max_output_stall`) and the
//! idle timeout. The routing follows the TypeScript SDK's `connection.js` (`routeOutbound`).

use super::limits::Limits;
use super::mailbox::Mailbox;
use crate::net::{envelope, Kind};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::{mpsc, watch, Notify};
use tokio_util::sync::CancellationToken;

/// Where the answers to a request, or a message the agent sends, are delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Route {
    Connection,
    Session(String),
}

/// An id or session id over `max_id_length`, or too many buffered session streams.
#[derive(Debug)]
pub(super) struct LimitError(pub(super) String);

/// The connection has shut down.
#[derive(Debug)]
pub(super) struct Closed;

/// Why a `GET` gets no stream.
pub(super) enum AcquireError {
    Busy,
    Closed,
    Limit(LimitError),
}

pub(super) struct AgentConn {
    pub(super) id: String,
    limits: Arc<Limits>,
    state: Mutex<State>,
    /// Bumped whenever a client takes output or the connection stops: what waiters for room
    /// watch.
    progress: watch::Sender<u64>,
    /// Cancelled when the connection shuts down (a child of the server's token).
    pub(super) closed: CancellationToken,
}

struct State {
    /// The agent connection's incoming side; dropped at shutdown, so the core sees the peer gone.
    inbound: Option<mpsc::Sender<Vec<u8>>>,
    connection: Mailbox,
    sessions: HashMap<String, Mailbox>,
    /// Routes of the client's requests, by id key, for the agent's answers.
    pending_routes: HashMap<String, Route>,
    /// Routes of the agent's requests, by id key, to check the client's answers.
    client_response_routes: HashMap<String, Route>,
    buffered_bytes: usize,
    /// Session streams with no receiver attached.
    buffered_session_streams: usize,
    /// The agent's output has ended: streams end once drained.
    finished: bool,
    receivers: usize,
    last_activity: Instant,
    next_lease: u64,
}

/// The canonical key of a JSON-RPC id's text (a string, a number or null), as the TypeScript
/// `messageIdKey`; other values are no id.
pub(super) fn id_key(id: &str) -> Option<String> {
    match serde_json::from_str::<serde_json::Value>(id).ok()? {
        v @ (serde_json::Value::String(_) | serde_json::Value::Number(_) | serde_json::Value::Null) => {
            Some(v.to_string())
        }
        _ => None,
    }
}

/// The string an id's text holds, when it is a string.
pub(super) fn id_string(id: &str) -> Option<String> {
    match serde_json::from_str::<serde_json::Value>(id).ok()? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    }
}

impl AgentConn {
    pub(super) fn new(
        id: String,
        limits: Arc<Limits>,
        inbound: mpsc::Sender<Vec<u8>>,
        closed: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(AgentConn {
            id,
            limits,
            state: Mutex::new(State {
                inbound: Some(inbound),
                connection: Mailbox::default(),
                sessions: HashMap::new(),
                pending_routes: HashMap::new(),
                client_response_routes: HashMap::new(),
                buffered_bytes: 0,
                buffered_session_streams: 0,
                finished: false,
                receivers: 0,
                last_activity: Instant::now(),
                next_lease: 0,
            }),
            progress: watch::Sender::new(0),
            closed,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    fn bump(&self) {
        self.progress.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// A POST arrived: the connection is in use.
    pub(super) fn touch(&self) {
        self.state().last_activity = Instant::now();
    }

    pub(super) fn check_id_length(&self, label: &str, id: &str) -> Result<(), LimitError> {
        if id.chars().count() > self.limits.max_id_length {
            return Err(LimitError(format!("{label} exceeds maxIdLength ({})", self.limits.max_id_length)));
        }
        Ok(())
    }

    /// Hands the agent one message, waiting while its incoming queue is full.
    pub(super) async fn write_inbound(&self, message: Vec<u8>) -> Result<(), Closed> {
        let inbound = self.state().inbound.clone().ok_or(Closed)?;
        tokio::select! {
            sent = inbound.send(message) => sent.map_err(|_| Closed),
            _ = self.closed.cancelled() => Err(Closed),
        }
    }

    pub(super) fn set_pending_route(&self, key: String, route: Route) {
        self.state().pending_routes.insert(key, route);
    }

    pub(super) fn client_response_route(&self, key: &str) -> Option<Route> {
        self.state().client_response_routes.get(key).cloned()
    }

    pub(super) fn forget_client_response_route(&self, key: &str) {
        self.state().client_response_routes.remove(key);
    }

    /// Waits while the connection's streams hold `max_buffered_bytes`, until the agent's output
    /// ended (when `until_finished`) or the connection closed. No progress for
    /// `max_output_stall` closes the connection.
    pub(super) async fn wait_for_room(&self, until_finished: bool) {
        loop {
            let mut progress = self.progress.subscribe();
            {
                let st = self.state();
                if self.is_closed()
                    || (until_finished && st.finished)
                    || st.buffered_bytes < self.limits.max_buffered_bytes
                {
                    return;
                }
            }
            if tokio::time::timeout(self.limits.max_output_stall, progress.changed()).await.is_err() {
                tracing::warn!(
                    "acp server: closing connection {}: output stalled for {:?} with {} bytes queued",
                    self.id,
                    self.limits.max_output_stall,
                    self.limits.max_buffered_bytes
                );
                self.shutdown();
                return;
            }
        }
    }

    /// Routes one message of the agent to its stream.
    pub(super) fn route_outbound(&self, message: Vec<u8>) -> Result<(), LimitError> {
        let Ok(env) = envelope(&message) else {
            // The agent's own output is always an object; anything else goes to the connection.
            let mut st = self.state();
            st.buffered_bytes += st.connection.push(message);
            return Ok(());
        };
        let mut st = self.state();
        let route = match env.kind {
            Kind::Response => {
                if let Some(session) = &env.result_session_id {
                    // Never hand out a session id this connection would refuse to route.
                    self.check_id_length("Session ID", session)?;
                }
                let key = env.id.as_deref().and_then(id_key);
                key.and_then(|k| st.pending_routes.remove(&k)).unwrap_or(Route::Connection)
            }
            _ => {
                let route = match env.session_id {
                    Some(session) => {
                        self.check_id_length("Session ID", &session)?;
                        Route::Session(session)
                    }
                    None => Route::Connection,
                };
                if env.kind == Kind::Request {
                    if let Some(key) = env.id.as_deref().and_then(id_key) {
                        st.client_response_routes.insert(key, route.clone());
                    }
                }
                route
            }
        };
        let len = match route {
            Route::Connection => st.connection.push(message),
            Route::Session(session) => {
                if !st.sessions.contains_key(&session) {
                    if st.buffered_session_streams >= self.limits.max_buffered_session_streams {
                        return Err(self.too_many_streams());
                    }
                    st.buffered_session_streams += 1;
                }
                st.sessions.entry(session).or_default().push(message)
            }
        };
        st.buffered_bytes += len;
        Ok(())
    }

    fn too_many_streams(&self) -> LimitError {
        LimitError(format!(
            "Connection exceeds maxBufferedSessionStreams ({})",
            self.limits.max_buffered_session_streams
        ))
    }

    /// Attaches a receiver to the connection's stream (`None`) or a session's.
    pub(super) fn acquire(self: &Arc<Self>, session: Option<&str>) -> Result<Lease, AcquireError> {
        if let Some(session) = session {
            self.check_id_length("Session ID", session).map_err(AcquireError::Limit)?;
        }
        let mut st = self.state();
        if self.is_closed() {
            return Err(AcquireError::Closed);
        }
        let lease = st.next_lease;
        st.next_lease += 1;
        let wake = match session {
            None => {
                if !st.connection.try_acquire(lease) {
                    return Err(AcquireError::Busy);
                }
                st.connection.wake.clone()
            }
            Some(session) => {
                let finished = st.finished;
                match st.sessions.get_mut(session) {
                    Some(stream) => {
                        if !stream.try_acquire(lease) {
                            return Err(AcquireError::Busy);
                        }
                        let wake = stream.wake.clone();
                        st.buffered_session_streams -= 1;
                        wake
                    }
                    None if finished => return Err(AcquireError::Closed),
                    None => {
                        let mut stream = Mailbox::default();
                        stream.try_acquire(lease);
                        let wake = stream.wake.clone();
                        st.sessions.insert(session.to_string(), stream);
                        wake
                    }
                }
            }
        };
        st.receivers += 1;
        Ok(Lease { conn: self.clone(), session: session.map(str::to_string), lease, wake })
    }

    fn release(&self, session: Option<&str>, lease: u64) {
        let mut st = self.state();
        if self.is_closed() {
            return;
        }
        let released = match session {
            None => st.connection.release(lease),
            Some(s) => st.sessions.get_mut(s).is_some_and(|m| m.release(lease)),
        };
        if !released {
            return;
        }
        st.receivers -= 1;
        st.last_activity = Instant::now();
        let Some(session) = session else { return };
        if !st.sessions.get(session).is_some_and(Mailbox::has_queued) {
            st.sessions.remove(session);
            return;
        }
        // A stream left with messages waits for the next receiver, and counts as buffered.
        st.buffered_session_streams += 1;
        if !st.finished && st.buffered_session_streams > self.limits.max_buffered_session_streams {
            drop(st);
            tracing::warn!("acp server: closing connection {}: {}", self.id, self.too_many_streams().0);
            self.shutdown();
        }
    }

    /// The next message for receiver `lease`; `None` once the stream ends.
    async fn next(&self, session: Option<&str>, lease: u64, wake: &Notify) -> Option<Vec<u8>> {
        loop {
            {
                let mut st = self.state();
                if self.is_closed() {
                    return None;
                }
                let finished = st.finished;
                let stream = match session {
                    None => &mut st.connection,
                    Some(s) => st.sessions.get_mut(s)?,
                };
                if stream.receiver() != Some(lease) {
                    return None;
                }
                if let Some(message) = stream.pop() {
                    st.buffered_bytes -= message.len();
                    drop(st);
                    self.bump();
                    return Some(message);
                }
                if finished {
                    return None;
                }
            }
            tokio::select! {
                _ = wake.notified() => {}
                _ = self.closed.cancelled() => return None,
            }
        }
    }

    /// The agent's output ended: streams end once their queues are read.
    fn finish(&self) {
        let mut st = self.state();
        st.finished = true;
        st.connection.wake.notify_one();
        for stream in st.sessions.values() {
            stream.wake.notify_one();
        }
        drop(st);
        self.bump();
    }

    /// Ends the connection: streams end, queued output is dropped, the agent sees its peer gone.
    pub(super) fn shutdown(&self) {
        self.closed.cancel();
        let mut st = self.state();
        st.inbound = None;
        st.sessions.clear();
        st.connection = Mailbox::default();
        st.pending_routes.clear();
        st.client_response_routes.clear();
        st.buffered_bytes = 0;
        st.buffered_session_streams = 0;
        drop(st);
        self.bump();
    }

    /// Routes the agent's output until it ends or the connection closes, pausing while clients
    /// are behind (which makes the agent's sends wait); also closes the connection when idle.
    pub(super) async fn run_router(self: Arc<Self>, mut outbound: mpsc::Receiver<Vec<u8>>) {
        let route = async {
            while let Some(message) = outbound.recv().await {
                if let Err(LimitError(why)) = self.route_outbound(message) {
                    tracing::warn!("acp server: closing connection {}: {why}", self.id);
                    self.shutdown();
                    return;
                }
                self.wait_for_room(false).await;
            }
            self.finish();
        };
        tokio::select! {
            _ = route => {}
            _ = self.closed.cancelled() => {}
            _ = self.idle() => {
                tracing::info!("acp server: closing idle connection {}", self.id);
                self.shutdown();
            }
        }
    }

    /// Resolves once no stream has been attached and no POST has come for `idle_timeout`.
    async fn idle(&self) {
        loop {
            let (receivers, last) = {
                let st = self.state();
                (st.receivers, st.last_activity)
            };
            let since = last.elapsed();
            if receivers == 0 && since >= self.limits.idle_timeout {
                return;
            }
            let wait = if receivers > 0 { self.limits.idle_timeout } else { self.limits.idle_timeout - since };
            tokio::time::sleep(wait).await;
        }
    }
}

/// A `GET`'s hold on one stream; dropping it (the client went away) leaves what was not taken
/// queued for the next receiver.
pub(super) struct Lease {
    conn: Arc<AgentConn>,
    session: Option<String>,
    lease: u64,
    wake: Arc<Notify>,
}

impl Lease {
    /// The next message's JSON text; `None` when the stream ends.
    pub(super) async fn next(&self) -> Option<Vec<u8>> {
        self.conn.next(self.session.as_deref(), self.lease, &self.wake).await
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.conn.release(self.session.as_deref(), self.lease);
    }
}
