//! The `acp view` rows of `cargo xtask bench`: a v1 session of 100,000 messages (about 22 MB of
//! `acp tap` records: prompt turns with thoughts, message chunks, a tool call with its permission
//! request and an `fs/read_text_file`, a plan), written to `.cache/bench/view/`, drawn by
//! `acp view` (release), and loaded in headless Chromium (`$ACP_VIEW_BROWSER`, else what
//! `tool/tests/view/chromium.sh` installs or finds). Rows: the time `acp view` takes, the
//! page's size, and the time until the page is interactive: the `data-ready` mark its script sets
//! once the data is parsed and the first rows drawn (`performance.now()`, from navigation start,
//! HTML parsing included), with the whole browser run in the note.

use super::table::Row;
use crate::process::capture;
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
    let text = transcript_text(MESSAGES, false);
    std::fs::write(&transcript, &text).map_err(|e| format!("cannot write {}: {e}", transcript.display()))?;
    let mb = |bytes: usize| bytes as f64 / 1e6;
    let what = format!("{MESSAGES} messages, {:.1} MB of records", mb(text.len()));

    // The build all rows share (one feature set: nothing compiled twice).
    let acp = super::net::build_ours(root)?.join(format!("acp{}", std::env::consts::EXE_SUFFIX));

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
        findings_row(&acp, &dir)?,
    ];
    let interactive = match browser(root) {
        Ok(browser) => interactive(root, &browser, &page),
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

/// The page of the same session when every message carries the same finding (a `_meta` that is
/// not an object, replaced by its default: a warning whose text is the same each time): repeated
/// texts are written once, so the findings add little to the page.
fn findings_row(acp: &Path, dir: &Path) -> Result<Row, String> {
    let transcript = dir.join("findings.jsonl");
    let text = transcript_text(MESSAGES, true);
    std::fs::write(&transcript, &text).map_err(|e| format!("cannot write {}: {e}", transcript.display()))?;
    let page = dir.join("findings.html");
    let mut view = Command::new(acp);
    view.arg("view").arg(&transcript).arg("-o").arg(&page);
    capture(&mut view)?;
    let size = std::fs::metadata(&page).map_err(|e| format!("{}: {e}", page.display()))?.len();
    let findings = text.lines().filter(|line| line.contains("\"_meta\":1")).count();
    Ok(row(
        "view page size, 100k messages with findings",
        "MB",
        Some(size as f64 / 1e6),
        format!(
            "the same session, {:.1} MB of records, {findings} messages each with the same finding",
            text.len() as f64 / 1e6
        ),
    ))
}

fn row(name: &str, unit: &str, ours: Option<f64>, note: String) -> Row {
    Row { name: name.into(), unit: unit.into(), ours, reference: None, ratio: None, note }
}

/// `tool/tests/view/chromium.sh`: installs and runs the browser.
fn script(root: &Path) -> PathBuf {
    root.join("tool").join("tests").join("view").join("chromium.sh")
}

/// The browser: `$ACP_VIEW_BROWSER`, else the path `tool/tests/view/chromium.sh` prints.
fn browser(root: &Path) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("ACP_VIEW_BROWSER") {
        return Ok(PathBuf::from(path));
    }
    let out = capture(&mut Command::new(script(root)))?;
    Ok(PathBuf::from(out.trim()))
}

/// Loads `page` (through `chromium.sh run`, which holds the flags): the page's ready mark and
/// the browser run's wall time, in seconds.
fn interactive(root: &Path, browser: &Path, page: &Path) -> Result<(f64, f64), String> {
    let mut command = Command::new(script(root));
    command
        .args(["run", "--window-size=1400,900", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .env("ACP_VIEW_BROWSER", browser);
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
    "The header ",
    "is read before ",
    "the length ",
    "is checked, ",
    "so an input shorter ",
    "than 4 bytes ",
    "(`&[u8]` of len < 4) ",
    "panics. ",
    "I moved the check ",
    "first and ",
    "added a test. ",
];

/// A v1 session of `messages` records, as `acp tap --log` writes them.
pub fn transcript_text(messages: usize, findings: bool) -> String {
    let session = "sess-7f3a9c";
    let update = |update: Value| json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}});
    let chunk =
        |kind: &str, text: &str| update(json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}));
    let mut records: Vec<(&str, Value)> = vec![
        (
            "client",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}}),
        ),
        (
            "agent",
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}}),
        ),
        (
            "client",
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/home/me/project", "mcpServers": []}}),
        ),
        ("agent", json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": session}})),
    ];
    for turn in 0.. {
        if records.len() >= messages {
            break;
        }
        let (prompt, permission, read) = (turn + 2, 2 * turn, 2 * turn + 1);
        let call = format!("call-{turn}");
        let file = format!("/home/me/src/m{}.rs", turn % 97);
        records.push((
            "client",
            json!({"jsonrpc": "2.0", "id": prompt, "method": "session/prompt", "params": {"sessionId": session,
            "prompt": [{"type": "text", "text": format!("Turn {turn}: why does `parse::<Vec<u8>>()` fail?")}]}}),
        ));
        // Streamed text comes a few words at a time.
        records.extend((0..3).map(|n| ("agent", chunk("agent_thought_chunk", WORDS[(turn + n) % WORDS.len()]))));
        records.extend([
            ("agent", update(json!({"sessionUpdate": "tool_call", "toolCallId": call, "title": format!("Read {file}"), "kind": "read", "status": "pending"}))),
            ("agent", json!({"jsonrpc": "2.0", "id": permission, "method": "session/request_permission", "params": {"sessionId": session,
                "toolCall": {"toolCallId": call},
                "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}, {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}})),
            ("client", json!({"jsonrpc": "2.0", "id": permission, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})),
            ("agent", update(json!({"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "in_progress"}))),
            ("agent", json!({"jsonrpc": "2.0", "id": read, "method": "fs/read_text_file", "params": {"sessionId": session, "path": file}})),
            ("client", json!({"jsonrpc": "2.0", "id": read, "result": {"content": "fn parse(input: &[u8]) -> Header {\n    Header::read(input)\n}\n"}})),
            ("agent", update(json!({"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed"}))),
            ("agent", update(json!({"sessionUpdate": "plan", "entries": [
                {"content": "Check the length first", "priority": "high", "status": "completed"},
                {"content": "Add a test", "priority": "medium", "status": "pending"}]}))),
        ]);
        records.extend((0..14).map(|n| ("agent", chunk("agent_message_chunk", WORDS[(turn * 7 + n) % WORDS.len()]))));
        records.push(("agent", json!({"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "end_turn"}})));
    }
    if findings {
        // `_meta` that is not an object, which lenient decoding replaces by its default: one
        // finding on every message with params or a result, with the same text each time.
        for (_, message) in &mut records {
            for key in ["params", "result"] {
                if let Some(object) = message.get_mut(key).and_then(Value::as_object_mut) {
                    object.insert("_meta".into(), json!(1));
                }
            }
        }
    }
    let mut out = String::new();
    for (n, (from, message)) in records.iter().take(messages).enumerate() {
        let time = 1_764_180_000.0 + 0.000_731 * (n + 1) as f64;
        let _ = writeln!(out, "{{\"from\":\"{from}\",\"time\":{time:.6},\"message\":{message}}}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transcript_has_the_messages_asked_for_each_a_record() {
        let text = transcript_text(1000, false);
        assert_eq!(text.lines().count(), 1000);
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).expect("JSON");
            assert_eq!(record["message"]["jsonrpc"], "2.0", "{line}");
        }
    }
}
