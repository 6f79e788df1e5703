//! The runtime against the list: negotiation, faults, concurrency, ordering,
//! cancellation, extensions, closing, and message size, over in-memory pipes.

use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Patch, Version};
use acp_rpc::{AgentContext, ClientContext, Config, Error};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

const LIMIT: Duration = Duration::from_secs(20);

/// A peer that speaks raw JSON lines.
struct Raw {
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    write: tokio::io::WriteHalf<DuplexStream>,
}

impl Raw {
    async fn send_text(&mut self, text: &str) {
        self.write.write_all(text.as_bytes()).await.expect("write");
        self.write.write_all(b"\n").await.expect("write");
    }
    async fn send(&mut self, v: Value) {
        self.send_text(&v.to_string()).await;
    }
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(LIMIT, self.lines.next_line())
            .await
            .expect("an answer in time")
            .expect("read")
            .expect("open");
        serde_json::from_str(&line).expect("only JSON-RPC on the wire")
    }
    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })).await;
        self.recv().await
    }
}

#[derive(Default)]
struct TestAgent {
    saw_cancel: Mutex<Vec<String>>,
    /// Tasks alive on the runtime when the first `_burst` handler ran.
    tasks_at_first_burst: Mutex<Option<usize>>,
}

fn text_of(p: &v1::PromptRequest) -> String {
    p.prompt
        .iter()
        .filter_map(|b| if let v1::ContentBlock::Text(t) = b { Some(t.text.clone()) } else { None })
        .collect()
}

impl v1::methods::agent::Handler<AgentContext> for TestAgent {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }
    async fn session_new(&self, _: v1::NewSessionRequest, _: AgentContext) -> Result<v1::NewSessionResponse, RpcError> {
        Ok(v1::NewSessionResponse::new(v1::SessionId("s".into())))
    }
    async fn session_prompt(&self, p: v1::PromptRequest, cx: AgentContext) -> Result<v1::PromptResponse, RpcError> {
        let text = text_of(&p);
        let mut response = v1::PromptResponse::new(v1::StopReason::EndTurn);
        if text == "panic" {
            panic!("a handler bug");
        }
        if text.starts_with("perm") {
            let options = vec![v1::PermissionOption::new(
                v1::PermissionOptionId("ok".into()),
                "Ok".into(),
                v1::PermissionOptionKind::AllowOnce,
            )];
            let ask = v1::RequestPermissionRequest::new(
                p.session_id.clone(),
                v1::ToolCallUpdate::new(v1::ToolCallId("t".into())),
                options,
            );
            let answer = cx.request::<v1::methods::SessionRequestPermission>(&ask).await.map_err(|e| e.to_rpc())?;
            let file = cx
                .request::<v1::methods::FsReadTextFile>(&v1::ReadTextFileRequest::new(p.session_id.clone(), "f".into()))
                .await
                .map_err(|e| e.to_rpc())?;
            if matches!(answer.outcome, v1::RequestPermissionOutcome::Cancelled) {
                response.stop_reason = v1::StopReason::Cancelled;
            }
            response.meta = Patch::Value(serde_json::from_value(json!({ "file": file.content })).expect("object"));
        }
        if text == "updates" {
            for i in 0..500 {
                let chunk = v1::ContentChunk::new(v1::ContentBlock::from(v1::TextContent::new(i.to_string())));
                cx.notify::<v1::methods::SessionUpdate>(&v1::SessionNotification::new(
                    p.session_id.clone(),
                    v1::SessionUpdate::AgentMessageChunk(Box::new(chunk)),
                ))
                .await
                .map_err(|e| e.to_rpc())?;
            }
        }
        if text == "wait" {
            cx.cancelled().await;
            self.saw_cancel.lock().expect("lock").push(p.session_id.0.clone());
            response.stop_reason = v1::StopReason::Cancelled;
        }
        if text == "ignore" {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        if text.len() > 1000 {
            response.meta = Patch::Value(serde_json::from_value(json!({ "len": text.len() })).expect("object"));
        }
        Ok(response)
    }
    async fn ext_method(&self, method: String, params: Option<Value>, _: AgentContext) -> Result<Value, RpcError> {
        if method == "_burst" {
            let alive = tokio::runtime::Handle::current().metrics().num_alive_tasks();
            self.tasks_at_first_burst.lock().expect("lock").get_or_insert(alive);
        }
        Ok(json!({ "method": method, "params": params }))
    }
}
impl v2::methods::agent::Handler<AgentContext> for TestAgent {}
impl acp_rpc::agent::PromptTurn for TestAgent {}

