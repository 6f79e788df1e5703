//! The MCP-over-ACP servers a peer declared, re-exported as Streamable HTTP MCP on loopback
//! (features `mcp` and `http`), for an agent whose MCP client only takes URLs: one listener on
//! `127.0.0.1` per [`HttpBridge`], one URL per server, each POSTed MCP JSON-RPC request one
//! `mcp/message` through the bridge's [`McpCaller`]. The answer is `application/json`, or an SSE
//! stream when the provider's notifications for the request come before its outcome (each an
//! `event: message`, then the response). The `session/new` rewrite ([`HttpBridge::rewrite`])
//! turns each `{"type": "acp"}` entry into `{"type": "http", "url", "headers"}`.
//!
//! Each server's URL needs the bridge's bearer token (the declaration's `Authorization`
//! header, compared in constant time), so other local processes cannot call the client's
//! tools. Before the token, every request passes the listener checks `net::server` makes
//! (`403` otherwise): no `Origin` header (no web page is served: the MCP transport spec says a
//! server must validate `Origin`) and a `Host` of `127.0.0.1`, `localhost` or `[::1]` with the
//! bridge's port (no name rebound by DNS). Two `Authorization`, `Origin` or
//! `MCP-Protocol-Version` headers are refused, and an `MCP-Protocol-Version` the bridge does not
//! speak is `400` (absent, it is accepted: the MCP spec's rule for clients older than the header).
//!
//! Limits, the TypeScript bridge's defaults (`dist/mcp/http.js`): at most 64 requests answered
//! at once per bridge (one more is HTTP 429, -33000), and at most 1 MiB of SSE events held for a
//! client that does not read them (past it the stream ends with -33000 and the call is
//! cancelled).
//!
//! MCP versions: the ACP side speaks 2026-07-28 only. Clients of that revision send their
//! `_meta` with each request, which is forwarded as it is. Clients of the 2025 revisions open
//! with `initialize`, which the bridge answers itself (their protocol version when it knows it,
//! else 2025-11-25; the server's capabilities, server info and instructions from a
//! `server/discover` through ACP, plain `tools` when that fails); their `ping` is answered here
//! too, their notifications (`notifications/initialized`, `…/cancelled`) are accepted and
//! dropped (closing the HTTP response is what cancels a request), and the 2026-07-28 `_meta` is
//! added to each request they send (their `MCP-Protocol-Version` header, when sent, must be
//! one of those revisions or 2026-07-28), so they work unchanged. The TypeScript SDK's bridge (`McpOverAcpHttpBridge`) refuses them
//! instead (`initialize` is -32601 there). No GET stream and no session ids: 405 for GET.

use super::caller::{CallOptions, McpCaller, McpNotification};
use super::events::EventQueue;
use super::servers::{http_entry, rewrite_acp_servers, AcpServer};
use super::wire::{code, Outcome, META_PROTOCOL_VERSION, PROTOCOL_VERSION, VERSION_ERRORS};
use crate::error::Error;
use crate::jsonrpc::Connection;
use crate::net::guard::Guard;
use crate::net::secret::bearer_matches;
use crate::sync::lock;
use acp_types::support::rpc::RpcError;
use bytes::Bytes;
use futures_util::StreamExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::model::ConstString;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::{CancellationToken, DropGuard};

/// The largest request body read.
const MAX_BODY: usize = 1 << 20;
/// The most bytes of SSE events held for an HTTP client that has not read them; one more event
/// ends the stream with -33000 and cancels the call. The TypeScript bridge's default
/// `maxBufferedResponseBytes` (1 MiB, `dist/mcp/http.js`, SDK 2.4.0).
const MAX_BUFFERED_RESPONSE_BYTES: usize = 1 << 20;
/// The most HTTP requests one bridge serves at once (each until its answer is sent or dropped);
/// one more is refused with HTTP 429 and -33000. The TypeScript bridge's default
/// `maxActiveRequests` (64, `dist/mcp/http.js`, SDK 2.4.0).
const MAX_ACTIVE_REQUESTS: usize = 64;
/// The MCP revisions with an `initialize` handshake, answered with the version asked for.
const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The `MCP-Protocol-Version` header's name.
const HEADER_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `_meta` key of the server info in a `server/discover` result (MCP 2026-07-28).
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The MCP methods the bridge answers or sends itself, named by rmcp's model (MCP's own
/// `initialize` shares its wire name with ACP's).
const MCP_INITIALIZE: &str = <rmcp::model::InitializeResultMethod as ConstString>::VALUE;
const MCP_PING: &str = <rmcp::model::PingRequestMethod as ConstString>::VALUE;
const MCP_DISCOVER: &str = <rmcp::model::DiscoverRequestMethod as ConstString>::VALUE;

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A loopback HTTP listener that serves the ACP MCP servers of one connection; closed when
/// dropped (or with [`HttpBridge::close`]).
pub struct HttpBridge {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: CancellationToken,
}

