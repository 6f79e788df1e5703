//! Reading the clients' accounts of a turn, in the three formats they print: the drivers' contract
//! (JSON lines, then the stop reason), `yolo_one_shot_client`'s debug lines and
//! `v2_one_shot_client`'s.

use heck::ToSnakeCase;
use serde_json::Value;

/// A client's account of one turn, whatever its output format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// How many updates the client printed (`None` when it prints only the agent's text).
    pub updates: Option<usize>,
    /// The agent's text: its text message chunks, concatenated.
    pub agent_text: String,
    /// The final stop reason as on the wire (`end_turn`); `None` when there was none.
    pub stop_reason: Option<String>,
}

/// What a client driver printed: the updates, then the final stop reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    /// Each `session/update` notification's `params.update`, in order.
    pub updates: Vec<Value>,
    /// The last line's `stopReason` (`None` when it was `null`).
    pub stop_reason: Option<String>,
}

impl Transcript {
    /// The concatenated text of the `agent_message_chunk` updates with text content.
    pub fn agent_text(&self) -> String {
        self.updates
            .iter()
            .filter(|u| u.get("sessionUpdate").and_then(Value::as_str) == Some("agent_message_chunk"))
            .filter_map(|u| u.get("content"))
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect()
    }

    pub fn turn(&self) -> Turn {
        Turn { updates: Some(self.updates.len()), agent_text: self.agent_text(), stop_reason: self.stop_reason.clone() }
    }
}

/// Parses a client driver's stdout: JSON objects, one per non-blank line; every line but the
/// last is an update (an object with a string `sessionUpdate`), the last is
/// `{"stopReason": ...}`.
/// The records of an `acp tap` transcript (lines that are not JSON skipped: `acp check` reports
/// those).
pub(super) fn read_tap(tap: &std::path::Path) -> Result<Vec<Value>, String> {
    let text =
        std::fs::read_to_string(tap).map_err(|e| format!("cannot read the transcript {}: {e}", tap.display()))?;
    Ok(text.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok()).collect())
}

pub fn parse_client_output(stdout: &str) -> Result<Transcript, String> {
    let lines: Vec<(usize, &str)> =
        stdout.lines().enumerate().map(|(i, line)| (i + 1, line.trim())).filter(|(_, line)| !line.is_empty()).collect();
    let Some((&(last_no, last), updates)) = lines.split_last() else {
        return Err("the client printed nothing (expected a final {\"stopReason\": ...} line)".into());
    };
    let parse = |no: usize, line: &str| -> Result<serde_json::Map<String, Value>, String> {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => Err(format!("stdout line {no} is not a JSON object: {other}")),
            Err(e) => Err(format!("stdout line {no} is not JSON ({e}): {line}")),
        }
    };
    let last_map = parse(last_no, last)?;
    let stop_reason = match last_map.get("stopReason") {
        Some(Value::String(reason)) => Some(reason.clone()),
        Some(Value::Null) => None,
        Some(other) => return Err(format!("stopReason is not a string: {other}")),
        None => return Err(format!("the last stdout line (line {last_no}) has no stopReason: {last}")),
    };
    let mut parsed = Vec::with_capacity(updates.len());
    for &(no, line) in updates {
        let map = parse(no, line)?;
        if map.contains_key("stopReason") && !map.contains_key("sessionUpdate") {
            return Err(format!("stdout line {no} is a stopReason line but not the last"));
        }
        match map.get("sessionUpdate") {
            Some(Value::String(_)) => parsed.push(Value::Object(map)),
            _ => return Err(format!("stdout line {no} is not a session update (no string sessionUpdate): {line}")),
        }
    }
    Ok(Transcript { updates: parsed, stop_reason })
}

/// Reads `yolo_one_shot_client`'s output: on stdout each update's Rust `{:?}` on one line, such as
/// `AgentMessageChunk(ContentChunk { content: Text(TextContent { annotations: None, text: "hi",
/// meta: None }), message_id: None, meta: None })`; on stderr, once the turn ended,
/// `Stop reason: EndTurn`.
pub fn parse_yolo_output(stdout: &str, stderr: &str) -> Result<Turn, String> {
    const TEXT_CHUNK: &str = "AgentMessageChunk(ContentChunk { content: Text(TextContent {";
    let mut updates = 0;
    let mut agent_text = String::new();
    for (no, line) in stdout.lines().enumerate().map(|(i, line)| (i + 1, line.trim())) {
        if line.is_empty() {
            continue;
        }
        let debug = parse_debug_line(line).map_err(|e| format!("stdout line {no}: {e}: {line}"))?;
        if !(debug.skeleton.starts_with(|c: char| c.is_ascii_uppercase()) && debug.skeleton.ends_with(')')) {
            return Err(format!("stdout line {no} is not a session update's {{:?}}: {line}"));
        }
        updates += 1;
        if debug.skeleton.starts_with(TEXT_CHUNK) {
            match debug.strings.iter().find(|(field, _)| field == "text") {
                Some((_, text)) => agent_text.push_str(text),
                None => return Err(format!("stdout line {no} is a text chunk without a text: {line}")),
            }
        }
    }
    let stop = stderr
        .lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix("Stop reason:"))
        .ok_or_else(|| "stderr has no `Stop reason: ...` line (the turn did not end)".to_string())?;
    Ok(Turn { updates: Some(updates), agent_text, stop_reason: Some(stop.trim().to_snake_case()) })
}