#[derive(Default)]
struct TestClient {
    updates: Mutex<Vec<String>>,
    hold_permission: bool,
    /// The update text whose handler panics.
    panic_on_update: Option<&'static str>,
}

impl v1::methods::client::Handler<ClientContext> for TestClient {
    async fn session_request_permission(
        &self,
        _: v1::RequestPermissionRequest,
        _: ClientContext,
    ) -> Result<v1::RequestPermissionResponse, RpcError> {
        if self.hold_permission {
            tokio::time::sleep(Duration::from_secs(60)).await; // a user who never answers
        }
        Ok(v1::RequestPermissionResponse::new(v1::RequestPermissionOutcome::Selected(
            v1::SelectedPermissionOutcome::new(v1::PermissionOptionId("ok".into())),
        )))
    }
    async fn fs_read_text_file(
        &self,
        _: v1::ReadTextFileRequest,
        _: ClientContext,
    ) -> Result<v1::ReadTextFileResponse, RpcError> {
        Ok(v1::ReadTextFileResponse::new("contents".into()))
    }
    async fn session_update(&self, p: v1::SessionNotification, _: ClientContext) {
        if let v1::SessionUpdate::AgentMessageChunk(c) = p.update {
            if let v1::ContentBlock::Text(t) = c.content {
                if self.panic_on_update == Some(t.text.as_str()) {
                    panic!("a notification handler bug");
                }
                self.updates.lock().expect("lock").push(t.text);
            }
        }
    }
    async fn ext_method(&self, method: String, _: Option<Value>, _: ClientContext) -> Result<Value, RpcError> {
        Ok(json!({ "client saw": method }))
    }
}
impl v2::methods::client::Handler<ClientContext> for TestClient {}

fn config() -> Config {
    Config { max_message_size: 1 << 20, cancel_grace: Duration::from_millis(200), ..Config::default() }
}

/// Our agent on one end of a pipe, a raw peer on the other.
fn raw_agent(config: Config) -> (Raw, Arc<TestAgent>) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(ours);
    let agent = Arc::new(TestAgent::default());
    let (_, driver) = acp_rpc::agent::serve(SharedAgent(agent.clone()), Version::ALL, r, w, config);
    tokio::spawn(driver);
    let (tr, tw) = tokio::io::split(theirs);
    (Raw { lines: BufReader::new(tr).lines(), write: tw }, agent)
}

/// Lets a test keep a handle on the agent it serves.
struct SharedAgent(Arc<TestAgent>);
impl v1::methods::agent::Handler<AgentContext> for SharedAgent {
    async fn initialize(&self, p: v1::InitializeRequest, cx: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        v1::methods::agent::Handler::initialize(&*self.0, p, cx).await
    }
    async fn session_new(
        &self,
        p: v1::NewSessionRequest,
        cx: AgentContext,
    ) -> Result<v1::NewSessionResponse, RpcError> {
        v1::methods::agent::Handler::session_new(&*self.0, p, cx).await
    }
    async fn session_prompt(&self, p: v1::PromptRequest, cx: AgentContext) -> Result<v1::PromptResponse, RpcError> {
        v1::methods::agent::Handler::session_prompt(&*self.0, p, cx).await
    }
    async fn ext_method(&self, m: String, p: Option<Value>, cx: AgentContext) -> Result<Value, RpcError> {
        v1::methods::agent::Handler::ext_method(&*self.0, m, p, cx).await
    }
}
impl v2::methods::agent::Handler<AgentContext> for SharedAgent {
    async fn initialize(&self, _: v2::InitializeRequest, _: AgentContext) -> Result<v2::InitializeResponse, RpcError> {
        Ok(v2::InitializeResponse::new(v2::ProtocolVersion(2), v2::Implementation::new("t".into(), "0".into())))
    }
}
impl acp_rpc::agent::PromptTurn for SharedAgent {}