struct Shared {
    caller: McpCaller,
    conn: Connection,
    token: String,
    /// The `Origin` and `Host` checks of a loopback listener that allows no web page.
    guard: Guard,
    /// Route (the last path segment) to server.
    routes: Mutex<HashMap<String, AcpServer>>,
    /// One permit per request being answered ([`MAX_ACTIVE_REQUESTS`]).
    admission: Arc<Semaphore>,
}

impl std::fmt::Debug for HttpBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpBridge").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl HttpBridge {
    /// Listens on `127.0.0.1` (a free port) and serves the servers declared on `conn` (the
    /// connection to their provider) through `caller`, whose `route` must get the `mcp/message`
    /// notifications `conn` receives.
    pub async fn start(caller: McpCaller, conn: Connection) -> std::io::Result<HttpBridge> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            caller,
            conn: conn.clone(),
            token: uuid::Uuid::new_v4().simple().to_string(),
            guard: Guard::new(addr, true, &[], &[]),
            routes: Mutex::default(),
            admission: Arc::new(Semaphore::new(MAX_ACTIVE_REQUESTS)),
        });
        let stop = CancellationToken::new();
        tokio::spawn(accept(listener, shared.clone(), stop.clone(), conn));
        Ok(HttpBridge { shared, addr, stop })
    }

    /// The address listened on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL that serves `server` (the same for the same server id).
    pub fn url(&self, server: &AcpServer) -> String {
        // The id, hex-encoded: any string makes one plain path segment.
        let route: String = server.server_id.bytes().map(|b| format!("{b:02x}")).collect();
        lock(&self.shared.routes).insert(route.clone(), server.clone());
        format!("http://{}/mcp/{route}", self.addr)
    }

    /// The `Authorization` header each request must carry.
    pub fn headers(&self) -> Vec<(String, String)> {
        vec![("Authorization".into(), format!("Bearer {}", self.shared.token))]
    }

    /// The `{"type": "http", "name", "url", "headers"}` entry that re-exports `server`.
    pub fn http_entry(&self, server: &AcpServer) -> Value {
        http_entry(&server.name, &self.url(server), &self.headers())
    }

    /// Rewrites the raw params of a session setup request (`session/new`, …) for a successor
    /// that speaks only HTTP MCP: each `acp` entry of `mcpServers` becomes its `http` entry;
    /// the rest stays as it came. Returns how many were rewritten.
    pub fn rewrite(&self, params: &mut Value) -> usize {
        rewrite_acp_servers(params, |server| Some(self.http_entry(server)))
    }

    /// Stops listening (requests under way finish).
    pub fn close(self) {}
}

