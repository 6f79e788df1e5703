//! The agent's helpers on its handler's `AgentContext` (issue 20): the client's capabilities are kept
//! from `initialize`; each helper reaches a raw client when the capability it needs was
//! advertised, and fails with `Misuse::NotAdvertised` (naming it and its rule) and sends nothing when it was not.

use acp_rpc::agent::ClientCapabilities;
use acp_rpc::agent::Turn;
use acp_rpc::rules::{self, RuleId};
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Patch, Version};
use acp_rpc::{AgentContext, Config, Error, Misuse};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

/// Runs the helper the prompt names and says what came of it in an agent message chunk; a failed
/// helper fails the prompt with its error.
struct Agent;

fn text_of(blocks: impl IntoIterator<Item = Option<String>>) -> String {
    blocks.into_iter().flatten().collect()
}

fn v1_options() -> Vec<v1::PermissionOption> {
    vec![v1::PermissionOption::new(
        v1::PermissionOptionId("allow".into()),
        "Allow".into(),
        v1::PermissionOptionKind::AllowOnce,
    )]
}

fn v2_options() -> Vec<v2::PermissionOption> {
    vec![v2::PermissionOption::new(
        v2::PermissionOptionId("allow".into()),
        "Allow".into(),
        v2::PermissionOptionKind::AllowOnce,
    )]
}

impl v1::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }

    async fn session_new(&self, _: v1::NewSessionRequest, _: AgentContext) -> Result<v1::NewSessionResponse, RpcError> {
        Ok(v1::NewSessionResponse::new(v1::SessionId("s".into())))
    }

    async fn session_prompt(
        &self,
        params: v1::PromptRequest,
        cx: AgentContext,
    ) -> Result<v1::PromptResponse, RpcError> {
        let text = text_of(params.prompt.iter().map(|b| match b {
            v1::ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        }));
        let client = cx.v1()?;
        let session = &params.session_id;
        let said = match text.as_str() {
            "capabilities" => {
                let c = client.capabilities();
                assert_eq!(cx.client_capabilities(), Some(ClientCapabilities::V1(c.clone())));
                format!("read={} write={} terminal={}", *c.fs.read_text_file, *c.fs.write_text_file, *c.terminal)
            }
            "update" => "updated".into(),
            "perm" => {
                let tool_call = v1::ToolCallUpdate::new(v1::ToolCallId("t".into()));
                match client.ask_permission(session, tool_call, v1_options()).await? {
                    v1::RequestPermissionOutcome::Selected(s) => format!("selected {}", s.option_id.0),
                    other => format!("{other:?}"),
                }
            }
            "read" => client.read_text_file(session, "/f.txt").await?,
            "write" => {
                client.write_text_file(session, "/f.txt", "new content").await?;
                "written".into()
            }
            "terminal" => {
                let terminal = client.create_terminal(session, "echo", ["hi"]).await?;
                let output = terminal.output().await?;
                let exit = terminal.wait_for_exit().await?;
                terminal.kill().await?;
                let id = terminal.id().0.clone();
                terminal.release().await?;
                format!("{id}: {:?} exit {:?}", output.output, exit.exit_code)
            }
            "drop terminal" => {
                let terminal = client.create_terminal(session, "sleep", ["60"]).await?;
                drop(terminal);
                "dropped".into()
            }
            "v2 helpers" => {
                cx.v2()?;
                "unreachable".into()
            }
            other => return Err(RpcError::internal(format!("no such test: {other}"))),
        };
        let chunk = v1::ContentChunk::new(v1::ContentBlock::from(v1::TextContent::new(said)));
        client.update(session, v1::SessionUpdate::AgentMessageChunk(Box::new(chunk))).await?;
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
}

