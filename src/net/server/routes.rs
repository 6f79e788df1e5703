//! The HTTP methods of the profile, answered as the TypeScript SDK's `AcpServer` answers them
//! (`server.js`: `handlePost`, `handleGet`, `handleDelete`; statuses and texts alike).

use super::body::{self, Body, ReadError};
use super::conn::{id_key, id_string, AcquireError, AgentConn, Route};
use super::cors;
use super::initialize::is_initialize;
use super::shared::Shared;
use crate::net::{
    envelope, requires_session_header, Envelope, Kind, NotAMessage, BATCH_ERROR, EVENT_STREAM, HEADER_CONNECTION_ID,
    HEADER_SESSION_ID, JSON,
};
use acp_types::support::rpc::RpcError;
use acp_types::MethodName;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE, UPGRADE, WWW_AUTHENTICATE};
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use std::sync::Arc;

/// One request, any method: the origin and host checks first (a refusal is `403` with the
/// reason, logged at debug), a preflight of an allowed origin answered, then the route, whose
/// answer an allowed origin may read.
pub(super) async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let origin = match shared.guard.check(req.headers()) {
        Ok(origin) => origin.cloned(),
        Err(refused) => {
            tracing::debug!("acp server: refused {} {}: {refused}", req.method(), req.uri().path());
            return body::text(StatusCode::FORBIDDEN, refused.to_string());
        }
    };
    let Some(origin) = origin else { return route(shared, req).await };
    if req.method() == Method::OPTIONS {
        return cors::preflight(&origin);
    }
    let mut res = route(shared, req).await;
    cors::allow(&origin, res.headers_mut());
    res
}

