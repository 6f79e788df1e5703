#![cfg(feature = "ws")]
//! The network server (`acp_rpc::net::server`) end to end over real sockets: a turn over
//! Streamable HTTP in v1 and v2 and over WebSocket, then every hostile input it must answer and
//! survive (the figures measured are printed with `eprintln!`; run with `--nocapture`).

use acp_rpc::net::server::{Auth, Limits, Server, ServerHandle};
use acp_rpc::types::Version;
use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{HeaderMap, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::RwLock;
use tokio_tungstenite::tungstenite::Message;

/// Memory is measured on the whole test process: those tests run alone (write), others share.
static MEMORY: RwLock<()> = RwLock::const_new(());

#[path = "runtime/echo.rs"]
mod echo;
use echo::Echo;

struct Running {
    addr: SocketAddr,
    handle: ServerHandle,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start_with(limits: Limits, auth: Option<Auth>) -> Running {
    let mut server = Server::new(Arc::new(Echo), Version::ALL).limits(limits);
    if let Some(auth) = auth {
        server = server.auth(auth);
    }
    start_server(server).await
}

/// `server` on a fresh loopback port.
async fn start_server(server: Server) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let handle = server.handle();
    let served = tokio::spawn(server.serve(listener));
    Running { addr, handle, served }
}

async fn start() -> Running {
    start_with(Limits::default(), None).await
}

/// One request on a fresh TCP connection.
async fn send(addr: SocketAddr, req: Request<Full<Bytes>>) -> hyper::Response<Incoming> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
    tokio::spawn(conn);
    sender.send_request(req).await.expect("response")
}

/// A request to `/` with `headers`, and `Host: localhost` unless they name a host.
fn request(method: &str, headers: &[(&str, &str)], body: &str) -> Request<Full<Bytes>> {
    let mut req = Request::builder().method(method).uri("/");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req = req.header("host", "localhost");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.body(Full::new(Bytes::from(body.to_string()))).expect("request")
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

async fn call(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let res = send(addr, request(method, headers, body)).await;
    let (parts, body) = res.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    Answer { status: parts.status, headers: parts.headers, body: String::from_utf8_lossy(&body).into_owned() }
}

const CT: (&str, &str) = ("content-type", "application/json");

async fn post(addr: SocketAddr, headers: &[(&str, &str)], message: Value) -> Answer {
    let mut all = vec![CT];
    all.extend_from_slice(headers);
    call(addr, "POST", &all, &message.to_string()).await
}

/// `initialize` in `version`: the new connection's id.
async fn initialize(addr: SocketAddr, version: u16) -> String {
    let params = match version {
        1 => json!({ "protocolVersion": 1 }),
        _ => json!({ "protocolVersion": 2, "info": { "name": "t", "version": "0" } }),
    };
    let a = post(addr, &[], json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params })).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let answer: Value = serde_json::from_str(&a.body).expect("JSON");
    assert_eq!(answer["result"]["protocolVersion"], version, "{answer}");
    a.headers.get("acp-connection-id").expect("Acp-Connection-Id").to_str().expect("text").to_string()
}

/// An open SSE stream.
struct Sse {
    body: Incoming,
    buf: Vec<u8>,
}

impl Sse {
    async fn open(addr: SocketAddr, connection: &str, session: Option<&str>) -> Sse {
        let mut headers = vec![("accept", "text/event-stream"), ("acp-connection-id", connection)];
        if let Some(s) = session {
            headers.push(("acp-session-id", s));
        }
        let res = send(addr, request("GET", &headers, "")).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["content-type"], "text/event-stream");
        assert_eq!(res.headers()["cache-control"], "no-cache");
        Sse { body: res.into_body(), buf: Vec::new() }
    }

    /// The next event's message; `None` when the stream ends.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buf.drain(..end + 2).collect();
                let event = String::from_utf8(event).expect("UTF-8");
                if let Some(data) = event.strip_prefix("data: ") {
                    return Some(serde_json::from_str(data.trim_end()).expect("JSON event"));
                }
                continue;
            }
            let frame =
                tokio::time::timeout(Duration::from_secs(10), self.body.frame()).await.expect("an event in time");
            match frame {
                Some(Ok(frame)) => self.buf.extend_from_slice(frame.data_ref().map(|d| &d[..]).unwrap_or_default()),
                _ => return None,
            }
        }
    }

    async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let m =
                self.next().await.unwrap_or_else(|| panic!("the stream ended before the wanted message: {seen:#?}"));
            let done = stop(&m);
            seen.push(m);
            if done {
                return seen;
            }
        }
    }
}