impl acp_rpc::agent::PromptTurn for Agent {
    async fn prompt_turn(&self, prompt: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        let text = text_of(prompt.prompt.iter().map(|b| match b {
            v2::ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        }));
        let said = match text.as_str() {
            "capabilities" => {
                let c = turn.client_capabilities();
                assert_eq!(turn.context().client_capabilities(), Some(ClientCapabilities::V2(c.clone())));
                assert_eq!(turn.context().v2()?.capabilities(), &c);
                format!("elicitation={}", matches!(c.elicitation, Patch::Value(_)))
            }
            "perm" => match turn.ask_permission("May I?", v2_options()).await? {
                v2::RequestPermissionOutcome::Selected(s) => format!("selected {}", s.option_id.0),
                other => format!("{other:?}"),
            },
            "perm via context" => {
                match turn.context().v2()?.ask_permission(turn.session_id(), "May I?", v2_options()).await? {
                    v2::RequestPermissionOutcome::Selected(s) => format!("selected {}", s.option_id.0),
                    other => format!("{other:?}"),
                }
            }
            "v1 helpers" => {
                // A v1 helper on a v2 connection: refused, nothing sent.
                let refused = turn.context().v1().err().map(|e| e.to_string()).unwrap_or_default();
                turn.context().v1()?;
                refused
            }
            other => return Err(RpcError::internal(format!("no such test: {other}"))),
        };
        let chunk = v2::ContentChunk::new(turn.new_message_id(), v2::ContentBlock::from(v2::TextContent::new(said)));
        turn.context().v2()?.update(turn.session_id(), v2::SessionUpdate::AgentMessageChunk(Box::new(chunk))).await?;
        Ok(v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::EndTurn))
    }
}

/// A raw client: writes lines, reads messages, answers the agent's requests.
struct Raw {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
    /// The agent's requests and notifications, in arrival order.
    seen: Vec<Value>,
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

    /// Reads (answering the agent's requests as a client would) until a message `stop` accepts,
    /// and returns it.
    async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = self.recv().await;
            if stop(&message) {
                return message;
            }
            if let Some(method) = message["method"].as_str() {
                self.seen.push(message.clone());
                if let Some(id) = message.get("id") {
                    let result = answer(method, &message["params"]);
                    self.send(json!({ "jsonrpc": "2.0", "id": id, "result": result })).await;
                }
            }
        }
    }

    /// The prompt's answer: reads until the response to `id`.
    async fn answer_to(&mut self, id: i64) -> Value {
        self.until(|m| m["id"] == id && m.get("method").is_none()).await
    }

    fn methods(&self) -> Vec<&str> {
        self.seen.iter().filter_map(|m| m["method"].as_str()).collect()
    }

    /// The text of the last agent message chunk seen.
    fn said(&self) -> Option<&str> {
        self.seen
            .iter()
            .rev()
            .find(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .and_then(|m| m["params"]["update"]["content"]["text"].as_str())
    }
}

/// What a client answers each of the agent's requests.
fn answer(method: &str, params: &Value) -> Value {
    match method {
        "session/request_permission" => json!({ "outcome": { "outcome": "selected", "optionId": "allow" } }),
        "fs/read_text_file" => json!({ "content": format!("content of {}", params["path"].as_str().unwrap_or("?")) }),
        "terminal/create" => json!({ "terminalId": "term-1" }),
        "terminal/output" => json!({ "output": "hi\n", "truncated": false, "exitStatus": { "exitCode": 0 } }),
        "terminal/wait_for_exit" => json!({ "exitCode": 0 }),
        _ => json!({}),
    }
}

/// Our agent and a raw client, initialized with `version` and `initialize` params (their
/// capabilities), with session `s` open.
async fn client(version: Version, init: Value) -> Raw {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(ours);
    tokio::spawn(acp_rpc::agent::serve(Agent, Version::ALL, r, w, Config::default()).1);
    let (r, w) = tokio::io::split(theirs);
    let mut raw = Raw { lines: BufReader::new(r).lines(), write: w, seen: Vec::new() };
    let mut params = init;
    params["protocolVersion"] = json!(version.number());
    raw.send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params })).await;
    let init = raw.answer_to(0).await;
    assert_eq!(init["result"]["protocolVersion"], version.number(), "{init}");
    raw.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": { "cwd": "/", "mcpServers": [] } }))
        .await;
    assert_eq!(raw.answer_to(1).await["result"]["sessionId"], "s");
    raw
}

async fn v1_client(capabilities: Value) -> Raw {
    client(Version::V1, json!({ "clientCapabilities": capabilities })).await
}

fn all_v1() -> Value {
    json!({ "fs": { "readTextFile": true, "writeTextFile": true }, "terminal": true })
}

/// Sends a prompt (id 2) and returns its answer.
async fn prompt(raw: &mut Raw, text: &str) -> Value {
    raw.send(json!({ "jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": { "sessionId": "s", "prompt": [{ "type": "text", "text": text }] } }))
        .await;
    raw.answer_to(2).await
}

