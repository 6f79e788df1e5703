//! MCP over ACP, both ends our runtime in-process: a client offers an rmcp tool server over the
//! ACP connection, an agent calls it (directly and through the HTTP bridge); the binding's errors,
//! cancellation and notifications.
#![cfg(feature = "mcp")]

use acp_rpc::mcp::rmcp::handler::server::wrapper::Parameters;
use acp_rpc::mcp::rmcp::model::{ProgressNotificationParam, ProgressToken};
use acp_rpc::mcp::rmcp::service::RequestContext;
use acp_rpc::mcp::rmcp::{schemars, tool, tool_router, RoleServer};
use acp_rpc::mcp::{
    acp_servers_v1, code, AcpServer, CallOptions, EnvelopeMeta, McpCaller, McpProvider, Outcome,
    META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, METHOD,
};
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, Version};
use acp_rpc::{AgentContext, ClientContext, Connection};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

/// The client's MCP server: `echo` returns its text; `wait` never returns (until cancelled,
/// which drops it: `dropped` counts); `progress` reports progress, then returns; `held` returns
/// once the test cancels `gate`; `envelope_meta` returns the envelope `_meta` it was given.
#[derive(Clone, Default)]
struct Tools {
    started: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
    gate: CancellationToken,
}

impl Tools {
    /// Until `wait` has started `n` times.
    async fn started(&self, n: usize) {
        while self.started.load(Ordering::SeqCst) < n {
            tokio::task::yield_now().await;
        }
    }
}

struct CountDrop(Arc<AtomicUsize>);

impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tool_router(server_handler)]
impl Tools {
    #[tool(description = "Returns its text")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Waits until cancelled")]
    async fn wait(&self) -> String {
        let _count = CountDrop(self.dropped.clone());
        self.started.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<()>().await;
        String::new()
    }

    #[tool(description = "Waits until the test opens the gate")]
    async fn held(&self) -> String {
        self.started.fetch_add(1, Ordering::SeqCst);
        self.gate.cancelled().await;
        "released".into()
    }

    #[tool(description = "Returns the mcp/message envelope's _meta as JSON (empty without one)")]
    async fn envelope_meta(&self, context: RequestContext<RoleServer>) -> String {
        context.extensions.get::<EnvelopeMeta>().map(|m| Value::Object(m.0.clone()).to_string()).unwrap_or_default()
    }

    #[tool(description = "Reports progress, then returns done")]
    async fn progress(&self, context: RequestContext<RoleServer>) -> String {
        let token = ProgressToken(acp_rpc::mcp::rmcp::model::NumberOrString::String("p".into()));
        let _ = context.peer.notify_progress(ProgressNotificationParam::new(token, 0.5)).await;
        "done".into()
    }
}

/// The client: answers `mcp/message` with its provider; when the envelope has a `_meta`, its
/// answer's carrier has the `_meta` `{"seen": <the envelope's>}`.
struct Client {
    provider: McpProvider,
}

impl v1::methods::client::Handler<ClientContext> for Client {
    async fn mcp_message(
        &self,
        params: v1::MessageMcpRequest,
        cx: ClientContext,
    ) -> Result<v1::MessageMcpResponse, RpcError> {
        let envelope_meta = serde_json::to_value(&params).unwrap()["_meta"].clone();
        let answer = self.provider.handle_v1(params, &cx).await?;
        if envelope_meta.is_null() {
            return Ok(answer);
        }
        let mut carrier = serde_json::to_value(&answer).unwrap();
        carrier["_meta"] = json!({ "seen": envelope_meta });
        Ok(serde_json::from_value(carrier).unwrap())
    }
}

/// The agent: remembers the ACP servers of each session, and on a prompt calls the `echo` tool of
/// the first with the prompt's text and says what it returned.
#[derive(Clone, Default)]
struct Agent {
    caller: McpCaller,
    servers: Arc<Mutex<Vec<AcpServer>>>,
    /// The agent's connection, for the tests to send raw `mcp/message` requests on.
    conn: Arc<Mutex<Option<Connection>>>,
}

