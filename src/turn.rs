//! The v2 prompt turn, kept by the runtime at both ends.
//!
//! In v2 a `session/prompt` is answered as soon as the user message is inserted (the answer
//! carries its `messageId`); the turn runs on after it and is reported through `session/update`:
//! `running` when its foreground work starts, `idle` with a `stopReason` when it ends.
//!
//! - Agent side ([`Turn`]): the runtime inserts the message (a `user_message` update with the
//!   prompt's content and the answer's `messageId`), answers, reports `running`, runs
//!   [`PromptTurn::prompt_turn`](crate::agent::PromptTurn::prompt_turn) with a cancellation of the turn's own
//!   (reached by `session/cancel` and `session/close`; the turn is dropped when the connection
//!   closes), and reports `idle` with the stop reason the handler returned (`cancelled` when the
//!   turn was cancelled, `error` when the handler failed). Turns of one session run one after the
//!   other.
//! - Client side (`ClientConnection::prompt_v2`): a prompt completes at the first `idle` after
//!   that prompt's `running` (or `requires_action`); an `idle` snapshot with no such start (the
//!   one an agent sends after `session/new`, a resume's) is not a turn end.

use crate::connection::Error;
use crate::session::Context;
use crate::sync::lock;
use acp_types::v2;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

/// One v2 prompt turn, as its handler sees it.
#[derive(Clone)]
pub struct Turn {
    /// The connection and the negotiated version; `cancel` is the turn's own, cancelled by
    /// `session/cancel` or `session/close` for this session.
    pub cx: Context,
    /// The session prompted.
    pub session_id: v2::SessionId,
    /// The `messageId` of the inserted user message (the `session/prompt` answer's).
    pub user_message: v2::MessageId,
    ids: Arc<MessageIds>,
}

impl Turn {
    pub(crate) fn new(
        cx: Context,
        session_id: v2::SessionId,
        user_message: v2::MessageId,
        ids: Arc<MessageIds>,
    ) -> Self {
        Turn { cx, session_id, user_message, ids }
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
}

/// `messageId`s unique to a connection (and, by the prefix, across the agent's connections).
pub(crate) struct MessageIds {
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
    pub(crate) fn next(&self) -> v2::MessageId {
        v2::MessageId(format!("{}-{}", self.prefix, self.next.fetch_add(1, Ordering::Relaxed)))
    }
}

/// One lock per session, so that its turns run one after the other.
#[derive(Default)]
pub(crate) struct SessionLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl SessionLocks {
    pub(crate) fn of(&self, session: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = lock(&self.0);
        // Locks nobody holds or waits for are dropped here, so the map stays as large as the
        // sessions with turns in flight.
        locks.retain(|_, l| Arc::strong_count(l) > 1);
        locks.entry(session.to_string()).or_default().clone()
    }
}

/// How a v2 turn ended, as the client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    /// The `messageId` the agent gave the prompt's user message.
    pub message_id: v2::MessageId,
    /// The `idle` state update that ended the turn: its stop reason (and, with the `unstable`
    /// feature, its usage).
    pub idle: v2::IdleStateUpdate,
}

struct Waiter {
    key: u64,
    started: bool,
    done: oneshot::Sender<v2::IdleStateUpdate>,
}

/// The client's prompts waiting for their turn to end, by session.
#[derive(Default)]
pub(crate) struct TurnWaiters {
    waiting: Mutex<HashMap<String, Vec<Waiter>>>,
    next: AtomicU64,
}

/// Removes its waiter when dropped (the prompt failed, or its caller gave up).
pub(crate) struct Waiting {
    waiters: Arc<TurnWaiters>,
    session: String,
    key: u64,
    pub(crate) done: oneshot::Receiver<v2::IdleStateUpdate>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut waiting = lock(&self.waiters.waiting);
        if let Some(list) = waiting.get_mut(&self.session) {
            list.retain(|w| w.key != self.key);
            if list.is_empty() {
                waiting.remove(&self.session);
            }
        }
    }
}