async fn http_turn(addr: SocketAddr, version: u16) {
    let id = initialize(addr, version).await;
    let mut connection = Sse::open(addr, &id, None).await;
    let a = post(
        addr,
        &[("acp-connection-id", &id)],
        json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new", "params": { "cwd": "/", "mcpServers": [] } }),
    )
    .await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::ACCEPTED, ""));
    let created = connection.next().await.expect("the session/new answer");
    assert_eq!(created["id"], 1, "{created}");
    let session = created["result"]["sessionId"].as_str().expect("a session id").to_string();
    let mut on_session = Sse::open(addr, &id, Some(&session)).await;
    let prompt = json!({ "jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": { "sessionId": session, "prompt": [{ "type": "text", "text": "hello" }] } });
    let a = post(addr, &[("acp-connection-id", &id), ("acp-session-id", &session)], prompt).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
    let seen = match version {
        1 => on_session.until(|m| m["id"] == 2).await,
        _ => on_session.until(|m| m["params"]["update"]["state"] == "idle").await,
    };
    assert!(
        seen.iter().any(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            && m["params"]["update"]["content"]["text"] == "hello"),
        "v{version}: the echo on the session stream: {seen:#?}"
    );
    let answer = seen.iter().find(|m| m["id"] == 2).expect("the prompt's answer on the session stream");
    assert!(answer.get("result").is_some(), "{answer}");
    eprintln!("v{version}: {} messages on the session stream", seen.len());
}

#[tokio::test]
async fn a_turn_over_http_in_v1_and_v2() {
    let _g = MEMORY.read().await;
    let server = start().await;
    for version in [1, 2] {
        http_turn(server.addr, version).await;
    }
}

async fn ws_connect(addr: SocketAddr) -> (tokio_tungstenite::WebSocketStream<TcpStream>, String) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (ws, res) = tokio_tungstenite::client_async(format!("ws://{addr}/"), stream).await.expect("upgrade");
    let id = res.headers().get("acp-connection-id").expect("Acp-Connection-Id on the 101").to_str().expect("text");
    (ws, id.to_string())
}

async fn ws_next(ws: &mut tokio_tungstenite::WebSocketStream<TcpStream>) -> Message {
    tokio::time::timeout(Duration::from_secs(10), ws.next()).await.expect("in time").expect("open").expect("frame")
}

async fn ws_json(ws: &mut tokio_tungstenite::WebSocketStream<TcpStream>) -> Value {
    match ws_next(ws).await {
        Message::Text(t) => serde_json::from_str(&t).expect("JSON"),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

#[tokio::test]
async fn a_turn_over_websocket_and_its_errors() {
    let _g = MEMORY.read().await;
    let server = start().await;
    let (mut ws, id) = ws_connect(server.addr).await;
    assert_eq!(id.len(), 36, "a UUID: {id}");
    ws.send(Message::text("{not json")).await.expect("send");
    assert_eq!(ws_json(&mut ws).await["error"]["code"], -32700);
    ws.send(Message::text("[1,2]")).await.expect("send");
    let batch = ws_json(&mut ws).await;
    assert_eq!((batch["error"]["code"].clone(), batch["id"].clone()), (json!(-32600), Value::Null));
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": 1 } });
    ws.send(Message::text(init.to_string())).await.expect("send");
    assert_eq!(ws_json(&mut ws).await["result"]["protocolVersion"], 1);
    ws.send(Message::text(init.to_string())).await.expect("send");
    let again = ws_json(&mut ws).await;
    assert_eq!(again["error"]["message"], "Initialize not allowed on existing connection", "{again}");
    let new = json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new", "params": { "cwd": "/", "mcpServers": [] } });
    ws.send(Message::text(new.to_string())).await.expect("send");
    assert_eq!(ws_json(&mut ws).await["result"]["sessionId"], "s1");
    let prompt = json!({ "jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": { "sessionId": "s1", "prompt": [{ "type": "text", "text": "over ws" }] } });
    ws.send(Message::text(prompt.to_string())).await.expect("send");
    let update = ws_json(&mut ws).await;
    assert_eq!(update["params"]["update"]["content"]["text"], "over ws", "{update}");
    assert_eq!(ws_json(&mut ws).await["result"]["stopReason"], "end_turn");

    // A first message that is not initialize closes the socket with 1002.
    let (mut ws, _) = ws_connect(server.addr).await;
    ws.send(Message::text(json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {} }).to_string()))
        .await
        .expect("send");
    match ws_next(&mut ws).await {
        Message::Close(Some(frame)) => assert_eq!(u16::from(frame.code), 1002, "{frame:?}"),
        other => panic!("expected close 1002, got {other:?}"),
    }
}

