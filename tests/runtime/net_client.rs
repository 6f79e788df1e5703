#![cfg(feature = "ws")]
//! The client's network transports against small fake servers written here: a Streamable HTTP
//! agent that speaks the TypeScript SDK's profile (initialize POST → 200 + `Acp-Connection-Id`,
//! SSE streams per connection and session, 202 on later POSTs, DELETE), and a WebSocket echo
//! agent.

use acp_rpc::net::http;
use acp_rpc::net::ws;
use acp_rpc::net::ClientOptions;
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::v1;
use acp_rpc::{ClientContext, Error, V1};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request as Upgrade, Response as Upgraded};
use tokio_tungstenite::tungstenite::Message;

/// Every test ends within this, or fails.
const LIMIT: Duration = Duration::from_secs(20);

async fn within<T>(what: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, what).await.expect("the test took too long")
}

// ---------------------------------------------------------------------------------------------
// A fake Streamable HTTP agent

type AnyBody = BoxBody<Bytes, Infallible>;

/// An SSE body fed by a channel; it ends when the sender is dropped.
struct Events(mpsc::UnboundedReceiver<Bytes>);

impl Body for Events {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
    }
}

#[derive(Default)]
struct Fake {
    /// What the server saw, in order: `GET conn`, `GET session s1`, `POST session/new`,
    /// `POST response session=s1`, `DELETE c1`…
    log: Mutex<Vec<String>>,
    /// Open SSE streams: "" is the connection's, else a session id.
    streams: Mutex<HashMap<String, mpsc::UnboundedSender<Bytes>>>,
    /// The agent's requests waiting for the client's answer, by id.
    answers: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Methods whose POST is answered with this status.
    fail: Mutex<HashMap<String, u16>>,
    /// A `session/prompt` closes the session's stream instead of being answered.
    drop_session_on_prompt: Mutex<bool>,
    /// Headers seen on every request (name: value), for the custom-header check.
    authorization: Mutex<Vec<Option<String>>>,
    deleted: Notify,
}

impl Fake {
    fn log(&self, line: String) {
        self.log.lock().unwrap().push(line);
    }

