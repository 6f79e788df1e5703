//! [`Note`]: an item of the ordered queue of the peer's notifications (see `notifications`), and
//! [`Held`], the caller's end of a hold an answer to a relayed call puts in that queue.

use tokio::sync::oneshot;

use super::raw::Raw;

/// An item of the ordered notification queue.
pub(super) enum Note {
    /// Method, params, and the bytes they count for in the queue.
    Message(String, Option<Raw>, usize),
    /// Answered once everything queued before it was handled.
    Barrier(oneshot::Sender<()>),
    /// An answer to a relayed call (see `relay`): `reached` is answered once everything queued
    /// before it was handled, and what is queued after it waits until `release` resolves (sent
    /// or dropped).
    Hold {
        /// Told that the notifications before the answer were handled.
        reached: oneshot::Sender<()>,
        /// Resolves when the caller is done with the answer.
        release: oneshot::Receiver<()>,
    },
}

/// The caller's end of a [`Note::Hold`]: told when the notifications before the answer were
/// handled, and the sender whose send (or drop) lets those after it go.
pub(super) struct Held {
    pub(super) reached: oneshot::Receiver<()>,
    pub(super) release: oneshot::Sender<()>,
}