#[tokio::test]
async fn hostile_requests_are_answered_as_the_typescript_server_does() {
    let _g = MEMORY.read().await;
    let server = start().await;
    let addr = server.addr;
    let msg = json!({ "jsonrpc": "2.0", "id": 5, "method": "session/new", "params": { "cwd": "/" } });
    let a = post(addr, &[], msg.clone()).await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id"));
    let a = post(addr, &[("acp-connection-id", "nope")], msg.clone()).await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id"));
    let a = call(addr, "POST", &[("content-type", "text/plain")], &msg.to_string()).await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type"));
    let a = call(addr, "POST", &[CT], "{\"jsonrpc\":").await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::BAD_REQUEST, "Invalid JSON"));
    let a = call(addr, "POST", &[CT], "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}]").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.headers["content-type"], "application/json");
    let batch: Value = serde_json::from_str(&a.body).expect("JSON");
    assert_eq!((batch["id"].clone(), batch["error"]["code"].clone()), (Value::Null, json!(-32600)));
    let a = call(addr, "POST", &[CT], "42").await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::BAD_REQUEST, "Invalid JSON-RPC message"));
    let a = call(addr, "PUT", &[], "").await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed"));
    let a = call(addr, "GET", &[], "").await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::NOT_ACCEPTABLE, "Not Acceptable"));
    let a = call(addr, "GET", &[("accept", "text/event-stream")], "").await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id"));
    let a = call(addr, "DELETE", &[], "").await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id"));
    let a = call(addr, "DELETE", &[("acp-connection-id", "nope")], "").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);

    let id = initialize(addr, 1).await;
    let init = json!({ "jsonrpc": "2.0", "id": 9, "method": "initialize", "params": { "protocolVersion": 1 } });
    let a = post(addr, &[("acp-connection-id", &id)], init).await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::BAD_REQUEST, "Initialize not allowed on existing connection"));
    let prompt =
        json!({ "jsonrpc": "2.0", "id": 6, "method": "session/prompt", "params": { "sessionId": "s1", "prompt": [] } });
    let a = post(addr, &[("acp-connection-id", &id)], prompt.clone()).await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::BAD_REQUEST, "Missing Acp-Session-Id"));
    let a = post(addr, &[("acp-connection-id", &id), ("acp-session-id", "s2")], prompt).await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::BAD_REQUEST, "Mismatched Acp-Session-Id"));
    let long = "x".repeat(1025);
    let a =
        post(addr, &[("acp-connection-id", &id)], json!({ "jsonrpc": "2.0", "id": long, "method": "session/list" }))
            .await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::BAD_REQUEST, "Request ID exceeds maxIdLength (1024)"));
    let a = call(
        addr,
        "GET",
        &[("accept", "text/event-stream"), ("acp-connection-id", &id), ("acp-session-id", &long)],
        "",
    )
    .await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::BAD_REQUEST, "Session ID exceeds maxIdLength (1024)"));

    // One receiver per stream.
    let _first = Sse::open(addr, &id, None).await;
    let a = call(addr, "GET", &[("accept", "text/event-stream"), ("acp-connection-id", &id)], "").await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::CONFLICT, "Outbound stream already has an active receiver"));

    // DELETE ends the connection: its stream ends, and it is unknown after.
    let a = call(addr, "DELETE", &[("acp-connection-id", &id)], "").await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let mut first = _first;
    assert!(first.next().await.is_none(), "the stream ends with its connection");
    let a = post(addr, &[("acp-connection-id", &id)], msg).await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id"));

    // And the server still serves.
    http_turn(addr, 2).await;
}

