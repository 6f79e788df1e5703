//! The `acp view` rows of `cargo xtask bench`: a v1 session of 100,000 messages (about 22 MB of
//! `acp tap` records: prompt turns with thoughts, message chunks, a tool call with its permission
//! request and an `fs/read_text_file`, a plan), written to `.cache/bench/view/`, drawn by
//! `acp view` (release), and loaded in headless Chromium (`$ACP_VIEW_BROWSER`, else what
//! `tool/tests/view/chromium.sh` installs or finds). Rows: the time `acp view` takes, the
//! page's size, and the time until the page is interactive: the `data-ready` mark its script sets
//! once the data is parsed and the first rows drawn (`performance.now()`, from navigation start,
//! HTML parsing included), with the whole browser run in the note.

use super::Row;
use crate::process::{self, capture, describe};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Messages in the benchmark's transcript.
pub const MESSAGES: usize = 100_000;

/// The rows; `root` the workspace. A row that cannot be measured keeps its note and no figure.
pub fn rows(root: &Path) -> Result<Vec<Row>, String> {
    let dir = root.join(".cache").join("bench").join("view");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let transcript = dir.join("session.jsonl");
    let text = transcript_text(MESSAGES);
    std::fs::write(&transcript, &text).map_err(|e| format!("cannot write {}: {e}", transcript.display()))?;
    let mb = |bytes: usize| bytes as f64 / 1e6;
    let what = format!("{MESSAGES} messages, {:.1} MB of records", mb(text.len()));

    let mut build = process::cargo();
    build.args(["build", "--release", "-p", "acp-tool", "--bin", "acp"]).current_dir(root);
    eprintln!("bench: {}", describe(&build));
    process::stream(&mut build, |_| {})?;
    let acp = super::net::target_dir(root).join("release").join(format!("acp{}", std::env::consts::EXE_SUFFIX));

    let page = dir.join("session.html");
    let mut view = Command::new(&acp);
    view.arg("view").arg(&transcript).arg("-o").arg(&page);
    let start = Instant::now();
    capture(&mut view)?;
    let rendering = start.elapsed().as_secs_f64();
    let size = std::fs::metadata(&page).map_err(|e| format!("{}: {e}", page.display()))?.len() as usize;

    let mut rows = vec![
        row(
            "view render, 100k messages",
            "s",
            Some(rendering),
            format!("`acp view` (release, checking included): {what}"),
        ),
        row("view page size, 100k messages", "MB", Some(mb(size)), format!("one self-contained HTML file: {what}")),
    ];
    let interactive = match browser(root) {
        Ok(browser) => interactive(&browser, &page),
        Err(e) => Err(e),
    };
    rows.push(match interactive {
        Ok((ready, wall)) => row(
            "view interactive, 100k messages",
            "s",
            Some(ready),
            format!("headless Chromium: the page's ready mark (data parsed, first rows drawn); the whole browser run, start and the dump of the DOM with its data included: {wall:.2} s"),
        ),
        Err(e) => row("view interactive, 100k messages", "s", None, e),
    });
    Ok(rows)
}

fn row(name: &str, unit: &str, ours: Option<f64>, note: String) -> Row {
    Row { name: name.into(), unit: unit.into(), ours, reference: None, ratio: None, note }
}

/// The browser: `$ACP_VIEW_BROWSER`, else the path `tool/tests/view/chromium.sh` prints.
fn browser(root: &Path) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("ACP_VIEW_BROWSER") {
        return Ok(PathBuf::from(path));
    }
    let script = root.join("tool").join("tests").join("view").join("chromium.sh");
    let out = capture(&mut Command::new(&script))?;
    Ok(PathBuf::from(out.trim()))
}

/// Loads `page`: the page's ready mark and the browser run's wall time, in seconds.
fn interactive(browser: &Path, page: &Path) -> Result<(f64, f64), String> {
    let profile = tempfile::tempdir().map_err(|e| format!("cannot make a browser profile: {e}"))?;
    let mut command = Command::new(browser);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,900",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.display()));
    let start = Instant::now();
    let dom = capture(&mut command)?;
    let wall = start.elapsed().as_secs_f64();
    let ready = dom
        .split_once("data-ready=\"")
        .and_then(|(_, rest)| rest.split('"').next())
        .and_then(|ms| ms.parse::<f64>().ok())
        .ok_or("the page never became ready (no data-ready mark in its DOM)")?;
    Ok((ready / 1000.0, wall))
}

