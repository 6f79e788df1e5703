//! What production agents do, taken in stride by the runtime: version negotiation with fallback
//! both ways (`ClientConnection::negotiate`) and the agent's side of it, authentication
//! (`auth_required` → `authenticate` → a session), and the traffic seen on the wire (vendor
//! methods without the `_` prefix mid-turn, request ids from 0, a 560 KB line, `_meta`, fields
//! only the unstable schema has, a `tool_call_update` never announced, a turn that ends
//! `cancelled` after a rejected permission, history replayed before the `session/load` answer).
//!
//! Real agents of this runtime where the behaviour is the runtime's, a scripted agent (the test
//! writes its lines) where it is the other side's.

use acp_rpc::agent::Turn;
use acp_rpc::agent::{AgentHandler, PromptTurn};
use acp_rpc::client::{ClientConnection, ClientHandler, Initialized, Offer};
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::{AgentContext, ClientContext, Error, V1, V2};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

const LIMIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// Agents of this runtime, and clients.

/// An agent that records the `protocolVersion` of each `initialize` and, when `auth` holds,
/// refuses `session/new` with -32000 until `authenticate` (v1) / `auth/login` (v2) with `login`.
#[derive(Clone, Default)]
struct Agent {
    asked: Arc<Mutex<Vec<u16>>>,
    auth: bool,
    authenticated: Arc<AtomicBool>,
}

impl Agent {
    fn with_auth() -> Self {
        Agent { auth: true, ..Agent::default() }
    }

    fn asked(&self) -> Vec<u16> {
        self.asked.lock().map(|a| a.clone()).unwrap_or_default()
    }

    fn gate(&self) -> Result<(), RpcError> {
        match self.auth && !self.authenticated.load(Ordering::SeqCst) {
            true => Err(RpcError::new(RpcError::AUTH_REQUIRED, "Authentication required")),
            false => Ok(()),
        }
    }

    fn login(&self, method: &str) -> Result<(), RpcError> {
        if method != "login" {
            return Err(RpcError::invalid_params("authenticate", "methodId", &format!("unknown method {method}")));
        }
        self.authenticated.store(true, Ordering::SeqCst);
        Ok(())
    }
}

impl v1::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, p: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        self.asked.lock().map_err(|_| RpcError::internal("lock"))?.push(p.protocol_version.0);
        let mut answer = v1::InitializeResponse::new(v1::ProtocolVersion(1));
        if self.auth {
            let login = v1::AuthMethodAgent::new(v1::AuthMethodId("login".into()), "Log in".into());
            let terminal = v1::AuthMethodTerminal::new(v1::AuthMethodId("tty".into()), "In a terminal".into());
            *answer.auth_methods =
                vec![v1::AuthMethod::Agent(Box::new(login)), v1::AuthMethod::Terminal(Box::new(terminal))];
        }
        Ok(answer)
    }
    async fn authenticate(
        &self,
        p: v1::AuthenticateRequest,
        _: AgentContext,
    ) -> Result<v1::AuthenticateResponse, RpcError> {
        self.login(&p.method_id.0).map(|()| v1::AuthenticateResponse::new())
    }
    async fn session_new(&self, _: v1::NewSessionRequest, _: AgentContext) -> Result<v1::NewSessionResponse, RpcError> {
        self.gate().map(|()| v1::NewSessionResponse::new(v1::SessionId("s1".into())))
    }
    async fn session_prompt(&self, _: v1::PromptRequest, _: AgentContext) -> Result<v1::PromptResponse, RpcError> {
        Ok(v1::PromptResponse::new(v1::StopReason::EndTurn))
    }
}

impl v2::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, p: v2::InitializeRequest, _: AgentContext) -> Result<v2::InitializeResponse, RpcError> {
        self.asked.lock().map_err(|_| RpcError::internal("lock"))?.push(p.protocol_version.0);
        let mut answer =
            v2::InitializeResponse::new(v2::ProtocolVersion(2), v2::Implementation::new("a".into(), "0".into()));
        if self.auth {
            let login = v2::AuthMethodAgent::new(v2::AuthMethodId("login".into()), "Log in".into());
            answer.auth_methods = Some(vec![v2::AuthMethod::Agent(Box::new(login))]);
        }
        Ok(answer)
    }
    async fn auth_login(&self, p: v2::LoginAuthRequest, _: AgentContext) -> Result<v2::LoginAuthResponse, RpcError> {
        self.login(&p.method_id.0).map(|()| v2::LoginAuthResponse::new())
    }
    async fn session_new(&self, _: v2::NewSessionRequest, _: AgentContext) -> Result<v2::NewSessionResponse, RpcError> {
        self.gate().map(|()| v2::NewSessionResponse::new(v2::SessionId("s2".into())))
    }
}

