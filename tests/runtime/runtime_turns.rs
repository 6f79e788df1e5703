//! The prompt-turn lifecycle the runtime keeps for its users (issue 19): v2 turns run past their
//! `session/prompt` request with a cancellation `session/cancel` reaches; the runtime reports the
//! user message once with the answer's `messageId` and `running`/`idle` around the handler; a
//! client's prompt ends at the `idle` after its `running`, not at a snapshot; v1 prompts of a
//! cancelled session end `cancelled`.

use acp_rpc::agent::Turn;
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::{AgentContext, ClientContext, Config};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

/// Waits for the turn to be cancelled on the word `wait`, fails on `fail`, else ends `end_turn`
/// after one chunk. v1 prompts ignore cancellation on purpose (`end_turn` whatever happened).
struct Agent;

impl v1::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }
    async fn session_new(&self, _: v1::NewSessionRequest, _: AgentContext) -> Result<v1::NewSessionResponse, RpcError> {
        Ok(v1::NewSessionResponse::new(v1::SessionId("s".into())))
    }
    async fn session_prompt(&self, _: v1::PromptRequest, cx: AgentContext) -> Result<v1::PromptResponse, RpcError> {
        cx.cancelled().await;
        Ok(v1::PromptResponse::new(v1::StopReason::EndTurn))
    }
}

impl v2::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, _: v2::InitializeRequest, _: AgentContext) -> Result<v2::InitializeResponse, RpcError> {
        Ok(v2::InitializeResponse::new(v2::ProtocolVersion(2), v2::Implementation::new("t".into(), "0".into())))
    }
    async fn session_new(&self, _: v2::NewSessionRequest, _: AgentContext) -> Result<v2::NewSessionResponse, RpcError> {
        Ok(v2::NewSessionResponse::new(v2::SessionId("s".into())))
    }
    async fn session_close(
        &self,
        _: v2::CloseSessionRequest,
        _: AgentContext,
    ) -> Result<v2::CloseSessionResponse, RpcError> {
        Ok(v2::CloseSessionResponse::new())
    }
}

impl acp_rpc::agent::PromptTurn for Agent {
    async fn prompt_turn(&self, prompt: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        let text = match prompt.prompt.first() {
            Some(v2::ContentBlock::Text(t)) => t.text.clone(),
            _ => String::new(),
        };
        match text.as_str() {
            // Ends only when cancelled, and then claims `end_turn`: the runtime says `cancelled`.
            // (wrapping up takes a moment, within the grace period).
            "wait" => {
                turn.cancelled().await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::EndTurn))
            }
            // Never stops: the runtime gives up after the grace period.
            "stubborn" => std::future::pending().await,
            "fail" => Err(RpcError::internal("the model is down")),
            _ => {
                let chunk =
                    v2::ContentChunk::new(turn.new_message_id(), v2::ContentBlock::from(v2::TextContent::new(text)));
                turn.update(v2::SessionUpdate::AgentMessageChunk(Box::new(chunk))).await.map_err(|e| e.to_rpc())?;
                Ok(v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::MaxTokens))
            }
        }
    }
}

struct Client;
impl v1::methods::client::Handler<ClientContext> for Client {}
impl v2::methods::client::Handler<ClientContext> for Client {}

fn config() -> Config {
    Config { cancel_grace: Duration::from_millis(300), ..Config::default() }
}

/// A raw peer: writes lines, reads messages.
struct Raw {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
}

impl Raw {
    async fn send(&mut self, message: Value) {
        self.write.write_all(format!("{message}\n").as_bytes()).await.expect("write");
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a message within 10 s")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&line).expect("JSON")
    }

    /// Messages until (and with) the first one `stop` accepts.
    async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.recv().await;
            let done = stop(&message);
            seen.push(message);
            if done {
                return seen;
            }
        }
    }
}

fn raw_pair() -> (DuplexStream, Raw) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(theirs);
    (ours, Raw { lines: BufReader::new(r).lines(), write: w })
}

/// Our agent and a raw client.
fn raw_client() -> Raw {
    let (ours, raw) = raw_pair();
    let (r, w) = tokio::io::split(ours);
    let (_, driver) = acp_rpc::agent::serve(Agent, Version::ALL, r, w, config());
    tokio::spawn(driver);
    raw
}

/// Our client and a raw agent.
fn raw_agent() -> (acp_rpc::client::ClientConnection, Raw) {
    let (ours, raw) = raw_pair();
    let (r, w) = tokio::io::split(ours);
    let (conn, driver) = acp_rpc::client::connect(Client, r, w, config());
    tokio::spawn(driver);
    (conn, raw)
}

