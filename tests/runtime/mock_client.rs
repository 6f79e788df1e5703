//! The mock client (`acp_rpc::mock::MockClient`, feature `mock`) drives an agent served in this
//! process over a duplex pipe: permission allowed and rejected, files read and written against
//! its in-memory file system, a terminal with a scripted output, v1 and v2, a cancel, and bad
//! scripts named by their JSON pointer.
#![cfg(feature = "mock")]

use acp_rpc::agent::Turn;
use acp_rpc::jsonrpc::Pipe;
use acp_rpc::mock::{ClientScript, MockClient, Report, RunError};
use acp_rpc::types::support::rpc::{Method, RpcError};
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::{AgentContext, Config};

/// The agent under test: by the prompt's first word, `perm` asks permission for a tool call
/// titled "write notes" (kind `edit`) and says `allowed` or `rejected`; `read PATH` says the
/// file; `write PATH TEXT…` writes it; `run CMD ARGS…` runs a terminal and says its output and
/// exit code; `wait` says `one`, `two` and waits for the cancel; anything else is echoed.
struct Agent;

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(String::from).collect()
}

fn v1_text(prompt: &[v1::ContentBlock]) -> String {
    prompt.iter().filter_map(|b| if let v1::ContentBlock::Text(t) = b { Some(t.text.as_str()) } else { None }).collect()
}

fn v1_say(text: impl Into<String>) -> v1::SessionUpdate {
    v1::SessionUpdate::AgentMessageChunk(Box::new(v1::ContentChunk::new(v1::ContentBlock::from(v1::TextContent::new(
        text.into(),
    )))))
}

fn err(e: acp_rpc::Error) -> RpcError {
    RpcError::internal(e.to_string())
}

impl v1::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }

    async fn session_new(&self, _: v1::NewSessionRequest, _: AgentContext) -> Result<v1::NewSessionResponse, RpcError> {
        Ok(v1::NewSessionResponse::new(v1::SessionId("s1".into())))
    }

    async fn session_prompt(&self, p: v1::PromptRequest, cx: AgentContext) -> Result<v1::PromptResponse, RpcError> {
        let client = cx.v1().map_err(err)?;
        let session = &p.session_id;
        let text = v1_text(&p.prompt);
        let words = words(&text);
        let say = |t: String| client.update(session, v1_say(t));
        match words.first().map(String::as_str) {
            Some("perm") => {
                let mut tool = v1::ToolCallUpdate::new(v1::ToolCallId("t1".into()));
                tool.title = "write notes".to_string().into();
                tool.kind = v1::ToolKind::Edit.into();
                let options = vec![
                    v1::PermissionOption::new(
                        v1::PermissionOptionId("yes".into()),
                        "Yes".into(),
                        v1::PermissionOptionKind::AllowOnce,
                    ),
                    v1::PermissionOption::new(
                        v1::PermissionOptionId("no".into()),
                        "No".into(),
                        v1::PermissionOptionKind::RejectOnce,
                    ),
                ];
                let outcome = client.ask_permission(session, tool, options).await.map_err(err)?;
                let said = match outcome {
                    v1::RequestPermissionOutcome::Selected(s) if s.option_id.0 == "yes" => "allowed",
                    _ => "rejected",
                };
                say(said.into()).await.map_err(err)?;
            }
            Some("read") => {
                let content = client.read_text_file(session, words[1].clone()).await.map_err(err)?;
                say(content).await.map_err(err)?;
            }
            Some("write") => {
                client.write_text_file(session, words[1].clone(), words[2..].join(" ")).await.map_err(err)?;
            }
            Some("run") => {
                let terminal =
                    client.create_terminal(session, words[1].clone(), words[2..].to_vec()).await.map_err(err)?;
                let exit = terminal.wait_for_exit().await.map_err(err)?;
                let output = terminal.output().await.map_err(err)?;
                terminal.release().await.map_err(err)?;
                let code = exit.exit_code.as_value().copied().unwrap_or(999);
                say(format!("{}(exit {code})", output.output)).await.map_err(err)?;
            }
            Some("wait") => {
                say("one".into()).await.map_err(err)?;
                say("two".into()).await.map_err(err)?;
                cx.cancelled().await;
                return Ok(v1::PromptResponse::new(v1::StopReason::Cancelled));
            }
            _ => say(text).await.map_err(err)?,
        }
        Ok(v1::PromptResponse::new(v1::StopReason::EndTurn))
    }
}