impl PromptTurn for Agent {
    async fn prompt_turn(&self, _: v2::PromptRequest, _: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        Ok(v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::EndTurn))
    }
}

/// A client that rejects every permission request (its first `reject_*` option).
#[derive(Clone, Copy)]
struct Rejecting;

impl v1::methods::client::Handler<ClientContext> for Rejecting {
    async fn session_request_permission(
        &self,
        p: v1::RequestPermissionRequest,
        _: ClientContext,
    ) -> Result<v1::RequestPermissionResponse, RpcError> {
        let reject = p
            .options
            .iter()
            .find(|o| matches!(o.kind, v1::PermissionOptionKind::RejectOnce | v1::PermissionOptionKind::RejectAlways));
        let outcome = match reject {
            Some(o) => v1::RequestPermissionOutcome::Selected(v1::SelectedPermissionOutcome::new(o.option_id.clone())),
            None => v1::RequestPermissionOutcome::Cancelled,
        };
        Ok(v1::RequestPermissionResponse::new(outcome))
    }
}
impl v2::methods::client::Handler<ClientContext> for Rejecting {}

/// One end of an in-memory pipe, split.
type End = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

fn pipe() -> (End, End) {
    let (a, b) = tokio::io::duplex(1 << 16);
    (tokio::io::split(a), tokio::io::split(b))
}

/// `client` connected to `agent`, served with every version (narrowed to what it speaks).
fn connect<A: AgentHandler, C: ClientHandler>(agent: A, client: C) -> ClientConnection {
    let ((ar, aw), (br, bw)) = pipe();
    tokio::spawn(acp_rpc::agent::serve(agent, Version::ALL, ar, aw, Default::default()).1);
    let (conn, driver) = acp_rpc::client::connect(client, br, bw, Default::default());
    tokio::spawn(driver);
    conn
}

fn v1_request() -> v1::InitializeRequest {
    let mut request = v1::InitializeRequest::new(v1::ProtocolVersion(1));
    request.client_capabilities.terminal = true.into();
    request
}

fn v2_request() -> v2::InitializeRequest {
    v2::InitializeRequest::new(v2::ProtocolVersion(2), v2::Implementation::new("c".into(), "0".into()))
}

fn both() -> Offer {
    Offer::new().v1(v1_request()).v2(v2_request())
}

async fn in_time<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, work).await.expect("in time")
}

// ---------------------------------------------------------------------------------------------
// Negotiation.

#[tokio::test]
async fn a_client_asking_for_v2_goes_on_in_v1_with_a_v1_only_agent() {
    let agent = Agent::default();
    let conn = connect(V1(agent.clone()), Rejecting);
    let outcome = in_time(conn.negotiate(both())).await.expect("falls back");
    assert!(matches!(outcome, Initialized::V1(_)), "{outcome:?}");
    assert_eq!(outcome.version(), Version::V1);
    assert_eq!(conn.version(), Some(Version::V1));
    // One `initialize`, asking for 2: the agent answered 1 and nothing was asked again.
    assert_eq!(agent.asked(), [2]);
    // The v1 session API works from there.
    let mut session = in_time(conn.new_session_v1(v1::NewSessionRequest::new("/".into(), vec![]))).await.expect("new");
    let turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new("hi".into()))]).await;
    assert_eq!(in_time(turn.outcome()).await.expect("turn").stop_reason, v1::StopReason::EndTurn);
}

#[tokio::test]
async fn a_client_of_both_versions_asking_for_at_most_1_gets_v1() {
    let agent = Agent::default();
    let conn = connect(agent.clone(), Rejecting);
    let outcome = in_time(conn.negotiate(both().at_most(Version::V1))).await.expect("v1");
    assert!(matches!(outcome, Initialized::V1(_)), "{outcome:?}");
    assert_eq!(agent.asked(), [1]);
    // Without a maximum the same agent gives v2.
    let agent = Agent::default();
    let conn = connect(agent.clone(), Rejecting);
    assert!(matches!(in_time(conn.negotiate(both())).await, Ok(Initialized::V2(_))));
    assert_eq!(agent.asked(), [2]);
}