    fn logged(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Sends a message on a stream as an SSE event, CRLF-terminated and cut in two chunks.
    fn push(&self, stream: &str, message: Value) {
        let event = format!("data: {message}\r\n\r\n").into_bytes();
        let streams = self.streams.lock().unwrap();
        let tx = streams.get(stream).unwrap_or_else(|| panic!("no stream {stream:?} is open"));
        let (a, b) = event.split_at(event.len() / 2);
        tx.send(Bytes::copy_from_slice(a)).unwrap();
        tx.send(Bytes::copy_from_slice(b)).unwrap();
    }
}

fn full(status: StatusCode, body: impl Into<Bytes>) -> Response<AnyBody> {
    let mut response = Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = status;
    response
}

async fn handle(fake: Arc<Fake>, request: Request<Incoming>) -> Result<Response<AnyBody>, Infallible> {
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let (connection, session) = (header("acp-connection-id"), header("acp-session-id"));
    fake.authorization.lock().unwrap().push(header("authorization"));
    match request.method().as_str() {
        "GET" => {
            assert_eq!(header("accept").as_deref(), Some("text/event-stream"));
            assert_eq!(connection.as_deref(), Some("c1"));
            let (tx, rx) = mpsc::unbounded_channel();
            tx.send(Bytes::from_static(b": keep-alive\n\n")).unwrap();
            let key = session.clone().unwrap_or_default();
            fake.log(match &session {
                Some(s) => format!("GET session {s}"),
                None => "GET conn".into(),
            });
            fake.streams.lock().unwrap().insert(key, tx);
            let mut response = Response::new(Events(rx).boxed());
            response.headers_mut().insert("content-type", "text/event-stream".parse().unwrap());
            Ok(response)
        }
        "DELETE" => {
            fake.log(format!("DELETE {}", connection.unwrap_or_default()));
            fake.streams.lock().unwrap().clear();
            fake.deleted.notify_one();
            Ok(full(StatusCode::ACCEPTED, ""))
        }
        _ => {
            let body = request.into_body().collect().await.unwrap().to_bytes();
            let message: Value = serde_json::from_slice(&body).unwrap();
            let method = message["method"].as_str().map(str::to_string);
            let id = message["id"].clone();
            let label = method.clone().unwrap_or_else(|| "response".into());
            fake.log(match &session {
                Some(s) => format!("POST {label} session={s}"),
                None => format!("POST {label}"),
            });
            if let Some(status) = method.as_ref().and_then(|m| fake.fail.lock().unwrap().get(m).copied()) {
                return Ok(full(StatusCode::from_u16(status).unwrap(), r#"{"error":"boom"}"#));
            }
            let Some(method) = method else {
                let waiting = fake.answers.lock().unwrap().remove(&id.to_string());
                waiting.expect("an answer to no request").send(message).unwrap();
                return Ok(full(StatusCode::ACCEPTED, ""));
            };
            match method.as_str() {
                "initialize" => {
                    assert_eq!(connection, None);
                    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}});
                    let mut response = full(StatusCode::OK, answer.to_string());
                    response.headers_mut().insert("acp-connection-id", "c1".parse().unwrap());
                    response.headers_mut().insert("content-type", "application/json".parse().unwrap());
                    return Ok(response);
                }
                "session/new" => fake.push("", json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": "s1"}})),
                "session/prompt" => {
                    let session = session.expect("session/prompt without Acp-Session-Id");
                    tokio::spawn(prompt_turn(fake.clone(), id, session));
                }
                _ => fake.push("", json!({"jsonrpc": "2.0", "id": id, "result": {"echo": message["params"]}})),
            }
            Ok(full(StatusCode::ACCEPTED, ""))
        }
    }
}

/// A turn: an update, a permission request (answered on the session), the chosen option as an
/// update, the end of the turn; all on the session's stream.
async fn prompt_turn(fake: Arc<Fake>, id: Value, session: String) {
    if *fake.drop_session_on_prompt.lock().unwrap() {
        fake.streams.lock().unwrap().remove(&session);
        return;
    }
    let chunk = |text: &str| json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}});
    fake.push(&session, chunk("hello"));
    let (tx, rx) = oneshot::channel();
    fake.answers.lock().unwrap().insert(json!("perm-1").to_string(), tx);
    let options = json!([{"optionId": "deny", "name": "Deny", "kind": "reject_once"}, {"optionId": "allow", "name": "Allow", "kind": "allow_once"}]);
    fake.push(&session, json!({"jsonrpc": "2.0", "id": "perm-1", "method": "session/request_permission", "params": {"sessionId": session, "toolCall": {"toolCallId": "t1"}, "options": options}}));
    let answer = rx.await.unwrap();
    let chosen = answer["result"]["outcome"]["optionId"].as_str().unwrap_or("none").to_string();
    fake.push(&session, chunk(&format!("allowed:{chosen}")));
    fake.push(&session, json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}}));
}

/// Serves `fake` on a local port; the URL.
async fn serve(fake: Arc<Fake>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/acp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let fake = fake.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| handle(fake.clone(), request));
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service).await;
            });
        }
    });
    url
}

/// Allows with the first "allow" option.
struct Allow;
impl v1::methods::client::Handler<ClientContext> for Allow {
    async fn session_request_permission(
        &self,
        params: v1::RequestPermissionRequest,
        _: ClientContext,
    ) -> Result<v1::RequestPermissionResponse, RpcError> {
        let option = params.options.iter().find(|o| o.kind == v1::PermissionOptionKind::AllowOnce);
        let option = option.ok_or_else(|| RpcError::new(RpcError::INVALID_PARAMS, "no allow option"))?;
        let chosen = v1::SelectedPermissionOutcome::new(option.option_id.clone());
        Ok(v1::RequestPermissionResponse::new(v1::RequestPermissionOutcome::Selected(chosen)))
    }
}

fn text_of(update: &v1::SessionUpdate) -> Option<String> {
    let json = serde_json::to_value(update).ok()?;
    json["content"]["text"].as_str().map(str::to_string)
}