impl v2::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, _: v2::InitializeRequest, _: AgentContext) -> Result<v2::InitializeResponse, RpcError> {
        let info = v2::Implementation::new("test agent".into(), "0".into());
        Ok(v2::InitializeResponse::new(v2::ProtocolVersion(2), info))
    }

    async fn session_new(&self, _: v2::NewSessionRequest, _: AgentContext) -> Result<v2::NewSessionResponse, RpcError> {
        Ok(v2::NewSessionResponse::new(v2::SessionId("s2".into())))
    }
}

impl acp_rpc::agent::PromptTurn for Agent {
    async fn prompt_turn(&self, p: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        let text: String = p
            .prompt
            .iter()
            .filter_map(|b| if let v2::ContentBlock::Text(t) = b { Some(t.text.as_str()) } else { None })
            .collect();
        let message = turn.new_message_id();
        let say = |t: &str| {
            let chunk = v2::ContentChunk::new(message.clone(), v2::ContentBlock::from(v2::TextContent::new(t.into())));
            turn.update(v2::SessionUpdate::AgentMessageChunk(Box::new(chunk)))
        };
        match words(&text).first().map(String::as_str) {
            Some("perm") => {
                let options = vec![
                    v2::PermissionOption::new(
                        v2::PermissionOptionId("yes".into()),
                        "Yes".into(),
                        v2::PermissionOptionKind::AllowOnce,
                    ),
                    v2::PermissionOption::new(
                        v2::PermissionOptionId("no".into()),
                        "No".into(),
                        v2::PermissionOptionKind::RejectOnce,
                    ),
                ];
                let said = match turn.ask_permission("write notes", options).await.map_err(err)? {
                    v2::RequestPermissionOutcome::Selected(s) if s.option_id.0 == "yes" => "allowed",
                    _ => "rejected",
                };
                say(said).await.map_err(err)?;
            }
            Some("wait") => {
                say("one").await.map_err(err)?;
                say("two").await.map_err(err)?;
                turn.cancelled().await;
                return Ok(v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::Cancelled));
            }
            _ => say(&text).await.map_err(err)?,
        }
        Ok(v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::EndTurn))
    }
}

/// Runs `script` against the agent served in this process over a duplex pipe.
async fn run(script: &str) -> Result<Report, RunError> {
    let script = ClientScript::from_json(script).unwrap_or_else(|e| panic!("{e}"));
    let (client_end, agent_end) = tokio::io::duplex(1 << 16);
    let (reader, writer) = tokio::io::split(agent_end);
    let (_agent, serving) = acp_rpc::agent::serve(Agent, Version::ALL, reader, writer, Config::default());
    tokio::spawn(serving);
    let (reader, writer) = tokio::io::split(client_end);
    MockClient::new(script).run_over(Pipe { reader, writer }).await
}

fn said(report: &Report) -> Vec<String> {
    report.turns().map(|t| t.agent_text()).collect()
}

fn stops(report: &Report) -> Vec<Option<&str>> {
    report.turns().map(|t| t.stop_reason.as_deref()).collect()
}

#[tokio::test]
async fn permission_is_answered_by_rule_then_by_default_in_both_versions() {
    for version in [1, 2] {
        let script = format!(
            r#"{{"protocolVersion": {version},
                "sessions": [{{"prompts": [{{"text": "perm"}}]}}, {{"prompts": [{{"text": "perm"}}]}}],
                "permissions": [{{"title": "notes", "answer": "allow_once"}}],
                "defaultPermission": "reject_once"}}"#
        );
        let allowed = run(&script).await.unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(allowed.version.map(|v| v.number()), Some(version));
        assert_eq!(said(&allowed), ["allowed", "allowed"], "v{version}");
        let asked = allowed.calls_of(<v1::methods::SessionRequestPermission as Method>::METHOD).count();
        assert_eq!(asked, 2, "v{version}: {:?}", allowed.calls);

        // No rule matches the title: the default rejects.
        let script = script.replace(r#""title": "notes""#, r#""title": "deploy""#);
        let rejected = run(&script).await.unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(said(&rejected), ["rejected", "rejected"], "v{version}");
        assert_eq!(stops(&rejected), [Some("end_turn"), Some("end_turn")]);
    }
}

#[tokio::test]
async fn a_v1_rule_matches_the_tool_kind_and_cancelled_selects_nothing() {
    let report = run(r#"{"protocolVersion": 1, "sessions": [{"prompts": [{"text": "perm"}]}],
                         "permissions": [{"kind": "execute", "answer": "allow_once"},
                                         {"kind": "edit", "answer": "cancelled"}]}"#)
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(said(&report), ["rejected"]);
    let answer = report.calls[0].answer.clone().unwrap_or_default();
    assert_eq!(answer["outcome"]["outcome"], "cancelled", "{answer}");
}