/// Our client and our agent, connected.
async fn pair(client: impl acp_rpc::client::ClientHandler) -> (acp_rpc::client::ClientConnection, Arc<TestAgent>) {
    let (conn, agent, _) = pair_with_agent_conn(client).await;
    (conn, agent)
}

/// [`pair`], also giving the agent's end of the connection.
async fn pair_with_agent_conn(
    client: impl acp_rpc::client::ClientHandler,
) -> (acp_rpc::client::ClientConnection, Arc<TestAgent>, acp_rpc::Connection) {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let agent = Arc::new(TestAgent::default());
    let (agent_conn, driver) = acp_rpc::agent::serve(SharedAgent(agent.clone()), Version::ALL, ar, aw, config());
    tokio::spawn(driver);
    let (conn, driver) = acp_rpc::client::connect(client, br, bw, config());
    tokio::spawn(driver);
    // The test client serves `fs/read_text_file`, and says so: the agent's calls are checked
    // against what the client advertised (rule `cap.client-fs`).
    let advertised = json!({ "clientCapabilities": { "fs": { "readTextFile": true } } });
    conn.initialize(Version::V1, advertised).await.expect("initialize");
    (conn, agent, agent_conn)
}

fn prompt(text: &str) -> v1::PromptRequest {
    v1::PromptRequest::new(v1::SessionId("s".into()), vec![v1::ContentBlock::from(v1::TextContent::new(text.into()))])
}

#[tokio::test]
async fn negotiation_picks_the_highest_version_at_most_the_requested_one() {
    let (mut peer, _) = raw_agent(config());
    let before = peer.call(0, "session/new", json!({ "cwd": "/", "mcpServers": [] })).await;
    assert_eq!(before["error"]["code"], -32600, "{before}");
    assert_eq!(peer.call(1, "initialize", json!({ "protocolVersion": 1 })).await["result"]["protocolVersion"], 1);
    let info = json!({ "name": "t", "version": "0" });
    assert_eq!(
        peer.call(2, "initialize", json!({ "protocolVersion": 2, "info": info })).await["result"]["protocolVersion"],
        2
    );
    assert_eq!(
        peer.call(3, "initialize", json!({ "protocolVersion": 3, "info": info })).await["result"]["protocolVersion"],
        2
    );
    let zero = peer.call(4, "initialize", json!({ "protocolVersion": 0 })).await;
    assert_eq!(zero["error"]["code"], -32022, "{zero}");
    assert_eq!(zero["error"]["data"], json!({ "requested": 0, "supported": [1, 2] }));
    // The latest successful initialize (v2) decides how the rest decodes.
    let new = peer.call(5, "session/new", json!({ "cwd": "/" })).await;
    assert_eq!(new["error"]["code"], -32601, "v2 session/new falls to the default handler: {new}");
}

#[tokio::test]
async fn faults_get_the_expected_errors_and_the_connection_keeps_serving() {
    let (mut peer, _) = raw_agent(config());
    peer.send_text("{not json").await;
    assert_eq!(
        peer.recv().await,
        json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "parse error: not valid JSON" } })
    );
    peer.send_text("[1, 2]").await;
    let batch = peer.recv().await;
    assert_eq!((batch["id"].clone(), batch["error"]["code"].clone()), (Value::Null, json!(-32600)));
    peer.send(json!({ "jsonrpc": "2.0", "id": 7 })).await;
    assert_eq!(peer.recv().await["error"]["code"], -32600);
    peer.send(json!({ "jsonrpc": "2.0", "id": 99, "result": {} })).await; // nobody asked: logged, dropped
    assert_eq!(peer.call(1, "initialize", json!({ "protocolVersion": 1 })).await["id"], 1);
    let unknown = peer.call(2, "session/fly", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    let panicked = peer.call(3, "session/prompt", serde_json::to_value(prompt("panic")).expect("json")).await;
    assert_eq!(panicked["error"]["code"], -32603, "{panicked}");
    let after = peer.call(4, "session/prompt", serde_json::to_value(prompt("hi")).expect("json")).await;
    assert_eq!(after["result"]["stopReason"], "end_turn", "{after}");
}