#[tokio::test]
async fn a_v1_only_client_and_a_v2_only_agent_get_an_error_naming_both_versions() {
    let conn = connect(V2(Agent::default()), V1(Rejecting));
    let error = in_time(conn.negotiate(both())).await.expect_err("nothing in common");
    assert_eq!(error, Error::NoCommonVersion { asked: Version::V1, agent: vec![2], client: &[Version::V1] });
    let text = error.to_string();
    assert!(text.contains("asked for 1") && text.contains("the agent speaks 2"), "{text}");
    // No version agreed: not the one asked for last.
    assert_eq!(conn.version(), None);
}

#[tokio::test]
async fn a_v2_only_client_cannot_fall_back_to_a_v1_only_agent() {
    let conn = connect(V1(Agent::default()), V2(Rejecting));
    let error = in_time(conn.negotiate(both())).await.expect_err("v2 only");
    assert_eq!(error, Error::NoCommonVersion { asked: Version::V2, agent: vec![1], client: &[Version::V2] });
    // Nothing to offer at all: a v1 maximum for a v2-only handler, refused before sending.
    let conn = connect(V1(Agent::default()), V2(Rejecting));
    let error = in_time(conn.negotiate(both().at_most(Version::V1))).await.expect_err("nothing to offer");
    assert!(error.to_string().contains("nothing to negotiate"), "{error}");
}

#[tokio::test]
async fn initialize_v2_stays_strict_and_names_both_versions() {
    let conn = connect(V1(Agent::default()), Rejecting);
    let error = in_time(conn.initialize_v2(v2_request())).await.expect_err("strict");
    assert!(error.to_string().contains("answered protocol version 1, not 2"), "{error}");
    // The connection speaks what the agent answered, and the client's handler speaks it.
    assert_eq!(conn.version(), Some(Version::V1));
}

#[tokio::test]
async fn an_agent_that_refuses_v2_is_asked_again_with_the_v1_request() {
    let (conn, mut agent) = scripted(Rejecting);
    let negotiation = tokio::spawn({
        let conn = conn.clone();
        async move { conn.negotiate(both()).await }
    });
    let first = agent.recv().await;
    assert_eq!(first["params"]["protocolVersion"], 2);
    // The v2 request alone: its own fields, none of v1's.
    assert!(first["params"]["info"].is_object() && first["params"].get("clientCapabilities").is_none(), "{first}");
    agent.answer_error(&first, -32603, "unsupported protocol version 2").await;
    let second = agent.recv().await;
    assert_eq!(second["params"]["protocolVersion"], 1);
    assert_eq!(second["params"]["clientCapabilities"]["terminal"], true, "{second}");
    assert!(second["params"].get("info").is_none(), "{second}");
    agent.answer(&second, json!({ "protocolVersion": 1 })).await;
    let outcome = in_time(negotiation).await.expect("task").expect("v1 on the second try");
    assert!(matches!(outcome, Initialized::V1(_)));
}

#[tokio::test]
async fn a_32022_listing_no_version_the_client_speaks_names_both_sides() {
    let (conn, mut agent) = scripted(Rejecting);
    let negotiation = tokio::spawn({
        let conn = conn.clone();
        async move { conn.negotiate(both()).await }
    });
    let first = agent.recv().await;
    let data = json!({ "requested": 2, "supported": [3] });
    agent
        .send(
            json!({ "jsonrpc": "2.0", "id": first["id"], "error": { "code": -32022, "message": "no", "data": data } }),
        )
        .await;
    let error = in_time(negotiation).await.expect("task").expect_err("nothing in common");
    // No retry with v1: the agent said it speaks 3 alone.
    assert_eq!(error, Error::NoCommonVersion { asked: Version::V2, agent: vec![3], client: Version::ALL });
    assert_eq!(conn.version(), None);
    agent.nothing_more().await;
}

