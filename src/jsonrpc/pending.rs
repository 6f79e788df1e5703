//! Our calls awaiting an answer, as the table in [`Connection`](super::Connection) keeps them:
//! [`Waiter`], the end a call's answer is sent to, and [`Answer`], what is sent.

use tokio::sync::oneshot;

use super::note::Held;
use super::raw::Raw;
use crate::error::Error;

/// One call of ours awaiting its answer.
pub(super) struct Waiter {
    pub(super) tx: oneshot::Sender<Answer>,
    /// A relayed call: its answer holds the notifications read after it (see `relay`).
    pub(super) ordered: bool,
}

/// The peer's answer to one of our calls (or why none came); for a relayed call, the hold on the
/// notifications read after it.
pub(super) struct Answer {
    pub(super) result: Result<Raw, Error>,
    pub(super) hold: Option<Held>,
}