#[tokio::test]
async fn output_nobody_reads_stays_queued_for_the_next_receiver() {
    let _g = MEMORY.read().await;
    let server = start().await;
    let id = initialize(server.addr, 1).await;
    let new = json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new", "params": { "cwd": "/", "mcpServers": [] } });
    assert_eq!(post(server.addr, &[("acp-connection-id", &id)], new).await.status, StatusCode::ACCEPTED);
    // The answer waits for a receiver; one that comes and goes leaves the rest queued.
    let mut stream = Sse::open(server.addr, &id, None).await;
    assert_eq!(stream.next().await.expect("the answer")["id"], 1);
    drop(stream);
    let new = json!({ "jsonrpc": "2.0", "id": 2, "method": "session/new", "params": { "cwd": "/", "mcpServers": [] } });
    assert_eq!(post(server.addr, &[("acp-connection-id", &id)], new).await.status, StatusCode::ACCEPTED);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut stream = Sse::open(server.addr, &id, None).await;
    assert_eq!(stream.next().await.expect("the queued answer")["id"], 2);
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

#[tokio::test]
async fn a_100_mb_body_is_refused_413_without_being_held() {
    let _g = MEMORY.write().await;
    let server = start().await;
    let before = rss_kib();
    // Declared: refused before a byte of the body is read.
    let started = Instant::now();
    let mut raw = TcpStream::connect(server.addr).await.expect("connect");
    raw.write_all(
        b"POST / HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 104857600\r\n\r\n",
    )
    .await
    .expect("write");
    let mut head = [0u8; 12];
    raw.read_exact(&mut head).await.expect("an answer");
    assert_eq!(&head, b"HTTP/1.1 413", "{}", String::from_utf8_lossy(&head));
    eprintln!("declared 100 MB: 413 after {:?}", started.elapsed());
    // Streamed (chunked, no length): counted as it comes, refused at the limit.
    let started = Instant::now();
    let chunk = Bytes::from(vec![b' '; 1 << 20]);
    let chunks = futures_util::stream::iter(
        (0..100).map(move |_| Ok::<_, std::convert::Infallible>(Frame::data(chunk.clone()))),
    );
    let req = Request::builder()
        .method("POST")
        .uri("/")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(StreamBody::new(chunks))
        .expect("request");
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
    tokio::spawn(conn);
    let status = sender.send_request(req).await.map(|r| r.status());
    let after = rss_kib();
    eprintln!(
        "streamed 100 MB: {status:?} after {:?}; RSS before {before} KiB, after {after} KiB (+{} KiB)",
        started.elapsed(),
        after.saturating_sub(before)
    );
    // The client may see its upload cut instead of the answer; the server must not grow by 100 MB.
    if let Ok(status) = status {
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    }
    assert!(after < before + 48 * 1024, "RSS grew from {before} KiB to {after} KiB");
    let id = initialize(server.addr, 1).await;
    assert!(!id.is_empty());
}

#[tokio::test]
async fn a_slow_loris_is_dropped_while_others_are_served() {
    let _g = MEMORY.read().await;
    let limits = Limits { header_read_timeout: Duration::from_secs(1), ..Limits::default() };
    let server = start_with(limits, None).await;
    let mut slow = TcpStream::connect(server.addr).await.expect("connect");
    slow.write_all(b"POST / HTTP/1.1\r\nhost: localhost\r\nx-slow: aaa").await.expect("write");
    // And one that sends nothing at all.
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    let started = Instant::now();
    let id = initialize(server.addr, 2).await;
    let served = started.elapsed();
    assert!(!id.is_empty());
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut rest)).await;
    let dropped = started.elapsed();
    eprintln!(
        "slow-loris: another client served in {served:?}; the stalled one dropped after {dropped:?} ({:?})",
        String::from_utf8_lossy(&rest).lines().next()
    );
    assert!(read.is_ok(), "the stalled connection is closed by the server");
    let silent = tokio::time::timeout(Duration::from_secs(10), silent.read_to_end(&mut rest)).await;
    eprintln!("slow-loris: the silent one dropped after {:?}", started.elapsed());
    assert!(silent.is_ok(), "a connection that sends nothing is closed too");
    assert!(dropped >= Duration::from_millis(900), "not before the timeout: {dropped:?}");
}

