//! What a connection does with the peer's messages: the [`Service`] it hands them to, the
//! [`RequestContext`] each request handler gets, and the [`BoxFuture`] handlers return.

use acp_types::support::rpc::RpcError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::raw::Raw;
use crate::sync::lock;

/// A boxed future, as the [`Service`] returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a connection does with the peer's messages, raw: the level under the roles, for a peer
/// that speaks JSON-RPC below them ([`Connection::new`] with a service: a test's hostile peer, a
/// tool's recorder). Agents and clients implement the generated handler traits instead, which
/// [`agent::serve`](crate::agent::serve) and [`client::connect`](crate::client::connect) turn into
/// a service with the protocol's rules kept.
pub trait Service: Send + Sync + 'static {
    /// Answers a request; runs concurrently with everything else.
    fn request(&self, method: String, params: Option<Raw>, cx: RequestContext) -> BoxFuture<Result<Raw, RpcError>>;
    /// Handles a notification; notifications are handled one at a time, in arrival order.
    fn notification(&self, method: String, params: Option<Raw>, conn: Connection) -> BoxFuture<()>;
}

/// What a [`Service`]'s request handler gets besides its params (the roles' handlers get
/// [`AgentContext`](crate::AgentContext) or [`ClientContext`](crate::ClientContext) instead).
#[derive(Clone)]
pub struct RequestContext {
    conn: Connection,
    cancel: CancellationToken,
    id: String,
    /// Work to start once the response is queued (see [`RequestContext::after_response`]).
    pub(super) after: Arc<Mutex<Option<BoxFuture<()>>>>,
}

impl RequestContext {
    pub(super) fn new(conn: Connection, cancel: CancellationToken, id: String) -> Self {
        RequestContext { conn, cancel, id, after: Arc::default() }
    }

    /// The connection, to call the peer while handling.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Cancelled when the peer sends `$/cancel_request` for this request (or the connection
    /// closes). A handler that notices may still answer (within
    /// [`Config::cancel_grace`](super::config::Config::cancel_grace)).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The request id, as JSON text.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Starts `work` once this request's successful response is queued for writing, so that
    /// everything `work` sends reaches the peer after the response (a v2 prompt turn, which
    /// outlives its `session/prompt` request). Not started when the request fails or is
    /// cancelled; a later call replaces an earlier one.
    pub fn after_response(&self, work: impl Future<Output = ()> + Send + 'static) {
        *lock(&self.after) = Some(Box::pin(work));
    }
}