impl v1::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, _: v1::InitializeRequest, cx: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        *self.conn.lock().unwrap() = Some(cx.connection().clone());
        let mut answer = v1::InitializeResponse::new(v1::ProtocolVersion(1));
        answer.agent_capabilities.mcp_capabilities.acp = true.into();
        Ok(answer)
    }

    async fn session_new(&self, p: v1::NewSessionRequest, _: AgentContext) -> Result<v1::NewSessionResponse, RpcError> {
        *self.servers.lock().unwrap() = acp_servers_v1(&p.mcp_servers);
        Ok(v1::NewSessionResponse::new(v1::SessionId("s".into())))
    }

    async fn session_prompt(&self, p: v1::PromptRequest, cx: AgentContext) -> Result<v1::PromptResponse, RpcError> {
        let text = match p.prompt.first() {
            Some(v1::ContentBlock::Text(t)) => t.text.clone(),
            _ => String::new(),
        };
        let server = self.servers.lock().unwrap().first().cloned().ok_or_else(|| RpcError::internal("no server"))?;
        let mut arguments = Map::new();
        arguments.insert("text".into(), text.into());
        let result = self
            .caller
            .call_tool(&cx, &server.server_id, "echo", Some(arguments))
            .await
            .map_err(|e| RpcError::internal(e.to_string()))?;
        let said = result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect::<String>();
        let chunk = v1::ContentChunk::new(v1::ContentBlock::from(v1::TextContent::new(said)));
        cx.v1()?.update(&p.session_id, v1::SessionUpdate::AgentMessageChunk(Box::new(chunk))).await?;
        Ok(v1::PromptResponse::new(v1::StopReason::EndTurn))
    }

    async fn mcp_message(&self, params: v1::MessageMcpNotification, _: AgentContext) {
        self.caller.route_v1(&params);
    }
}

struct Pair {
    client: acp_rpc::client::ClientConnection,
    agent: Agent,
    provider: McpProvider,
    declared: AcpServer,
    tools: Tools,
}

/// Our client and our agent over an in-memory pipe, initialized (v1), the client's tool
/// server registered and declared in a session.
async fn pair() -> Pair {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let agent = Agent::default();
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (_, agent_driver) =
        acp_rpc::agent::serve(acp_rpc::V1(agent.clone()), &[Version::V1], agent_read, agent_write, Default::default());
    tokio::spawn(agent_driver);
    let provider = McpProvider::new();
    let tools = Tools::default();
    let declared = provider.register("tools", tools.clone());
    let (client_read, client_write) = tokio::io::split(client_io);
    let (client, driver) = acp_rpc::client::connect(
        acp_rpc::V1(Client { provider: provider.clone() }),
        client_read,
        client_write,
        Default::default(),
    );
    tokio::spawn(driver);
    client.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.unwrap();
    Pair { client, agent, provider, declared, tools }
}

impl Pair {
    fn agent_conn(&self) -> Connection {
        self.agent.conn.lock().unwrap().clone().expect("initialized")
    }

    /// A raw `mcp/message` from the agent's side.
    async fn raw(&self, params: Value) -> Result<Value, acp_rpc::Error> {
        let raw = serde_json::value::to_raw_value(&params).unwrap();
        let answer = self.agent_conn().request_raw(METHOD, Some(&raw)).await?;
        Ok(serde_json::from_str(answer.get()).unwrap())
    }
}

fn meta() -> Value {
    json!({ META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {} })
}

fn peer_code(e: acp_rpc::Error) -> i32 {
    match e {
        acp_rpc::Error::Peer(e) => e.code,
        other => panic!("expected the peer's error, got {other}"),
    }
}

#[tokio::test]
async fn the_agent_calls_the_clients_tool() {
    let pair = pair().await;
    let mut session =
        pair.client.new_session_v1(v1::NewSessionRequest::new("/w".into(), vec![pair.declared.v1()])).await.unwrap();
    let mut turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new("hello mcp".into()))]).await;
    let mut text = String::new();
    while let Some(update) = turn.next().await {
        if let v1::SessionUpdate::AgentMessageChunk(chunk) = update {
            if let v1::ContentBlock::Text(t) = &chunk.content {
                text.push_str(&t.text);
            }
        }
    }
    assert_eq!(turn.outcome().await.unwrap().stop_reason, v1::StopReason::EndTurn);
    assert_eq!(text, "hello mcp");
}

#[tokio::test]
async fn tools_are_listed_with_rmcp_types() {
    let pair = pair().await;
    let conn = pair.agent_conn();
    let tools = McpCaller::new().list_tools(&conn, &pair.declared.server_id).await.unwrap();
    let mut names: Vec<String> = tools.tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["echo", "envelope_meta", "held", "progress", "wait"]);
}

