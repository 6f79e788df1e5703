//! Our calls to the peer: requests (raw and typed, cancellable) and notifications, the table of
//! calls awaiting an answer, and the correlation of the peer's responses with them; and
//! [`CANCEL_REQUEST`], the method that cancels a call (ours here, the peer's in `handlers`).

use acp_types::support::rpc::{self, RpcError};
use serde_json::value::RawValue;
use std::sync::atomic::Ordering;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::pending::{Answer, Waiter};
use super::raw::Raw;
use crate::error::{Error, Misuse};
use crate::sync::lock;

/// `$/cancel_request`, the protocol-level method both ends send (the same in every version).
pub(super) const CANCEL_REQUEST: &str =
    <acp_types::v1::methods::CancelRequest as acp_types::support::rpc::Method>::METHOD;

impl Connection {
    /// Sends a request and waits for its answer. Dropping the future cancels the call: the
    /// peer is sent `$/cancel_request`.
    pub async fn request_raw(&self, method: &str, params: Option<&RawValue>) -> Result<Raw, Error> {
        self.request_raw_cancellable(method, params, None).await
    }

    /// [`Connection::request_raw`], also resolved (with [`Error::Cancelled`], after sending
    /// `$/cancel_request`) when `cancel` fires.
    pub async fn request_raw_cancellable(
        &self,
        method: &str,
        params: Option<&RawValue>,
        cancel: Option<CancellationToken>,
    ) -> Result<Raw, Error> {
        let (answer, mut guard) = self.call(method, params, false).await?;
        let cancel = cancel.unwrap_or_default();
        let result = tokio::select! {
            answer = answer => answer.map_or(Err(Error::Closed), |a| a.result),
            _ = cancel.cancelled() => {
                guard.cancel().await;
                Err(Error::Cancelled)
            }
        };
        guard.live = false;
        result
    }