/// Reads `v2_one_shot_client`'s output: on stdout the agent's text, printed once the session went
/// idle (its message chunks with `agent_message` snapshots applied, control characters other than
/// newline and tab removed); on stderr `Session is idle: Some(EndTurn)` (or `None`).
pub fn parse_v2_one_shot_output(stdout: &str, stderr: &str) -> Result<Turn, String> {
    let idle = stderr
        .lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix("Session is idle:"))
        .map(str::trim)
        .ok_or_else(|| "stderr has no `Session is idle: ...` line (the turn did not end)".to_string())?;
    let stop_reason = match idle {
        "None" => None,
        some => match some.strip_prefix("Some(").and_then(|rest| rest.strip_suffix(')')) {
            Some(reason) => Some(reason.to_snake_case()),
            None => return Err(format!("cannot read the stop reason of `Session is idle: {some}`")),
        },
    };
    let agent_text = stdout.strip_suffix('\n').unwrap_or(stdout).to_string();
    Ok(Turn { updates: None, agent_text, stop_reason })
}

/// One line of Rust `{:?}` output.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DebugLine {
    /// The line with every string literal emptied to `""`.
    skeleton: String,
    /// Each string literal, unescaped, with the field it is the value of (`""` when it is not a
    /// field's direct value, as in `Some("x")`).
    strings: Vec<(String, String)>,
}