/// The agent's answer to an `initialize` asking for `asked`: its version, or its error.
async fn answer_to<A: AgentHandler>(agent: A, asked: u64) -> Value {
    let ((ar, aw), (br, bw)) = pipe();
    tokio::spawn(acp_rpc::agent::serve(agent, Version::ALL, ar, aw, Default::default()).1);
    let mut client = Peer { lines: BufReader::new(br).lines(), write: bw };
    let request = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": asked, "info": { "name": "c", "version": "0" } } });
    client.send(request).await;
    let answer = client.recv().await;
    match answer.get("result") {
        Some(result) => result["protocolVersion"].clone(),
        None => answer["error"].clone(),
    }
}

#[tokio::test]
async fn the_agent_answers_its_newest_version_not_above_the_one_asked() {
    // v1 and v2.
    assert_eq!(answer_to(Agent::default(), 65535).await, 2);
    assert_eq!(answer_to(Agent::default(), 2).await, 2);
    assert_eq!(answer_to(Agent::default(), 1).await, 1);
    // Asked 0: none at or below it; v2's text (-32022, with its data) governs an agent that speaks v2.
    let refused = answer_to(Agent::default(), 0).await;
    assert_eq!(refused["code"], -32022, "{refused}");
    assert_eq!(refused["data"], json!({ "requested": 0, "supported": [1, 2] }));
    // v1 only: 1 whatever is asked, 0 included ("the latest protocol version supported by the agent").
    for asked in [65535, 2, 1, 0] {
        assert_eq!(answer_to(V1(Agent::default()), asked).await, 1, "asked {asked}");
    }
    // v2 only: asked 1 has nothing at or below it.
    assert_eq!(answer_to(V2(Agent::default()), 1).await["code"], -32022);
    assert_eq!(answer_to(V2(Agent::default()), 3).await, 2);
}

// ---------------------------------------------------------------------------------------------
// Authentication.

#[tokio::test]
async fn auth_required_then_authenticate_then_a_session_in_v1() {
    let conn = connect(Agent::with_auth(), Rejecting);
    let outcome = in_time(conn.negotiate(both().at_most(Version::V1))).await.expect("v1");
    let ids: Vec<String> = conn.auth_methods().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, ["login", "tty"]);
    assert_eq!(outcome.auth_methods(), conn.auth_methods());
    let new = || v1::NewSessionRequest::new("/".into(), vec![]);
    let Err(refused) = in_time(conn.new_session_v1(new())).await else { panic!("auth required") };
    let required = refused.auth_required().expect("reported as auth required");
    assert_eq!(required.error.code, -32000);
    assert_eq!(required.methods, conn.auth_methods());
    assert!(refused.to_string().contains("login (Log in)"), "{refused}");
    // Refused before sending: an id the agent did not list, and a terminal method.
    assert!(in_time(conn.authenticate("other")).await.expect_err("unlisted").to_string().contains("did not list"));
    assert!(in_time(conn.authenticate("tty")).await.expect_err("terminal").to_string().contains("terminal method"));
    in_time(conn.authenticate("login")).await.expect("authenticated");
    let session = in_time(conn.new_session_v1(new())).await.expect("a session after authenticate");
    assert_eq!(session.id().0, "s1");
}

#[tokio::test]
async fn auth_required_then_auth_login_then_a_session_in_v2() {
    let conn = connect(Agent::with_auth(), Rejecting);
    in_time(conn.negotiate(both())).await.expect("v2");
    let new = || v2::NewSessionRequest::new(v2::AbsolutePath("/".into()));
    let Err(refused) = in_time(conn.new_session_v2(new())).await else { panic!("auth required") };
    assert_eq!(refused.auth_required().map(|r| r.methods.len()), Some(1), "{refused}");
    in_time(conn.authenticate("login")).await.expect("auth/login");
    assert_eq!(in_time(conn.new_session_v2(new())).await.expect("a session").id().0, "s2");
}

#[tokio::test]
async fn a_method_of_a_type_the_client_does_not_know_is_not_passed_to_auth_login() {
    let (conn, mut agent) = scripted(Rejecting);
    let init = tokio::spawn({
        let conn = conn.clone();
        async move { conn.negotiate(Offer::new().v2(v2_request())).await }
    });
    let request = agent.recv().await;
    let methods = json!([{ "type": "_vendor_sso", "methodId": "sso", "name": "SSO" }]);
    let info = json!({ "name": "a", "version": "0" });
    agent.answer(&request, json!({ "protocolVersion": 2, "info": info, "authMethods": methods })).await;
    assert!(matches!(in_time(init).await.expect("task"), Ok(Initialized::V2(_))));
    let kinds: Vec<String> = conn.auth_methods().into_iter().map(|m| m.kind).collect();
    assert_eq!(kinds, ["_vendor_sso"]);
    let refused = in_time(conn.authenticate("sso")).await.expect_err("unknown type");
    assert!(refused.to_string().contains("does not know"), "{refused}");
    agent.nothing_more().await;
}