#[tokio::test]
async fn http_session_turn_with_a_permission_request_then_delete() {
    within(async {
        let fake = Arc::new(Fake::default());
        let url = serve(fake.clone()).await;
        let options = ClientOptions::default().header("Authorization", "Bearer secret");
        let (conn, driver, transport) = http::connect(V1(Allow), &url, options, Default::default()).unwrap();
        let driver = tokio::spawn(driver);
        conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.unwrap();
        assert_eq!(transport.connection_id(), Some("c1"));
        let mut session = conn.new_session_v1(v1::NewSessionRequest::new("/tmp".to_string(), vec![])).await.unwrap();
        let mut turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new("hi".into()))]).await;
        let mut texts = Vec::new();
        while let Some(update) = turn.next().await {
            texts.extend(text_of(&update));
        }
        let outcome = turn.outcome().await.unwrap();
        assert_eq!(outcome.stop_reason, v1::StopReason::EndTurn);
        assert_eq!(texts, ["hello", "allowed:allow"]);

        transport.close().await;
        let log = fake.logged();
        println!("{log:#?}");
        let position =
            |line: &str| log.iter().position(|l| l == line).unwrap_or_else(|| panic!("no {line:?} in {log:?}"));
        assert_eq!(log[0], "POST initialize");
        assert!(position("GET conn") < position("POST session/new"));
        // The session's stream is open before the first POST naming the session.
        assert!(position("GET session s1") < position("POST session/prompt session=s1"));
        // Our answer to the permission request names the session it came on.
        position("POST response session=s1");
        assert_eq!(log.last().map(String::as_str), Some("DELETE c1"));
        assert_eq!(log.iter().filter(|l| l.starts_with("GET session")).count(), 1);
        let auth = fake.authorization.lock().unwrap().clone();
        assert!(auth.iter().all(|a| a.as_deref() == Some("Bearer secret")), "{auth:?}");
        // The core sees the peer gone and its driver ends.
        driver.await.unwrap().unwrap();
    })
    .await
}

#[tokio::test]
async fn http_500_fails_only_that_request() {
    within(async {
        let fake = Arc::new(Fake::default());
        fake.fail.lock().unwrap().insert("_test/fail".into(), 500);
        let url = serve(fake.clone()).await;
        let (conn, driver, transport) =
            http::connect(V1(Allow), &url, ClientOptions::default(), Default::default()).unwrap();
        tokio::spawn(driver);
        conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.unwrap();
        let params = serde_json::value::to_raw_value(&json!({"x": 1})).unwrap();
        let error = match conn.connection().request_raw("_test/fail", Some(&params)).await {
            Err(Error::Peer(error)) => error,
            other => panic!("expected a JSON-RPC error, got {other:?}"),
        };
        println!("{error:?}");
        assert_eq!(error.code, -32603);
        let data = serde_json::to_value(&error.data).unwrap();
        assert_eq!(data, json!({"status": 500, "body": {"error": "boom"}}));
        assert!(error.message.contains("500"), "{}", error.message);
        // The connection keeps working.
        let echo = conn.connection().request_raw("_test/echo", Some(&params)).await.unwrap();
        assert_eq!(serde_json::from_str::<Value>(echo.get()).unwrap(), json!({"echo": {"x": 1}}));
        assert!(!transport.is_closed());
    })
    .await
}

#[tokio::test]
async fn http_404_closes_the_transport() {
    within(async {
        let fake = Arc::new(Fake::default());
        fake.fail.lock().unwrap().insert("session/new".into(), 404);
        let url = serve(fake.clone()).await;
        let (conn, driver, transport) =
            http::connect(V1(Allow), &url, ClientOptions::default(), Default::default()).unwrap();
        let driver = tokio::spawn(driver);
        conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.unwrap();
        let result = conn.new_session_v1(v1::NewSessionRequest::new("/tmp".to_string(), vec![])).await;
        assert!(matches!(result, Err(Error::Closed)), "{:?}", result.err());
        driver.await.unwrap().unwrap();
        assert!(transport.is_closed());
        // The connection is still deleted, as the TypeScript client does.
        fake.deleted.notified().await;
        assert_eq!(fake.logged().last().map(String::as_str), Some("DELETE c1"));
    })
    .await
}