#[tokio::test]
async fn a_handler_awaiting_the_peer_does_not_deadlock_and_requests_run_concurrently() {
    let (conn, _) = pair(TestClient::default()).await;
    let calls = (0..64).map(|_| {
        let conn = conn.connection().clone();
        tokio::spawn(async move { conn.request::<v1::methods::SessionPrompt>(&prompt("perm")).await })
    });
    for call in calls {
        let answer = tokio::time::timeout(LIMIT, call).await.expect("no deadlock").expect("task").expect("answered");
        assert_eq!(answer.meta.as_value().and_then(|m| m.get("file")), Some(json!("contents")));
    }
}

#[tokio::test]
async fn notifications_arrive_in_order() {
    let client = Arc::new(TestClient::default());
    let (conn, _) = pair(SharedClient(client.clone())).await;
    conn.connection().request::<v1::methods::SessionPrompt>(&prompt("updates")).await.expect("answered");
    conn.connection().sync_notifications().await;
    let seen = client.updates.lock().expect("lock").clone();
    assert_eq!(seen, (0..500).map(|i| i.to_string()).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_panicking_notification_handler_is_contained_and_the_next_ones_run() {
    let client = Arc::new(TestClient { panic_on_update: Some("13"), ..TestClient::default() });
    let (conn, _) = pair(SharedClient(client.clone())).await;
    conn.connection().request::<v1::methods::SessionPrompt>(&prompt("updates")).await.expect("answered");
    tokio::time::timeout(LIMIT, conn.connection().sync_notifications()).await.expect("the notification queue drains");
    let seen = client.updates.lock().expect("lock").clone();
    assert_eq!(seen, (0..500).filter(|&i| i != 13).map(|i| i.to_string()).collect::<Vec<_>>());
    let after = conn.connection().request::<v1::methods::SessionPrompt>(&prompt("hi")).await.expect("still serving");
    assert_eq!(after.stop_reason, v1::StopReason::EndTurn);
}

struct SharedClient(Arc<TestClient>);
impl v1::methods::client::Handler<ClientContext> for SharedClient {
    async fn session_update(&self, p: v1::SessionNotification, cx: ClientContext) {
        v1::methods::client::Handler::session_update(&*self.0, p, cx).await
    }
}
impl v2::methods::client::Handler<ClientContext> for SharedClient {}

#[tokio::test]
async fn cancelling_an_outgoing_call_sends_cancel_and_the_handler_sees_it() {
    let (conn, agent) = pair(TestClient::default()).await;
    let token = tokio_util::sync::CancellationToken::new();
    let call = {
        let (conn, token) = (conn.connection().clone(), token.clone());
        tokio::spawn(async move {
            conn.request_cancellable::<v1::methods::SessionPrompt>(&prompt("wait"), Some(token)).await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    token.cancel();
    assert_eq!(call.await.expect("task"), Err(Error::Cancelled));
    for _ in 0..100 {
        if !agent.saw_cancel.lock().expect("lock").is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the agent's handler never saw the cancellation");
}

#[tokio::test]
async fn a_handler_that_ignores_cancellation_is_answered_32800() {
    let (mut peer, _) = raw_agent(config());
    peer.call(1, "initialize", json!({ "protocolVersion": 1 })).await;
    peer.send(json!({ "jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt("ignore") })).await;
    peer.send(json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": 2 } })).await;
    let answer = peer.recv().await;
    assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!(2), json!(-32800)), "{answer}");
}

#[tokio::test]
async fn session_cancel_ends_the_turn_and_answers_pending_permission_requests() {
    let (conn, _) = pair(TestClient { hold_permission: true, ..TestClient::default() }).await;
    let call = {
        let conn = conn.connection().clone();
        tokio::spawn(async move { conn.request::<v1::methods::SessionPrompt>(&prompt("perm")).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    conn.cancel_session("s").await.expect("sent");
    let answer = tokio::time::timeout(LIMIT, call).await.expect("in time").expect("task").expect("answered");
    assert_eq!(answer.stop_reason, v1::StopReason::Cancelled);
}

#[tokio::test]
async fn extension_methods_both_ways_keep_their_names() {
    let (conn, _, agent_conn) = pair_with_agent_conn(TestClient::default()).await;
    let answer = agent_conn.request_raw("_acme/ping", None).await.expect("the client answers");
    assert_eq!(serde_json::from_str::<Value>(answer.get()).expect("json"), json!({ "client saw": "_acme/ping" }));
    let params = serde_json::value::to_raw_value(&json!({ "x": [1] })).expect("raw");
    let answer = conn.connection().request_raw("_acme/echo", Some(&params)).await.expect("answered");
    assert_eq!(
        serde_json::from_str::<Value>(answer.get()).expect("json"),
        json!({ "method": "_acme/echo", "params": { "x": [1] } })
    );
    let unknown = conn.connection().request_raw("acme/echo", Some(&params)).await;
    assert!(matches!(unknown, Err(Error::Peer(RpcError { code: -32601, .. }))), "{unknown:?}");
}

#[tokio::test]
async fn pending_calls_fail_when_the_peer_closes() {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(ours);
    let (conn, driver) = acp_rpc::client::connect(TestClient::default(), r, w, config());
    tokio::spawn(driver);
    let call = tokio::spawn(async move { conn.initialize(Version::V1, json!({})).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(theirs);
    assert_eq!(tokio::time::timeout(LIMIT, call).await.expect("in time").expect("task"), Err(Error::Closed));
}

#[tokio::test]
async fn a_64_mib_message_passes_and_one_over_the_limit_is_refused() {
    let big = Config { max_message_size: 80 << 20, ..config() };
    let (mut peer, _) = raw_agent(big);
    peer.call(1, "initialize", json!({ "protocolVersion": 1 })).await;
    let text = "x".repeat(64 << 20);
    let answer = peer.call(2, "session/prompt", serde_json::to_value(prompt(&text)).expect("json")).await;
    assert_eq!(answer["result"]["_meta"]["len"], 64 << 20);
    let (mut peer, _) = raw_agent(config()); // 1 MiB limit
    peer.call(1, "initialize", json!({ "protocolVersion": 1 })).await;
    let over = peer.call(2, "session/prompt", serde_json::to_value(prompt(&"y".repeat(2 << 20))).expect("json")).await;
    assert_eq!((over["id"].clone(), over["error"]["code"].clone()), (json!(2), json!(-32600)), "{over}");
    let after = peer.call(3, "session/prompt", serde_json::to_value(prompt("hi")).expect("json")).await;
    assert_eq!(after["result"]["stopReason"], "end_turn");
}

/// One read that brings many requests must not be handled in one go: the reader lets the
/// handlers it started run every few lines (on one thread here, so nothing else could run them).
#[tokio::test]
async fn a_burst_of_requests_lets_handlers_run_before_it_is_all_read() {
    let (mut peer, agent) = raw_agent(config());
    peer.call(1, "initialize", json!({ "protocolVersion": 1 })).await;
    let before = tokio::runtime::Handle::current().metrics().num_alive_tasks();
    let burst: String = (0..300)
        .map(|id| format!("{}\n", json!({ "jsonrpc": "2.0", "id": 100 + id, "method": "_burst", "params": {} })))
        .collect();
    peer.write.write_all(burst.as_bytes()).await.expect("write");
    for _ in 0..300 {
        assert_eq!(peer.recv().await["result"]["method"], "_burst");
    }
    let first = agent.tasks_at_first_burst.lock().expect("lock").expect("the handler ran");
    // One task per request started: read whole, the burst would leave about 300 of them waiting.
    assert!(first - before <= 40, "{} request tasks were started before the first one ran", first - before);
}