impl TurnWaiters {
    /// Waits for the end of the next turn of `session` that starts from now on.
    pub(crate) fn wait(self: &Arc<Self>, session: &str) -> Waiting {
        let (tx, rx) = oneshot::channel();
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.waiting).entry(session.to_string()).or_default().push(Waiter { key, started: false, done: tx });
        Waiting { waiters: self.clone(), session: session.to_string(), key, done: rx }
    }

    /// A state update of `session`, once the client's handler has seen it: `running` (or
    /// `requires_action`) starts the turns waited for; `idle` ends the oldest started one, and
    /// the others wait for a start of their own. An `idle` with no start before it is a snapshot.
    pub(crate) fn observe(&self, session: &str, state: &v2::StateUpdate) {
        let mut waiting = lock(&self.waiting);
        let Some(list) = waiting.get_mut(session) else { return };
        match state {
            v2::StateUpdate::Running(_) | v2::StateUpdate::RequiresAction(_) => {
                list.iter_mut().for_each(|w| w.started = true);
            }
            v2::StateUpdate::Idle(idle) => {
                if let Some(first) = list.iter().position(|w| w.started) {
                    let _ = list.remove(first).done.send(idle.as_ref().clone());
                }
                list.iter_mut().for_each(|w| w.started = false);
            }
            // Unknown states (a newer revision's) neither start nor end a turn.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle(stop: v2::IdleStateUpdateStopReason) -> v2::StateUpdate {
        v2::StateUpdate::Idle(Box::new(v2::IdleStateUpdate::new(stop)))
    }

    fn running() -> v2::StateUpdate {
        v2::StateUpdate::Running(v2::RunningStateUpdate::new())
    }

    #[test]
    fn an_idle_snapshot_is_not_a_turn_end() {
        let waiters = Arc::new(TurnWaiters::default());
        let mut waiting = waiters.wait("s");
        waiters.observe("s", &idle(v2::IdleStateUpdateStopReason::EndTurn));
        assert!(waiting.done.try_recv().is_err());
        waiters.observe("s", &running());
        waiters.observe("other", &idle(v2::IdleStateUpdateStopReason::Refusal));
        assert!(waiting.done.try_recv().is_err());
        waiters.observe("s", &idle(v2::IdleStateUpdateStopReason::Cancelled));
        assert_eq!(waiting.done.try_recv().map(|i| i.stop_reason), Ok(v2::IdleStateUpdateStopReason::Cancelled));
    }

    #[test]
    fn queued_prompts_end_one_turn_each() {
        let waiters = Arc::new(TurnWaiters::default());
        let (mut first, mut second) = (waiters.wait("s"), waiters.wait("s"));
        waiters.observe("s", &running());
        waiters.observe("s", &idle(v2::IdleStateUpdateStopReason::EndTurn));
        assert!(first.done.try_recv().is_ok());
        // The second prompt's turn has not started: a repeated idle is a snapshot.
        waiters.observe("s", &idle(v2::IdleStateUpdateStopReason::EndTurn));
        assert!(second.done.try_recv().is_err());
        waiters.observe("s", &running());
        waiters.observe("s", &idle(v2::IdleStateUpdateStopReason::MaxTokens));
        assert_eq!(second.done.try_recv().map(|i| i.stop_reason), Ok(v2::IdleStateUpdateStopReason::MaxTokens));
    }

    #[test]
    fn dropped_waiters_are_forgotten() {
        let waiters = Arc::new(TurnWaiters::default());
        drop(waiters.wait("s"));
        assert!(lock(&waiters.waiting).is_empty());
    }

    #[test]
    fn message_ids_are_distinct() {
        let (a, b) = (MessageIds::default(), MessageIds::default());
        let ids = [a.next(), a.next(), b.next()];
        assert!(ids[0] != ids[1] && ids[0] != ids[2] && ids[1] != ids[2]);
    }
}
