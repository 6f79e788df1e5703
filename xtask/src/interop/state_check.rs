//! The session state `acp state` replays from a v2 transcript, checked against the transcript
//! read directly: each agent message's text is its chunks joined (after any whole `agent_message`
//! content), each tool call ends with the last status the transcript gave it, and the session's
//! `state` is `idle` with the turn's stop reason.

use crate::process::run_with_timeout;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// What the transcript itself says of one session.
#[derive(Default)]
struct Expected {
    /// messageId → text, in the order the updates built it.
    messages: BTreeMap<String, String>,
    /// toolCallId → last status given.
    tool_status: BTreeMap<String, Option<String>>,
    /// The last `state_update`.
    last_state: Option<Value>,
}

fn texts(content: &Value) -> String {
    let blocks = match content {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect()
}

/// Reads the transcript's `session/update`s (records of `acp tap --log`) by session.
fn expected(tap: &str) -> BTreeMap<String, Expected> {
    let mut out: BTreeMap<String, Expected> = BTreeMap::new();
    for line in tap.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else { continue };
        let message = record.get("message").unwrap_or(&record);
        if message.get("method").and_then(Value::as_str) != Some("session/update") {
            continue;
        }
        let params = &message["params"];
        let Some(session) = params["sessionId"].as_str() else { continue };
        let e = out.entry(session.to_string()).or_default();
        let update = &params["update"];
        let id = |key: &str| update[key].as_str().map(str::to_string);
        match update["sessionUpdate"].as_str() {
            Some("agent_message_chunk") => {
                if let Some(m) = id("messageId") {
                    e.messages.entry(m).or_default().push_str(&texts(&update["content"]));
                }
            }
            Some("agent_message") => {
                if let (Some(m), Some(content)) = (id("messageId"), update.get("content")) {
                    e.messages.insert(m, texts(content));
                }
            }
            Some("tool_call_update") => {
                if let Some(t) = id("toolCallId") {
                    let status = e.tool_status.entry(t).or_default();
                    if let Some(s) = update.get("status") {
                        *status = s.as_str().map(str::to_string);
                    }
                }
            }
            Some("state_update") => e.last_state = Some(update.clone()),
            _ => {}
        }
    }
    out
}

/// Runs `acp state` on `tap` and compares its answer with the transcript; `stop_reason` is the
/// turn's, as our client reported it. A one-line summary, or what differs.
pub fn check(acp: &Path, tap: &Path, stop_reason: Option<&str>) -> Result<String, String> {
    let mut command = Command::new(acp);
    command.arg("state").arg(tap);
    let run = run_with_timeout(&mut command, Duration::from_secs(60)).map_err(|e| format!("acp state: {e}"))?;
    if run.status.and_then(|s| s.code()) != Some(0) {
        return Err(format!("acp state failed: {}", run.stderr.trim()));
    }
    let state: Value = serde_json::from_str(&run.stdout).map_err(|e| format!("acp state printed no JSON: {e}"))?;
    let text = std::fs::read_to_string(tap).map_err(|e| format!("cannot read {}: {e}", tap.display()))?;
    let expected = expected(&text);
    let (mut messages, mut tools, mut summary) = (0, 0, Vec::new());
    for (session, e) in &expected {
        let got = &state["sessions"][session];
        for (id, want) in &e.messages {
            let entry = &got["agentMessage"][id];
            let have = texts(&entry["content"]);
            if &have != want {
                return Err(format!("agent message {id}: acp state has {have:?}, its updates make {want:?}"));
            }
            messages += 1;
        }
        for (id, want) in &e.tool_status {
            let have = got["toolCall"][id]["status"].as_str().map(str::to_string);
            if &have != want {
                return Err(format!(
                    "tool call {id}: acp state has status {have:?}, the transcript's last is {want:?}"
                ));
            }
            tools += 1;
            summary.push(format!("tool call {}", have.as_deref().unwrap_or("without status")));
        }
        if let Some(last) = &e.last_state {
            let have = &got["state"];
            let mut want = last.clone();
            if let Some(m) = want.as_object_mut() {
                m.remove("sessionUpdate");
            }
            if have != &want {
                return Err(format!("session {session}: acp state's state is {have}, the last state_update is {want}"));
            }
            if have["state"] != "idle" {
                return Err(format!("session {session} does not end idle: {have}"));
            }
            if let Some(stop) = stop_reason {
                if have["stopReason"] != stop {
                    return Err(format!("session {session} ends {}, the turn ended {stop}", have["stopReason"]));
                }
            }
            summary.push(format!("idle {}", have["stopReason"].as_str().unwrap_or("?")));
        }
    }
    if expected.is_empty() {
        return Err("the transcript has no session/update".into());
    }
    Ok(format!("acp state: {messages} messages = their chunks, {tools} tool calls, {}", summary.join(", ")))
}