#[tokio::test]
async fn files_are_read_and_written_in_memory() {
    let report = run(r#"{"protocolVersion": 1, "files": {"/w/a.txt": "alpha"},
                         "sessions": [{"cwd": "/w", "prompts": [
                           {"text": "read /w/a.txt"}, {"text": "write /w/b.txt beta gamma"}, {"text": "read /w/b.txt"},
                           {"text": "read /w/missing"}]}]}"#)
    .await;
    let failed = report.expect_err("reading a missing file fails the agent's turn");
    assert_eq!(said(&failed.report)[..3], ["alpha", "", "beta gamma"]);
    assert_eq!(failed.report.files.get("/w/b.txt").map(String::as_str), Some("beta gamma"));
    assert_eq!(failed.report.files.get("/w/a.txt").map(String::as_str), Some("alpha"));
    let reads: Vec<_> = failed.report.calls_of(<v1::methods::FsReadTextFile as Method>::METHOD).collect();
    assert_eq!(reads.len(), 3);
    assert_eq!(reads[2].answer.as_ref().map_err(|e| e.code), Err(RpcError::RESOURCE_NOT_FOUND));
    assert_eq!(failed.report.turns().last().map(|t| t.stop_reason.clone()), Some(None));
}

#[tokio::test]
async fn unadvertised_files_are_refused_by_the_agent_runtime() {
    let report = run(r#"{"protocolVersion": 1, "capabilities": {"fs": {"readTextFile": false}},
                         "files": {"/a": "x"}, "sessions": [{"prompts": [{"text": "read /a"}]}]}"#)
    .await;
    // The agent's runtime does not send what the client did not advertise; its turn fails.
    let failed = report.expect_err("the agent cannot read");
    assert!(failed.report.calls.is_empty(), "{:?}", failed.report.calls);
    assert_eq!(failed.report.initialize["protocolVersion"], 1);
}

#[tokio::test]
async fn a_terminal_reports_its_scripted_output_and_exit() {
    let report = run(r#"{"protocolVersion": 1,
                         "terminals": [{"command": "make", "output": "built\n", "exitCode": 3},
                                       {"command": "make test", "output": "ok\n"}],
                         "sessions": [{"prompts": [{"text": "run make all"}, {"text": "run make test"}]}]}"#)
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(said(&report), ["built\n(exit 3)", "ok\n(exit 0)"]);
    let creates = report.calls_of(<v1::methods::TerminalCreate as Method>::METHOD).count();
    assert_eq!(creates, 2);
}

#[tokio::test]
async fn an_unscripted_command_is_refused() {
    let failed = run(r#"{"protocolVersion": 1, "sessions": [{"prompts": [{"text": "run rm -rf /"}]}]}"#)
        .await
        .expect_err("no terminal output is scripted");
    let create = &failed.report.calls[0];
    assert_eq!(create.method, <v1::methods::TerminalCreate as Method>::METHOD);
    assert!(create.answer.as_ref().is_err_and(|e| e.message.contains("rm -rf /")), "{create:?}");
}

#[tokio::test]
async fn a_turn_is_cancelled_after_its_updates_in_both_versions() {
    for version in [1, 2] {
        let script = format!(
            r#"{{"protocolVersion": {version},
                "sessions": [{{"prompts": [{{"text": "wait", "cancel": {{"afterUpdates": 2}}}}, {{"text": "hi"}}]}}]}}"#
        );
        let report = run(&script).await.unwrap_or_else(|e| panic!("v{version}: {e}"));
        let turns: Vec<_> = report.turns().collect();
        assert_eq!(stops(&report), [Some("cancelled"), Some("end_turn")], "v{version}");
        assert!(turns[0].cancel_sent && !turns[1].cancel_sent);
        assert_eq!(turns[1].agent_text(), "hi");
    }
}

#[tokio::test]
async fn a_turn_is_cancelled_after_a_delay_in_both_versions() {
    // The agent waits for the cancel however long it takes: no timing is asserted.
    for version in [1, 2] {
        let script = format!(
            r#"{{"protocolVersion": {version},
                "sessions": [{{"prompts": [{{"text": "wait", "cancel": {{"afterMs": 0}}}}]}}]}}"#
        );
        let report = run(&script).await.unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(stops(&report), [Some("cancelled")], "v{version}");
        assert!(report.turns().all(|t| t.cancel_sent));
    }
}

