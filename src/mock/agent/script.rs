//! The mock agent's script: its JSON form (serde), checked when it is loaded, so that a bad
//! script fails with the JSON pointer of the problem before any client connects.

pub use crate::mock::script_error::ScriptError;
use crate::mock::script_error::{pointer, token};
use acp_types::support::rpc::RpcError;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Decodes `value` as a `T`, the error naming the JSON pointer (below `base`) of the problem.
pub(super) fn decode<T: for<'de> Deserialize<'de>>(base: &str, value: Value) -> Result<T, ScriptError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let at = format!("{base}{}", pointer(e.path()));
        ScriptError::at(at, e.into_inner().to_string())
    })
}

/// The whole script.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct Script {
    /// Merged over the default `initialize` answer of each version (capabilities, `authMethods`,
    /// `agentInfo`…).
    #[serde(default)]
    pub initialize: Initialize,
    /// Whether `session/load` (v1) is answered (and `agentCapabilities.loadSession` advertised);
    /// by default, whether `onLoadSession` is given.
    #[serde(default)]
    pub load_session: Option<bool>,
    /// The steps run on each `session/new`, before its answer (a welcome, the available commands,
    /// the current mode, a v2 state).
    #[serde(default)]
    pub on_new_session: Vec<Step>,
    /// The steps run on `session/load` (v1), before its answer: the history the agent replays.
    #[serde(default)]
    pub on_load_session: Option<Vec<Step>>,
    /// The prompts' turns: the first whose `match` fits a prompt runs it.
    #[serde(default)]
    pub turns: Vec<TurnScript>,
}

impl Script {
    /// Whether `session/load` is answered.
    pub(super) fn loads(&self) -> bool {
        self.load_session.unwrap_or(self.on_load_session.is_some())
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Initialize {
    #[serde(default)]
    pub v1: Option<Map<String, Value>>,
    #[serde(default)]
    pub v2: Option<Map<String, Value>>,
}

/// One scripted turn.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct TurnScript {
    /// Which prompts it answers; without one, every prompt.
    #[serde(default, rename = "match")]
    pub matcher: Option<Match>,
    #[serde(default)]
    pub steps: Vec<Step>,
    /// How the turn ends when no step ended it.
    #[serde(default)]
    pub stop_reason: StopReason,
    /// What a `session/cancel` does to the turn.
    #[serde(default)]
    pub on_cancel: OnCancel,
}

/// Exactly one of: the prompt's text contains `text`, equals `exact`, or the prompt is the
/// agent's `turn`th (from 1, counted over all sessions of the connection).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Match {
    pub text: Option<String>,
    pub exact: Option<String>,
    pub turn: Option<u64>,
}

