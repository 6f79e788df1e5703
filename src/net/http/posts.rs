//! The task that carries our messages: one `POST` at a time, in the order the core wrote them.
//! The first, `initialize`, creates the connection; the others name it, and their session when
//! they have one. When it ends (the core closed, the user closed, or the transport failed) it
//! ends the connection with `DELETE`.

use acp_types::MethodName;
use hyper::header::HeaderName;
use hyper::{Method, StatusCode};
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

use super::exchange::{body_text, id_key, read_body, status_error, Shared, CONNECTION_ID, SESSION_ID};
use super::streams::{open_connection_stream, session_stream};
use crate::net::{envelope, Envelope, Kind};

/// POST statuses that mean the connection is unusable: credentials refused, or the server no
/// longer knows the connection.
const CONNECTION_FAILURES: &[u16] = &[401, 403, 404, 410];
/// Error bodies are diagnostics, kept short.
const MAX_ERROR_BODY: usize = 8 << 10;
/// How long closing waits for the server to acknowledge `DELETE`.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);

/// Posts the core's messages until it or the transport closes, then deletes the connection.
pub(super) async fn run(shared: Arc<Shared>, mut outgoing: mpsc::Receiver<Vec<u8>>) {
    let stop = shared.stop.clone();
    tokio::select! {
        _ = stop.cancelled() => {}
        result = post_all(&shared, &mut outgoing) => {
            if let Err(e) = result {
                shared.fail(e);
            }
        }
    }
    stop.cancel();
    drop(outgoing);
    if let Some(id) = shared.connection_id.get() {
        let headers = [(CONNECTION_ID, id.as_str())];
        let delete = shared.send(Method::DELETE, &headers, Vec::new());
        match tokio::time::timeout(DELETE_TIMEOUT, delete).await {
            Ok(Ok(response)) if !response.status().is_success() => {
                tracing::debug!("acp http: DELETE answered {}", response.status());
            }
            Ok(Err(e)) => tracing::debug!("acp http: DELETE failed: {e}"),
            _ => {}
        }
    }
}

async fn post_all(shared: &Arc<Shared>, outgoing: &mut mpsc::Receiver<Vec<u8>>) -> io::Result<()> {
    while let Some(message) = outgoing.recv().await {
        let env = envelope(&message).ok();
        if shared.connection_id.get().is_none() {
            initialize(shared, message, env).await?;
        } else if let Some(env) = env {
            post(shared, message, env).await?;
        } else {
            // The core writes only JSON objects; a bug there is not the server's to see.
            tracing::warn!("acp http: an outgoing message that is not a JSON object was dropped");
        }
    }
    Ok(())
}

/// Posts `initialize` without a connection id; its answer carries the id and the response.
async fn initialize(shared: &Arc<Shared>, message: Vec<u8>, env: Option<Envelope>) -> io::Result<()> {
    let request_id = match env {
        Some(Envelope { kind: Kind::Request, method: Some(method), id: Some(id), .. })
            if matches!(MethodName::of(&method), Some(MethodName::Initialize)) =>
        {
            id
        }
        _ => return Err(invalid("the first message over HTTP must be the initialize request")),
    };
    let response = shared.send(Method::POST, &[], message).await?;
    let status = response.status();
    let connection_id = response.headers().get(CONNECTION_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
    if !status.is_success() {
        let body = read_body(response.into_body(), MAX_ERROR_BODY, true).await.unwrap_or_default();
        return Err(invalid(&status_error("ACP initialize failed", status, &body_text(&body))));
    }
    let connection_id = connection_id.ok_or_else(|| invalid("the initialize answer has no Acp-Connection-Id"))?;
    let body = read_body(response.into_body(), shared.max, false).await?;
    match envelope(&body) {
        Ok(answer)
            if answer.kind == Kind::Response && answer.id.as_deref().map(id_key) == Some(id_key(&request_id)) => {}
        _ => return Err(invalid("the initialize answer is not the response to initialize")),
    }
    let _ = shared.connection_id.set(connection_id);
    if !shared.deliver(body).await {
        return Ok(());
    }
    open_connection_stream(shared);
    Ok(())
}

/// Posts a message of the connection, naming its session (opened first) if it has one.
async fn post(shared: &Arc<Shared>, message: Vec<u8>, env: Envelope) -> io::Result<()> {
    let key = env.id.as_deref().map(id_key);
    let session = match env.kind {
        Kind::Request | Kind::Notification => env.session_id.clone(),
        Kind::Response => key.as_ref().and_then(|key| shared.routes().agent_requests.get(key).cloned()),
        Kind::Other => None,
    };
    if let Some(session) = &session {
        let mut ready = session_stream(shared, session);
        if ready.wait_for(|open| *open).await.is_err() {
            return Err(invalid(&format!("the event stream of session {session} did not open")));
        }
    }
    // Tracked before posting: the answer may come on the stream before the POST returns.
    let tracked = match (&session, env.kind, &key, &env.id) {
        (Some(session), Kind::Request, Some(key), Some(id)) => {
            shared.routes().our_requests.insert(key.clone(), (session.clone(), id.clone()));
            true
        }
        _ => false,
    };
    let connection_id = shared.connection_id.get().cloned().unwrap_or_default();
    let mut headers: Vec<(HeaderName, &str)> = vec![(CONNECTION_ID, &connection_id)];
    if let Some(session) = &session {
        headers.push((SESSION_ID, session));
    }
    let response = shared.send(Method::POST, &headers, message).await?;
    let status = response.status();
    let body = read_body(response.into_body(), MAX_ERROR_BODY, true).await.unwrap_or_default();
    if status.is_success() {
        if let (Kind::Response, Some(key)) = (env.kind, &key) {
            shared.routes().agent_requests.remove(key);
        }
        return Ok(());
    }
    let text = body_text(&body);
    let error = status_error("ACP POST failed", status, &text);
    match (env.kind, &env.id) {
        (Kind::Request, Some(id)) if !CONNECTION_FAILURES.contains(&status.as_u16()) => {
            // Only this request fails, unless its session's stream already failed it.
            let pending = !tracked || key.is_some_and(|key| shared.routes().our_requests.remove(&key).is_some());
            if pending {
                shared.fail_request(id, &error, Some(error_data(status, &text))).await;
            }
            Ok(())
        }
        _ => Err(io::Error::new(io::ErrorKind::ConnectionRefused, error)),
    }
}

/// `{status, body}`, the body as JSON when it is JSON.
fn error_data(status: StatusCode, body: &str) -> serde_json::Value {
    let body = serde_json::from_str(body).unwrap_or_else(|_| serde_json::Value::String(body.to_string()));
    serde_json::json!({ "status": status.as_u16(), "body": body })
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}