#[tokio::test]
async fn v2_turns_carry_the_state_updates() {
    let report = run(r#"{"sessions": [{"prompts": [{"text": "hello"}]}]}"#).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.version, Some(Version::V2));
    let turn = report.turns().next().cloned().unwrap_or_default();
    assert_eq!(turn.agent_text(), "hello");
    let kinds: Vec<&str> = turn.updates.iter().filter_map(|u| u["sessionUpdate"].as_str()).collect();
    assert!(kinds.contains(&"state_update"), "{kinds:?}");
}

#[test]
fn bad_scripts_name_the_pointer() {
    let cases = [
        (
            r#"{"sessions": [{"prompts": [{"text": "a"},
                                         {"text": "b", "cancel": {"afterUpdates": 1, "afterMs": 1}}]}]}"#,
            "/sessions/0/prompts/1/cancel",
        ),
        (r#"{"permissions": [{"answer": "allow_once"}, {"title": "x", "answer": "yes"}]}"#, "/permissions/1/answer"),
        (r#"{"terminals": [{"command": "ls", "exitCode": -1}]}"#, "/terminals/0/exitCode"),
        (r#"{"capabilities": {"fs": {"read": true}}}"#, "/capabilities/fs/read"),
    ];
    for (text, pointer) in cases {
        match ClientScript::from_json(text) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => {
                assert_eq!(e.pointer, pointer, "{text}: {e}");
                assert!(e.to_string().contains(pointer), "{e}");
            }
        }
    }
}

/// The kit against itself: the mock client drives the mock agent (v1) through a permission,
/// a file read and write, and a terminal; with the permission rejected the agent refuses.
#[tokio::test]
async fn the_mock_client_drives_the_mock_agent() {
    let agent_script = r#"{"turns": [{"steps": [
        {"toolCall": {"id": "t1", "title": "Edit main.rs", "kind": "edit", "status": "pending"}},
        {"permission": {"toolCall": "t1",
                        "options": [{"id": "yes", "kind": "allow_once"}, {"id": "no", "kind": "reject_once"}],
                        "on": {"no": [{"stop": "refusal"}]}}},
        {"readFile": {"path": "/p/main.rs"}},
        {"writeFile": {"path": "/p/main.rs", "content": "fn main() {}\n"}},
        {"terminal": {"command": "cargo", "args": ["test"]}}]}]}"#;
    let client_script = |answer: &str| {
        format!(
            r#"{{"protocolVersion": 1, "files": {{"/p/main.rs": "old"}},
                "terminals": [{{"command": "cargo test", "output": "ok\n"}}],
                "permissions": [{{"kind": "edit", "answer": "{answer}"}}],
                "sessions": [{{"cwd": "/p", "prompts": [{{"text": "edit it"}}]}}]}}"#
        )
    };
    for (answer, stop, written) in [("allow_once", "end_turn", "fn main() {}\n"), ("reject_once", "refusal", "old")] {
        let agent = acp_rpc::mock::MockAgent::from_json(agent_script).unwrap_or_else(|e| panic!("{e}"));
        let (client_end, agent_end) = tokio::io::duplex(1 << 16);
        let (reader, writer) = tokio::io::split(agent_end);
        let (_agent, serving) = agent.serve(reader, writer);
        tokio::spawn(serving);
        let script = ClientScript::from_json(&client_script(answer)).unwrap_or_else(|e| panic!("{e}"));
        let (reader, writer) = tokio::io::split(client_end);
        let report = MockClient::new(script).run_over(Pipe { reader, writer }).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stops(&report), [Some(stop)], "{answer}: {:?}", report.calls);
        assert_eq!(report.files.get("/p/main.rs").map(String::as_str), Some(written), "{answer}");
        let methods: Vec<&str> = report.calls.iter().map(|c| c.method.as_str()).collect();
        let expected = match answer {
            "allow_once" => vec![
                <v1::methods::SessionRequestPermission as Method>::METHOD,
                <v1::methods::FsReadTextFile as Method>::METHOD,
                <v1::methods::FsWriteTextFile as Method>::METHOD,
                <v1::methods::TerminalCreate as Method>::METHOD,
                <v1::methods::TerminalWaitForExit as Method>::METHOD,
                <v1::methods::TerminalOutput as Method>::METHOD,
                <v1::methods::TerminalRelease as Method>::METHOD,
            ],
            _ => vec![<v1::methods::SessionRequestPermission as Method>::METHOD],
        };
        assert_eq!(methods, expected, "{answer}");
    }
}