// ---------------------------------------------------------------------------------------------
// Traffic of production agents, from a scripted agent.

/// The test's end of a connection: one JSON message per line.
struct Peer {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
}

impl Peer {
    async fn recv(&mut self) -> Value {
        let line = in_time(self.lines.next_line()).await.expect("read").expect("a line");
        serde_json::from_str(&line).expect("JSON")
    }

    async fn send_text(&mut self, text: &str) {
        self.write.write_all(text.as_bytes()).await.expect("write");
        self.write.write_all(b"\n").await.expect("write");
    }

    async fn send(&mut self, message: Value) {
        self.send_text(&message.to_string()).await;
    }

    async fn answer(&mut self, request: &Value, result: Value) {
        self.send(json!({ "jsonrpc": "2.0", "id": request["id"], "result": result })).await;
    }

    async fn answer_error(&mut self, request: &Value, code: i32, message: &str) {
        self.send(json!({ "jsonrpc": "2.0", "id": request["id"], "error": { "code": code, "message": message } }))
            .await;
    }

    async fn update(&mut self, session: &str, update: Value) {
        let params = json!({ "sessionId": session, "update": update });
        self.send(json!({ "jsonrpc": "2.0", "method": "session/update", "params": params })).await;
    }

    /// Nothing else was sent (within a moment).
    async fn nothing_more(&mut self) {
        let next = tokio::time::timeout(Duration::from_millis(200), self.lines.next_line()).await;
        assert!(next.is_err(), "unexpected: {next:?}");
    }
}

/// `client` connected to a scripted agent.
fn scripted<C: ClientHandler>(client: C) -> (ClientConnection, Peer) {
    let ((ar, aw), (br, bw)) = pipe();
    let (conn, driver) = acp_rpc::client::connect(client, br, bw, Default::default());
    tokio::spawn(driver);
    (conn, Peer { lines: BufReader::new(ar).lines(), write: aw })
}

/// A v1 connection with session `s1`: the initialize answer carries a field of the unstable
/// schema alone (`agentCapabilities.providers`); while `session/new` is pending the agent sends
/// an extension notification and a vendor one without `_`; its answer carries `models`, which
/// neither schema has.
async fn v1_session<C: ClientHandler>(client: C) -> (ClientConnection, Peer, acp_rpc::client::v1::Session) {
    let (conn, mut agent) = scripted(client);
    let init = tokio::spawn({
        let conn = conn.clone();
        async move { conn.negotiate(Offer::new().v1(v1_request())).await }
    });
    let request = agent.recv().await;
    let capabilities = json!({ "loadSession": true, "providers": {} });
    agent.answer(&request, json!({ "protocolVersion": 1, "agentCapabilities": capabilities, "authMethods": [] })).await;
    assert!(matches!(in_time(init).await.expect("task"), Ok(Initialized::V1(_))));
    let new = tokio::spawn({
        let conn = conn.clone();
        async move { conn.new_session_v1(v1::NewSessionRequest::new("/".into(), vec![])).await }
    });
    let request = agent.recv().await;
    assert_eq!(request["method"], "session/new");
    agent.send(json!({ "jsonrpc": "2.0", "method": "_vendor/ready", "params": { "at": 1 } })).await;
    agent.send(json!({ "jsonrpc": "2.0", "method": "vendor/ready", "params": { "at": 2 } })).await;
    let models = json!({ "currentModelId": "m", "availableModels": [{ "modelId": "m", "name": "M" }] });
    agent.answer(&request, json!({ "sessionId": "s1", "models": models })).await;
    let session = in_time(new).await.expect("task").expect("session/new");
    (conn, agent, session)
}

/// A turn's update tags, its updates, and its answer.
type Prompted = (Vec<String>, Vec<v1::SessionUpdate>, Result<v1::PromptResponse, Error>);

