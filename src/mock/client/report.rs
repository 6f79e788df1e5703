//! What the mock client saw and did: the turns of each session (updates, stop reasons), and
//! the agent's requests with the answers the client gave.

use acp_types::support::rpc::RpcError;
use acp_types::Version;
use serde_json::Value;
use std::collections::BTreeMap;

/// A run of the mock client, for assertions.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// The version agreed in `initialize` (`None` when it failed).
    pub version: Option<Version>,
    /// The agent's `initialize` answer, as JSON.
    pub initialize: Value,
    /// The authentication method used, when the agent asked for one.
    pub authenticated: Option<String>,
    /// The sessions, in the script's order (those opened).
    pub sessions: Vec<SessionReport>,
    /// The agent's requests to the client, in the order they were answered.
    pub calls: Vec<AgentCall>,
    /// The in-memory file system at the end.
    pub files: BTreeMap<String, String>,
}

impl Report {
    /// Every turn of every session, in order.
    pub fn turns(&self) -> impl Iterator<Item = &TurnReport> {
        self.sessions.iter().flat_map(|s| s.turns.iter())
    }

    /// The agent's requests of one method (`<v1::methods::FsReadTextFile as Method>::METHOD`).
    pub fn calls_of<'r>(&'r self, method: &'r str) -> impl Iterator<Item = &'r AgentCall> {
        self.calls.iter().filter(move |c| c.method == method)
    }
}

/// One session.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SessionReport {
    /// Its id.
    pub id: String,
    /// The updates that came outside its turns (after `session/new`: a v2 `idle` snapshot,
    /// say), as JSON.
    pub updates: Vec<Value>,
    /// Its turns, in order.
    pub turns: Vec<TurnReport>,
}

/// One prompt turn.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct TurnReport {
    /// The prompt's text.
    pub prompt: String,
    /// The turn's `session/update`s in order, each the update's JSON (`{"sessionUpdate": …}`).
    pub updates: Vec<Value>,
    /// Its stop reason as on the wire (`end_turn`, `cancelled`, …); `None` when the turn
    /// failed.
    pub stop_reason: Option<String>,
    /// Whether the client sent `session/cancel` during it.
    pub cancel_sent: bool,
}

impl TurnReport {
    /// The text of the agent's message chunks, joined (`agent_message_chunk` text content).
    pub fn agent_text(&self) -> String {
        self.updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    }
}

/// A request of the agent and the mock client's answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentCall {
    /// The method.
    pub method: String,
    /// The session it was for.
    pub session_id: String,
    /// Its params, as JSON.
    pub params: Value,
    /// The answer: the result as JSON, or the error.
    pub answer: Result<Value, RpcError>,
}