#[tokio::test]
async fn v1_capabilities_are_kept_from_initialize() {
    let mut raw = v1_client(json!({ "fs": { "readTextFile": true }, "terminal": true })).await;
    assert_eq!(prompt(&mut raw, "capabilities").await["result"]["stopReason"], "end_turn");
    assert_eq!(raw.said(), Some("read=true write=false terminal=true"));

    // Left out: the schema's defaults (nothing advertised).
    let mut raw = client(Version::V1, json!({})).await;
    prompt(&mut raw, "capabilities").await;
    assert_eq!(raw.said(), Some("read=false write=false terminal=false"));
}

#[tokio::test]
async fn v1_update_and_permission_need_no_capability() {
    let mut raw = v1_client(json!({})).await;
    assert_eq!(prompt(&mut raw, "update").await["result"]["stopReason"], "end_turn");
    assert_eq!(raw.said(), Some("updated"));
    assert_eq!(raw.seen[0]["params"]["sessionId"], "s");

    let answer = prompt(&mut raw, "perm").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(raw.said(), Some("selected allow"));
    let asked = raw.seen.iter().find(|m| m["method"] == "session/request_permission").expect("asked");
    assert_eq!(asked["params"]["toolCall"]["toolCallId"], "t");
    assert_eq!(asked["params"]["options"][0]["optionId"], "allow");
}

#[tokio::test]
async fn v1_read_text_file_when_advertised() {
    let mut raw = v1_client(all_v1()).await;
    assert_eq!(prompt(&mut raw, "read").await["result"]["stopReason"], "end_turn");
    assert_eq!(raw.methods(), ["fs/read_text_file", "session/update"]);
    assert_eq!(raw.seen[0]["params"], json!({ "sessionId": "s", "path": "/f.txt" }));
    assert_eq!(raw.said(), Some("content of /f.txt"));
}

#[tokio::test]
async fn v1_write_text_file_when_advertised() {
    let mut raw = v1_client(all_v1()).await;
    assert_eq!(prompt(&mut raw, "write").await["result"]["stopReason"], "end_turn");
    assert_eq!(raw.methods(), ["fs/write_text_file", "session/update"]);
    assert_eq!(raw.seen[0]["params"], json!({ "sessionId": "s", "path": "/f.txt", "content": "new content" }));
    assert_eq!(raw.said(), Some("written"));
}

#[tokio::test]
async fn v1_terminal_when_advertised() {
    let mut raw = v1_client(all_v1()).await;
    assert_eq!(prompt(&mut raw, "terminal").await["result"]["stopReason"], "end_turn");
    assert_eq!(
        raw.methods(),
        [
            "terminal/create",
            "terminal/output",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/release",
            "session/update"
        ]
    );
    assert_eq!(raw.seen[0]["params"], json!({ "sessionId": "s", "command": "echo", "args": ["hi"] }));
    for call in &raw.seen[1..5] {
        assert_eq!(call["params"], json!({ "sessionId": "s", "terminalId": "term-1" }), "{call}");
    }
    assert_eq!(raw.said(), Some("term-1: \"hi\\n\" exit Value(0)"));
}

#[tokio::test]
async fn v1_a_terminal_dropped_unreleased_is_released() {
    let mut raw = v1_client(all_v1()).await;
    assert_eq!(prompt(&mut raw, "drop terminal").await["result"]["stopReason"], "end_turn");
    let release = raw.until(|m| m["method"] == "terminal/release").await;
    assert_eq!(release["params"], json!({ "sessionId": "s", "terminalId": "term-1" }));
}