#[tokio::test]
async fn http_session_stream_end_fails_its_requests_then_reopens() {
    within(async {
        let fake = Arc::new(Fake::default());
        *fake.drop_session_on_prompt.lock().unwrap() = true;
        let url = serve(fake.clone()).await;
        let (conn, driver, _transport) =
            http::connect(V1(Allow), &url, ClientOptions::default(), Default::default()).unwrap();
        tokio::spawn(driver);
        conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.unwrap();
        let mut session = conn.new_session_v1(v1::NewSessionRequest::new("/tmp".to_string(), vec![])).await.unwrap();
        let turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new("hi".into()))]).await;
        match turn.outcome().await {
            Err(Error::Peer(e)) => assert!(e.message.contains("SSE stream closed"), "{}", e.message),
            other => panic!("expected the prompt to fail, got {other:?}"),
        }
        // The next message of the session opens its stream again.
        *fake.drop_session_on_prompt.lock().unwrap() = false;
        let turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new("again".into()))]).await;
        assert_eq!(turn.outcome().await.unwrap().stop_reason, v1::StopReason::EndTurn);
        let log = fake.logged();
        assert_eq!(log.iter().filter(|l| *l == "GET session s1").count(), 2, "{log:?}");
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// A WebSocket echo agent

/// Checks the caller's header and names the connection, as the TypeScript server does.
// The error type is tungstenite's (an HTTP response), not ours to shrink.
#[allow(clippy::result_large_err)]
fn upgrade(request: &Upgrade, mut response: Upgraded) -> Result<Upgraded, ErrorResponse> {
    let auth = request.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert_eq!(auth, "Bearer w");
    response.headers_mut().insert("acp-connection-id", "w1".parse().unwrap());
    Ok(response)
}

#[tokio::test]
async fn ws_echo_batch_and_parse_errors_close() {
    within(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/acp", listener.local_addr().unwrap());
        let (seen_tx, mut seen) = mpsc::unbounded_channel::<String>();
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut socket = tokio_tungstenite::accept_hdr_async(tcp, upgrade).await.unwrap();
            while let Some(frame) = socket.next().await {
                let text = match frame.unwrap() {
                    Message::Text(text) => text.to_string(),
                    Message::Close(_) => {
                        seen_tx.send("close".into()).unwrap();
                        break;
                    }
                    _ => continue,
                };
                let message: Value = serde_json::from_str(&text).unwrap();
                if message.get("method").is_none() {
                    seen_tx.send(text).unwrap();
                    continue;
                }
                if message["method"] == "_test/junk" {
                    // Not messages: a batch, a frame that is not JSON, a binary frame.
                    socket.send(Message::text("[1,2]")).await.unwrap();
                    socket.send(Message::text("{not json")).await.unwrap();
                    socket.send(Message::binary(b"{}".to_vec())).await.unwrap();
                }
                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"echo": message["params"]}});
                socket.send(Message::text(answer.to_string())).await.unwrap();
            }
        });
        let options = ClientOptions::default().header("Authorization", "Bearer w");
        let (conn, driver, socket) = ws::connect(V1(Allow), &url, options, Default::default()).await.unwrap();
        let driver = tokio::spawn(driver);
        assert_eq!(socket.connection_id(), Some("w1"));
        let params = serde_json::value::to_raw_value(&json!({"x": 2})).unwrap();
        let echo = conn.connection().request_raw("_test/junk", Some(&params)).await.unwrap();
        assert_eq!(serde_json::from_str::<Value>(echo.get()).unwrap(), json!({"echo": {"x": 2}}));
        let batch: Value = serde_json::from_str(&seen.recv().await.unwrap()).unwrap();
        assert_eq!((batch["id"].clone(), batch["error"]["code"].clone()), (Value::Null, json!(-32600)));
        let parse: Value = serde_json::from_str(&seen.recv().await.unwrap()).unwrap();
        assert_eq!((parse["id"].clone(), parse["error"]["code"].clone()), (Value::Null, json!(-32700)));
        socket.close().await;
        assert_eq!(seen.recv().await.as_deref(), Some("close"));
        driver.await.unwrap().unwrap();
        server.await.unwrap();
    })
    .await
}

#[tokio::test]
async fn ws_server_closing_closes_the_connection() {
    within(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut socket = tokio_tungstenite::accept_async(tcp).await.unwrap();
            // Reads the request, then hangs up without answering.
            socket.next().await;
            socket.close(None).await.unwrap();
        });
        let (conn, driver, socket) =
            ws::connect(V1(Allow), &url, ClientOptions::default(), Default::default()).await.unwrap();
        let driver = tokio::spawn(driver);
        assert_eq!(socket.connection_id(), None);
        let result = conn.connection().request_raw("_test/hang", None).await;
        assert!(matches!(result, Err(Error::Closed)), "{result:?}");
        driver.await.unwrap().unwrap();
    })
    .await
}