#[tokio::test]
async fn an_unknown_server_is_33001() {
    let pair = pair().await;
    let e = pair
        .raw(json!({"serverId": "nobody", "requestId": "r", "method": "tools/list", "params": {"_meta": meta()}}))
        .await;
    assert_eq!(peer_code(e.unwrap_err()), code::UNKNOWN_SERVER);
}

#[tokio::test]
async fn a_malformed_envelope_is_32602_and_the_connection_keeps_serving() {
    let pair = pair().await;
    let e = pair.raw(json!({"serverId": pair.declared.server_id, "requestId": 7, "method": "tools/list"})).await;
    assert_eq!(peer_code(e.unwrap_err()), RpcError::INVALID_PARAMS);
    let ok = pair
        .raw(json!({"serverId": pair.declared.server_id, "requestId": "r", "method": "tools/list", "params": {"_meta": meta()}}))
        .await
        .unwrap();
    assert!(ok["result"]["tools"].is_array(), "{ok}");
}

#[tokio::test]
async fn missing_metadata_is_an_inner_32602_and_a_wrong_version_an_inner_32022() {
    let pair = pair().await;
    let id = &pair.declared.server_id;
    let missing = pair.raw(json!({"serverId": id, "requestId": "a", "method": "tools/list"})).await.unwrap();
    assert_eq!(Outcome::from_carrier(&missing).and_then(|o| o.error_code()), Some(-32602), "{missing}");
    let no_caps = json!({"serverId": id, "requestId": "b", "method": "tools/list",
        "params": {"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
    let no_caps = pair.raw(no_caps).await.unwrap();
    assert_eq!(Outcome::from_carrier(&no_caps).and_then(|o| o.error_code()), Some(-32602), "{no_caps}");
    let old = json!({"serverId": id, "requestId": "c", "method": "tools/list",
        "params": {"_meta": {META_PROTOCOL_VERSION: "2025-11-25", META_CLIENT_CAPABILITIES: {}}}});
    let old = pair.raw(old).await.unwrap();
    assert_eq!(Outcome::from_carrier(&old).and_then(|o| o.error_code()), Some(-32022), "{old}");
    assert_eq!(old["error"]["data"]["supported"], json!(["2026-07-28"]));
}

#[tokio::test]
async fn a_duplicate_active_request_is_32602_and_cancelling_frees_it() {
    let pair = pair().await;
    let conn = pair.agent_conn();
    let caller = McpCaller::new();
    let id = pair.declared.server_id.clone();
    let cancel = CancellationToken::new();
    let waiting = {
        let (caller, conn, id, cancel) = (caller.clone(), conn.clone(), id.clone(), cancel.clone());
        tokio::spawn(async move {
            let params = json!({"name": "wait"}).as_object().cloned();
            let options = CallOptions::new().cancel(cancel).request_id("dup");
            caller.request_with(&conn, &id, "tools/call", params, options).await
        })
    };
    // The first is active once its tool runs; the second with its id is refused meanwhile.
    pair.tools.started(1).await;
    let second = pair
        .raw(json!({"serverId": id, "requestId": "dup", "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": meta()}}))
        .await;
    assert_eq!(peer_code(second.unwrap_err()), code::INVALID_PARAMS);
    cancel.cancel();
    assert!(matches!(waiting.await.unwrap(), Err(acp_rpc::Error::Cancelled)));
    // The provider ended the tool's work (its future was dropped) and freed the id.
    let again = loop {
        let answer = pair
            .raw(json!({"serverId": id, "requestId": "dup", "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "again"}, "_meta": meta()}}))
            .await;
        match answer {
            Ok(answer) => break answer,
            Err(e) => assert_eq!(peer_code(e), code::INVALID_PARAMS),
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(again["result"]["content"][0]["text"], "again");
    assert_eq!(pair.tools.dropped.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn cancellation_is_32800() {
    let pair = pair().await;
    let params = json!({"serverId": pair.declared.server_id, "requestId": "c", "method": "tools/call",
        "params": {"name": "wait", "_meta": meta()}});
    let raw = serde_json::value::to_raw_value(&params).unwrap();
    let cancel = CancellationToken::new();
    let handling = {
        let (provider, conn, cancel) = (pair.provider.clone(), pair.client.connection().clone(), cancel.clone());
        tokio::spawn(async move { provider.handle(&conn, Some(&raw), &cancel).await })
    };
    pair.tools.started(1).await;
    cancel.cancel();
    assert_eq!(handling.await.unwrap().unwrap_err().code, code::CANCELLED);
    assert_eq!(pair.tools.dropped.load(Ordering::SeqCst), 1, "the tool's work was dropped");
}

#[tokio::test]
async fn a_limit_of_active_requests_is_33000() {
    let pair = pair().await;
    let provider = McpProvider::with_max_active(1);
    let tools = Tools::default();
    let declared = provider.register("one", tools.clone());
    let conn = pair.client.connection().clone();
    let cancel = CancellationToken::new();
    let first = json!({"serverId": declared.server_id, "requestId": "1", "method": "tools/call",
        "params": {"name": "wait", "_meta": meta()}});
    let first = serde_json::value::to_raw_value(&first).unwrap();
    let waiting = {
        let (provider, conn, cancel) = (provider.clone(), conn.clone(), cancel.clone());
        tokio::spawn(async move { provider.handle(&conn, Some(&first), &cancel).await })
    };
    let second = json!({"serverId": declared.server_id, "requestId": "2", "method": "tools/list",
        "params": {"_meta": meta()}});
    let second = serde_json::value::to_raw_value(&second).unwrap();
    tools.started(1).await;
    let refused = provider.handle(&conn, Some(&second), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(refused.code, code::LIMIT);
    cancel.cancel();
    assert_eq!(waiting.await.unwrap().unwrap_err().code, code::CANCELLED);
    assert!(provider.unregister(&declared.server_id));
    assert_eq!(
        provider.handle(&conn, Some(&second), &CancellationToken::new()).await.unwrap_err().code,
        code::UNKNOWN_SERVER
    );
}

#[tokio::test]
async fn notifications_reach_their_call_before_its_outcome() {
    let pair = pair().await;
    let (to, mut notes) = tokio::sync::mpsc::unbounded_channel();
    let params = json!({"name": "progress", "_meta": {"progressToken": "p"}}).as_object().cloned();
    let outcome = pair
        .agent
        .caller
        .request_with(
            &pair.agent_conn(),
            &pair.declared.server_id,
            "tools/call",
            params,
            CallOptions::new().notifications(to),
        )
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Result(outcome_result(&outcome)));
    let note = notes.try_recv().expect("the progress notification was routed before the outcome");
    assert_eq!(note.method, "notifications/progress");
    assert_eq!(note.params.unwrap()["progress"], 0.5);
    match outcome {
        Outcome::Result(result) => assert_eq!(result["content"][0]["text"], "done"),
        Outcome::Error(e) => panic!("inner error {e}"),
    }
}

/// The envelope's `_meta` reaches the server (in its request's extensions), and the carrier's
/// `_meta` comes back with the outcome; neither is made up when there is none.
#[tokio::test]
async fn the_envelope_meta_reaches_the_server_and_the_carrier_meta_the_caller() {
    let pair = pair().await;
    let call = |options: CallOptions| {
        let (caller, conn, id) = (pair.agent.caller.clone(), pair.agent_conn(), pair.declared.server_id.clone());
        let params = json!({ "name": "envelope_meta" }).as_object().cloned();
        async move { caller.request_answer(&conn, &id, "tools/call", params, options).await.unwrap() }
    };
    let hop = json!({ "trace": "t1" }).as_object().cloned().unwrap();
    let answer = call(CallOptions::new().meta(hop)).await;
    assert_eq!(outcome_result(&answer.outcome)["content"][0]["text"], json!({ "trace": "t1" }).to_string());
    assert_eq!(answer.meta.map(Value::Object), Some(json!({ "seen": { "trace": "t1" } })));

    let answer = call(CallOptions::new()).await;
    assert_eq!(outcome_result(&answer.outcome)["content"][0]["text"], "");
    assert_eq!(answer.meta, None);
}

fn outcome_result(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Result(r) => r.clone(),
        Outcome::Error(e) => panic!("inner error {e}"),
    }
}

#[cfg(feature = "http")]
mod bridge {
    use super::*;
    use acp_rpc::mcp::bridge::HttpBridge;
    use acp_rpc::mcp::rmcp::model::{CallToolRequestParams, CallToolResult};
    use http_body_util::{BodyExt as _, Full};
    use hyper_util::rt::TokioIo;

    struct Answer {
        status: u16,
        content_type: String,
        body: String,
    }

    /// One POST over a fresh HTTP/1.1 connection.
    async fn post(url: &str, headers: &[(String, String)], body: &Value) -> Answer {
        let uri: hyper::Uri = url.parse().unwrap();
        let stream = tokio::net::TcpStream::connect((uri.host().unwrap(), uri.port_u16().unwrap())).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(conn);
        let mut request = hyper::Request::post(uri.path());
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
            request = request.header("host", uri.authority().unwrap().as_str());
        }
        let mut request =
            request.header("content-type", "application/json").header("accept", "application/json, text/event-stream");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let request = request.body(Full::new(bytes::Bytes::from(body.to_string()))).unwrap();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let content_type =
            response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let body = String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
        Answer { status, content_type, body }
    }

    /// [`post`], as (status, content type, body), for the proxy test.
    pub(super) async fn post_for_tests(url: &str, headers: &[(String, String)], body: &Value) -> (u16, String, String) {
        let answer = post(url, headers, body).await;
        (answer.status, answer.content_type, answer.body)
    }

    fn call_echo(id: u64, text: &str, meta: Option<Value>) -> Value {
        let mut params =
            CallToolRequestParams::new("echo").with_arguments(json!({ "text": text }).as_object().cloned().unwrap());
        let mut params = serde_json::to_value(&mut params).unwrap();
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
    }

    fn result_text(answer: &Value) -> String {
        let result: CallToolResult = serde_json::from_value(answer["result"].clone()).unwrap();
        result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect()
    }

    #[tokio::test]
    async fn the_clients_tool_is_called_through_the_bridge() {
        let pair = pair().await;
        let bridge = HttpBridge::start(pair.agent.caller.clone(), pair.agent_conn()).await.unwrap();
        let url = bridge.url(&pair.declared);
        let answer = post(&url, &bridge.headers(), &call_echo(1, "over http", Some(meta()))).await;
        assert_eq!((answer.status, answer.content_type.as_str()), (200, "application/json"), "{}", answer.body);
        let answer: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(answer["id"], 1);
        assert_eq!(result_text(&answer), "over http");

        // The session/new rewrite: the acp entry becomes that URL with the header.
        let mut new = json!({ "cwd": "/w", "mcpServers": [pair.declared.to_value()] });
        assert_eq!(bridge.rewrite(&mut new), 1);
        assert_eq!(new["mcpServers"][0]["type"], "http");
        assert_eq!(new["mcpServers"][0]["url"], url);
        assert_eq!(new["mcpServers"][0]["headers"][0]["name"], "Authorization");
    }

    #[tokio::test]
    async fn a_2025_client_is_answered_initialize_and_its_requests_get_the_metadata() {
        let pair = pair().await;
        let bridge = HttpBridge::start(pair.agent.caller.clone(), pair.agent_conn()).await.unwrap();
        let url = bridge.url(&pair.declared);
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "old", "version": "1" } } });
        let answer = post(&url, &bridge.headers(), &init).await;
        let answer: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
        assert!(answer["result"]["capabilities"]["tools"].is_object(), "{answer}");
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        assert_eq!(post(&url, &bridge.headers(), &initialized).await.status, 202);
        let answer = post(&url, &bridge.headers(), &call_echo(2, "old style", None)).await;
        let answer: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(result_text(&answer), "old style");
    }

    #[tokio::test]
    async fn notifications_before_the_outcome_make_an_sse_answer() {
        let pair = pair().await;
        let bridge = HttpBridge::start(pair.agent.caller.clone(), pair.agent_conn()).await.unwrap();
        let call = json!({ "jsonrpc": "2.0", "id": "p", "method": "tools/call", "params": { "name": "progress" } });
        let answer = post(&bridge.url(&pair.declared), &bridge.headers(), &call).await;
        assert_eq!(answer.content_type, "text/event-stream");
        let events: Vec<Value> = answer
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect();
        assert_eq!(events.len(), 2, "{}", answer.body);
        assert_eq!(events[0]["method"], "notifications/progress");
        assert_eq!(events[1]["id"], "p");
        assert_eq!(events[1]["result"]["content"][0]["text"], "done");
    }

    #[tokio::test]
    async fn the_bridge_wants_its_token_and_a_known_route() {
        let pair = pair().await;
        let bridge = HttpBridge::start(pair.agent.caller.clone(), pair.agent_conn()).await.unwrap();
        let url = bridge.url(&pair.declared);
        assert_eq!(post(&url, &[], &call_echo(1, "x", None)).await.status, 401);
        let wrong = [("Authorization".to_string(), "Bearer nope".to_string())];
        assert_eq!(post(&url, &wrong, &call_echo(1, "x", None)).await.status, 401);
        let unknown = format!("http://{}/mcp/00", bridge.addr());
        assert_eq!(post(&unknown, &bridge.headers(), &call_echo(1, "x", None)).await.status, 404);
        let stranger = AcpServer { name: "x".into(), server_id: "not-declared".into() };
        let answer = post(&bridge.url(&stranger), &bridge.headers(), &call_echo(1, "x", None)).await;
        let answer: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(answer["error"]["code"], code::UNKNOWN_SERVER);
    }

    /// No web page and no rebound name reaches the bridge, whatever token it holds; duplicate
    /// headers and MCP revisions it does not speak are refused.
    #[tokio::test]
    async fn the_bridge_refuses_pages_rebound_names_and_unknown_revisions() {
        let pair = pair().await;
        let bridge = HttpBridge::start(pair.agent.caller.clone(), pair.agent_conn()).await.unwrap();
        let url = bridge.url(&pair.declared);
        let with = |extra: &[(&str, &str)]| {
            let mut headers = bridge.headers();
            headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            headers
        };
        let call = call_echo(1, "x", Some(meta()));
        let rebound = format!("evil.example:{}", bridge.addr().port());
        for (extra, status, says) in [
            (vec![("Origin", "https://evil.example")], 403, "Origin"),
            (vec![("Origin", "null")], 403, "Origin"),
            (vec![("Host", rebound.as_str())], 403, "Host"),
            (vec![("Authorization", "Bearer nope")], 400, "More than one authorization"),
            (vec![("MCP-Protocol-Version", "2099-01-01")], 400, "Unsupported MCP-Protocol-Version"),
            (
                vec![("MCP-Protocol-Version", "2025-11-25"), ("MCP-Protocol-Version", "2025-11-25")],
                400,
                "More than one",
            ),
        ] {
            let answer = post(&url, &with(&extra), &call).await;
            assert_eq!(answer.status, status, "{extra:?}: {}", answer.body);
            assert!(answer.body.contains(says), "{extra:?}: {}", answer.body);
        }
        for version in ["2025-11-25", "2026-07-28", "2025-03-26"] {
            let answer = post(&url, &with(&[("MCP-Protocol-Version", version)]), &call).await;
            assert_eq!(answer.status, 200, "{version}: {}", answer.body);
        }
        let localhost = format!("localhost:{}", bridge.addr().port());
        assert_eq!(post(&url, &with(&[("Host", localhost.as_str())]), &call).await.status, 200);
    }

    /// The bridge answers at most 64 requests at once (the TypeScript bridge's
    /// `maxActiveRequests`): the 65th is HTTP 429 with -33000, and an answered one frees its place.
    #[tokio::test]
    async fn the_65th_concurrent_request_is_429() {
        let pair = pair().await;
        let bridge = HttpBridge::start(pair.agent.caller.clone(), pair.agent_conn()).await.unwrap();
        let url = bridge.url(&pair.declared);
        let held = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "held", "_meta": meta() } });
        let holding: Vec<_> = (0..64)
            .map(|_| {
                let (url, headers, held) = (url.clone(), bridge.headers(), held.clone());
                tokio::spawn(async move { post(&url, &headers, &held).await })
            })
            .collect();
        pair.tools.started(64).await;
        let refused = post(&url, &bridge.headers(), &call_echo(2, "x", Some(meta()))).await;
        assert_eq!(refused.status, 429, "{}", refused.body);
        let refused: Value = serde_json::from_str(&refused.body).unwrap();
        assert_eq!(refused["error"]["code"], code::LIMIT);

        pair.tools.gate.cancel();
        for held in holding {
            let answer = held.await.unwrap();
            assert_eq!(answer.status, 200, "{}", answer.body);
            assert_eq!(result_text(&serde_json::from_str(&answer.body).unwrap()), "released");
        }
        let answer = post(&url, &bridge.headers(), &call_echo(3, "again", Some(meta()))).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(result_text(&serde_json::from_str(&answer.body).unwrap()), "again");
    }

    /// A request whose id is neither a string nor an integer is refused, not taken for a
    /// notification (202 and no answer, its client waiting for ever).
    #[tokio::test]
    async fn a_request_with_a_bad_id_is_refused() {
        let pair = pair().await;
        let bridge = HttpBridge::start(pair.agent.caller.clone(), pair.agent_conn()).await.unwrap();
        let url = bridge.url(&pair.declared);
        for id in [Value::Null, json!(1.5), json!([1])] {
            let mut call = call_echo(1, "x", Some(meta()));
            call["id"] = id;
            let answer = post(&url, &bridge.headers(), &call).await;
            assert_eq!(answer.status, 400, "{}", answer.body);
            let answer: Value = serde_json::from_str(&answer.body).unwrap();
            assert_eq!(answer["error"]["code"], -32600);
        }
        // A notification is still accepted.
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        assert_eq!(post(&url, &bridge.headers(), &note).await.status, 202);
    }
}

