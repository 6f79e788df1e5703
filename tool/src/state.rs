//! `acp state FILE…`: the state a client keeps, replayed from transcripts with the rules the
//! schema's `x-state` annotations give (`acp_types::v2::state`). Each message whose type carries
//! rules (`session/update`, the answers of `session/new`, `session/resume`, …, permission
//! requests) is applied to the session its `x-scope` names (else its `sessionId`, else that of
//! the request it answers); the result
//! is one JSON object: `{"sessions": {ID: {TARGET: …}}, "agent": {TARGET: …}}`, collections as
//! objects keyed by id, appended fields as arrays of what was appended, one-value targets as the
//! value. `--at N` stops after line N.
//!
//! Reads what `acp check` reads: a JSON-RPC message per line, or a `{"from", "message"}` record
//! (chain records, `"link"`, are replayed as one conversation). Only versions whose schemas carry
//! `x-state` have a state (v2); a transcript of another version is an error, not an empty state.

use acp_types::v2::state::{message_types, scope_id, AgentState, SessionState};
use acp_types::{MethodName, Version};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// Where a message's state is: found by [`Replay::locate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// `params` or `result`.
    pub member: &'static str,
    /// Its schema type.
    pub ty: &'static str,
    /// The session it names.
    pub session: Option<String>,
}

/// The states one or more transcripts leave.
#[derive(Default)]
pub struct Replay {
    /// Session id → its state, in the order first seen.
    sessions: Vec<(String, SessionState)>,
    agent: AgentState,
    /// The version each file negotiated (or was told).
    version: Option<Version>,
    /// Request (sender, id as JSON text) → (method, the session its params name).
    pending: HashMap<String, (String, Option<String>)>,
}

impl Replay {
    pub fn new(version: Option<Version>) -> Self {
        Replay { version, ..Default::default() }
    }

    /// The version the transcript speaks, once known.
    pub fn version(&self) -> Option<Version> {
        self.version
    }

    fn session(&mut self, id: &str) -> &mut SessionState {
        let at = match self.sessions.iter().position(|(s, _)| s == id) {
            Some(at) => at,
            None => {
                self.sessions.push((id.to_string(), SessionState::default()));
                self.sessions.len() - 1
            }
        };
        &mut self.sessions[at].1
    }

    /// One message (a JSON-RPC request, notification or response), and who sent it when the
    /// transcript says (`client` or `agent`): a response is matched to the other side's request.
    pub fn message(&mut self, from: Option<&str>, message: &Value) {
        if let Some(found) = self.locate(from, message) {
            let value = message.get(found.member).cloned().unwrap_or(Value::Null);
            self.agent.apply_json(found.ty, value.clone());
            if let Some(session) = found.session {
                self.session(&session).apply_json(found.ty, value);
            }
        }
    }

    /// What in a message changes state, without applying it: which member (`params` or
    /// `result`), its schema type and the session it names. Keeps the bookkeeping (the version,
    /// the requests awaiting answers) that [`Replay::message`] needs.
    pub fn locate(&mut self, from: Option<&str>, message: &Value) -> Option<Located> {
        let m = message.as_object()?;
        let (member, ty, value, request_session) = if let Some(method) = m.get("method").and_then(Value::as_str) {
            let params = m.get("params").unwrap_or(&Value::Null);
            if matches!(MethodName::of(method), Some(MethodName::Initialize)) {
                self.note_version(params.get("protocolVersion"));
            }
            let session = params.get("sessionId").and_then(Value::as_str).map(str::to_string);
            if let Some(id) = m.get("id") {
                self.pending.insert(key(from, id), (method.to_string(), session));
            }
            ("params", message_types(method).map(|(params, _)| params), params, None)
        } else {
            let id = m.get("id")?;
            let asker = from.map(|f| if f == "agent" { "client" } else { "agent" });
            let (method, session) = self.pending.remove(&key(asker, id))?;
            let result = m.get("result")?;
            if matches!(MethodName::of(&method), Some(MethodName::Initialize)) {
                self.note_version(result.get("protocolVersion"));
            }
            ("result", message_types(&method).and_then(|(_, result)| result), result, session)
        };
        if self.version != Some(Version::V2) {
            return None;
        }
        let ty = ty?;
        // The session it names: its `x-scope`, else its `sessionId`, else its request's.
        let session = scope_id(ty, "session", value)
            .or_else(|| value.get("sessionId"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or(request_session);
        Some(Located { member, ty, session })
    }

    fn note_version(&mut self, v: Option<&Value>) {
        if let Some(n) = v.and_then(Value::as_u64) {
            self.version = match n {
                1 => Some(Version::V1),
                2 => Some(Version::V2),
                _ => self.version,
            };
        }
    }

    /// `{"sessions": {ID: state}, "agent": state}` (`agent` only when it holds something).
    pub fn to_json(&self) -> Value {
        let sessions: Map<String, Value> =
            self.sessions.iter().map(|(id, s)| (id.clone(), serde_json::to_value(s).unwrap_or(Value::Null))).collect();
        let mut out = json!({ "sessions": sessions });
        let agent = serde_json::to_value(&self.agent).unwrap_or(Value::Null);
        if agent.as_object().is_some_and(|a| !a.is_empty()) {
            out["agent"] = agent;
        }
        out
    }
}

/// A pending request's key: its sender and id.
fn key(from: Option<&str>, id: &Value) -> String {
    format!("{}:{id}", from.unwrap_or(""))
}

/// The sender and message of a transcript line: a record's `from` and `message`, or the line
/// itself (sender unknown).
pub fn line_message(line: &[u8]) -> Option<(Option<String>, Value)> {
    let mut value: Value = serde_json::from_slice(line).ok()?;
    let record = value.get("from").is_some() || value.get("link").is_some();
    match value.get_mut("message").map(Value::take) {
        Some(message) if record => {
            let from = value.get("from").and_then(Value::as_str).map(str::to_string);
            Some((from, message))
        }
        _ => Some((None, value)),
    }
}

/// `acp state FILE… [--at N]`: exit status 2 when a file cannot be read, 1 when the transcript's
/// version has no `x-state` (no state to give), 0 otherwise.
pub fn run(files: &[PathBuf], at: Option<usize>, version: Option<Version>) -> ExitCode {
    let mut replay = Replay::new(version);
    let mut line_no = 0;
    'files: for file in files {
        let bytes = match crate::input::read(file) {
            Ok(bytes) => bytes,
            Err(e) => {
                eprintln!("acp state: cannot read {}: {e}", file.display());
                return ExitCode::from(2);
            }
        };
        for line in bytes.split(|&b| b == b'\n') {
            line_no += 1;
            if at.is_some_and(|n| line_no > n) {
                break 'files;
            }
            if let Some((from, message)) = line_message(line) {
                replay.message(from.as_deref(), &message);
            }
        }
    }
    match replay.version() {
        Some(Version::V2) => {
            use std::io::Write;
            let text = serde_json::to_string_pretty(&replay.to_json()).unwrap_or_default();
            // A closed pipe (`acp state … | head`) is the reader's choice, not a failure.
            let _ = writeln!(std::io::stdout().lock(), "{text}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("acp state: protocol version {} has no x-state annotations: no state to give", other.number());
            ExitCode::from(1)
        }
        None => {
            eprintln!("acp state: no initialize in the transcript; give the version with --protocol-version 2");
            ExitCode::from(1)
        }
    }
}
