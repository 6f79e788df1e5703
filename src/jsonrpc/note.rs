//! [`Note`]: an item of the ordered queue of the peer's notifications (see `notifications`).

use tokio::sync::oneshot;

use super::raw::Raw;

/// An item of the ordered notification queue.
pub(super) enum Note {
    /// Method, params, and the bytes they count for in the queue.
    Message(String, Option<Raw>, usize),
    /// Answered once everything queued before it was handled.
    Barrier(oneshot::Sender<()>),
}
