//! `acp state`: the client's session state replayed from transcripts by the generated `x-state`
//! reducer, on codex-acp's recorded v2 turns (a shell tool turn, a cancelled turn) and on a
//! transcript written to reach the other actions (remove, text appends, unknown variants, `--at`).

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const ACP: &str = env!("CARGO_BIN_EXE_acp");

fn recorded(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts/state").join(name)
}

fn state(args: &[&str], files: &[&Path]) -> (Option<i32>, Value, String) {
    let out = Command::new(ACP).arg("state").args(args).args(files).output().expect("acp runs");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), json, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn texts(content: &Value) -> String {
    content.as_array().into_iter().flatten().filter_map(|b| b["text"].as_str()).collect()
}

/// The `session/update`s of a recorded transcript.
fn updates(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("transcript")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["message"]["method"] == "session/update")
        .map(|r| r["message"]["params"]["update"].clone())
        .collect()
}

#[test]
fn codex_tool_turn_state_has_the_message_the_tool_call_and_the_turns_end() {
    let file = recorded("codex-v2-tool.jsonl");
    let (code, out, err) = state(&[], &[&file]);
    assert_eq!(code, Some(0), "{err}");
    let sessions = out["sessions"].as_object().expect("sessions");
    assert_eq!(sessions.len(), 1);
    let session = sessions.values().next().expect("one session");
    // Each agent message: its chunks, joined.
    let chunks: String = updates(&file)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_string))
        .collect();
    let messages = session["agentMessage"].as_object().expect("agent messages");
    let joined: String = messages.values().map(|m| texts(&m["content"])).collect();
    assert_eq!(joined, chunks);
    assert!(joined.contains("TOOL RESULT"), "{joined}");
    // The shell tool call, patched by its two updates, ends completed.
    let tools = session["toolCall"].as_object().expect("tool calls");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools.values().next().expect("one")["status"], "completed");
    assert_eq!((&session["state"]["state"], &session["state"]["stopReason"]), (&json!("idle"), &json!("end_turn")));
    assert_eq!(session["state"]["usage"]["totalTokens"], 30, "the idle update's members are kept");
    assert!(session["terminal"].as_object().is_some_and(|t| !t.is_empty()), "{session}");
    assert!(session.get("unapplied").is_none(), "every update of codex is annotated: {session}");
}

#[test]
fn codex_cancelled_turn_ends_idle_cancelled() {
    let (code, out, err) = state(&[], &[&recorded("codex-v2-cancelled.jsonl")]);
    assert_eq!(code, Some(0), "{err}");
    let session = out["sessions"].as_object().and_then(|s| s.values().next()).expect("a session").clone();
    assert_eq!((&session["state"]["state"], &session["state"]["stopReason"]), (&json!("idle"), &json!("cancelled")));
    assert_eq!(
        texts(&session["userMessage"].as_object().expect("user").values().next().expect("one")["content"]),
        "please be slow"
    );
}

fn line(from: &str, message: Value) -> String {
    json!({ "from": from, "message": message }).to_string()
}

fn update(update: Value) -> String {
    line("agent", json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}))
}

fn written() -> tempfile_free::File {
    let lines = [
        line(
            "client",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "info": {"name": "c", "version": "0"}}}),
        ),
        line(
            "agent",
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "info": {"name": "a", "version": "0"}}}),
        ),
        line("client", json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}})),
        line(
            "agent",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s", "availableCommands": [{"name": "go", "description": "d"}]}}),
        ),
        update(
            json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "markdown": "# one"}}),
        ),
        update(json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "ab"})),
        update(json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "cd"})),
        update(json!({"sessionUpdate": "plan_removed", "planId": "p"})),
        update(json!({"sessionUpdate": "brand_new_update", "x": 1})),
    ];
    tempfile_free::File::new("state-written.jsonl", &lines.join("\n"))
}

#[test]
fn every_action_applies_and_unknown_updates_are_kept() {
    let file = written();
    let (code, out, err) = state(&[], &[file.path()]);
    assert_eq!(code, Some(0), "{err}");
    let s = &out["sessions"]["s"];
    assert_eq!(s["availableCommands"], json!([{"name": "go", "description": "d"}]), "from session/new's answer");
    assert_eq!(s["terminal"]["t"], json!({"terminalId": "t", "output": {"data": "abcd"}}), "text appended");
    assert!(s.get("plan").is_none(), "removed: {s}");
    assert_eq!(s["unapplied"], json!([{"sessionUpdate": "brand_new_update", "x": 1}]));
    // After line 6 the plan is there and the terminal has its first chunk.
    let (_, early, _) = state(&["--at", "6"], &[file.path()]);
    let s = &early["sessions"]["s"];
    assert_eq!(s["plan"]["p"], json!({"type": "markdown", "planId": "p", "markdown": "# one"}));
    assert_eq!(s["terminal"]["t"]["output"]["data"], "ab");
}

#[test]
fn a_v1_transcript_has_no_state_to_give() {
    let v1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts/clean-v1-turns.jsonl");
    let (code, _, err) = state(&[], &[&v1]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no x-state"), "{err}");
}

/// A file in the target directory, removed when dropped.
mod tempfile_free {
    use std::path::{Path, PathBuf};

    pub struct File(PathBuf);

    impl File {
        pub fn new(name: &str, text: &str) -> File {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
            let path = dir.join(format!("{}-{name}", std::process::id()));
            std::fs::write(&path, text).expect("write");
            File(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for File {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}