    /// Sends a request; its answer comes on the receiver, and the guard tells the peer when the
    /// call is abandoned. `ordered`: the answer holds the notifications read after it (`relay`).
    pub(super) async fn call(
        &self,
        method: &str,
        params: Option<&RawValue>,
        ordered: bool,
    ) -> Result<(oneshot::Receiver<Answer>, CallGuard<'_>), Error> {
        if self.inner.peer_done.is_cancelled() {
            return Err(Error::Closed);
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.pending).insert(id, Waiter { tx, ordered });
        // A reader paused for backpressure must read again: this call's answer is coming.
        self.inner.resume.notify_waiters();
        let mut guard = CallGuard { conn: self, id, live: true, told: false };
        // The peer may have gone between the check above and the insert: nothing would fail it.
        if self.inner.peer_done.is_cancelled() {
            guard.forget();
            return Err(Error::Closed);
        }
        let method_json = serde_json::to_string(method).map_err(|e| Misuse::Params(e.to_string()))?;
        let message = match params {
            Some(p) => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method_json},"params":{}}}"#, p.get()),
            None => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method_json}}}"#),
        };
        self.send(message.into_bytes()).await?;
        Ok((rx, guard))
    }

    /// Sends a notification.
    pub async fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<(), Error> {
        let method_json = serde_json::to_string(method).map_err(|e| Misuse::Params(e.to_string()))?;
        let message = match params {
            Some(p) => format!(r#"{{"jsonrpc":"2.0","method":{method_json},"params":{}}}"#, p.get()),
            None => format!(r#"{{"jsonrpc":"2.0","method":{method_json}}}"#),
        };
        self.send(message.into_bytes()).await
    }

    /// A typed request: `conn.request::<v1::methods::SessionPrompt>(&params)`.
    pub async fn request<M: rpc::Request>(&self, params: &M::Params) -> Result<M::Response, Error> {
        self.request_cancellable::<M>(params, None).await
    }

    /// A typed request that `cancel` can cancel.
    pub async fn request_cancellable<M: rpc::Request>(
        &self,
        params: &M::Params,
        cancel: Option<CancellationToken>,
    ) -> Result<M::Response, Error> {
        let params = acp_types::support::json::to_raw_value(params)
            .map_err(|e| Misuse::Params(format!("cannot encode the params of {}: {e}", M::METHOD)))?;
        let result = self.request_raw_cancellable(M::METHOD, Some(&params), cancel).await?;
        rpc::decode_raw::<M::Response>(M::METHOD, result.into()).map_err(|e| {
            // The error names params; here it is the result, so only its path and reason are kept.
            let field = |k: &str| e.data.as_ref().and_then(|d| d.get(k)).and_then(serde_json::Value::as_str);
            let why = match (field("path"), field("reason")) {
                (Some(path), Some(reason)) if !path.is_empty() && path != "." => format!("{path}: {reason}"),
                (_, Some(reason)) => reason.to_string(),
                _ => e.message.clone(),
            };
            Error::Protocol(format!("the response to {} does not decode: {why}", M::METHOD))
        })
    }

    /// A typed notification.
    pub async fn notify<M: rpc::Notification>(&self, params: &M::Params) -> Result<(), Error> {
        // Encoded straight into the message, without an intermediate string of the params.
        let mut message = Vec::with_capacity(256);
        message.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
        serde_json::to_writer(&mut message, M::METHOD).map_err(|e| Misuse::Params(e.to_string()))?;
        message.extend_from_slice(br#","params":"#);
        acp_types::support::json::to_writer(&mut message, params)
            .map_err(|e| Misuse::Params(format!("cannot encode the params of {}: {e}", M::METHOD)))?;
        message.push(b'}');
        self.send(message).await
    }

    /// Resolves our call `id` (JSON text) with the peer's answer, if it is one of ours.
    pub(super) fn answer_call(&self, id: Option<String>, answer: Result<Raw, RpcError>) {
        let waiter = id
            .as_deref()
            .and_then(|id| serde_json::from_str::<i64>(id).ok())
            .and_then(|k| lock(&self.inner.pending).remove(&k));
        match waiter {
            Some(waiter) => {
                // Placed in the notification queue now, while the reader is on this answer.
                let hold = if waiter.ordered { self.hold_notifications() } else { None };
                let _ = waiter.tx.send(Answer { result: answer.map_err(Error::Peer), hold });
            }
            None => {
                tracing::warn!("acp: response to unknown request id {} dropped", id.as_deref().unwrap_or("(none)"))
            }
        }
    }

    /// Fails our call `id` (JSON text) with `why`, if it is one of ours; true when it was.
    pub(super) fn fail_call(&self, id: &str, why: String) -> bool {
        let waiter = serde_json::from_str::<i64>(id).ok().and_then(|k| lock(&self.inner.pending).remove(&k));
        match waiter {
            Some(waiter) => {
                let _ = waiter.tx.send(Answer { result: Err(Error::Protocol(why)), hold: None });
                true
            }
            None => false,
        }
    }

    /// Fails every pending call with [`Error::Closed`].
    pub(super) fn fail_pending(&self) {
        for (_, waiter) in lock(&self.inner.pending).drain() {
            let _ = waiter.tx.send(Answer { result: Err(Error::Closed), hold: None });
        }
    }
}

/// Removes an abandoned call and tells the peer (on drop, or when cancelled explicitly).
pub(super) struct CallGuard<'a> {
    conn: &'a Connection,
    id: i64,
    /// Still awaiting the answer.
    pub(super) live: bool,
    /// `$/cancel_request` was sent already (a relayed call goes on waiting after it).
    told: bool,
}

impl CallGuard<'_> {
    fn forget(&mut self) -> bool {
        self.live = false;
        lock(&self.conn.inner.pending).remove(&self.id).is_some()
    }

    fn cancel_message(&self) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","method":"{CANCEL_REQUEST}","params":{{"requestId":{}}}}}"#, self.id).into_bytes()
    }

    async fn cancel(&mut self) {
        if self.forget() && !self.told {
            let _ = self.conn.send(self.cancel_message()).await;
        }
    }

    /// Sends `$/cancel_request` (once) and keeps the call, so that the peer's answer still comes.
    pub(super) async fn tell_cancelled(&mut self) {
        if !self.told {
            self.told = true;
            let _ = self.conn.send(self.cancel_message()).await;
        }
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if self.live && self.forget() && !self.told && !self.conn.is_closed() {
            // Best effort: a full queue means the peer is not reading anyway.
            let _ = self.conn.inner.out.try_send(self.cancel_message());
        }
    }
}