/// Splits a `{:?}` line into its shape and its strings, undoing `str::escape_debug`.
fn parse_debug_line(line: &str) -> Result<DebugLine, String> {
    let mut skeleton = String::new();
    let mut strings = Vec::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            skeleton.push(c);
            continue;
        }
        let field = skeleton
            .strip_suffix(": ")
            .and_then(|before| before.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next())
            .unwrap_or_default()
            .to_string();
        skeleton.push_str("\"\"");
        let mut value = String::new();
        loop {
            match chars.next().ok_or("unterminated string")? {
                '"' => break,
                '\\' => value.push(match chars.next().ok_or("unterminated string")? {
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    '0' => '\0',
                    'u' => {
                        let rest = chars.as_str();
                        let (hex, after) =
                            rest.strip_prefix('{').and_then(|r| r.split_once('}')).ok_or("bad \\u escape")?;
                        let code = u32::from_str_radix(hex, 16).map_err(|_| format!("bad \\u{{{hex}}} escape"))?;
                        chars = after.chars();
                        char::from_u32(code).ok_or(format!("bad \\u{{{hex}}} escape"))?
                    }
                    other @ ('\\' | '"' | '\'') => other,
                    other => return Err(format!("unknown escape \\{other}")),
                }),
                other => value.push(other),
            }
        }
        strings.push((field, value));
    }
    Ok(DebugLine { skeleton, strings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::scenario::{check_turn, PROMPT};

    #[test]
    fn parses_updates_then_stop_reason() {
        let out = concat!(
            "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hello \"}}\n",
            "\n",
            "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"t\"}\n",
            "{\"content\":{\"type\":\"text\",\"text\":\"perm world\"},\"sessionUpdate\":\"agent_message_chunk\"}\n",
            "{\"stopReason\": \"end_turn\"}\n",
        );
        let t = parse_client_output(out).unwrap();
        assert_eq!(t.updates.len(), 3);
        assert_eq!(t.stop_reason.as_deref(), Some("end_turn"));
        assert_eq!(t.agent_text(), "hello perm world");
        assert_eq!(check_turn(&t.turn(), PROMPT).unwrap(), "3 updates, stopReason end_turn");
    }

    #[test]
    fn only_a_stop_reason() {
        let t = parse_client_output("{\"stopReason\":\"cancelled\"}").unwrap();
        assert!(t.updates.is_empty());
        assert_eq!(t.stop_reason.as_deref(), Some("cancelled"));
        let err = check_turn(&t.turn(), PROMPT).unwrap_err();
        assert!(err.contains("stopReason cancelled"), "{err}");
        let t = parse_client_output("{\"stopReason\":null}").unwrap();
        assert_eq!(t.stop_reason, None);
        assert!(check_turn(&t.turn(), PROMPT).unwrap_err().contains("null"));
    }

    #[test]
    fn rejects_bad_output() {
        let cases = [
            ("", "printed nothing"),
            ("  \n\n", "printed nothing"),
            ("{\"sessionUpdate\":\"plan\"}\n", "no stopReason"),
            ("not json\n{\"stopReason\":\"end_turn\"}\n", "line 1 is not JSON"),
            ("[1]\n{\"stopReason\":\"end_turn\"}\n", "not a JSON object"),
            ("{\"stopReason\":\"end_turn\"}\n{\"stopReason\":\"end_turn\"}\n", "not the last"),
            ("{\"update\":1}\n{\"stopReason\":\"end_turn\"}\n", "not a session update"),
            ("{\"stopReason\":3}\n", "not a string"),
            ("{\"stopReason\":\"end_turn\"}\ntrailing\n", "line 2 is not JSON"),
        ];
        for (out, expected) in cases {
            let err = parse_client_output(out).unwrap_err();
            assert!(err.contains(expected), "{out:?}: {err}");
        }
    }

    /// What `yolo_one_shot_client` printed against our `echo_agent` (stdout, and stderr's end).
    const YOLO_STDOUT: &str = "AgentMessageChunk(ContentChunk { content: Text(TextContent { annotations: None, \
        text: \"hello perm world\", meta: None }), message_id: None, meta: None })\n";
    const YOLO_STDERR: &str = "✅ Auto-approving permission request: RequestPermissionRequest { .. }\n\
        ✅ Agent completed!\nStop reason: EndTurn\n";

    #[test]
    fn reads_the_yolo_client() {
        let turn = parse_yolo_output(YOLO_STDOUT, YOLO_STDERR).unwrap();
        assert_eq!(turn, Turn { updates: Some(1), agent_text: PROMPT.into(), stop_reason: Some("end_turn".into()) });
        assert_eq!(check_turn(&turn, PROMPT).unwrap(), "1 update, stopReason end_turn");

        let stdout = concat!(
            "StateUpdate(Running(RunningStateUpdate { meta: None }))\n",
            "AgentMessageChunk(ContentChunk { content: Text(TextContent { annotations: Some(Annotations { ",
            "last_modified: Some(\"x, text: \\\"no\"), meta: None }), text: \"a \\\"b\\\"\\n\\\\ \\u{1b}\", meta: None }), ",
            "message_id: Some(MessageId(\"m\")), meta: None })\n",
            "AgentMessageChunk(ContentChunk { content: Image(ImageContent { data: \"\", mime_type: \"image/png\" }) })\n",
            "UserMessageChunk(ContentChunk { content: Text(TextContent { annotations: None, text: \"user\", meta: None }) })\n",
        );
        let turn = parse_yolo_output(stdout, "Stop reason: MaxTurnRequests").unwrap();
        assert_eq!(turn.updates, Some(4));
        assert_eq!(turn.agent_text, "a \"b\"\n\\ \u{1b}");
        assert_eq!(turn.stop_reason.as_deref(), Some("max_turn_requests"));
    }

    #[test]
    fn rejects_bad_yolo_output() {
        let cases = [
            (YOLO_STDOUT, "✓ Session created\n", "no `Stop reason"),
            ("Error: Error { code: -32601 }\n", YOLO_STDERR, "not a session update"),
            ("AgentMessageChunk(ContentChunk { content: Text(TextContent { text: \"x", YOLO_STDERR, "unterminated"),
            ("AgentMessageChunk(ContentChunk { content: Text(TextContent { text: \"\\q\" }) })", YOLO_STDERR, "escape"),
            (
                "AgentMessageChunk(ContentChunk { content: Text(TextContent { text: \"\\u{d800}\" }) })",
                YOLO_STDERR,
                "escape",
            ),
            (
                "AgentMessageChunk(ContentChunk { content: Text(TextContent { meta: None }) })",
                YOLO_STDERR,
                "without a text",
            ),
        ];
        for (stdout, stderr, expected) in cases {
            let err = parse_yolo_output(stdout, stderr).unwrap_err();
            assert!(err.contains(expected), "{stdout:?}: {err}");
        }
    }

    #[test]
    fn reads_the_v2_one_shot_client() {
        let stderr = "Prompt accepted; waiting for session output and completion...\nSession is idle: Some(EndTurn)\n";
        let turn = parse_v2_one_shot_output("Echo: hello perm world\n", stderr).unwrap();
        assert_eq!(turn.agent_text, "Echo: hello perm world");
        assert_eq!(check_turn(&turn, PROMPT).unwrap(), "stopReason end_turn");
        let turn = parse_v2_one_shot_output("two\nlines\n\n", "Session is idle: None").unwrap();
        assert_eq!((turn.agent_text.as_str(), turn.stop_reason), ("two\nlines\n", None));
        let err = parse_v2_one_shot_output("", "Prompt accepted; waiting").unwrap_err();
        assert!(err.contains("no `Session is idle"), "{err}");
        let err = parse_v2_one_shot_output("", "Session is idle: EndTurn").unwrap_err();
        assert!(err.contains("cannot read the stop reason"), "{err}");
    }
}