#[tokio::test]
async fn ten_thousand_idle_connections_come_and_go() {
    let _g = MEMORY.write().await;
    let server = start().await;
    let before = rss_kib();
    let started = Instant::now();
    let mut opened = 0;
    for _ in 0..20 {
        let mut batch = Vec::new();
        for _ in 0..500 {
            batch.push(TcpStream::connect(server.addr).await.expect("connect"));
        }
        opened += batch.len();
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(batch);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = rss_kib();
    eprintln!(
        "{opened} idle connections in {:?}; RSS before {before} KiB, after {after} KiB (+{} KiB)",
        started.elapsed(),
        after.saturating_sub(before)
    );
    http_turn(server.addr, 1).await;
    assert!(after < before + 64 * 1024, "RSS grew from {before} KiB to {after} KiB");
}

#[tokio::test]
async fn auth_rejects_then_accepts_the_token() {
    let _g = MEMORY.read().await;
    let server = start_with(Limits::default(), Some(Auth::bearer("s3cret"))).await;
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": 1 } });
    let a = post(server.addr, &[], init.clone()).await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::UNAUTHORIZED, "Unauthorized"));
    let a = post(server.addr, &[("authorization", "Bearer wrong")], init.clone()).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    let a = call(server.addr, "GET", &[("upgrade", "websocket"), ("connection", "upgrade")], "").await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "upgrades are checked too");
    let a = post(server.addr, &[("authorization", "Bearer s3cret")], init).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
}

#[tokio::test]
async fn a_stalled_reader_closes_its_connection_and_idle_ones_close() {
    let _g = MEMORY.read().await;
    let limits = Limits {
        max_buffered_bytes: 16,
        max_output_stall: Duration::from_millis(500),
        idle_timeout: Duration::from_millis(700),
        ..Limits::default()
    };
    let server = start_with(limits, None).await;
    // Nobody reads: the answer fills the buffer, the next request waits, then the connection
    // closes.
    let id = initialize(server.addr, 1).await;
    let new = json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new", "params": { "cwd": "/", "mcpServers": [] } });
    assert_eq!(post(server.addr, &[("acp-connection-id", &id)], new.clone()).await.status, StatusCode::ACCEPTED);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let a = post(
        server.addr,
        &[("acp-connection-id", &id)],
        json!({ "jsonrpc": "2.0", "id": 2, "method": "session/list" }),
    )
    .await;
    eprintln!("stalled output: the waiting POST answered {} after {:?}", a.status, started.elapsed());
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
    // Idle: no stream and no POST for the timeout.
    let id = initialize(server.addr, 1).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let a = post(server.addr, &[("acp-connection-id", &id)], new).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "the idle connection was closed");
}

#[tokio::test]
async fn shutdown_ends_streams_and_sockets() {
    let _g = MEMORY.read().await;
    let server = start().await;
    let id = initialize(server.addr, 1).await;
    let mut stream = Sse::open(server.addr, &id, None).await;
    let (mut ws, _) = ws_connect(server.addr).await;
    let started = Instant::now();
    server.handle.shutdown().await;
    assert!(stream.next().await.is_none(), "the SSE stream ends");
    match ws_next(&mut ws).await {
        Message::Close(Some(frame)) => assert_eq!(u16::from(frame.code), 1001, "{frame:?}"),
        other => panic!("expected close 1001, got {other:?}"),
    }
    let served = tokio::time::timeout(Duration::from_secs(10), server.served).await;
    eprintln!("shutdown took {:?}", started.elapsed());
    assert!(matches!(served, Ok(Ok(Ok(())))), "serve returns: {served:?}");
    assert!(TcpStream::connect(server.addr).await.is_err(), "the listener is closed");
}

#[test]
fn the_example_listens_and_prints_its_address() {
    use std::io::BufRead as _;
    let exe = std::env::current_exe().expect("exe");
    let example = exe.parent().and_then(|d| d.parent()).expect("target").join("examples").join("echo_agent");
    let mut child = std::process::Command::new(&example)
        .args(["--listen", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("echo_agent");
    let stderr = child.stderr.take().expect("stderr");
    let line = std::io::BufReader::new(stderr).lines().next().expect("a line").expect("text");
    let addr: SocketAddr = line.strip_prefix("listening on http://").expect(&line).parse().expect("an address");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async { http_turn(addr, 2).await });
    let _ = child.kill();
    let _ = child.wait();
    // Beyond loopback: not without a credential, and the refusal names the flag.
    let refused = std::process::Command::new(&example).args(["--listen", "0.0.0.0:0"]).output().expect("echo_agent");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("--token-file"), "{:?}: {said}", refused.status);
}