/// Each gated helper, with everything else advertised: the prompt fails with the error naming
/// the capability, and no request of the helper's reached the client.
#[tokio::test]
async fn v1_gated_helpers_fail_and_send_nothing_when_not_advertised() {
    let cases = [
        ("read", json!({ "fs": { "writeTextFile": true }, "terminal": true }), "clientCapabilities.fs.readTextFile"),
        ("write", json!({ "fs": { "readTextFile": true }, "terminal": true }), "clientCapabilities.fs.writeTextFile"),
        ("terminal", json!({ "fs": { "readTextFile": true, "writeTextFile": true } }), "clientCapabilities.terminal"),
        // Advertised as something else than `true`: not advertised.
        ("terminal", json!({ "terminal": "yes" }), "clientCapabilities.terminal"),
    ];
    for (helper, capabilities, capability) in cases {
        let mut raw = v1_client(capabilities).await;
        let answer = prompt(&mut raw, helper).await;
        let rule = if capability.contains(".fs.") { RuleId::CapClientFs } else { RuleId::CapClientTerminal };
        let expected = Error::from(Misuse::NotAdvertised { capability, rule }).to_rpc();
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(message, expected.message, "{answer}");
        assert!(message.contains(capability) && message.contains(rule.as_str()), "{message}");
        assert_eq!(answer["error"]["code"], expected.code);
        // Whatever the client sends next is answered after anything the agent might have sent
        // for the failed prompt: nothing of the helper's came.
        raw.send(
            json!({ "jsonrpc": "2.0", "id": 3, "method": "session/new", "params": { "cwd": "/", "mcpServers": [] } }),
        )
        .await;
        raw.answer_to(3).await;
        assert_eq!(raw.methods(), Vec::<&str>::new(), "{helper}: nothing sent");
    }
}

#[tokio::test]
async fn the_error_names_the_capability_and_the_rule() {
    let capability = "clientCapabilities.fs.readTextFile";
    let e = Error::from(Misuse::NotAdvertised { capability, rule: RuleId::CapClientFs });
    let text = e.to_string();
    assert!(text.starts_with("not sent: the client did not advertise clientCapabilities.fs.readTextFile"), "{text}");
    assert!(text.contains("(rule cap.client-fs)"), "{text}");
    assert!(rules::find("cap.client-fs").is_some());
    let rpc: RpcError = e.into();
    assert_eq!(rpc.code, RpcError::INTERNAL_ERROR);
    assert_eq!(rpc.message, text);
}

#[tokio::test]
async fn helpers_of_the_other_version_are_refused() {
    let mut raw = v1_client(all_v1()).await;
    let answer = prompt(&mut raw, "v2 helpers").await;
    let wrong = Error::from(Misuse::WrongVersion { wanted: Version::V2, negotiated: Version::V1 });
    assert_eq!(answer["error"]["message"], wrong.to_string(), "{answer}");

    let mut raw = client(Version::V2, json!({ "info": { "name": "t", "version": "0" } })).await;
    prompt(&mut raw, "v1 helpers").await;
    let idle = raw.until(|m| m["params"]["update"]["state"] == "idle").await;
    assert_eq!(idle["params"]["update"]["stopReason"], "error", "{idle}");
    let wrong = Error::from(Misuse::WrongVersion { wanted: Version::V1, negotiated: Version::V2 });
    assert_eq!(idle["params"]["update"]["error"]["message"], wrong.to_string());
}

async fn v2_client(capabilities: Value) -> Raw {
    client(Version::V2, json!({ "info": { "name": "t", "version": "0" }, "capabilities": capabilities })).await
}

/// Runs a v2 prompt to its `idle`; the turn's stop reason.
async fn v2_turn(raw: &mut Raw, text: &str) -> Value {
    assert!(prompt(raw, text).await["result"]["messageId"].is_string());
    let idle = raw.until(|m| m["params"]["update"]["state"] == "idle").await;
    idle["params"]["update"]["stopReason"].clone()
}

#[tokio::test]
async fn v2_capabilities_are_kept_from_initialize() {
    let mut raw = v2_client(json!({ "elicitation": { "form": {} } })).await;
    assert_eq!(v2_turn(&mut raw, "capabilities").await, "end_turn");
    assert_eq!(raw.said(), Some("elicitation=true"));

    let mut raw = v2_client(json!({})).await;
    assert_eq!(v2_turn(&mut raw, "capabilities").await, "end_turn");
    assert_eq!(raw.said(), Some("elicitation=false"));
}

#[tokio::test]
async fn v2_permission_and_updates() {
    for text in ["perm", "perm via context"] {
        let mut raw = v2_client(json!({})).await;
        assert_eq!(v2_turn(&mut raw, text).await, "end_turn");
        let asked = raw.seen.iter().find(|m| m["method"] == "session/request_permission").expect("asked");
        assert_eq!(asked["params"]["sessionId"], "s");
        assert_eq!(asked["params"]["title"], "May I?");
        assert_eq!(asked["params"]["options"][0]["optionId"], "allow");
        assert_eq!(raw.said(), Some("selected allow"), "{text}");
    }
}