/// The conductor's end of one proxy's connection (raw JSON lines).
struct Conductor {
    to_proxy: tokio::sync::mpsc::Sender<Vec<u8>>,
    from_proxy: tokio::sync::mpsc::Receiver<Vec<u8>>,
}

impl Conductor {
    fn start(proxy: impl acp_rpc::proxy::ProxyHandler) -> Conductor {
        let (to_proxy, incoming) = tokio::sync::mpsc::channel(64);
        let (outgoing, from_proxy) = tokio::sync::mpsc::channel(64);
        let channels = acp_rpc::jsonrpc::Channels { incoming, outgoing };
        let (_, driver) = acp_rpc::proxy::serve_proxy_over(Arc::new(proxy), channels, acp_rpc::proxy::proxy_config());
        tokio::spawn(driver);
        Conductor { to_proxy, from_proxy }
    }

    async fn send(&self, message: Value) {
        self.to_proxy.send(message.to_string().into_bytes()).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        serde_json::from_slice(&self.from_proxy.recv().await.unwrap()).unwrap()
    }

    /// `proxy/initialize` v1, the successor answering `agent_answer`; the proxy's answer.
    async fn initialize(&mut self, agent_answer: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": "i", "method": "proxy/initialize", "params": {"protocolVersion": 1}}))
            .await;
        let forwarded = self.next().await;
        self.send(json!({"jsonrpc": "2.0", "id": forwarded["id"], "result": agent_answer})).await;
        self.next().await
    }
}

