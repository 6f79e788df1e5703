//! WebSocket sessions: the upgrade (answered `101` with `Acp-Connection-Id`), then one JSON-RPC
//! message per text frame both ways, everything the agent sends on the one socket, as the
//! TypeScript SDK's `ws-server.js` does. Back-pressure is the socket's: the agent's output is
//! written one message at a time, each awaited; a client that takes none of a message for
//! `max_output_stall` is given up on (the session ends, and with it the agent connection).

use super::body::{self, Body};
use super::conn::id_string;
use super::initialize::is_initialize;
use super::shared::{Shared, Slot};
use crate::net::{envelope, Kind, NotAMessage, BATCH_ERROR, HEADER_CONNECTION_ID, PARSE_ERROR};
use crate::rules::RuleId;
use acp_types::support::rpc::RpcError;
use futures_util::{SinkExt as _, StreamExt as _};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, UPGRADE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

/// -32600 without an id (its code checked against [`RpcError::INVALID_REQUEST`] by a test).
const INVALID_REQUEST: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}"#;

/// Answers an upgrade request and runs the session on the upgraded connection, which keeps the
/// TCP connection's [`Slot`] (from the request's extensions) until the session ends.
pub(super) fn upgrade(shared: Arc<Shared>, mut req: Request<Incoming>) -> Response<Body> {
    let slot = req.extensions_mut().remove::<Slot>();
    let headers = req.headers();
    let key = headers.get(SEC_WEBSOCKET_KEY).map(|k| derive_accept_key(k.as_bytes()));
    let version_ok = headers.get(SEC_WEBSOCKET_VERSION).is_some_and(|v| v.as_bytes() == b"13");
    let (Some(accept), true) = (key, version_ok) else {
        return body::text(StatusCode::BAD_REQUEST, "Bad WebSocket upgrade");
    };
    let Ok(accept) = HeaderValue::from_str(&accept) else {
        return body::text(StatusCode::BAD_REQUEST, "Bad WebSocket upgrade");
    };
    let connection_id = uuid::Uuid::new_v4().to_string();
    let task_shared = shared.clone();
    shared.tasks.spawn(async move {
        match hyper::upgrade::on(req).await {
            Ok(upgraded) => session(task_shared, TokioIo::new(upgraded)).await,
            Err(e) => tracing::debug!("acp server: WebSocket upgrade failed: {e}"),
        }
        drop(slot);
    });
    let mut res = body::empty(StatusCode::SWITCHING_PROTOCOLS);
    let headers = res.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
    if let Ok(id) = HeaderValue::from_str(&connection_id) {
        headers.insert(HEADER_CONNECTION_ID, id);
    }
    res
}

fn close(code: CloseCode, reason: &str) -> Message {
    Message::Close(Some(CloseFrame { code, reason: reason.to_string().into() }))
}

fn text(json: &str) -> Message {
    Message::text(json.to_string())
}

/// One socket: a reader handing the client's messages to the agent, and a writer sending the
/// agent's output and the reader's own answers (errors, close frames).
async fn session<S>(shared: Arc<Shared>, io: S)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let limit = shared.limits.max_message_size;
    let config = crate::net::ws_config(limit);
    let socket = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
    let (sink, mut stream) = socket.split();
    let (inbound, outbound) = shared.start_agent();
    let (direct, direct_rx) = mpsc::channel::<Message>(8);
    let done = CancellationToken::new();
    let stop = shared.stop.clone();

    let reader = async {
        let _done = done.clone().drop_guard();
        let mut initialized = false;
        loop {
            let next = tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                _ = done.cancelled() => return,
                next = stream.next() => next,
            };
            let text_frame = match next {
                Some(Ok(Message::Text(t))) => t,
                Some(Ok(Message::Binary(_))) => {
                    tracing::debug!("acp server: ignoring a binary WebSocket frame");
                    continue;
                }
                Some(Ok(Message::Close(_))) | None => return,
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    // Too long a message, or bad framing: refuse it and end the session.
                    tracing::debug!("acp server: WebSocket read failed: {e}");
                    let _ = direct.send(close(CloseCode::Size, "Message too large or malformed")).await;
                    return;
                }
            };
            let bytes = text_frame.as_bytes();
            match judge(&shared, bytes, &mut initialized) {
                Verdict::Forward => {
                    if inbound.send(bytes.to_vec()).await.is_err() {
                        return;
                    }
                }
                Verdict::Answer(json) => {
                    let _ = direct.send(text(&json)).await;
                }
                Verdict::Skip => {}
                Verdict::Close(code, reason) => {
                    let _ = direct.send(close(code, &reason)).await;
                    return;
                }
            }
        }
    };

    tokio::join!(reader, write(&shared, sink, direct_rx, outbound, &done, &stop));
}

