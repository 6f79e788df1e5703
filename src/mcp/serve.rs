//! One inner MCP request served by an rmcp server: the request handed to rmcp's own service loop
//! over its one-message transport (`OneshotTransport`, `serve_directly_with_ct`: no
//! `initialize`, as MCP 2026-07-28 is stateless), its notifications passed on as they come, and
//! its response read back as an [`Outcome`]. (How to drive rmcp without a handshake was learnt
//! from `agent-client-protocol-rmcp` 5.0.0, `src/rmcp_3/native.rs`.)

use super::wire::{code, EnvelopeMeta, Outcome};
use acp_types::support::rpc::RpcError;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions as _, ServerJsonRpcMessage};
use rmcp::service::{serve_directly_with_ct, DynService, NotificationContext, RequestContext, ServiceRole};
use rmcp::transport::OneshotTransport;
use rmcp::{RoleServer, Service};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A registered server: one rmcp service shared by every request to it.
#[derive(Clone)]
pub(crate) struct Shared(pub(crate) Arc<dyn DynService<RoleServer>>);

/// One request's view of a server: what rmcp runs. rmcp runs handlers in tasks of its own that
/// outlive its service loop, so each handler is raced against `stop` and tracked, and the
/// request ends only once every handler it started is gone (dropped when cancelled).
struct Operation {
    app: Shared,
    stop: CancellationToken,
    handlers: TaskTracker,
}

impl Service<RoleServer> for Operation {
    fn handle_request(
        &self,
        request: <RoleServer as ServiceRole>::PeerReq,
        context: RequestContext<RoleServer>,
    ) -> impl std::future::Future<Output = Result<<RoleServer as ServiceRole>::Resp, rmcp::ErrorData>> + Send + '_ {
        let running = self.handlers.token();
        async move {
            let _running = running;
            tokio::select! {
                biased;
                _ = self.stop.cancelled() => Err(rmcp::ErrorData::internal_error("MCP request cancelled", None)),
                result = self.app.0.handle_request(request, context) => result,
            }
        }
    }

    fn handle_notification(
        &self,
        notification: <RoleServer as ServiceRole>::PeerNot,
        context: NotificationContext<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), rmcp::ErrorData>> + Send + '_ {
        let running = self.handlers.token();
        async move {
            let _running = running;
            tokio::select! {
                biased;
                _ = self.stop.cancelled() => Ok(()),
                result = self.app.0.handle_notification(notification, context) => result,
            }
        }
    }

    fn get_info(&self) -> <RoleServer as ServiceRole>::Info {
        self.app.0.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        self.app.0.supported_protocol_versions()
    }
}

/// An inner notification the server sent while serving a request: method and params.
pub(crate) type Note = (String, Option<Map<String, Value>>);

fn backend_failed(why: impl std::fmt::Display) -> RpcError {
    RpcError::new(code::BACKEND_FAILED, "MCP backend failed").with_data(json!({ "details": why.to_string() }))
}

/// Serves `method`/`params` (request id `id`) on `server`, the envelope's `_meta` (if any) in the
/// request's extensions as [`EnvelopeMeta`]; each notification it sends goes to `notes` before
/// the outcome is returned. `cancelled` resolving ends it with -32800 (at once
/// when it is ready before the request starts).
pub(crate) async fn serve_one(
    server: Shared,
    id: &str,
    method: &str,
    params: Option<Map<String, Value>>,
    envelope_meta: Option<Map<String, Value>>,
    notes: mpsc::UnboundedSender<Note>,
    cancelled: impl std::future::Future<Output = ()> + Send,
) -> Result<Outcome, RpcError> {
    let mut message = json!({ "jsonrpc": "2.0", "id": id, "method": method });
    if let Some(params) = params {
        message["params"] = Value::Object(params);
    }
    let mut inbound: ClientJsonRpcMessage = match serde_json::from_value(message) {
        Ok(inbound) => inbound,
        // rmcp's request enum has no variant for the method, or the params do not fit it.
        Err(e) => {
            let unknown = e.to_string().contains("unknown variant");
            let (code, text) = match unknown {
                true => (RpcError::METHOD_NOT_FOUND, format!("Method not found: {method}")),
                false => (RpcError::INVALID_PARAMS, format!("Invalid params: {e}")),
            };
            return Ok(Outcome::error(code, text));
        }
    };
    if let (ClientJsonRpcMessage::Request(request), Some(meta)) = (&mut inbound, envelope_meta) {
        // rmcp moves a request's extensions into its handler's `RequestContext::extensions`.
        request.request.extensions_mut().insert(EnvelopeMeta(meta));
    }
    let (transport, mut output) = OneshotTransport::<RoleServer>::new(inbound);
    let stop = CancellationToken::new();
    let handlers = TaskTracker::new();
    let operation = Operation { app: server, stop: stop.clone(), handlers: handlers.clone() };
    let mut running = serve_directly_with_ct(operation, transport, None, stop.clone());
    let work = async {
        while let Some(message) = output.recv().await {
            if let Some(outcome) = read_output(message, id, &notes)? {
                return Ok(outcome);
            }
        }
        Err(backend_failed("the MCP server ended without a response"))
    };
    let result = tokio::select! {
        biased;
        _ = cancelled => Err(RpcError::new(code::CANCELLED, "MCP request cancelled")),
        result = work => result,
    };
    stop.cancel();
    let _ = running.close().await;
    handlers.close();
    handlers.wait().await;
    result
}

/// One message rmcp wrote: a notification (passed on), the response to `id`, or a failure.
fn read_output(
    message: ServerJsonRpcMessage,
    id: &str,
    notes: &mpsc::UnboundedSender<Note>,
) -> Result<Option<Outcome>, RpcError> {
    let Value::Object(mut object) = serde_json::to_value(message).map_err(backend_failed)? else {
        return Err(backend_failed("the MCP server wrote something other than an object"));
    };
    if let Some(method) = object.remove("method") {
        if object.contains_key("id") {
            // MCP 2026-07-28 has no server-to-client requests over this binding.
            return Err(backend_failed("the MCP server sent a request, which the binding cannot carry"));
        }
        let Value::String(method) = method else {
            return Err(backend_failed("an MCP notification without a method name"));
        };
        let params = match object.remove("params") {
            Some(Value::Object(params)) => Some(params),
            _ => None,
        };
        let _ = notes.send((method, params));
        return Ok(None);
    }
    if object.get("id").and_then(Value::as_str) != Some(id) {
        return Err(backend_failed("the MCP server answered another request id"));
    }
    if let Some(result) = object.remove("result") {
        return Ok(Some(Outcome::Result(result)));
    }
    match object.remove("error") {
        Some(error) => Ok(Some(Outcome::Error(error))),
        None => Err(backend_failed("the MCP server's answer has neither result nor error")),
    }
}
