//! The peer's requests: one task each, under the concurrency limit, with duplicate ids refused,
//! panics contained, and `$/cancel_request` cancelling the handler (dropped after the grace period).

use acp_types::support::rpc::RpcError;
use futures_util::FutureExt as _;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use super::classify::id_key;
use super::connection::Connection;
use super::raw::Raw;
use super::service::{BoxFuture, RequestContext, Service};
use crate::sync::lock;

impl Connection {
    /// Starts the handler of a request, or answers at once why not.
    pub(super) async fn on_request(&self, method: String, id: Raw, params: Option<Raw>, service: &Arc<dyn Service>) {
        let max = self.inner.config.max_concurrent_requests;
        if self.inner.tasks.len() >= max {
            // Answered from the reader: when the peer does not read, this waits for room in the
            // write queue, and reading stops.
            let error = RpcError::internal(format!(
                "too many requests in progress ({max}); send more when some have been answered"
            ))
            .with_data(serde_json::json!({ "method": method, "limit": max }));
            self.send_error(Some(id.get()), error).await;
            return;
        }
        let key = id_key(&id);
        let token = CancellationToken::new();
        let duplicate = {
            let mut running = lock(&self.inner.running);
            let duplicate = running.contains_key(&key);
            if !duplicate {
                running.insert(key.clone(), token.clone());
            }
            duplicate
        };
        if duplicate {
            let error = RpcError::new(RpcError::INVALID_REQUEST, "a request with this id is already being handled");
            self.send_error(Some(id.get()), error).await;
            return;
        }
        let cx = RequestContext::new(self.clone(), token.clone(), id.get().to_string());
        let after = cx.after.clone();
        let work = service.request(method, params, cx);
        self.inner.tasks.spawn(self.clone().answer(work, token, key, id, after));
    }

    /// The task of one request: runs its handler and writes the answer.
    async fn answer(
        self,
        work: BoxFuture<Result<Raw, RpcError>>,
        token: CancellationToken,
        key: String,
        id: Raw,
        after: Arc<std::sync::Mutex<Option<BoxFuture<()>>>>,
    ) {
        let grace = self.inner.config.cancel_grace;
        // One task per request, the handler polled inside it: a panic is caught and becomes
        // -32603, not a dead loop. (A second task for the handler doubled the tasks a burst
        // of requests queues in the scheduler, which widened the latency tail.)
        let work = AssertUnwindSafe(work).catch_unwind();
        let result = tokio::select! {
            done = work => done.unwrap_or_else(|_| Err(RpcError::internal("internal error: the handler panicked"))),
            // Past the grace period the handler is dropped where it stands.
            _ = async { token.cancelled().await; tokio::time::sleep(grace).await } => {
                Err(RpcError::new(RpcError::REQUEST_CANCELLED, "request cancelled"))
            }
        };
        lock(&self.inner.running).remove(&key);
        let message = match result {
            Ok(result) => format!(r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#, id.get(), result.get()).into_bytes(),
            Err(error) => {
                self.send_error(Some(id.get()), error).await;
                return;
            }
        };
        if self.send(message).await.is_ok() {
            // Taken out before spawning: the lock is not held across an await.
            let after = lock(&after).take();
            if let Some(after) = after {
                tokio::spawn(after);
            }
        }
    }

    /// `$/cancel_request`: cancels the handler of the request it names, if one is running.
    pub(super) fn on_cancel(&self, params: Option<&RawValue>) {
        #[derive(Deserialize)]
        struct Cancel {
            #[serde(rename = "requestId")]
            request_id: Raw,
        }
        match params.map(|p| serde_json::from_str::<Cancel>(p.get())) {
            Some(Ok(cancel)) => {
                if let Some(token) = lock(&self.inner.running).get(&id_key(&cancel.request_id)) {
                    token.cancel();
                }
            }
            _ => tracing::warn!("acp: $/cancel_request without a valid requestId"),
        }
    }
}