impl Drop for HttpBridge {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Accepts until stopped or the ACP connection closes.
async fn accept(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken, conn: Connection) {
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, say: wait a little rather than spin.
                    tracing::debug!("acp mcp bridge: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.cancelled() => return,
            _ = conn.closed() => return,
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(&shared, req).await) }
            });
            if let Err(e) = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await {
                tracing::debug!("acp mcp bridge: HTTP connection ended: {e}");
            }
        });
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Body> {
    let mut res = Response::new(Full::new(body).boxed_unsync());
    *res.status_mut() = status;
    res.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

fn json_response(status: StatusCode, message: &Value) -> Response<Body> {
    respond(status, "application/json", Bytes::from(message.to_string()))
}

/// A JSON-RPC error answer (no `id` when there is none to answer).
fn error_response(status: StatusCode, id: Option<&Value>, code: i32, message: &str) -> Response<Body> {
    let mut answer = json!({ "jsonrpc": "2.0", "error": { "code": code, "message": message } });
    if let Some(id) = id {
        answer["id"] = id.clone();
    }
    json_response(status, &answer)
}

/// The HTTP status of a final answer: as the TypeScript bridge maps them (400 for invalid
/// params and version errors, 404 for an unknown method, else 200).
fn status_of(answer: &Value) -> StatusCode {
    match answer.pointer("/error/code").and_then(Value::as_i64).and_then(|c| i32::try_from(c).ok()) {
        Some(c) if c == RpcError::INVALID_PARAMS || VERSION_ERRORS.contains(&c) => StatusCode::BAD_REQUEST,
        Some(RpcError::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let server = match admit(shared, &req) {
        Ok(server) => server,
        Err(refused) => return *refused,
    };
    // Checked where the TypeScript bridge checks it: after the route, the token and the method.
    let Ok(admitted) = shared.admission.clone().try_acquire_owned() else {
        return error_response(StatusCode::TOO_MANY_REQUESTS, None, code::LIMIT, "Too many outstanding MCP responses");
    };
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return error_response(StatusCode::PAYLOAD_TOO_LARGE, None, code::LIMIT, "Request body too large"),
    };
    let message: Value = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(_) => return error_response(StatusCode::BAD_REQUEST, None, RpcError::PARSE_ERROR, "Parse error"),
    };
    let Some(object) = message.as_object().filter(|m| m.get("jsonrpc").and_then(Value::as_str) == Some("2.0")) else {
        return error_response(
            StatusCode::BAD_REQUEST,
            None,
            RpcError::INVALID_REQUEST,
            "Expected one JSON-RPC message (no batches)",
        );
    };
    let Some(method) = object.get("method").and_then(Value::as_str) else {
        // A response: nothing here asked the client anything.
        return error_response(
            StatusCode::BAD_REQUEST,
            None,
            RpcError::INVALID_REQUEST,
            "Expected a request or a notification",
        );
    };
    let Some(id) = object.get("id") else {
        // A notification (`notifications/initialized`, `…/cancelled`): nothing to forward.
        return respond(StatusCode::ACCEPTED, "application/json", Bytes::new());
    };
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        // A request all the same (`null`, `1.5`, …): its client waits for an answer, so say why.
        return error_response(
            StatusCode::BAD_REQUEST,
            None,
            RpcError::INVALID_REQUEST,
            "The request id must be a string or an integer",
        );
    }
    let params = match object.get("params") {
        None | Some(Value::Null) => None,
        Some(Value::Object(params)) => Some(params.clone()),
        Some(_) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                Some(id),
                RpcError::INVALID_PARAMS,
                "Parameters must be an object",
            )
        }
    };
    let legacy = params.as_ref().and_then(|p| p.get("_meta")).and_then(|m| m.get(META_PROTOCOL_VERSION)).is_none();
    match method {
        MCP_INITIALIZE => json_response(StatusCode::OK, &initialize(shared, &server, id, params.as_ref()).await),
        MCP_PING if legacy => json_response(StatusCode::OK, &json!({ "jsonrpc": "2.0", "id": id, "result": {} })),
        _ => forward(shared, &server, id.clone(), method, params, admitted).await,
    }
}

/// The checks of a request before its body is read, in the order the bridge makes them: the
/// listener's (`refusal`), the route (`404`), the bearer token (`401`) and the method (`405`: only
/// `POST`). The server the route names, or the refusal.
fn admit(shared: &Shared, req: &Request<Incoming>) -> Result<AcpServer, Box<Response<Body>>> {
    if let Some(refused) = refusal(shared, req.headers()) {
        return Err(Box::new(refused));
    }
    let route = req.uri().path().strip_prefix("/mcp/").unwrap_or_default();
    let Some(server) = lock(&shared.routes).get(route).cloned() else {
        return Err(Box::new(error_response(
            StatusCode::NOT_FOUND,
            None,
            RpcError::METHOD_NOT_FOUND,
            "Unknown MCP route",
        )));
    };
    if !bearer_matches(req.headers(), shared.token.as_bytes()) {
        let mut res = error_response(StatusCode::UNAUTHORIZED, None, RpcError::INVALID_REQUEST, "Unauthorized");
        res.headers_mut().insert("www-authenticate", HeaderValue::from_static("Bearer"));
        return Err(Box::new(res));
    }
    if req.method() != Method::POST {
        // Stateless: no GET stream, no session to DELETE.
        let mut res =
            error_response(StatusCode::METHOD_NOT_ALLOWED, None, RpcError::INVALID_REQUEST, "Only POST is supported");
        res.headers_mut().insert("allow", HeaderValue::from_static("POST"));
        return Err(Box::new(res));
    }
    Ok(server)
}