#[tokio::test]
async fn a_websocket_client_that_stops_reading_is_given_up_on() {
    let _g = MEMORY.read().await;
    let limits = Limits { max_output_stall: Duration::from_millis(500), ..Limits::default() };
    let server = start_with(limits, None).await;
    let (ws, _) = ws_connect(server.addr).await;
    let (mut tx, mut rx) = ws.split();
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": 1 } });
    tx.send(Message::text(init.to_string())).await.expect("send");
    let new = json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new", "params": { "cwd": "/", "mcpServers": [] } });
    tx.send(Message::text(new.to_string())).await.expect("send");
    // 200 prompts whose 64 KiB echoes (13 MB) overflow the socket buffers while nobody reads.
    let text = "x".repeat(64 << 10);
    let prompts = 200;
    let sending = tokio::spawn(async move {
        for id in 2..2 + prompts {
            let prompt = json!({ "jsonrpc": "2.0", "id": id, "method": "session/prompt",
                "params": { "sessionId": "s1", "prompt": [{ "type": "text", "text": text }] } });
            if tx.send(Message::text(prompt.to_string())).await.is_err() {
                break;
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The server gave up after 0.5 s without progress: what it had written drains, then the
    // socket ends instead of delivering every answer.
    let started = Instant::now();
    let mut answers = 0;
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(Ok(message)) = rx.next().await {
            match message {
                Message::Text(t) if t.contains("\"stopReason\"") => answers += 1,
                Message::Close(_) => break,
                _ => {}
            }
        }
    })
    .await;
    eprintln!(
        "stalled WebSocket: {answers} of {prompts} turns answered before the socket ended ({:?})",
        started.elapsed()
    );
    assert!(ended.is_ok(), "the socket should have ended; {answers} answers read");
    assert!(answers < prompts, "every turn was answered: the stall limit did nothing");
    sending.abort();
    // Others are still served.
    http_turn(server.addr, 1).await;
}

/// Whether a fresh TCP connection is served: an upgrade that the server answers `101`, or `None`
/// when the server closes the socket as soon as it accepts it (past `max_tcp_connections`).
async fn ws_try(addr: SocketAddr) -> Option<tokio_tungstenite::WebSocketStream<TcpStream>> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    tokio_tungstenite::client_async(format!("ws://{addr}/"), stream).await.ok().map(|(ws, _)| ws)
}

/// A WebSocket as soon as the server has a free slot again (the connections closed before are
/// seen closed by the server a moment later), initialized.
async fn ws_when_free(addr: SocketAddr) -> tokio_tungstenite::WebSocketStream<TcpStream> {
    for _ in 0..500 {
        if let Some(mut ws) = ws_try(addr).await {
            let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": 1 } });
            ws.send(Message::text(init.to_string())).await.expect("send");
            assert_eq!(ws_json(&mut ws).await["result"]["protocolVersion"], 1);
            return ws;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no slot freed after the connections before closed");
}

#[tokio::test]
async fn websocket_connections_count_against_max_tcp_connections() {
    let _g = MEMORY.read().await;
    let limits = Limits { max_tcp_connections: 2, ..Limits::default() };
    let server = start_with(limits, None).await;
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": 1 } });

    // Two plain HTTP keep-alive connections fill the limit: a third is closed unanswered.
    let mut held = Vec::new();
    for _ in 0..2 {
        let stream = TcpStream::connect(server.addr).await.expect("connect");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
        let conn = tokio::spawn(conn);
        let answer = sender.send_request(request("POST", &[CT], &init.to_string())).await.expect("answered");
        assert_eq!(answer.status(), StatusCode::OK);
        held.push((sender, conn));
    }
    assert!(ws_try(server.addr).await.is_none(), "a third TCP connection is refused while two HTTP ones are open");
    for (sender, conn) in held {
        drop(sender);
        let _ = conn.await;
    }

    // Two upgraded sockets fill it the same way, however long after their upgrade.
    let mut sockets = vec![ws_when_free(server.addr).await, ws_when_free(server.addr).await];
    assert!(ws_try(server.addr).await.is_none(), "a third connection is refused while two WebSockets are open");
    let refused = TcpStream::connect(server.addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(refused)).await.expect("handshake");
    tokio::spawn(conn);
    assert!(sender.send_request(request("POST", &[CT], &init.to_string())).await.is_err(), "HTTP is refused too");

    // A close frame is answered with one and ends the session: its slot is free again while the
    // client still holds its end of the socket.
    let mut closing = sockets.pop().expect("two");
    closing.close(None).await.expect("close");
    let answer = ws_next(&mut closing).await;
    assert!(matches!(answer, Message::Close(_)), "expected the close answered, got {answer:?}");
    let _third = ws_when_free(server.addr).await;
    // A client gone without a close frame frees its slot too.
    drop(sockets.pop());
    let _fourth = ws_when_free(server.addr).await;
    drop(closing);
    server.handle.shutdown().await;
}

// The origin and host checks (a browser's requests, DNS rebinding).

const EVIL: &str = "https://evil.example";
const APP: &str = "http://app.example:3000";

fn upgrade_headers<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("connection", "Upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];
    headers.extend_from_slice(extra);
    headers
}

fn init_message() -> Value {
    json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": 1 } })
}

/// POST `initialize`, GET a stream and a WebSocket upgrade, each with `headers`: their statuses
/// and bodies.
async fn three_requests(addr: SocketAddr, headers: &[(&str, &str)]) -> Vec<Answer> {
    let mut get = vec![("accept", "text/event-stream"), ("acp-connection-id", "x")];
    get.extend_from_slice(headers);
    vec![
        post(addr, headers, init_message()).await,
        call(addr, "GET", &get, "").await,
        call(addr, "GET", &upgrade_headers(headers), "").await,
    ]
}

fn assert_refused(answers: &[Answer], why: &str) {
    for (answer, what) in answers.iter().zip(["POST", "GET", "upgrade"]) {
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{what}: {}", answer.body);
        assert!(answer.body.contains(why), "{what}: {:?} should say {why:?}", answer.body);
        assert!(answer.headers.get("access-control-allow-origin").is_none(), "{what}: no CORS header");
    }
}

#[tokio::test]
async fn a_cross_site_origin_is_refused_on_post_get_and_upgrade() {
    let _g = MEMORY.read().await;
    let server = start_server(Server::new(Arc::new(Echo), Version::ALL).allow_origins([APP])).await;
    let host = server.addr.to_string();
    let answers = three_requests(server.addr, &[("host", &host), ("origin", EVIL)]).await;
    assert_refused(&answers, "Origin \"https://evil.example\" is not allowed");
    // Another port of our own host is another origin.
    let sibling = format!("http://127.0.0.1:{}", server.addr.port() + 1);
    assert_refused(&three_requests(server.addr, &[("origin", &sibling)]).await, "is not allowed");
    // Without an Origin, with the listener's Host: served (a client, not a page).
    let id = initialize(server.addr, 1).await;
    let answer = post(server.addr, &[("host", &host)], init_message()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    let upgraded = tokio_tungstenite::client_async(format!("ws://{host}/"), stream).await;
    assert!(upgraded.is_ok(), "an upgrade without Origin: {:?}", upgraded.err());
    assert!(!id.is_empty());
}

#[tokio::test]
async fn rebinding_host_null_and_duplicate_origins_are_refused() {
    let _g = MEMORY.read().await;
    let server = start_server(Server::new(Arc::new(Echo), Version::ALL).allow_origins([APP])).await;
    let rebound = format!("evil.example:{}", server.addr.port());
    let origin = format!("http://{rebound}");
    let answers = three_requests(server.addr, &[("host", &rebound), ("origin", &origin)]).await;
    assert_refused(&answers, "Host \"evil.example");
    // The rebound Host alone (a same-origin GET carries no Origin) is refused too.
    assert_refused(&three_requests(server.addr, &[("host", &rebound)]).await, "is not a name this listener");
    let wrong_port = format!("localhost:{}", server.addr.port() + 1);
    assert_refused(&three_requests(server.addr, &[("host", &wrong_port)]).await, "is not a name");
    assert_refused(&three_requests(server.addr, &[("origin", "null")]).await, "Origin \"null\" is not allowed");
    let twice = three_requests(server.addr, &[("origin", APP), ("origin", APP)]).await;
    assert_refused(&twice, "more than one Origin header");
    let twice = three_requests(server.addr, &[("origin", APP), ("origin", EVIL)]).await;
    assert_refused(&twice, "more than one Origin header");
}

#[tokio::test]
async fn allowed_origins_and_hosts_are_served_with_cors() {
    let _g = MEMORY.read().await;
    let server = Server::new(Arc::new(Echo), Version::ALL).allow_origins([APP, "null"]).allow_hosts(["agent.example"]);
    let server = start_server(server).await;
    let answer = post(server.addr, &[("origin", APP), ("host", "agent.example:9")], init_message()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.headers["access-control-allow-origin"], APP);
    let exposed = answer.headers["access-control-expose-headers"].to_str().expect("text").to_ascii_lowercase();
    assert!(exposed.contains("acp-connection-id") && exposed.contains("acp-session-id"), "{exposed}");
    assert_eq!(post(server.addr, &[("origin", "null")], init_message()).await.status, StatusCode::OK);
    let upgrade = call(server.addr, "GET", &upgrade_headers(&[("origin", APP)]), "").await;
    assert_eq!(upgrade.status, StatusCode::SWITCHING_PROTOCOLS, "{}", upgrade.body);
}

#[tokio::test]
async fn preflight_is_answered_for_an_allowed_origin_only() {
    let _g = MEMORY.read().await;
    let server = start_server(Server::new(Arc::new(Echo), Version::ALL).allow_origins([APP])).await;
    let asking = |origin| {
        [
            ("origin", origin),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "content-type"),
        ]
    };
    let allowed = call(server.addr, "OPTIONS", &asking(APP), "").await;
    assert_eq!(allowed.status, StatusCode::NO_CONTENT, "{}", allowed.body);
    assert_eq!(allowed.headers["access-control-allow-origin"], APP);
    let headers = allowed.headers["access-control-allow-headers"].to_str().expect("text").to_ascii_lowercase();
    for needed in ["acp-connection-id", "acp-session-id", "authorization", "content-type"] {
        assert!(headers.contains(needed), "{needed} in {headers}");
    }
    let methods = allowed.headers["access-control-allow-methods"].to_str().expect("text");
    assert!(methods.contains("POST") && methods.contains("GET") && methods.contains("DELETE"), "{methods}");
    let refused = call(server.addr, "OPTIONS", &asking(EVIL), "").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.headers.keys().all(|k| !k.as_str().starts_with("access-control-")), "{:?}", refused.headers);
}

#[tokio::test]
async fn the_origin_check_comes_before_auth_and_auth_stays() {
    let _g = MEMORY.read().await;
    let server = Server::new(Arc::new(Echo), Version::ALL).allow_origins([APP]).auth(Auth::bearer("s3cret"));
    let server = start_server(server).await;
    // A preflight carries no credential: answered for the allowed origin.
    let preflight =
        call(server.addr, "OPTIONS", &[("origin", APP), ("access-control-request-method", "POST")], "").await;
    assert_eq!(preflight.status, StatusCode::NO_CONTENT);
    let answer = post(server.addr, &[("origin", APP)], init_message()).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(answer.headers["access-control-allow-origin"], APP, "the page may read why");
    let answer = post(server.addr, &[("origin", EVIL), ("authorization", "Bearer s3cret")], init_message()).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "a token does not let a foreign page in");
    let twice = [("authorization", "Bearer s3cret"), ("authorization", "Bearer s3cret")];
    assert_eq!(post(server.addr, &twice, init_message()).await.status, StatusCode::UNAUTHORIZED);
    let answer = post(server.addr, &[("origin", APP), ("authorization", "Bearer s3cret")], init_message()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}

#[tokio::test]
async fn beyond_loopback_serving_needs_a_credential() {
    let _g = MEMORY.read().await;
    let bind = || async { TcpListener::bind("0.0.0.0:0").await.expect("bind 0.0.0.0") };
    let refused = Server::new(Arc::new(Echo), Version::ALL).serve(bind().await).await;
    let error = refused.expect_err("no credential");
    assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
    assert!(error.to_string().contains("without a credential"), "{error}");
    // With a credential any Host is served; without one (insecure), only names no DNS answer
    // can rebind: the loopback names and IP literals.
    let credential = Server::new(Arc::new(Echo), Version::ALL).auth(Auth::bearer("s3cret"));
    let insecure = Server::new(Arc::new(Echo), Version::ALL).insecure_no_auth();
    for (server, named, literal) in
        [(credential, StatusCode::OK, StatusCode::OK), (insecure, StatusCode::FORBIDDEN, StatusCode::OK)]
    {
        let listener = bind().await;
        let port = listener.local_addr().expect("addr").port();
        let handle = server.handle();
        let served = tokio::spawn(server.serve(listener));
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        let ip = format!("10.1.2.3:{port}");
        for (host, expected) in [("agent.example", named), (ip.as_str(), literal)] {
            let headers = [("host", host), ("authorization", "Bearer s3cret")];
            let answer = post(addr, &headers, init_message()).await;
            assert_eq!(answer.status, expected, "{host}: {}", answer.body);
        }
        handle.shutdown().await;
        assert!(matches!(served.await, Ok(Ok(()))));
    }
}