impl Match {
    pub(super) fn fits(&self, text: &str, turn: u64) -> bool {
        self.text.as_deref().is_none_or(|t| text.contains(t))
            && self.exact.as_deref().is_none_or(|t| text == t)
            && self.turn.is_none_or(|n| n == turn)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum OnCancel {
    /// End the turn `cancelled` before the next step (a delay is cut short).
    #[default]
    Stop,
    /// Run the remaining steps, then end `cancelled`.
    Finish,
}

/// The stop reasons both versions share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum StopReason {
    #[default]
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

impl StopReason {
    pub(super) fn wire(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::MaxTurnRequests => "max_turn_requests",
            StopReason::Refusal => "refusal",
            StopReason::Cancelled => "cancelled",
        }
    }
}

/// One step of a turn: a one-key object, e.g. `{"message": "Hello"}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) enum Step {
    /// An agent message (one chunk).
    Message(String),
    /// An agent thought (one chunk).
    Thought(String),
    /// A user message (v1 one `user_message_chunk`, v2 a `user_message`), as in a replayed
    /// history.
    UserMessage(String),
    /// A plan (v1 `plan`, v2 `plan_update` with its items).
    Plan(Vec<PlanEntry>),
    /// A new tool call (v1 `tool_call`, v2 `tool_call_update` with its title).
    ToolCall(ToolCall),
    /// An update of a tool call.
    ToolCallUpdate(ToolCallUpdate),
    /// Any `session/update`, as the wire has it (the version's `SessionUpdate` object).
    Update(Map<String, Value>),
    /// `session/request_permission`, then the steps of the chosen option.
    Permission(Permission),
    /// `fs/read_text_file` (v1; v2 has no such method: skipped).
    ReadFile(ReadFile),
    /// `fs/write_text_file` (v1; v2 has no such method: skipped).
    WriteFile(WriteFile),
    /// `terminal/create`, `terminal/wait_for_exit`, `terminal/output`, `terminal/release` (v1;
    /// v2 has no such methods: skipped).
    Terminal(Terminal),
    /// Waits this many milliseconds (cut short by a cancel unless the turn finishes on cancel).
    Delay(u64),
    /// Answers the prompt with this JSON-RPC error.
    Error(ScriptedError),
    /// Ends the turn with this stop reason.
    Stop(StopReason),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PlanEntry {
    pub content: String,
    #[serde(default = "medium")]
    pub priority: String,
    #[serde(default = "pending")]
    pub status: String,
}

fn medium() -> String {
    "medium".into()
}

fn pending() -> String {
    "pending".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ToolCall {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    /// Text content of the call.
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub raw_input: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ToolCallUpdate {
    pub id: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub raw_output: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct Permission {
    /// v1: the tool call asked about (its id); v2: ignored.
    #[serde(default = "permission_tool_call")]
    pub tool_call: String,
    /// v2: the request's title; v1: the tool call's title.
    #[serde(default = "permission_title")]
    pub title: String,
    pub options: Vec<PermissionOption>,
    /// The steps to run per chosen option id (none for an option not listed); a cancelled
    /// outcome ends the turn `cancelled`.
    #[serde(default)]
    pub on: BTreeMap<String, Vec<Step>>,
}

fn permission_tool_call() -> String {
    "mock-tool".into()
}

fn permission_title() -> String {
    "Allow the mock agent's tool call?".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PermissionOption {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    pub kind: PermissionKind,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum PermissionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

impl PermissionKind {
    pub(super) fn wire(self) -> &'static str {
        match self {
            PermissionKind::AllowOnce => "allow_once",
            PermissionKind::AllowAlways => "allow_always",
            PermissionKind::RejectOnce => "reject_once",
            PermissionKind::RejectAlways => "reject_always",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadFile {
    pub path: String,
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub limit: Option<u32>,
    /// Say the content as an agent message (default true).
    #[serde(default = "yes")]
    pub say: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteFile {
    pub path: String,
    pub content: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct Terminal {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub output_byte_limit: Option<u64>,
    /// Say the output and exit status as an agent message (default true).
    #[serde(default = "yes")]
    pub say: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ScriptedError {
    #[serde(default = "internal_error")]
    pub code: i32,
    pub message: String,
    #[serde(default)]
    pub data: Option<Value>,
}

fn internal_error() -> i32 {
    RpcError::INTERNAL_ERROR
}

/// The checks serde cannot make: each `match` has exactly one criterion, each `update` is a
/// `session/update` object, each permission's `on` names offered options, `stop` is only in a
/// prompt's turn, `onLoadSession` is not given with `"loadSession": false`.
pub(super) fn check(script: &Script) -> Result<(), ScriptError> {
    check_steps("/onNewSession", &script.on_new_session, Within::Session)?;
    if let Some(steps) = &script.on_load_session {
        if script.load_session == Some(false) {
            let message = "\"loadSession\" is false: session/load is not answered, so nothing is replayed";
            return Err(ScriptError::at("/onLoadSession", message));
        }
        check_steps("/onLoadSession", steps, Within::Session)?;
    }
    for (i, turn) in script.turns.iter().enumerate() {
        if let Some(m) = &turn.matcher {
            let given = [m.text.is_some(), m.exact.is_some(), m.turn.is_some()].iter().filter(|b| **b).count();
            if given != 1 {
                let message = "give exactly one of text, exact, turn";
                return Err(ScriptError::at(format!("/turns/{i}/match"), message));
            }
        }
        check_steps(&format!("/turns/{i}/steps"), &turn.steps, Within::Turn)?;
    }
    Ok(())
}

/// Where steps run: a prompt's turn, or `session/new` / `session/load` (no turn to stop).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Within {
    Turn,
    Session,
}

fn check_steps(base: &str, steps: &[Step], within: Within) -> Result<(), ScriptError> {
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Stop(_) if within == Within::Session => {
                let message = "a stop ends a prompt's turn; session/new and session/load have none";
                return Err(ScriptError::at(format!("{base}/{i}/stop"), message));
            }
            Step::Update(update) if !update.get("sessionUpdate").is_some_and(Value::is_string) => {
                let message = "a session update needs its \"sessionUpdate\" kind (a string)";
                return Err(ScriptError::at(format!("{base}/{i}/update"), message));
            }
            Step::Permission(p) => {
                if p.options.is_empty() {
                    return Err(ScriptError::at(format!("{base}/{i}/permission/options"), "offer at least one option"));
                }
                for (option, steps) in &p.on {
                    let at = format!("{base}/{i}/permission/on/{}", token(option));
                    if !p.options.iter().any(|o| &o.id == option) {
                        return Err(ScriptError::at(at, format!("no option {option} is offered")));
                    }
                    check_steps(&at, steps, within)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}