/// Sends a prompt on `session` in a task: the turn's update tags, the updates, and its answer.
fn prompt(mut session: acp_rpc::client::v1::Session) -> tokio::task::JoinHandle<Prompted> {
    tokio::spawn(async move {
        let mut turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new("go".into()))]).await;
        let mut updates = Vec::new();
        while let Some(update) = turn.next().await {
            updates.push(update);
        }
        let tags = updates.iter().map(|u| u.tag().unwrap_or("?").to_string()).collect();
        (tags, updates, turn.outcome().await)
    })
}

#[tokio::test]
async fn vendor_methods_without_underscore_mid_turn_are_answered_32601_and_the_turn_completes() {
    let (_conn, mut agent, session) = v1_session(Rejecting).await;
    let turn = prompt(session);
    let request = agent.recv().await;
    assert_eq!(request["method"], "session/prompt");
    // A vendor request with id 0 (agents number from 0), and a vendor notification.
    agent.send(json!({ "jsonrpc": "2.0", "id": 0, "method": "vendor/ping", "params": { "sessionId": "s1" } })).await;
    let refused = agent.recv().await;
    assert_eq!(refused["id"], 0, "{refused}");
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    agent.send(json!({ "jsonrpc": "2.0", "method": "vendor/status", "params": { "busy": true } })).await;
    // Output carried in `_meta`, and an update of a tool call never announced.
    let chunk = json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "ok" },
        "_meta": { "vendor": { "output": "file.txt\n" } } });
    agent.update("s1", chunk).await;
    agent
        .update("s1", json!({ "sessionUpdate": "tool_call_update", "toolCallId": "never", "status": "completed" }))
        .await;
    // The answer carries `usage`, a field of the unstable schema alone.
    let usage = json!({ "totalTokens": 3, "inputTokens": 1, "outputTokens": 2 });
    agent.answer(&request, json!({ "stopReason": "end_turn", "usage": usage })).await;
    let (tags, updates, outcome) = in_time(turn).await.expect("task");
    assert_eq!(tags, ["agent_message_chunk", "tool_call_update"]);
    let kept = serde_json::to_value(&updates[0]).expect("encode");
    assert_eq!(kept["_meta"]["vendor"]["output"], "file.txt\n", "{kept}");
    let outcome = outcome.expect("the turn completes");
    assert_eq!(outcome.stop_reason, v1::StopReason::EndTurn);
    #[cfg(feature = "unstable")]
    assert_eq!(outcome.usage.as_value().map(|u| u.total_tokens), Some(3));
    agent.nothing_more().await;
}

#[tokio::test]
async fn a_turn_ends_cancelled_after_a_rejected_permission_without_session_cancel() {
    let (_conn, mut agent, session) = v1_session(Rejecting).await;
    let turn = prompt(session);
    let request = agent.recv().await;
    let options = json!([
        { "optionId": "yes", "name": "Allow", "kind": "allow_once" },
        { "optionId": "no", "name": "Reject", "kind": "reject_once" }
    ]);
    let tool_call = json!({ "toolCallId": "t0", "title": "write file" });
    let ask = json!({ "sessionId": "s1", "toolCall": tool_call, "options": options });
    agent.send(json!({ "jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": ask })).await;
    let answer = agent.recv().await;
    assert_eq!(answer["id"], 0);
    assert_eq!(answer["result"]["outcome"], json!({ "outcome": "selected", "optionId": "no" }));
    agent.answer(&request, json!({ "stopReason": "cancelled" })).await;
    let (_, _, outcome) = in_time(turn).await.expect("task");
    assert_eq!(outcome.expect("answer").stop_reason, v1::StopReason::Cancelled);
    // The client sent no `session/cancel`: the agent ended the turn itself.
    agent.nothing_more().await;
}

