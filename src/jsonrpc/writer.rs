//! The write queue: what goes on it (every message we send, from any task) and the one task that
//! empties it into the transport, several messages per write.

use acp_types::support::rpc::RpcError;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::transport::Sink;
use crate::error::Error;

/// Writes what is queued until the connection closes (what is queued by then is still written)
/// or a write fails (which closes it).
pub(super) async fn write_queued(mut queue: mpsc::Receiver<Vec<u8>>, mut sink: impl Sink, closed: CancellationToken) {
    loop {
        // The service holds a handle of its own, so the queue never closes by itself:
        // on close, write what is queued and stop.
        let message = tokio::select! {
            biased;
            message = queue.recv() => message,
            _ = closed.cancelled() => queue.try_recv().ok(),
        };
        let Some(message) = message else { break };
        // What else is queued goes in the same write (at most 64 messages, so that a
        // busy sender cannot hold the writer here).
        let mut messages = vec![message];
        while messages.len() < 64 {
            match queue.try_recv() {
                Ok(message) => messages.push(message),
                Err(_) => break,
            }
        }
        if let Err(e) = sink.send_all(messages).await {
            tracing::warn!("acp: cannot write to the peer: {e}");
            closed.cancel();
            break;
        }
    }
}

impl Connection {
    /// Queues a message for writing; waits while the queue is full (the peer is not reading).
    pub(super) async fn send(&self, message: Vec<u8>) -> Result<(), Error> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        self.inner.out.send(message).await.map_err(|_| Error::Closed)
    }

    /// Queues the error response to request `id` (JSON text; `null` when there is none).
    pub(super) async fn send_error(&self, id: Option<&str>, error: RpcError) {
        let error = serde_json::to_string(&error)
            .unwrap_or_else(|_| format!(r#"{{"code":{},"message":"internal error"}}"#, RpcError::INTERNAL_ERROR));
        let message = format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id.unwrap_or("null"));
        let _ = self.send(message.into_bytes()).await;
    }
}
