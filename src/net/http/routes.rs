//! The bookkeeping that routes messages to sessions: which session streams are open (or opening),
//! which of the agent's requests came on a session's stream (our answer names that session), and
//! which of our session requests still wait for their answer (failed if that stream ends).

use std::collections::HashMap;
use tokio::sync::watch;

/// One session's SSE stream: `ready` turns true once its response headers arrived; its sender is
/// dropped if it never opens.
pub(super) struct SessionStream {
    pub generation: u64,
    pub ready: watch::Receiver<bool>,
}

#[derive(Default)]
pub(super) struct Routes {
    pub sessions: HashMap<String, SessionStream>,
    next_generation: u64,
    /// The agent's requests that came on a session stream: id key → session.
    pub agent_requests: HashMap<String, String>,
    /// Our requests naming a session, not yet answered: id key → (session, id text).
    pub our_requests: HashMap<String, (String, String)>,
}

impl Routes {
    /// The stream of `session` if one is open or opening; else a new entry, whose generation and
    /// readiness sender the caller uses to open it.
    pub fn session(&mut self, session: &str) -> Result<watch::Receiver<bool>, (u64, watch::Sender<bool>)> {
        if let Some(stream) = self.sessions.get(session) {
            return Ok(stream.ready.clone());
        }
        self.next_generation += 1;
        let (tx, rx) = watch::channel(false);
        self.sessions.insert(session.to_string(), SessionStream { generation: self.next_generation, ready: rx });
        Err((self.next_generation, tx))
    }

    /// The stream `generation` of `session` ended: the next message reopens it; our requests
    /// waiting on it are returned (their id texts) to be failed.
    pub fn session_ended(&mut self, session: &str, generation: u64) -> Vec<String> {
        if self.sessions.get(session).is_some_and(|s| s.generation == generation) {
            self.sessions.remove(session);
        }
        let ended: Vec<String> =
            self.our_requests.iter().filter(|(_, (s, _))| s == session).map(|(key, _)| key.clone()).collect();
        ended.into_iter().filter_map(|key| self.our_requests.remove(&key)).map(|(_, id)| id).collect()
    }
}
