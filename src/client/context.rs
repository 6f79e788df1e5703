//! What a client's handler gets besides the agent's params: [`ClientContext`], the agent of this
//! connection as the client may call it, and the request's cancellation.

use crate::error::Error;
use crate::jsonrpc::Connection;
use acp_types::support::rpc::{Notification, Request, ToAgent};
use acp_types::Version;
use tokio_util::sync::CancellationToken;

/// The context of a client's handler: calls to the agent (typed, only methods the agent
/// receives), the negotiated version, and the cancellation of the agent's request (by
/// `$/cancel_request`) or of its session (`session/cancel`).
#[derive(Clone)]
pub struct ClientContext {
    conn: Connection,
    version: Version,
    cancel: CancellationToken,
}

impl ClientContext {
    pub(super) fn new(conn: Connection, version: Version, cancel: CancellationToken) -> Self {
        ClientContext { conn, version, cancel }
    }

    /// The protocol version the connection speaks.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Resolves when the agent's request or its session is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Whether the agent's request or its session was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The cancellation itself, e.g. to hand a child token to other work.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// A typed request to the agent (only methods the agent receives).
    ///
    /// ```no_run
    /// # use acp_rpc::types::v1;
    /// # async fn f(cx: acp_rpc::ClientContext, new: v1::NewSessionRequest) {
    /// let session = cx.request::<v1::methods::SessionNew>(&new).await;
    /// # }
    /// ```
    /// A method the client receives is no call a client makes, and does not compile:
    /// ```compile_fail
    /// # use acp_rpc::types::v1;
    /// # async fn f(cx: acp_rpc::ClientContext, read: v1::ReadTextFileRequest) {
    /// let file = cx.request::<v1::methods::FsReadTextFile>(&read).await;
    /// # }
    /// ```
    pub async fn request<M: Request + ToAgent>(&self, params: &M::Params) -> Result<M::Response, Error> {
        self.conn.request::<M>(params).await
    }

    /// A typed notification to the agent (only methods the agent receives).
    pub async fn notify<M: Notification + ToAgent>(&self, params: &M::Params) -> Result<(), Error> {
        self.conn.notify::<M>(params).await
    }

    /// The connection, for what has no marker type (an extension method without a generated module:
    /// see [`Extended`](crate::Extended) for those that have one).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

impl std::fmt::Debug for ClientContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientContext")
            .field("version", &self.version)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}