/// A proxy that offers its own MCP server to its successor: declared in `session/new`, its
/// `mcp/message` requests answered with the notifications wrapped in `proxy/successor`.
struct ToolProxy {
    provider: McpProvider,
    declared: AcpServer,
}

impl acp_rpc::proxy::ProxyHandler for ToolProxy {
    async fn client_request(
        &self,
        mut request: acp_rpc::proxy::Request,
        cx: acp_rpc::proxy::ProxyContext,
    ) -> Result<acp_rpc::proxy::Response, RpcError> {
        if request.method() == "session/new" {
            let mut params: Value = serde_json::from_str(request.params().unwrap().get()).unwrap();
            params["mcpServers"].as_array_mut().unwrap().push(self.declared.to_value());
            request.set_raw(Some(serde_json::value::to_raw_value(&params).unwrap()));
        }
        cx.agent().forward_request(request).await
    }

    async fn agent_request(
        &self,
        request: acp_rpc::proxy::Request,
        cx: acp_rpc::proxy::ProxyContext,
    ) -> Result<acp_rpc::proxy::Response, RpcError> {
        if request.method() != METHOD {
            return cx.client().forward_request(request).await;
        }
        let notify = |note: Box<serde_json::value::RawValue>| {
            let cx = cx.clone();
            async move { cx.agent().notify_raw(METHOD, Some(&note)).await }
        };
        let carrier = self.provider.handle_with(request.params(), cx.cancellation(), notify).await?;
        Ok(acp_rpc::proxy::Response::new(serde_json::value::to_raw_value(&carrier).unwrap(), request.version()))
    }
}

