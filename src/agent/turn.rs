//! The v2 prompt turn as the agent's work sees it ([`Turn`]): its session, the inserted user
//! message, updates and permission requests in its session, fresh message ids, and its
//! cancellation (by `session/cancel` or `session/close`).

use super::context::AgentContext;
use crate::error::Error;
use acp_types::v2;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// One v2 prompt turn, as [`PromptTurn::prompt_turn`](super::handler::PromptTurn::prompt_turn)
/// runs it.
#[derive(Clone)]
pub struct Turn {
    cx: AgentContext,
    session_id: v2::SessionId,
    user_message: v2::MessageId,
    ids: Arc<MessageIds>,
}

impl Turn {
    pub(super) fn new(
        cx: AgentContext,
        session_id: v2::SessionId,
        user_message: v2::MessageId,
        ids: Arc<MessageIds>,
    ) -> Self {
        Turn { cx, session_id, user_message, ids }
    }

    /// The agent's context: calls to the client, the version; its cancellation is the turn's.
    pub fn context(&self) -> &AgentContext {
        &self.cx
    }

    /// The session prompted.
    pub fn session_id(&self) -> &v2::SessionId {
        &self.session_id
    }

    /// The `messageId` of the inserted user message (the `session/prompt` answer's).
    pub fn user_message(&self) -> &v2::MessageId {
        &self.user_message
    }

    /// Sends a `session/update` for this turn's session.
    pub async fn update(&self, update: v2::SessionUpdate) -> Result<(), Error> {
        let note = v2::UpdateSessionNotification::new(self.session_id.clone(), update);
        self.cx.notify::<v2::methods::SessionUpdate>(&note).await
    }

    /// A fresh `messageId`, for a message of the agent's (chunks of one message share it).
    pub fn new_message_id(&self) -> v2::MessageId {
        self.ids.next()
    }

    /// Whether the turn was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cx.is_cancelled()
    }

    /// Resolves when the turn is cancelled.
    pub async fn cancelled(&self) {
        self.cx.cancelled().await
    }

    /// What the client advertised in `initialize` (v2: `auth`, `elicitation`).
    pub fn client_capabilities(&self) -> v2::ClientCapabilities {
        self.cx.v2_capabilities()
    }

    /// Asks the user (`session/request_permission`) in this turn's session, under `title`, to
    /// choose one of `options`; returns the outcome (`Cancelled` when the client gave up on it,
    /// e.g. after `session/cancel`).
    pub async fn ask_permission(
        &self,
        title: impl Into<String>,
        options: Vec<v2::PermissionOption>,
    ) -> Result<v2::RequestPermissionOutcome, Error> {
        let asked = v2::RequestPermissionRequest::new(self.session_id.clone(), title.into(), options);
        Ok(self.cx.request::<v2::methods::SessionRequestPermission>(&asked).await?.outcome)
    }
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("session_id", &self.session_id)
            .field("user_message", &self.user_message)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// `messageId`s unique to a connection (and, by the prefix, across the agent's connections).
pub(super) struct MessageIds {
    prefix: String,
    next: AtomicU64,
}

impl Default for MessageIds {
    fn default() -> Self {
        static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
        let started = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or_default();
        let connection = CONNECTIONS.fetch_add(1, Ordering::Relaxed);
        MessageIds { prefix: format!("msg-{started:x}-{}-{connection}", std::process::id()), next: AtomicU64::new(0) }
    }
}

impl MessageIds {
    pub(super) fn next(&self) -> v2::MessageId {
        v2::MessageId(format!("{}-{}", self.prefix, self.next.fetch_add(1, Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_distinct() {
        let (a, b) = (MessageIds::default(), MessageIds::default());
        let ids = [a.next(), a.next(), b.next()];
        assert!(ids[0] != ids[1] && ids[0] != ids[2] && ids[1] != ids[2]);
    }
}