/// The checks before the route and the token: the listener's `Origin` and `Host` (`403`), one
/// of each header the bridge reads, and an `MCP-Protocol-Version` it speaks (`400`). `None`:
/// passed.
fn refusal(shared: &Shared, headers: &hyper::HeaderMap) -> Option<Response<Body>> {
    if let Err(refused) = shared.guard.check(headers) {
        tracing::debug!("acp mcp bridge: refused: {refused}");
        return Some(error_response(StatusCode::FORBIDDEN, None, RpcError::INVALID_REQUEST, &refused.to_string()));
    }
    for name in [AUTHORIZATION.as_str(), HEADER_PROTOCOL_VERSION] {
        if headers.get_all(name).iter().nth(1).is_some() {
            let message = format!("More than one {name} header");
            return Some(error_response(StatusCode::BAD_REQUEST, None, RpcError::INVALID_REQUEST, &message));
        }
    }
    let version = headers.get(HEADER_PROTOCOL_VERSION)?;
    let version = version.to_str().unwrap_or_default();
    if version == PROTOCOL_VERSION || HANDSHAKE_VERSIONS.contains(&version) {
        return None;
    }
    let message = format!(
        "Unsupported MCP-Protocol-Version {version:?} (supported: {}, {PROTOCOL_VERSION})",
        HANDSHAKE_VERSIONS.join(", ")
    );
    Some(error_response(StatusCode::BAD_REQUEST, None, RpcError::INVALID_REQUEST, &message))
}

/// The local answer to a 2025 client's `initialize`.
async fn initialize(shared: &Shared, server: &AcpServer, id: &Value, params: Option<&Map<String, Value>>) -> Value {
    let asked = params.and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
    let version = asked.filter(|v| HANDSHAKE_VERSIONS.contains(v)).unwrap_or(HANDSHAKE_VERSIONS[3]);
    let discovered = shared.caller.request(&shared.conn, &server.server_id, MCP_DISCOVER, None).await;
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": { "tools": {} },
        "serverInfo": { "name": server.name, "version": "unknown" },
    });
    if let Ok(Outcome::Result(found)) = discovered {
        if let Some(capabilities) = found.get("capabilities").filter(|c| c.is_object()) {
            result["capabilities"] = capabilities.clone();
        }
        if let Some(info) = found.pointer(&format!("/_meta/{}", META_SERVER_INFO.replace('/', "~1"))) {
            result["serverInfo"] = info.clone();
        }
        if let Some(instructions) = found.get("instructions").filter(|i| i.is_string()) {
            result["instructions"] = instructions.clone();
        }
    }
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// The outer ACP errors whose code the HTTP client is shown as it is; any other outer error
/// (a -32602 for a duplicate request id, a -32601 from a client without `mcp/message`, …) is
/// no MCP error of the HTTP client's request, and becomes -33002. As the TypeScript bridge's
/// `projectBindingError` (`dist/mcp/http.js`) does.
const SHOWN_BINDING_CODES: [i32; 4] = [code::LIMIT, code::UNKNOWN_SERVER, code::BACKEND_FAILED, code::CANCELLED];

/// The final JSON-RPC message for an outcome or an outer failure.
fn final_message(id: &Value, outcome: Result<Outcome, Error>) -> Value {
    let failed = |code: i32, message: String| json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    match outcome {
        Ok(Outcome::Result(result)) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Ok(Outcome::Error(error)) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
        Err(Error::Peer(e)) if SHOWN_BINDING_CODES.contains(&e.code) => failed(e.code, e.message),
        Err(Error::Peer(e)) => failed(code::BACKEND_FAILED, e.message),
        Err(e) => failed(code::BACKEND_FAILED, e.to_string()),
    }
}

fn note_message(note: McpNotification) -> Value {
    let mut message = json!({ "jsonrpc": "2.0", "method": note.method });
    if let Some(params) = note.params {
        message["params"] = Value::Object(params);
    }
    message
}

fn event(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// The final message for a stream whose events passed [`MAX_BUFFERED_RESPONSE_BYTES`] (the call
/// is cancelled), as the TypeScript bridge's `overflow` (`dist/mcp/http.js`).
fn overflow_message(id: &Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code::LIMIT, "message": "MCP notification buffer overflow" } })
}

