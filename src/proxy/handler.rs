//! What a proxy is made of: [`ProxyHandler`], one hook per flow through the proxy, each passing
//! its message on by default; and [`PassThrough`], the proxy that changes nothing.

use super::context::ProxyContext;
use super::message::{Notification, Request, Response};
use acp_types::support::rpc::RpcError;
use std::future::Future;

/// The hooks of a proxy, one per flow through it: requests and notifications from the client
/// (the predecessor, on their way to the agent) and from the agent (the successor, on their way
/// to the client), and the `initialize` that `proxy/initialize` forwards. Every hook passes its
/// message on unchanged by default, so implement only what the proxy does. In a hook:
///
/// - observe: look at the message ([`Message::method`](super::Message::method),
///   [`Message::decode`](super::Message::decode)) and pass it on;
/// - change: [`Message::edit`](super::Message::edit) (or `set`) before passing it on, or
///   [`Response::edit`] the answer before returning it;
/// - answer locally: return a [`Response`] without passing the request on (the other side never
///   sees it);
/// - drop: return from a notification hook without passing it on;
/// - inject: send other messages to either side ([`ProxyContext::client`],
///   [`ProxyContext::agent`]: typed, raw, or a [`Message`](super::Message) of your own).
///
/// Pass a message on with the [`ClientSide`](super::ClientSide) or
/// [`AgentSide`](super::AgentSide) of the context: `cx.agent().forward_request(request)` for a
/// request from the client, `cx.client().forward_notification(note)` for a notification from
/// the agent, and so on. A forwarded request's answer (result or error) is the successor's, as
/// it came; the runtime keeps it after the notifications sent before it and before those sent
/// after it (do slow work before forwarding, or in a task of its own: the notifications behind
/// the answer wait until the hook returns).
///
/// ```no_run
/// use acp_rpc::proxy::{Notification, ProxyContext, ProxyHandler};
/// use acp_rpc::types::support::rpc::RpcError;
/// use acp_rpc::types::v1;
///
/// /// Logs every `session/update` of a v1 chain on its way to the client.
/// struct Log;
/// impl ProxyHandler for Log {
///     async fn agent_notification(&self, note: Notification, cx: ProxyContext) -> Result<(), RpcError> {
///         if let Some(Ok(update)) = note.decode::<v1::methods::SessionUpdate>() {
///             eprintln!("{}: {:?}", update.session_id, update.update.tag());
///         }
///         cx.client().forward_notification(note).await
///     }
/// }
/// # async fn run() -> std::io::Result<()> {
/// acp_rpc::proxy::serve_proxy_stdio(Log).await
/// # }
/// ```
pub trait ProxyHandler: Send + Sync + 'static {
    /// The `initialize` the conductor's `proxy/initialize` carries (method `initialize`, the
    /// same params). It must be forwarded to the agent before answering (rule
    /// `proxy.forward-initialize`), and the answer must keep the successor's `protocolVersion`
    /// (rule `proxy.same-version`): change the capabilities in it if the proxy adds or hides
    /// some. The runtime refuses an answer that breaks either rule (-32603).
    fn initialize(
        &self,
        request: Request,
        cx: ProxyContext,
    ) -> impl Future<Output = Result<Response, RpcError>> + Send {
        async move { cx.agent().forward_request(request).await }
    }

    /// A request from the client, on its way to the agent.
    fn client_request(
        &self,
        request: Request,
        cx: ProxyContext,
    ) -> impl Future<Output = Result<Response, RpcError>> + Send {
        async move { cx.agent().forward_request(request).await }
    }

    /// A notification from the client, on its way to the agent (`session/cancel` among them).
    /// Notifications are handled one at a time, in the order they came, from both sides.
    fn client_notification(
        &self,
        notification: Notification,
        cx: ProxyContext,
    ) -> impl Future<Output = Result<(), RpcError>> + Send {
        async move { cx.agent().forward_notification(notification).await }
    }

    /// A request from the agent, on its way to the client (`session/request_permission`, file
    /// and terminal calls, `mcp/message`, …).
    fn agent_request(
        &self,
        request: Request,
        cx: ProxyContext,
    ) -> impl Future<Output = Result<Response, RpcError>> + Send {
        async move { cx.client().forward_request(request).await }
    }

    /// A notification from the agent, on its way to the client (`session/update`, …).
    fn agent_notification(
        &self,
        notification: Notification,
        cx: ProxyContext,
    ) -> impl Future<Output = Result<(), RpcError>> + Send {
        async move { cx.client().forward_notification(notification).await }
    }
}

/// The proxy that passes everything through unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct PassThrough;

impl ProxyHandler for PassThrough {}
