//! One outbound stream's queue: the agent's messages (JSON text) waiting for the client's `GET`
//! that reads them, and which receiver, if any, holds the stream. Plain data, kept under its
//! connection's lock; the receiver is woken through the stream's `Notify`.

use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::Notify;

#[derive(Default)]
pub(super) struct Mailbox {
    queue: VecDeque<Vec<u8>>,
    /// The lease of the `GET` reading this stream.
    receiver: Option<u64>,
    pub(super) wake: Arc<Notify>,
}

impl Mailbox {
    /// Queues a message; returns its size, to count against the connection's limit.
    pub(super) fn push(&mut self, message: Vec<u8>) -> usize {
        let len = message.len();
        self.queue.push_back(message);
        self.wake.notify_one();
        len
    }

    pub(super) fn pop(&mut self) -> Option<Vec<u8>> {
        self.queue.pop_front()
    }

    pub(super) fn has_queued(&self) -> bool {
        !self.queue.is_empty()
    }

    pub(super) fn receiver(&self) -> Option<u64> {
        self.receiver
    }

    /// Attaches receiver `lease`, unless the stream has one.
    pub(super) fn try_acquire(&mut self, lease: u64) -> bool {
        if self.receiver.is_some() {
            return false;
        }
        self.receiver = Some(lease);
        true
    }

    /// Detaches receiver `lease`; false when it was not the stream's.
    pub(super) fn release(&mut self, lease: u64) -> bool {
        if self.receiver != Some(lease) {
            return false;
        }
        self.receiver = None;
        true
    }
}