/// One request through ACP: JSON when the outcome comes first, SSE when a notification does.
/// `admitted` (the request's place among [`MAX_ACTIVE_REQUESTS`]) is held until the answer is
/// sent or dropped.
async fn forward(
    shared: &Shared,
    server: &AcpServer,
    id: Value,
    method: &str,
    params: Option<Map<String, Value>>,
    admitted: OwnedSemaphorePermit,
) -> Response<Body> {
    let (to, mut notes) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let options = CallOptions::new().notifications(to).cancel(cancel.clone());
    let (caller, conn, server_id, method) =
        (shared.caller.clone(), shared.conn.clone(), server.server_id.clone(), method.to_string());
    let mut call = Box::pin(async move { caller.request_with(&conn, &server_id, &method, params, options).await });
    // Dropped with the handler (the client went away), then with the SSE body: the call is
    // cancelled.
    let guard = cancel.clone().drop_guard();
    let first = tokio::select! {
        outcome = &mut call => Err(outcome),
        note = notes.recv() => Ok(note),
    };
    let queue = Arc::new(EventQueue::new(MAX_BUFFERED_RESPONSE_BYTES));
    let push = |note: McpNotification| queue.push(event(&note_message(note)));
    let first_note = match first {
        Err(outcome) => match notes.try_recv() {
            // The notifications were routed before the outcome, and are all queued: SSE.
            Ok(note) => {
                let mut fits = push(note);
                while let (true, Ok(note)) = (fits, notes.try_recv()) {
                    fits = push(note);
                }
                let last = if fits { final_message(&id, outcome) } else { overflow_message(&id) };
                queue.finish(event(&last));
                drop(guard.disarm());
                return sse(queue, None, admitted);
            }
            Err(_) => {
                drop(guard.disarm());
                let answer = final_message(&id, outcome);
                return json_response(status_of(&answer), &answer);
            }
        },
        Ok(note) => note,
    };
    // A notification first: stream, the call going on in a task that the body's drop cancels.
    let fits = first_note.is_none_or(push);
    let body = sse(queue.clone(), Some(guard), admitted);
    tokio::spawn(stream_rest(queue, notes, call, cancel, id, fits));
    body
}

/// The rest of a streamed answer (the first notification is queued, `fits` whether it was
/// within the budget): the call's notifications, then its outcome, or the overflow message
/// and the call cancelled once they pass the budget.
async fn stream_rest(
    queue: Arc<EventQueue>,
    mut notes: mpsc::UnboundedReceiver<McpNotification>,
    mut call: Pin<Box<impl Future<Output = Result<Outcome, Error>>>>,
    cancel: CancellationToken,
    id: Value,
    fits: bool,
) {
    let push = |note: McpNotification| queue.push(event(&note_message(note)));
    let outcome = match fits {
        false => None,
        true => loop {
            tokio::select! {
                biased;
                note = notes.recv() => match note {
                    Some(note) => if !push(note) {
                        break None;
                    },
                    None => break Some(call.as_mut().await),
                },
                outcome = call.as_mut() => break Some(outcome),
            }
        },
    };
    let Some(outcome) = outcome else {
        // Past the budget: the client is told, and the call cancelled.
        queue.finish(event(&overflow_message(&id)));
        cancel.cancel();
        let _ = call.await;
        return;
    };
    while let Ok(note) = notes.try_recv() {
        if !push(note) {
            queue.finish(event(&overflow_message(&id)));
            return;
        }
    }
    queue.finish(event(&final_message(&id, outcome)));
}

/// An SSE answer of `queue`'s events; `guard` and `admitted` are dropped with the body (sent, or
/// the client gone).
fn sse(queue: Arc<EventQueue>, guard: Option<DropGuard>, admitted: OwnedSemaphorePermit) -> Response<Body> {
    let events = futures_util::stream::unfold((queue, guard, admitted), |state| async move {
        match state.0.next().await {
            Some(event) => Some((event, state)),
            None => {
                // Sent whole: nothing to cancel.
                let (_, guard, _) = state;
                drop(guard.map(DropGuard::disarm));
                None
            }
        }
    });
    let body = StreamBody::new(events.map(|chunk| Ok::<_, Infallible>(Frame::data(chunk))));
    let mut res = Response::new(body.boxed_unsync());
    res.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    res.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_types::support::rpc::RpcError;

    #[test]
    fn only_binding_codes_reach_the_http_client() {
        let id = json!(7);
        // An outer -32602 (a duplicate request id) is no invalid-params of the HTTP request.
        let answer = final_message(&id, Err(Error::Peer(RpcError::new(-32602, "duplicate active MCP request ID"))));
        assert_eq!(answer["error"]["code"], code::BACKEND_FAILED);
        assert_eq!(status_of(&answer), StatusCode::OK);
        let answer = final_message(&id, Err(Error::Peer(RpcError::new(-32601, "Method not found"))));
        assert_eq!((answer["error"]["code"].as_i64(), status_of(&answer)), (Some(-33002), StatusCode::OK));
        let answer = final_message(&id, Err(Error::Peer(RpcError::new(code::UNKNOWN_SERVER, "gone"))));
        assert_eq!(answer["error"]["code"], code::UNKNOWN_SERVER);
        // An inner MCP error is the HTTP client's, as it is.
        let answer = final_message(&id, Ok(Outcome::error(-32602, "bad")));
        assert_eq!((answer["error"]["code"].as_i64(), status_of(&answer)), (Some(-32602), StatusCode::BAD_REQUEST));
    }
}
