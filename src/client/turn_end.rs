//! The end of a v2 prompt turn as the client sees it ([`TurnEnd`]): a prompt completes at the
//! first `idle` after that prompt's `running` (or `requires_action`); an `idle` snapshot with no
//! such start (the one an agent sends after `session/new`, a resume's) is not a turn end.

use crate::sync::lock;
use acp_types::v2;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

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
pub(super) struct TurnWaiters {
    waiting: Mutex<HashMap<String, Vec<Waiter>>>,
    next: AtomicU64,
}

/// Removes its waiter when dropped (the prompt failed, or its caller gave up).
pub(super) struct Waiting {
    waiters: Arc<TurnWaiters>,
    session: String,
    key: u64,
    pub(super) done: oneshot::Receiver<v2::IdleStateUpdate>,
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
    pub(super) fn wait(self: &Arc<Self>, session: &str) -> Waiting {
        let (tx, rx) = oneshot::channel();
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.waiting).entry(session.to_string()).or_default().push(Waiter { key, started: false, done: tx });
        Waiting { waiters: self.clone(), session: session.to_string(), key, done: rx }
    }

    /// A state update of `session`, once the client's handler has seen it: `running` (or
    /// `requires_action`) starts the turns waited for; `idle` ends the oldest started one, and
    /// the others wait for a start of their own. An `idle` with no start before it is a snapshot.
    pub(super) fn observe(&self, session: &str, state: &v2::StateUpdate) {
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
}
