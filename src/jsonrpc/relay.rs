//! Relayed calls: a request we make on behalf of a request of our peer's own peer (a proxy
//! passing a request along a chain), whose answer is passed back in the order the peer sent it
//! and whose cancellation is passed on without giving up on the answer.

use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::note::Held;
use super::pending::Answer;
use super::raw::Raw;
use crate::error::Error;

/// Keeps the peer's notifications that came after the answer to a relayed call from being
/// handled until it is dropped (or [`released`](NotificationHold::release)): hold it until the
/// answer has been passed on, so that no notification overtakes it. See
/// [`Connection::request_raw_relayed`].
#[must_use = "dropping it at once lets the notifications after the answer overtake it"]
pub struct NotificationHold(Option<oneshot::Sender<()>>);

impl NotificationHold {
    /// Lets the notifications after the answer be handled (as dropping it does).
    pub fn release(self) {}
}

impl std::fmt::Debug for NotificationHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("NotificationHold").field(&self.0.is_some()).finish()
    }
}

impl Connection {
    /// A request made for a request of the peer's own peer, e.g. a proxy passing its client's
    /// request on to its agent. Unlike [`Connection::request_raw_cancellable`]:
    /// - when `cancel` fires, `$/cancel_request` is sent once and the call goes on waiting: the
    ///   peer's answer (its -32800, or a result it had already) is what is passed back. Bound
    ///   the wait yourself; the handler of a request is dropped
    ///   [`Config::cancel_grace`](super::Config::cancel_grace) after its own cancellation;
    /// - the answer comes back after every notification the peer sent before it was handled,
    ///   and the notifications it sent after the answer are not handled until the returned
    ///   [`NotificationHold`] is dropped: pass the answer on first (a request handler hands
    ///   the hold to [`RequestContext::after_response`](super::RequestContext::after_response)).
    ///
    /// Do not call it from a notification handler: the answer would wait for that handler.
    pub async fn request_raw_relayed(
        &self,
        method: &str,
        params: Option<&RawValue>,
        cancel: &CancellationToken,
    ) -> (Result<Raw, Error>, NotificationHold) {
        let (mut answer, mut guard) = match self.call(method, params, true).await {
            Ok(call) => call,
            Err(e) => return (Err(e), NotificationHold(None)),
        };
        let answer = tokio::select! {
            answer = &mut answer => answer,
            _ = cancel.cancelled() => {
                guard.tell_cancelled().await;
                answer.await
            }
        };
        guard.live = false;
        let Ok(Answer { result, hold }) = answer else { return (Err(Error::Closed), NotificationHold(None)) };
        let Some(Held { reached, release }) = hold else { return (result, NotificationHold(None)) };
        // Resolves (or fails, once the queue is gone) when the notifications before it were handled.
        let _ = reached.await;
        (result, NotificationHold(Some(release)))
    }
}