/// Our client and our agent, initialized with `version`.
async fn pair(version: Version) -> acp_rpc::client::ClientConnection {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    tokio::spawn(acp_rpc::agent::serve(Agent, Version::ALL, ar, aw, config()).1);
    let (conn, driver) = acp_rpc::client::connect(Client, br, bw, config());
    tokio::spawn(driver);
    let params = match version {
        Version::V1 => json!({}),
        Version::V2 => json!({ "info": { "name": "t", "version": "0" } }),
    };
    conn.initialize(version, params).await.expect("initialize");
    conn
}

fn v2_prompt(text: &str) -> v2::PromptRequest {
    v2::PromptRequest::new(v2::SessionId("s".into()), vec![v2::ContentBlock::from(v2::TextContent::new(text.into()))])
}

fn update_kind(message: &Value) -> Option<&str> {
    message["params"]["update"]["sessionUpdate"].as_str()
}

fn state(message: &Value) -> Option<&str> {
    (update_kind(message) == Some("state_update")).then(|| message["params"]["update"]["state"].as_str()).flatten()
}

async fn v2_session(peer: &mut Raw) {
    peer.send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": 2, "info": { "name": "t", "version": "0" } } }))
        .await;
    let init = peer.recv().await;
    assert_eq!(init["result"]["capabilities"]["session"], json!({}), "the session capability is advertised: {init}");
    peer.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new", "params": { "cwd": "/" } })).await;
    assert_eq!(peer.recv().await["result"]["sessionId"], "s");
}

#[tokio::test]
async fn v2_user_message_is_reported_once_with_the_answers_message_id_then_running_then_idle() {
    let mut peer = raw_client();
    v2_session(&mut peer).await;
    let prompt = json!([{ "type": "text", "text": "hello" }]);
    peer.send(json!({ "jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": { "sessionId": "s", "prompt": prompt } }))
        .await;
    let seen = peer.until(|m| state(m) == Some("idle")).await;
    let answer = seen.iter().position(|m| m["id"] == 2).expect("the prompt is answered");
    let message_id = seen[answer]["result"]["messageId"].as_str().expect("a messageId").to_string();
    let users: Vec<&Value> = seen.iter().filter(|m| update_kind(m) == Some("user_message")).collect();
    assert_eq!(users.len(), 1, "one user message: {seen:#?}");
    assert_eq!(users[0]["params"]["update"]["messageId"], message_id.as_str());
    assert_eq!(users[0]["params"]["update"]["content"], prompt, "the inserted content is the prompt's");
    let running = seen.iter().position(|m| state(m) == Some("running")).expect("running");
    let chunk = seen.iter().position(|m| update_kind(m) == Some("agent_message_chunk")).expect("the turn's chunk");
    assert!(answer < running && running < chunk, "answer, running, then the turn's work: {seen:#?}");
    assert_eq!(seen.last().expect("idle")["params"]["update"]["stopReason"], "max_tokens", "the handler's stop reason");
    assert_ne!(seen[chunk]["params"]["update"]["messageId"], message_id.as_str(), "the agent's message has its own id");
}

#[tokio::test]
async fn v2_closing_a_session_ends_its_turn_cancelled_before_the_close_is_answered() {
    let mut peer = raw_client();
    v2_session(&mut peer).await;
    peer.send(json!({ "jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": { "sessionId": "s", "prompt": [{ "type": "text", "text": "wait" }] } }))
        .await;
    peer.until(|m| state(m) == Some("running")).await;
    peer.send(json!({ "jsonrpc": "2.0", "id": 3, "method": "session/close", "params": { "sessionId": "s" } })).await;
    let seen = peer.until(|m| m["id"] == 3).await;
    let idle = seen.iter().position(|m| state(m) == Some("idle")).expect("the turn ended before the close answer");
    assert_eq!(seen[idle]["params"]["update"]["stopReason"], "cancelled");
    assert!(seen.last().expect("answer")["result"].is_object(), "{seen:#?}");
}

#[tokio::test]
async fn v2_an_empty_prompt_is_refused_without_inserting_it() {
    let mut peer = raw_client();
    v2_session(&mut peer).await;
    peer.send(
        json!({ "jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": { "sessionId": "s", "prompt": [] } }),
    )
    .await;
    let answer = peer.recv().await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // Nothing was inserted or started: the next message is the answer to the next request.
    peer.send(json!({ "jsonrpc": "2.0", "id": 3, "method": "session/new", "params": { "cwd": "/" } })).await;
    assert_eq!(peer.recv().await["id"], 3);
}