#[tokio::test]
async fn a_560_kb_available_commands_update_is_one_update_and_the_connection_goes_on() {
    let (_conn, mut agent, mut session) = v1_session(Rejecting).await;
    let commands: Vec<Value> =
        (0..2000).map(|i| json!({ "name": format!("command-{i}"), "description": "d".repeat(260) })).collect();
    let update = json!({ "sessionUpdate": "available_commands_update", "availableCommands": commands });
    let line =
        json!({ "jsonrpc": "2.0", "method": "session/update", "params": { "sessionId": "s1", "update": update } })
            .to_string();
    assert!(line.len() > 560_000, "{} bytes", line.len());
    agent.send_text(&line).await;
    // Routed to the session once the client's handler has seen it: poll until it arrives.
    let update = in_time(async {
        loop {
            if let Some(update) = session.next_update() {
                return update;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let v1::SessionUpdate::AvailableCommandsUpdate(update) = update else { panic!("{update:?}") };
    assert_eq!(update.available_commands.len(), 2000);
    // The connection goes on: a turn after it.
    let turn = prompt(session);
    let request = agent.recv().await;
    agent.answer(&request, json!({ "stopReason": "end_turn" })).await;
    let (tags, _, outcome) = in_time(turn).await.expect("task");
    assert!(tags.is_empty(), "{tags:?}");
    assert_eq!(outcome.expect("turn").stop_reason, v1::StopReason::EndTurn);
}

#[tokio::test]
async fn history_replayed_before_the_load_answer_reaches_the_loaded_session() {
    let (conn, mut agent, _first) = v1_session(Rejecting).await;
    let load = tokio::spawn({
        let conn = conn.clone();
        async move {
            let request = v1::LoadSessionRequest::new(vec![], "/".into(), v1::SessionId("old".into()));
            conn.load_session_v1(request).await
        }
    });
    let request = agent.recv().await;
    assert_eq!(request["method"], "session/load");
    let text = |t: &str| json!({ "type": "text", "text": t });
    agent.update("old", json!({ "sessionUpdate": "user_message_chunk", "content": text("question") })).await;
    agent.send(json!({ "jsonrpc": "2.0", "method": "vendor/replaying", "params": {} })).await;
    agent.update("old", json!({ "sessionUpdate": "agent_message_chunk", "content": text("answer") })).await;
    agent.answer(&request, json!({ "models": null })).await;
    let mut session = in_time(load).await.expect("task").expect("session/load");
    let replayed: Vec<_> = std::iter::from_fn(|| session.next_update()).map(|u| u.tag().map(str::to_string)).collect();
    assert_eq!(replayed, [Some("user_message_chunk".to_string()), Some("agent_message_chunk".to_string())]);
}

// ---------------------------------------------------------------------------------------------
// The example client (`examples/client.rs`) as CI runs it against production agents.

use crate::common;

/// Runs the example client in `cwd` with `args`; its stdout lines, stderr and exit status.
fn client(cwd: &std::path::Path, args: &[&str], agent: &[&str]) -> (Vec<Value>, String, Option<i32>) {
    let out = std::process::Command::new(common::example("client"))
        .current_dir(cwd)
        .args(args)
        .arg("--")
        .args(agent)
        .output()
        .expect("client runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines = stdout.lines().map(|l| serde_json::from_str(l).expect("JSON lines")).collect();
    (lines, String::from_utf8_lossy(&out.stderr).into_owned(), out.status.code())
}

fn path_of(example: &str) -> String {
    common::example(example).display().to_string()
}

#[test]
fn the_example_client_falls_back_to_v1_and_says_so() {
    let dir = tempfile::tempdir().expect("dir");
    let (lines, stderr, status) = client(dir.path(), &["--prompt", "hi"], &[&path_of("minimal_agent")]);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("protocol version 1 agreed (asked for at most 2)"), "{stderr}");
    assert_eq!(lines.last(), Some(&json!({ "stopReason": "end_turn" })));
}

#[test]
fn the_example_client_authenticates_with_auth_and_names_the_methods_without() {
    let dir = tempfile::tempdir().expect("dir");
    let agent = [path_of("echo_agent"), "--require-auth".to_string()];
    let agent: Vec<&str> = agent.iter().map(String::as_str).collect();
    for version in ["1", "2"] {
        let (_, stderr, status) = client(dir.path(), &["--protocol-version", version, "--prompt", "hi"], &agent);
        assert_eq!(status, Some(3), "v{version}: {stderr}");
        assert!(stderr.contains("requires authentication") && stderr.contains("echo-login (Echo login)"), "{stderr}");
        let args = ["--protocol-version", version, "--auth", "echo-login", "--prompt", "hi"];
        let (lines, stderr, status) = client(dir.path(), &args, &agent);
        assert_eq!(status, Some(0), "v{version}: {stderr}");
        assert_eq!(lines.last(), Some(&json!({ "stopReason": "end_turn" })), "v{version}");
    }
}

#[test]
fn the_example_client_serves_files_and_terminals_in_v1() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path().canonicalize().expect("cwd");
    std::fs::write(cwd.join("in.txt"), "file content\n").expect("write");
    let (read, write) = (cwd.join("in.txt"), cwd.join("out.txt"));
    let prompt = format!("perm read {} write {} run pwd", read.display(), write.display());
    let args = ["--protocol-version", "1", "--prompt", &prompt];
    let (lines, stderr, status) = client(&cwd, &args, &[&path_of("echo_agent")]);
    assert_eq!(status, Some(0), "{stderr}");
    let said: Vec<&str> = lines.iter().filter_map(|l| l["content"]["text"].as_str()).collect();
    assert_eq!(said[0], "file content\n", "{lines:?}");
    assert_eq!(said[1], format!("{}\n(exit 0)", cwd.display()), "{lines:?}");
    assert_eq!(std::fs::read_to_string(&write).expect("written"), prompt);
    // Output kept to `outputByteLimit`, cut at the front on a character boundary: of 10 × "aé"
    // (30 bytes) a limit of 7 keeps "aéaé" (6 bytes), since byte 23 is inside an "é".
    let script = cwd.join("print.sh");
    std::fs::write(&script, "#!/bin/sh\nprintf 'a\\303\\251%.0s' 1 2 3 4 5 6 7 8 9 10\n").expect("script");
    let mut permissions = std::fs::metadata(&script).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).expect("chmod");
    let prompt = format!("run {} limit 7", script.display());
    let (lines, stderr, status) =
        client(&cwd, &["--protocol-version", "1", "--prompt", &prompt], &[&path_of("echo_agent")]);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(lines[0]["content"]["text"], "aéaé(exit 0, truncated)", "{lines:?}");
    // A command that leaves a process running with its output open: its exit is reported all
    // the same, and releasing the terminal ends the process it left (its process group).
    let script = cwd.join("background.sh");
    std::fs::write(&script, "#!/bin/sh\nsleep 30 &\necho $! > sleeping.pid\necho started\n").expect("script");
    let mut permissions = std::fs::metadata(&script).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).expect("chmod");
    let started = std::time::Instant::now();
    let prompt = format!("run {}", script.display());
    let (lines, stderr, status) =
        client(&cwd, &["--protocol-version", "1", "--prompt", &prompt], &[&path_of("echo_agent")]);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "the exit waited for the background process");
    assert_eq!(lines[0]["content"]["text"], "started\n(exit 0)", "{lines:?}");
    let pid = std::fs::read_to_string(cwd.join("sleeping.pid")).expect("pid");
    // Gone, or a zombie nobody reaped yet (its parent exited; the signal may still be on its way).
    let alive = || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z'))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while alive() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(), "the background process {} outlived its released terminal", pid.trim());
    // Outside the cwd: refused, and the turn fails with the agent's error.
    let prompt = "read /etc/hostname";
    let (_, stderr, status) = client(&cwd, &["--protocol-version", "1", "--prompt", prompt], &[&path_of("echo_agent")]);
    assert_eq!(status, Some(1), "{stderr}");
    assert!(stderr.contains("not inside the cwd"), "{stderr}");
    // A dangling link inside to a file outside: writing through it would create the file outside.
    let outside = tempfile::tempdir().expect("dir");
    let target = outside.path().join("escaped.txt");
    std::os::unix::fs::symlink(&target, cwd.join("link.txt")).expect("symlink");
    let prompt = format!("write {}", cwd.join("link.txt").display());
    let (_, stderr, status) =
        client(&cwd, &["--protocol-version", "1", "--prompt", &prompt], &[&path_of("echo_agent")]);
    assert_eq!(status, Some(1), "{stderr}");
    assert!(stderr.contains("not inside the cwd"), "{stderr}");
    assert!(!target.exists(), "written outside the cwd through a dangling link");
    // A file inside that is not there yet: -32002 "Resource not found", the words agents such as
    // gemini-cli read as "absent" before they write a new file.
    let prompt = format!("read {}", cwd.join("new.txt").display());
    let (_, stderr, status) =
        client(&cwd, &["--protocol-version", "1", "--prompt", &prompt], &[&path_of("echo_agent")]);
    assert_eq!(status, Some(1), "{stderr}");
    assert!(stderr.contains("-32002") && stderr.contains("Resource not found"), "{stderr}");
}