/// The session's writer: the reader's own answers and the agent's output, one message at a time,
/// each awaited (a client that takes nothing for `max_output_stall` is given up on); a close frame
/// when the agent, the reader or the server ends.
async fn write<Si>(
    shared: &Shared,
    mut sink: Si,
    mut direct_rx: mpsc::Receiver<Message>,
    mut outbound: mpsc::Receiver<Vec<u8>>,
    done: &CancellationToken,
    stop: &CancellationToken,
) where
    Si: futures_util::Sink<Message> + Unpin,
{
    let _done = done.clone().drop_guard();
    loop {
        let message = tokio::select! {
            biased;
            _ = stop.cancelled() => {
                let _ = sink.send(close(CloseCode::Away, "Server shutting down")).await;
                return;
            }
            message = direct_rx.recv() => match message {
                Some(message) => message,
                None => return,
            },
            // The reader ended (the client's close frame, or its end of the socket) with
            // nothing more to say: answer the close (RFC 6455, 5.5.1; tungstenite queued the
            // answer when it read the frame, `close` flushes it) and end the session, which
            // frees its socket and its slot.
            _ = done.cancelled() => {
                let _ = tokio::time::timeout(shared.limits.max_output_stall, sink.close()).await;
                return;
            }
            message = outbound.recv() => match message {
                Some(json) => text_of(json),
                None => {
                    let _ = sink.send(close(CloseCode::Normal, "Agent connection ended")).await;
                    return;
                }
            },
        };
        let closing = matches!(message, Message::Close(_));
        // One flush for this message and what else the agent has queued (up to `GATHER`): a
        // stream of updates goes out in few writes instead of one system call per frame.
        let write = async {
            sink.feed(message).await?;
            for _ in 1..if closing { 1 } else { GATHER } {
                match outbound.try_recv() {
                    Ok(json) => sink.feed(text_of(json)).await?,
                    Err(_) => break,
                }
            }
            sink.flush().await
        };
        match tokio::time::timeout(shared.limits.max_output_stall, write).await {
            Ok(Ok(())) if !closing => {}
            Ok(_) => return,
            Err(_) => {
                let stall = shared.limits.max_output_stall;
                tracing::warn!("acp server: closing a WebSocket whose client read nothing for {stall:?}");
                return;
            }
        }
    }
}

/// How many queued messages of the agent's one flush of the writer takes at most.
const GATHER: usize = 64;

/// A message of the agent's as a text frame: the core writes JSON text, valid UTF-8, taken
/// without a copy.
fn text_of(json: Vec<u8>) -> Message {
    Message::text(String::from_utf8(json).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// What the reader does with one text message of the client's.
enum Verdict {
    /// Hand it to the agent.
    Forward,
    /// Answer it (an error response) and read on.
    Answer(String),
    /// Drop it and read on.
    Skip,
    /// Close the socket, with this code and reason.
    Close(CloseCode, String),
}

/// Judges one text message before the agent sees it: whether it is a JSON-RPC message, and the
/// lifecycle rules the server keeps on a socket (`initialize` first, and once).
fn judge(shared: &Shared, bytes: &[u8], initialized: &mut bool) -> Verdict {
    let env = match envelope(bytes) {
        Ok(env) => env,
        Err(NotAMessage::Invalid) => return Verdict::Answer(PARSE_ERROR.into()),
        Err(NotAMessage::Batch) => return Verdict::Answer(BATCH_ERROR.into()),
        Err(NotAMessage::NotAnObject) => return Verdict::Answer(INVALID_REQUEST.into()),
    };
    let initialize = is_initialize(&env, bytes);
    if !*initialized {
        match env.kind {
            Kind::Response => return Verdict::Skip,
            Kind::Other => return Verdict::Answer(INVALID_REQUEST.into()),
            _ if !initialize => {
                // Rule `init.first`, kept the way the TypeScript `AcpServer` keeps it on a
                // WebSocket (and with its close reason): the socket is closed.
                tracing::debug!("acp server: {} broken: {:?} first", RuleId::InitFirst, env.method);
                return Verdict::Close(CloseCode::Protocol, "First message must be initialize".into());
            }
            _ if env.id.as_deref() == Some("null") => {
                return Verdict::Close(CloseCode::Protocol, "Initialize request must include an ID".into());
            }
            _ => *initialized = true,
        }
    } else if initialize {
        let refusal = serde_json::json!({
            "jsonrpc": "2.0",
            "id": env.id.as_deref().and_then(|id| serde_json::from_str::<serde_json::Value>(id).ok()),
            "error": { "code": RpcError::INVALID_REQUEST, "message": "Initialize not allowed on existing connection" },
        });
        return Verdict::Answer(refusal.to_string());
    }
    match over_long_id(shared, &env) {
        Some(why) => Verdict::Close(CloseCode::Policy, why),
        None => Verdict::Forward,
    }
}

/// A request id or session id over `max_id_length`, which closes the socket (as the
/// TypeScript server's `ConnectionLimitError`).
fn over_long_id(shared: &Shared, env: &crate::net::Envelope) -> Option<String> {
    let max = shared.limits.max_id_length;
    if env.session_id.as_deref().is_some_and(|s| s.chars().count() > max) {
        return Some(format!("Session ID exceeds maxIdLength ({max})"));
    }
    let id = env.id.as_deref().and_then(id_string);
    if env.kind == Kind::Request && id.is_some_and(|s| s.chars().count() > max) {
        return Some(format!("Request ID exceeds maxIdLength ({max})"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_invalid_request_answer_carries_the_named_code() {
        let answer: serde_json::Value = serde_json::from_str(INVALID_REQUEST).expect("JSON");
        let expected = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": RpcError::INVALID_REQUEST, "message": "Invalid Request" },
        });
        assert_eq!(answer, expected);
    }
}
