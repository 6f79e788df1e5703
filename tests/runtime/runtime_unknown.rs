//! Forward compatibility through the runtime: a v1 peer built on a newer v1 schema sends a
//! variant our v1 types do not list (this is how `usage_update` arrived). The message decodes
//! (the generator's catch-all keeps the variant whole), reaches the handler instead of being
//! dropped, and re-encodes to the JSON that was sent.

use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::{AgentContext, ClientContext, Config};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(20);

/// A client that hands every v1 `session/update` to the test.
struct Updates(mpsc::UnboundedSender<v1::SessionNotification>);

impl v1::methods::client::Handler<ClientContext> for Updates {
    async fn session_update(&self, note: v1::SessionNotification, _: ClientContext) {
        let _ = self.0.send(note);
    }
}
impl v2::methods::client::Handler<ClientContext> for Updates {}

/// An agent that hands every v1 prompt to the test.
struct Prompts(mpsc::UnboundedSender<v1::PromptRequest>);

impl v1::methods::agent::Handler<AgentContext> for Prompts {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }
    async fn session_prompt(&self, p: v1::PromptRequest, _: AgentContext) -> Result<v1::PromptResponse, RpcError> {
        let _ = self.0.send(p);
        Ok(v1::PromptResponse::new(v1::StopReason::EndTurn))
    }
}
impl v2::methods::agent::Handler<AgentContext> for Prompts {}
impl acp_rpc::agent::PromptTurn for Prompts {}

/// A `session/update` from a newer v1: an unknown `sessionUpdate` with fields of its own, in an
/// order no sorting gives; `filler` makes it as long as needed.
fn future_update(filler: &str) -> Value {
    json!({
        "sessionId": "s",
        "update": {
            "sessionUpdate": "future_thing",
            "zeta": { "steps": [1, "two", null], "done": false },
            "alpha": filler,
            "kind": "not_a_tool_kind"
        }
    })
}

async fn update_reaches_the_client_handler(filler: &str) {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(ours);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (conn, driver) = acp_rpc::client::connect(Updates(tx), r, w, Config::default());
    tokio::spawn(driver);
    // The agent: a raw peer answering `initialize`, then sending the update.
    let (tr, mut tw) = tokio::io::split(theirs);
    let sent = future_update(filler);
    let agent = tokio::spawn(async move {
        let mut lines = BufReader::new(tr).lines();
        let line = lines.next_line().await.expect("read").expect("initialize");
        let request: Value = serde_json::from_str(&line).expect("JSON");
        let answer = json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "protocolVersion": 1 } });
        tw.write_all(format!("{answer}\n").as_bytes()).await.expect("write");
        let note = json!({ "jsonrpc": "2.0", "method": "session/update", "params": sent });
        tw.write_all(format!("{note}\n").as_bytes()).await.expect("write");
        (lines, tw)
    });
    conn.initialize(Version::V1, json!({})).await.expect("initialize");
    let note = tokio::time::timeout(LIMIT, rx.recv()).await.expect("handled in time").expect("a notification");
    let v1::SessionUpdate::Other(object) = &note.update else { panic!("expected the catch-all, got {note:?}") };
    assert_eq!(object.get("sessionUpdate"), Some(json!("future_thing")));
    // Written back as it was sent, key order included.
    assert_eq!(serde_json::to_string(&note).expect("encodes"), future_update(filler).to_string());
    drop(agent);
}

#[tokio::test]
async fn an_unknown_v1_session_update_reaches_the_client_handler() {
    update_reaches_the_client_handler("short").await;
}

#[tokio::test]
async fn a_large_unknown_v1_session_update_reaches_the_client_handler() {
    // Params of 64 KiB and more decode with their longest string moved out (`support::moved`).
    update_reaches_the_client_handler(&"x".repeat(100_000)).await;
}

#[tokio::test]
async fn an_unknown_v1_content_block_reaches_the_agent_handler() {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(ours);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_conn, driver) = acp_rpc::agent::serve(Prompts(tx), Version::ALL, r, w, Config::default());
    tokio::spawn(driver);
    let (tr, mut tw) = tokio::io::split(theirs);
    let mut lines = BufReader::new(tr).lines();
    let block = json!({ "type": "hologram", "frames": [{ "z": 1, "a": 2 }] });
    let prompt = json!({ "sessionId": "s", "prompt": [{ "type": "text", "text": "hi" }, block] });
    for message in [
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": 1 } }),
        json!({ "jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": prompt }),
    ] {
        tw.write_all(format!("{message}\n").as_bytes()).await.expect("write");
    }
    for id in 0..2 {
        let line = tokio::time::timeout(LIMIT, lines.next_line()).await.expect("in time").expect("read").expect("line");
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!((answer["id"].clone(), answer.get("error")), (json!(id), None), "{answer}");
    }
    let request = rx.recv().await.expect("the prompt reached the handler");
    assert!(matches!(&request.prompt[1], v1::ContentBlock::Other(o) if o.get_str("type") == Some("hologram")));
    assert_eq!(serde_json::to_value(&request).expect("encodes"), prompt);
}