#[tokio::test]
async fn v2_cancel_reaches_the_running_turn_which_ends_cancelled() {
    let conn = pair(Version::V2).await;
    let prompt = v2_prompt("wait");
    let turn = tokio::spawn({
        let conn = conn.clone();
        async move { conn.prompt_v2(&prompt).await }
    });
    // The turn outlives its request: the answer has come, the turn is waiting.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!turn.is_finished());
    conn.cancel_session("s").await.expect("cancel");
    let end =
        tokio::time::timeout(Duration::from_secs(5), turn).await.expect("the turn ends").expect("join").expect("ok");
    assert_eq!(end.idle.stop_reason, v2::IdleStateUpdateStopReason::Cancelled);
}

#[tokio::test]
async fn v2_a_turn_that_ignores_cancel_is_dropped_after_the_grace_period() {
    let conn = pair(Version::V2).await;
    let prompt = v2_prompt("stubborn");
    let turn = tokio::spawn({
        let conn = conn.clone();
        async move { conn.prompt_v2(&prompt).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    conn.cancel_session("s").await.expect("cancel");
    let end =
        tokio::time::timeout(Duration::from_secs(5), turn).await.expect("the turn ends").expect("join").expect("ok");
    assert_eq!(end.idle.stop_reason, v2::IdleStateUpdateStopReason::Cancelled);
}

#[tokio::test]
async fn v2_a_failing_turn_ends_with_an_error_stop_reason_and_the_session_serves_on() {
    let conn = pair(Version::V2).await;
    let end = conn.prompt_v2(&v2_prompt("fail")).await.expect("the prompt was inserted");
    let v2::IdleStateUpdateStopReason::Error(error) = end.idle.stop_reason else {
        panic!("an error stop reason, not {:?}", end.idle.stop_reason);
    };
    assert!(matches!(error.error, acp_rpc::types::Patch::Value(ref e) if e.message.contains("model is down")));
    let next = conn.prompt_v2(&v2_prompt("again")).await.expect("the next turn");
    assert_eq!(next.idle.stop_reason, v2::IdleStateUpdateStopReason::MaxTokens);
    assert_ne!(next.message_id, end.message_id, "each inserted message has its own id");
}

#[tokio::test]
async fn v2_snapshots_are_not_turn_ends() {
    let (conn, mut agent) = raw_agent();
    let init = tokio::spawn({
        let conn = conn.clone();
        async move { conn.initialize(Version::V2, json!({ "info": { "name": "t", "version": "0" } })).await }
    });
    let request = agent.recv().await;
    agent
        .send(json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "protocolVersion": 2,
        "info": { "name": "raw", "version": "0" }, "capabilities": { "session": {} } } }))
        .await;
    init.await.expect("join").expect("initialize");
    let state = |state: &str, stop: Option<&str>| {
        let mut update = json!({ "sessionUpdate": "state_update", "state": state });
        if let Some(stop) = stop {
            update["stopReason"] = json!(stop);
        }
        json!({ "jsonrpc": "2.0", "method": "session/update", "params": { "sessionId": "s", "update": update } })
    };
    let turn = tokio::spawn({
        let conn = conn.clone();
        async move { conn.prompt_v2(&v2_prompt("hi")).await }
    });
    let prompt = agent.recv().await;
    assert_eq!(prompt["method"], "session/prompt");
    // A resume-style snapshot carrying the last stop reason, before this prompt's work starts.
    agent.send(state("idle", Some("refusal"))).await;
    agent.send(json!({ "jsonrpc": "2.0", "id": prompt["id"], "result": { "messageId": "m1" } })).await;
    agent.send(state("idle", Some("max_tokens"))).await;
    conn.connection().sync_notifications().await;
    assert!(!turn.is_finished(), "idle snapshots before `running` do not end the turn");
    agent.send(state("running", None)).await;
    agent.send(state("idle", Some("end_turn"))).await;
    let end = tokio::time::timeout(Duration::from_secs(5), turn).await.expect("ends").expect("join").expect("ok");
    assert_eq!(end.idle.stop_reason, v2::IdleStateUpdateStopReason::EndTurn);
    assert_eq!(end.message_id, v2::MessageId("m1".into()));
}

#[tokio::test]
async fn v1_a_cancelled_prompt_ends_cancelled_whatever_the_handler_returns() {
    let conn = pair(Version::V1).await;
    let prompt = v1::PromptRequest::new(
        v1::SessionId("s".into()),
        vec![v1::ContentBlock::from(v1::TextContent::new("x".into()))],
    );
    let turn = tokio::spawn({
        let conn = conn.clone();
        async move { conn.prompt_v1(&prompt).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    conn.cancel_session("s").await.expect("cancel");
    let done = tokio::time::timeout(Duration::from_secs(5), turn).await.expect("ends").expect("join").expect("ok");
    assert_eq!(done.stop_reason, v1::StopReason::Cancelled);
}