#[tokio::test]
async fn a_proxy_provides_a_server_to_its_successor() {
    let provider = McpProvider::new();
    let declared = provider.register("proxy-tools", Tools::default());
    let mut c = Conductor::start(ToolProxy { provider, declared: declared.clone() });
    c.initialize(json!({"protocolVersion": 1})).await;
    c.send(json!({"jsonrpc": "2.0", "id": "n", "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}))
        .await;
    let forwarded = c.next().await;
    assert_eq!(forwarded["params"]["params"]["mcpServers"][0], declared.to_value());
    c.send(json!({"jsonrpc": "2.0", "id": forwarded["id"], "result": {"sessionId": "s"}})).await;
    c.next().await;
    // The agent's call, from the successor.
    let call = json!({"serverId": declared.server_id, "requestId": "r", "method": "tools/call",
        "params": {"name": "progress", "_meta": meta()}});
    c.send(
        json!({"jsonrpc": "2.0", "id": 9, "method": "proxy/successor", "params": {"method": METHOD, "params": call}}),
    )
    .await;
    let note = c.next().await;
    assert_eq!(note["method"], "proxy/successor", "{note}");
    assert!(note.get("id").is_none(), "{note}");
    assert_eq!(note["params"]["method"], METHOD);
    assert_eq!(note["params"]["params"]["method"], "notifications/progress");
    assert_eq!(note["params"]["params"]["requestId"], "r");
    let answer = c.next().await;
    assert_eq!(answer["id"], 9, "{answer}");
    assert_eq!(answer["result"]["result"]["content"][0]["text"], "done");
}

/// The bridge as a proxy in a chain, driven by a scripted conductor (raw JSON lines).
#[cfg(feature = "http")]
mod http_proxy {
    use super::*;
    use acp_rpc::mcp::McpHttpProxy;

    #[tokio::test]
    async fn the_proxy_advertises_acp_rewrites_session_new_and_bridges_calls_to_the_client() {
        let mut c = Conductor::start(McpHttpProxy::new());

        // initialize: the HTTP-only agent's answer gains `acp`.
        let agent_answer = json!({"protocolVersion": 1, "agentCapabilities": {"mcpCapabilities": {"http": true}}});
        let answer = c.initialize(agent_answer).await;
        assert_eq!(answer["result"]["agentCapabilities"]["mcpCapabilities"], json!({"http": true, "acp": true}));

        // session/new: the acp entry reaches the agent as an http one; the rest as it came.
        let acp = json!({"type": "acp", "name": "tools", "serverId": "tools:1"});
        let stdio = json!({"name": "s", "command": "c", "args": [], "env": []});
        c.send(json!({"jsonrpc": "2.0", "id": "n", "method": "session/new",
            "params": {"cwd": "/w", "mcpServers": [acp, stdio], "_x": 1}}))
            .await;
        let forwarded = c.next().await;
        assert_eq!(forwarded["params"]["method"], "session/new");
        let inner = &forwarded["params"]["params"];
        assert_eq!(inner["mcpServers"][1], stdio);
        assert_eq!(inner["_x"], 1);
        let http = inner["mcpServers"][0].clone();
        assert_eq!(http["type"], "http", "{http}");
        let url = http["url"].as_str().unwrap().to_string();
        let headers: Vec<(String, String)> = http["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["name"].as_str().unwrap().into(), h["value"].as_str().unwrap().into()))
            .collect();
        c.send(json!({"jsonrpc": "2.0", "id": forwarded["id"], "result": {"sessionId": "s"}})).await;
        assert_eq!(c.next().await["result"]["sessionId"], "s");

        // The agent's HTTP call becomes mcp/message to the client, which notifies, then answers.
        let call = tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "via proxy"}}});
            super::bridge::post_for_tests(&url, &headers, &body).await
        });
        let request = c.next().await;
        assert_eq!(request["method"], METHOD, "{request}");
        assert_eq!(request["params"]["serverId"], "tools:1");
        assert_eq!(request["params"]["params"]["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
        let request_id = request["params"]["requestId"].clone();
        c.send(json!({"jsonrpc": "2.0", "method": METHOD, "params": {"serverId": "tools:1", "requestId": request_id,
            "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}}))
            .await;
        c.send(json!({"jsonrpc": "2.0", "id": request["id"],
            "result": {"result": {"content": [{"type": "text", "text": "via proxy"}]}}}))
            .await;
        let (status, content_type, body) = call.await.unwrap();
        assert_eq!((status, content_type.as_str()), (200, "text/event-stream"), "{body}");
        let events: Vec<Value> =
            body.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect();
        assert_eq!(events[0]["method"], "notifications/progress");
        assert_eq!(events[1]["result"]["content"][0]["text"], "via proxy");
        // The routed notification went no further: nothing else was sent to the agent.
        assert!(c.from_proxy.try_recv().is_err());
    }
}
