//! The state of each v2 session the client sees ([`SessionState`], generated from the schema's
//! `x-state` annotations), kept current as the agent's messages arrive: every `session/update`
//! (a replayed history included), the answers of `session/new`, `session/resume` and
//! `session/set_config_option`, and permission requests (their tool call). Each session's state
//! is in a `watch` channel: its handle reads it ([`v2::Session::state`](super::v2::Session::state))
//! and awaits its changes. A session's state is dropped with its handle (or by
//! [`ClientConnection::forget_session_state_v2`](super::ClientConnection::forget_session_state_v2)).

use crate::sync::lock;
use acp_types::support::state::{Applied, Stateful};
use acp_types::v2;
use acp_types::v2::state::SessionState;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::watch;

/// The states of the v2 sessions of one connection, by session id.
#[derive(Default)]
pub(super) struct SessionStates {
    by_session: Mutex<HashMap<String, watch::Sender<SessionState>>>,
}

impl SessionStates {
    fn sender(&self, session: &str) -> watch::Sender<SessionState> {
        lock(&self.by_session)
            .entry(session.to_string())
            .or_insert_with(|| watch::Sender::new(Default::default()))
            .clone()
    }

    /// Applies a message to `session`'s state; watchers hear of it when it changed something.
    pub(super) fn apply<M: Stateful + ?Sized>(&self, session: &str, message: &M) -> Applied {
        let mut applied = Applied::NoState;
        self.sender(session).send_if_modified(|state| {
            applied = state.apply(message);
            !matches!(applied, Applied::NoState)
        });
        applied
    }

    /// Applies the JSON of a message whose schema type is `type_name` to the session its
    /// `x-scope` names; nothing when it names none.
    pub(super) fn apply_json(&self, type_name: &str, message: serde_json::Value) -> Applied {
        let session = match v2::state::scope_id(type_name, "session", &message) {
            Some(serde_json::Value::String(s)) => s.clone(),
            _ => return Applied::NoState,
        };
        let mut applied = Applied::NoState;
        self.sender(&session).send_if_modified(|state| {
            applied = state.apply_json(type_name, message);
            !matches!(applied, Applied::NoState)
        });
        applied
    }

    /// The session's `state` target (running, idle, requires action), as the messages set it.
    pub(super) fn activity(&self, session: &str) -> Option<v2::StateUpdate> {
        let tx = lock(&self.by_session).get(session).cloned()?;
        let state = tx.borrow();
        state.state.get()?.ok()
    }

    /// A receiver of `session`'s state (created empty if no message named it yet).
    pub(super) fn watch(&self, session: &str) -> watch::Receiver<SessionState> {
        self.sender(session).subscribe()
    }

    /// A copy of `session`'s state, if the client has seen it.
    pub(super) fn snapshot(&self, session: &str) -> Option<SessionState> {
        lock(&self.by_session).get(session).map(|tx| tx.borrow().clone())
    }

    /// Drops `session`'s state.
    pub(super) fn forget(&self, session: &str) {
        lock(&self.by_session).remove(session);
    }
}