/// A request that passed the guard: authentication, then its method.
async fn route(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    if let Some(auth) = &shared.auth {
        if let Err(rejection) = auth.check(req.headers()) {
            let mut res = body::text(rejection.status, rejection.message);
            if rejection.status == StatusCode::UNAUTHORIZED {
                res.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            return res;
        }
    }
    match *req.method() {
        Method::POST => post(shared, req).await,
        Method::GET => get(shared, req),
        Method::DELETE => delete(&shared, req.headers()),
        _ => body::text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed"),
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    // A header that is not text is treated as absent (no id could match it).
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn bad(message: impl Into<String>) -> Response<Body> {
    body::text(StatusCode::BAD_REQUEST, message)
}

fn unknown_connection() -> Response<Body> {
    body::text(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id")
}

fn is_json(headers: &HeaderMap) -> bool {
    header(headers, CONTENT_TYPE.as_str())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(JSON))
}

async fn post(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let limit = shared.limits.max_message_size;
    // As the TypeScript Node adapter: the size is checked before anything else in the body.
    if body::declared_too_large(req.headers(), limit) {
        return body::too_large(limit);
    }
    if !is_json(req.headers()) {
        return body::text(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type");
    }
    let (parts, incoming) = req.into_parts();
    let bytes = match body::read_limited(incoming, limit).await {
        Ok(bytes) => bytes,
        Err(ReadError::TooLarge) => return body::too_large(limit),
        Err(ReadError::Broken) => return bad("Invalid JSON"),
    };
    let env = match envelope(&bytes) {
        Ok(env) => env,
        Err(NotAMessage::Invalid) => return bad("Invalid JSON"),
        Err(NotAMessage::Batch) => return body::json(StatusCode::BAD_REQUEST, BATCH_ERROR),
        Err(NotAMessage::NotAnObject) => return bad("Invalid JSON-RPC message"),
    };
    let connection_id = header(&parts.headers, HEADER_CONNECTION_ID);
    if is_initialize(&env, &bytes) {
        return match connection_id {
            None => initialize(&shared, &env, bytes.to_vec()).await,
            Some(_) => bad("Initialize not allowed on existing connection"),
        };
    }
    let Some(connection_id) = connection_id else { return bad("Missing Acp-Connection-Id") };
    let Some(conn) = shared.registry.get(connection_id) else { return unknown_connection() };
    conn.touch();
    let session_header = header(&parts.headers, HEADER_SESSION_ID);
    let forwarded = match env.kind {
        Kind::Response => forward_client_response(&conn, &env, session_header, bytes.to_vec()).await,
        _ => forward_method_message(&conn, &env, session_header, bytes.to_vec()).await,
    };
    match forwarded {
        Ok(()) => body::empty(StatusCode::ACCEPTED),
        Err(res) => res,
    }
}

/// Creates a connection, hands the agent the `initialize` request and answers with its
/// response and the new connection's id.
async fn initialize(shared: &Arc<Shared>, env: &Envelope, message: Vec<u8>) -> Response<Body> {
    let id = env.id.clone().unwrap_or_default();
    if id == "null" {
        return bad("Initialize request must include an ID");
    }
    let (inbound, mut outbound) = shared.start_agent();
    let conn =
        AgentConn::new(uuid::Uuid::new_v4().to_string(), shared.limits.clone(), inbound, shared.stop.child_token());
    // Dropped with the request (the client went away): the connection ends.
    let guard = ShutdownGuard(Some(conn.clone()));
    let first = async {
        conn.write_inbound(message).await.ok()?;
        tokio::select! {
            first = outbound.recv() => first,
            _ = conn.closed.cancelled() => None,
        }
    };
    let answer = match first.await {
        Some(answer) if answers(&answer, &id) => answer,
        _ => {
            let failed = serde_json::json!({
                "jsonrpc": "2.0",
                "id": serde_json::from_str::<serde_json::Value>(&id).unwrap_or_default(),
                "error": { "code": RpcError::INTERNAL_ERROR, "message": "Initialize failed", "data": "Expected initialize response from agent" },
            });
            return body::json(StatusCode::INTERNAL_SERVER_ERROR, failed.to_string());
        }
    };
    let mut guard = guard;
    guard.0 = None;
    let connection_id = conn.id.clone();
    shared.registry.insert(conn.clone());
    let router_shared = shared.clone();
    shared.tasks.spawn(async move {
        conn.clone().run_router(outbound).await;
        router_shared.registry.forget(&conn);
    });
    let mut res = body::json(StatusCode::OK, answer);
    if let Ok(value) = HeaderValue::from_str(&connection_id) {
        res.headers_mut().insert(HEADER_CONNECTION_ID, value);
    }
    res
}

/// Shuts a connection down when dropped while still armed.
struct ShutdownGuard(Option<Arc<AgentConn>>);

impl Drop for ShutdownGuard {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            conn.shutdown();
        }
    }
}

/// Whether `message` is the response to the request with id text `id`.
fn answers(message: &[u8], id: &str) -> bool {
    envelope(message).is_ok_and(|env| {
        env.kind == Kind::Response && env.id.as_deref().and_then(id_key).is_some_and(|k| Some(k) == id_key(id))
    })
}

/// A request or notification (or an object the agent will answer as invalid): checked against
/// its session header, then handed to the agent once its connection has room for the answer.
async fn forward_method_message(
    conn: &AgentConn,
    env: &Envelope,
    session_header: Option<&str>,
    message: Vec<u8>,
) -> Result<(), Response<Body>> {
    let params_session = env.session_id.as_deref();
    let needs_session = env.method.as_deref().is_some_and(requires_session_header) || params_session.is_some();
    if needs_session && session_header.is_none_or(str::is_empty) {
        return Err(bad("Missing Acp-Session-Id"));
    }
    if let (Some(header), Some(params)) = (session_header, params_session) {
        if header != params {
            return Err(bad("Mismatched Acp-Session-Id"));
        }
    }
    let route = match session_header.filter(|s| !s.is_empty()).or(params_session) {
        Some(session) => {
            conn.check_id_length("Session ID", session).map_err(|e| bad(e.0))?;
            Route::Session(session.to_string())
        }
        None => Route::Connection,
    };
    if env.kind != Kind::Notification {
        if let Some(id) = env.id.as_deref().and_then(id_string) {
            conn.check_id_length("Request ID", &id).map_err(|e| bad(e.0))?;
        }
        // Anything but a notification makes the agent answer: wait until clients have read
        // enough of its output to make room.
        conn.wait_for_room(true).await;
    }
    if env.kind == Kind::Request {
        if let Some(key) = env.id.as_deref().and_then(id_key) {
            // `session/load` (v1): its replayed history goes to the connection's stream.
            let load = matches!(env.method.as_deref().and_then(MethodName::of), Some(MethodName::SessionLoad));
            let route = if load { Route::Connection } else { route };
            conn.set_pending_route(key, route);
        }
    }
    conn.write_inbound(message).await.map_err(|_| unknown_connection())
}

/// The client's answer to one of the agent's requests: it must name the session the request
/// was sent on.
async fn forward_client_response(
    conn: &AgentConn,
    env: &Envelope,
    session_header: Option<&str>,
    message: Vec<u8>,
) -> Result<(), Response<Body>> {
    let key = env.id.as_deref().and_then(id_key);
    if let Some(Route::Session(session)) = key.as_deref().and_then(|k| conn.client_response_route(k)) {
        match session_header {
            None | Some("") => return Err(bad("Missing Acp-Session-Id")),
            Some(header) if header != session => return Err(bad("Mismatched Acp-Session-Id")),
            Some(_) => {}
        }
    }
    if let Some(key) = &key {
        conn.forget_client_response_route(key);
    }
    conn.write_inbound(message).await.map_err(|_| unknown_connection())
}

fn get(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let headers = req.headers();
    if header(headers, UPGRADE.as_str()).is_some_and(|v| v.eq_ignore_ascii_case("websocket")) {
        #[cfg(feature = "ws")]
        return super::ws::upgrade(shared, req);
        #[cfg(not(feature = "ws"))]
        return body::text(StatusCode::UPGRADE_REQUIRED, "WebSocket upgrade is not implemented");
    }
    if !header(headers, ACCEPT.as_str()).is_some_and(|v| v.to_ascii_lowercase().contains(EVENT_STREAM)) {
        return body::text(StatusCode::NOT_ACCEPTABLE, "Not Acceptable");
    }
    let Some(connection_id) = header(headers, HEADER_CONNECTION_ID) else {
        return bad("Missing Acp-Connection-Id");
    };
    let Some(conn) = shared.registry.get(connection_id) else { return unknown_connection() };
    let session = header(headers, HEADER_SESSION_ID).filter(|s| !s.is_empty());
    match conn.acquire(session) {
        Ok(lease) => body::sse(lease, shared.limits.keep_alive),
        Err(AcquireError::Busy) => body::text(StatusCode::CONFLICT, "Outbound stream already has an active receiver"),
        Err(AcquireError::Closed) => unknown_connection(),
        Err(AcquireError::Limit(e)) => bad(e.0),
    }
}

fn delete(shared: &Shared, headers: &HeaderMap) -> Response<Body> {
    let Some(connection_id) = header(headers, HEADER_CONNECTION_ID) else {
        return bad("Missing Acp-Connection-Id");
    };
    match shared.registry.remove(connection_id) {
        Some(conn) => {
            conn.shutdown();
            body::empty(StatusCode::ACCEPTED)
        }
        None => unknown_connection(),
    }
}