/// The streamed chunks' texts.
const WORDS: &[&str] = &[
    "The header",
    "is read before",
    "the length",
    "is checked,",
    "so an input shorter",
    "than 4 bytes",
    "(`&[u8]` of len < 4)",
    "panics.",
    "I moved the check",
    "first and",
    "added a test.",
];

/// A v1 session of `messages` records, as `acp tap --log` writes them.
pub fn transcript_text(messages: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    let mut time = 1_764_180_000.0_f64;
    let mut push = |out: &mut String, from: &str, message: Value| {
        if count < messages {
            time += 0.000_731;
            let _ = writeln!(out, "{{\"from\":\"{from}\",\"time\":{time:.6},\"message\":{message}}}");
            count += 1;
        }
        count < messages
    };
    let session = "sess-7f3a9c";
    push(
        &mut out,
        "client",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}}),
    );
    push(
        &mut out,
        "agent",
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": true}}}),
    );
    push(
        &mut out,
        "client",
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": "/home/me/project", "mcpServers": []}}),
    );
    push(&mut out, "agent", json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": session}}));
    let update = |update: Value| json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}});
    let chunk =
        |kind: &str, text: String| update(json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}));
    let (mut client_id, mut agent_id) = (2u64, 0u64);
    for turn in 0.. {
        let call = format!("call-{turn}");
        let file = format!("/home/me/src/m{}.rs", turn % 97);
        let mut more = push(
            &mut out,
            "client",
            json!({"jsonrpc": "2.0", "id": client_id, "method": "session/prompt", "params": {
            "sessionId": session, "prompt": [{"type": "text", "text": format!("Turn {turn}: why does `parse::<Vec<u8>>()` fail?")}]}}),
        );
        // Streamed text comes a few words at a time.
        for n in 0..3 {
            more &=
                push(&mut out, "agent", chunk("agent_thought_chunk", format!("{} ", WORDS[(turn + n) % WORDS.len()])));
        }
        more &= push(
            &mut out,
            "agent",
            update(json!({"sessionUpdate": "tool_call", "toolCallId": call, "title": format!("Read {file}"),
            "kind": "read", "status": "pending"})),
        );
        more &= push(
            &mut out,
            "agent",
            json!({"jsonrpc": "2.0", "id": agent_id, "method": "session/request_permission", "params": {
            "sessionId": session, "toolCall": {"toolCallId": call},
            "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}, {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}}),
        );
        more &= push(
            &mut out,
            "client",
            json!({"jsonrpc": "2.0", "id": agent_id, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}),
        );
        more &= push(
            &mut out,
            "agent",
            update(json!({"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "in_progress"})),
        );
        more &= push(
            &mut out,
            "agent",
            json!({"jsonrpc": "2.0", "id": agent_id + 1, "method": "fs/read_text_file", "params": {"sessionId": session, "path": file}}),
        );
        more &= push(
            &mut out,
            "client",
            json!({"jsonrpc": "2.0", "id": agent_id + 1, "result": {
            "content": "fn parse(input: &[u8]) -> Header {\n    Header::read(input)\n}\n"}}),
        );
        agent_id += 2;
        more &= push(
            &mut out,
            "agent",
            update(json!({"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed"})),
        );
        more &= push(
            &mut out,
            "agent",
            update(json!({"sessionUpdate": "plan", "entries": [
            {"content": "Check the length first", "priority": "high", "status": "completed"},
            {"content": "Add a test", "priority": "medium", "status": "pending"}]})),
        );
        for n in 0..14 {
            more &= push(
                &mut out,
                "agent",
                chunk("agent_message_chunk", format!("{} ", WORDS[(turn * 7 + n) % WORDS.len()])),
            );
        }
        more &=
            push(&mut out, "agent", json!({"jsonrpc": "2.0", "id": client_id, "result": {"stopReason": "end_turn"}}));
        client_id += 1;
        if !more {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transcript_has_the_messages_asked_for_each_a_record() {
        let text = transcript_text(1000);
        assert_eq!(text.lines().count(), 1000);
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).expect("JSON");
            assert_eq!(record["message"]["jsonrpc"], "2.0", "{line}");
        }
    }
}
