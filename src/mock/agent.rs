//! The mock agent: an ACP agent (v1 and v2) that plays a script, for the tests of clients. In
//! process over a pipe ([`MockAgent::serve`], [`MockAgent::connect`]) or on stdio
//! ([`MockAgent::serve_stdio`], `acp mock-agent [--script FILE]`). It records what it received
//! ([`Received`]).
//!
//! Without a script (or for a prompt no scripted turn matches) it echoes the prompt's text back
//! as one agent message and ends the turn `end_turn`.
//!
//! # The script (JSON)
//!
//! ```json
//! {
//!   "initialize": { "v1": { "agentCapabilities": { "promptCapabilities": { "image": true } } } },
//!   "onNewSession": [
//!     { "update": { "sessionUpdate": "available_commands_update",
//!                   "availableCommands": [{ "name": "test", "description": "Run the tests" }] } },
//!     { "message": "Welcome." }
//!   ],
//!   "onLoadSession": [{ "userMessage": "Fix the test" }, { "message": "Fixed." }],
//!   "turns": [
//!     {
//!       "match": { "text": "edit" },
//!       "steps": [
//!         { "thought": "Reading the file first" },
//!         { "plan": [{ "content": "Read", "status": "in_progress" }, { "content": "Run the tests" }] },
//!         { "toolCall": { "id": "t1", "title": "Edit main.rs", "kind": "edit", "status": "pending" } },
//!         { "permission": {
//!             "toolCall": "t1",
//!             "options": [{ "id": "yes", "kind": "allow_once" }, { "id": "no", "kind": "reject_once" }],
//!             "on": { "no": [{ "message": "Not editing." }, { "stop": "refusal" }] } } },
//!         { "readFile": { "path": "/project/main.rs" } },
//!         { "writeFile": { "path": "/project/main.rs", "content": "fn main() {}\n" } },
//!         { "terminal": { "command": "cargo", "args": ["test"], "outputByteLimit": 4096 } },
//!         { "toolCallUpdate": { "id": "t1", "status": "completed", "text": "done" } },
//!         { "delay": 50 },
//!         { "message": "Edited." }
//!       ],
//!       "stopReason": "end_turn",
//!       "onCancel": "stop"
//!     },
//!     { "match": { "turn": 3 }, "steps": [{ "error": { "code": -32603, "message": "boom" } }] }
//!   ]
//! }
//! ```
//!
//! - `initialize.v1` / `initialize.v2`: merged over the default `initialize` answer of that
//!   version (capabilities, `authMethods`: `authenticate` / `auth/login` accept their ids).
//! - `loadSession`: v1 `session/load` is answered (and `agentCapabilities.loadSession` set);
//!   by default, when `onLoadSession` is given.
//! - `onNewSession`: the steps run on each `session/new` (either version) before its answer, as
//!   agents send their available commands, their current mode or a welcome; the client's runtime
//!   keeps these updates for the session it is about to open.
//! - `onLoadSession`: the steps run on `session/load` (v1) before its answer: the history the
//!   agent replays (the schema's `session/load`: the agent should "stream the entire
//!   conversation history back to the client via notifications"), e.g. `userMessage` and
//!   `message` steps.
//! - In `onNewSession` and `onLoadSession` every step of a turn may be used but `stop` (there is
//!   no turn to end): an `error` answers `session/new` or `session/load` with it, a cancelled
//!   permission request ends the steps.
//! - `turns`: the first whose `match` fits runs the prompt: `text` (the prompt's text blocks,
//!   joined by spaces, contain it), `exact` (equal it) or `turn` (the agent's Nth prompt, from
//!   1, over all its sessions); no `match` fits every prompt.
//! - steps: `message`, `thought` (one chunk each), `userMessage` (v1 a `user_message_chunk`, v2
//!   a `user_message`), `plan`, `toolCall` (v2: a `tool_call_update`
//!   with its title), `toolCallUpdate`, `update` (any `session/update` object as the version's
//!   wire has it), `permission` (the steps in `on` of the chosen option run next; a `cancelled`
//!   outcome ends the turn `cancelled`, unless it finishes on cancel), `readFile` (the content said as a message unless
//!   `"say": false`), `writeFile`, `terminal` (`terminal/create`, `wait_for_exit`, `output`,
//!   `release`; the output said unless `"say": false`), `delay` (milliseconds), `error` (the
//!   prompt is answered with it), `stop` (the turn ends with that stop reason).
//!   `readFile`, `writeFile` and `terminal` are v1 only: the v2 schema has no `fs/*` or
//!   `terminal/*` client methods, so in v2 they are skipped ([`Received::skipped`] says so), as
//!   they are when the client did not advertise the capability.
//! - `stopReason` (default `end_turn`): how the turn ends when no step ended it.
//! - `onCancel`: `stop` (default: on `session/cancel`, the turn ends `cancelled` before its next
//!   step; a delay is cut short; requests already sent to the client are awaited) or `finish`
//!   (the remaining steps run, then the turn ends `cancelled`).
//!
//! Unknown keys and wrong types are errors naming the JSON pointer of the problem
//! ([`ScriptError`]).

mod record;
mod run;
mod script;

pub use record::Received;
pub use script::ScriptError;

use crate::agent::{AgentContext, PromptTurn, Turn};
use crate::client::{ClientConnection, ClientHandler};
use crate::jsonrpc::{Config, Connection};
use acp_types::support::rpc::{Method, RpcError};
use acp_types::{v1, v2, Version};
use record::Tap;
use run::{Ended, Side};
use script::{OnCancel, Script, StopReason};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// A scripted ACP agent for tests (see the [module docs](self) for the script).
#[derive(Clone)]
pub struct MockAgent {
    script: Arc<Script>,
    init_v1: Value,
    init_v2: Value,
    versions: Vec<Version>,
    received: Received,
}

impl std::fmt::Debug for MockAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockAgent").field("versions", &self.versions).finish_non_exhaustive()
    }
}

impl Default for MockAgent {
    fn default() -> Self {
        MockAgent::echo()
    }
}

/// `b`'s members over `a`'s, objects merged key by key.
fn merge(a: &mut Value, b: &Map<String, Value>) {
    let Value::Object(a) = a else { return };
    for (key, value) in b {
        match (a.get_mut(key), value) {
            (Some(old @ Value::Object(_)), Value::Object(new)) => merge(old, new),
            _ => {
                a.insert(key.clone(), value.clone());
            }
        }
    }
}

fn encode<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

impl MockAgent {
    /// The agent without a script: it echoes each prompt back and ends the turn `end_turn`.
    pub fn echo() -> Self {
        MockAgent::from_script(json!({})).unwrap_or_else(|_| unreachable!("the empty script is valid"))
    }

    /// The agent playing `script` (see the [module docs](self)).
    pub fn from_script(script: Value) -> Result<Self, ScriptError> {
        if !script.is_object() {
            return Err(ScriptError::at("", "a script is a JSON object"));
        }
        let script: Script = script::decode("", script)?;
        script::check(&script)?;
        let info = json!({ "name": "acp-mock-agent", "version": env!("CARGO_PKG_VERSION") });
        let mut init_v1 = encode(&v1::InitializeResponse::new(v1::ProtocolVersion(1)));
        merge(&mut init_v1, json!({ "agentInfo": info }).as_object().unwrap_or(&Map::new()));
        if script.loads() {
            merge(
                &mut init_v1,
                json!({ "agentCapabilities": { "loadSession": true } }).as_object().unwrap_or(&Map::new()),
            );
        }
        let implementation = v2::Implementation::new("acp-mock-agent".into(), env!("CARGO_PKG_VERSION").into());
        let mut init_v2 = encode(&v2::InitializeResponse::new(v2::ProtocolVersion(2), implementation));
        if let Some(extra) = &script.initialize.v1 {
            merge(&mut init_v1, extra);
        }
        if let Some(extra) = &script.initialize.v2 {
            merge(&mut init_v2, extra);
        }
        // Checked now, so that a bad answer is the script's error, not the client's.
        script::decode::<v1::InitializeResponse>("/initialize/v1", init_v1.clone())?;
        script::decode::<v2::InitializeResponse>("/initialize/v2", init_v2.clone())?;
        Ok(MockAgent {
            script: Arc::new(script),
            init_v1,
            init_v2,
            versions: Version::ALL.to_vec(),
            received: Received::default(),
        })
    }

    /// The agent playing the script in `text` (JSON); a syntax error names its line and column.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| ScriptError::at("", format!("not JSON (line {}, column {}): {e}", e.line(), e.column())))?;
        MockAgent::from_script(value)
    }

    /// Speaks only `versions` (by default v1 and v2).
    pub fn versions(mut self, versions: &[Version]) -> Self {
        self.versions = versions.to_vec();
        self
    }

    /// What the agent received (shared: read it after the test's exchange).
    pub fn received(&self) -> Received {
        self.received.clone()
    }

    /// Serves the script over `reader`/`writer` (e.g. the halves of a `tokio::io::duplex`):
    /// the connection and the future that drives it (spawn or await it).
    pub fn serve<R, W>(self, reader: R, writer: W) -> (Connection, impl Future<Output = std::io::Result<()>> + Send)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let versions = self.versions.clone();
        let reader = Tap::new(reader, self.received.clone());
        let handler =
            Mock { agent: self, turns: AtomicU64::new(0), sessions: AtomicU64::new(0), messages: AtomicU64::new(0) };
        crate::agent::serve(handler, &versions, reader, writer, Config::default())
    }

    /// Serves the script on this process's stdin/stdout.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        let (_, driver) = self.serve(tokio::io::stdin(), tokio::io::stdout());
        driver.await
    }

    /// Connects `client` to the agent over an in-process pipe, both ends' drivers spawned on the
    /// current tokio runtime; the client's connection, not yet initialized.
    pub fn connect<C: ClientHandler>(self, client: C) -> ClientConnection {
        let (client_end, agent_end) = tokio::io::duplex(1 << 16);
        let (agent_read, agent_write) = tokio::io::split(agent_end);
        let (client_read, client_write) = tokio::io::split(client_end);
        let (_, agent) = self.serve(agent_read, agent_write);
        let (conn, client) = crate::client::connect(client, client_read, client_write, Config::default());
        tokio::spawn(agent);
        tokio::spawn(client);
        conn
    }
}

/// The handler of one served connection.
struct Mock {
    agent: MockAgent,
    turns: AtomicU64,
    sessions: AtomicU64,
    /// The `messageId`s of v2 messages outside a turn (`onNewSession`).
    messages: AtomicU64,
}

fn prompt_text<'a>(blocks: impl Iterator<Item = Option<&'a str>>) -> String {
    blocks.flatten().collect::<Vec<_>>().join(" ")
}

/// Whether `answer` lists the auth method `id`.
fn offers(answer: &Value, id: &str) -> bool {
    let methods = answer.get("authMethods").and_then(Value::as_array);
    methods.is_some_and(|m| m.iter().any(|m| m.get("id").and_then(Value::as_str) == Some(id)))
}

fn no_auth_method(method: &str, id: &str) -> RpcError {
    RpcError::invalid_params(method, "methodId", &format!("the mock agent offers no auth method {id}"))
}

/// The turn's end: its stop reason, or the error the prompt is answered with.
enum End {
    Stop(StopReason),
    Error(RpcError),
}

impl Mock {
    fn new_session(&self) -> String {
        format!("mock-session-{}", self.sessions.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Runs the steps of `session/new` or `session/load` before its answer: an `error` step
    /// answers the request with it; a cancelled permission request ends the steps.
    async fn open(&self, side: &Side<'_>, steps: &[script::Step]) -> Result<(), RpcError> {
        match run::run(side, steps, OnCancel::Stop, &self.agent.received).await {
            Ok(()) | Err(Ended::Stop(_)) => Ok(()),
            Err(Ended::Error(e)) => Err(e),
        }
    }

    /// Plays the prompt `text`: the matching scripted turn or the echo.
    async fn play(&self, side: &Side<'_>, text: &str, cancelled: impl Fn() -> bool) -> End {
        let turn = self.turns.fetch_add(1, Ordering::Relaxed) + 1;
        let script = &self.agent.script;
        let Some(scripted) = script.turns.iter().find(|t| t.matcher.as_ref().is_none_or(|m| m.fits(text, turn))) else {
            return match side.update(run::echo(text)).await {
                Ok(()) if cancelled() => End::Stop(StopReason::Cancelled),
                Ok(()) => End::Stop(StopReason::EndTurn),
                Err(e) => End::Error(e),
            };
        };
        match run::run(side, &scripted.steps, scripted.on_cancel, &self.agent.received).await {
            Ok(()) if cancelled() => End::Stop(StopReason::Cancelled),
            Ok(()) => End::Stop(scripted.stop_reason),
            Err(Ended::Stop(reason)) => End::Stop(reason),
            Err(Ended::Error(e)) => End::Error(e),
        }
    }
}

fn answer<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, RpcError> {
    serde_json::from_value(value.clone()).map_err(|e| RpcError::internal(format!("mock agent: initialize: {e}")))
}

impl v1::methods::agent::Handler<AgentContext> for Mock {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        answer(&self.agent.init_v1)
    }

    async fn authenticate(
        &self,
        params: v1::AuthenticateRequest,
        _: AgentContext,
    ) -> Result<v1::AuthenticateResponse, RpcError> {
        match offers(&self.agent.init_v1, &params.method_id.0) {
            true => Ok(v1::AuthenticateResponse::new()),
            false => Err(no_auth_method(<v1::methods::Authenticate as Method>::METHOD, &params.method_id.0)),
        }
    }

    async fn session_new(
        &self,
        _: v1::NewSessionRequest,
        cx: AgentContext,
    ) -> Result<v1::NewSessionResponse, RpcError> {
        let session = v1::SessionId(self.new_session());
        self.open(&Side::V1 { cx: &cx, session: &session }, &self.agent.script.on_new_session).await?;
        Ok(v1::NewSessionResponse::new(session))
    }

    async fn session_load(
        &self,
        params: v1::LoadSessionRequest,
        cx: AgentContext,
    ) -> Result<v1::LoadSessionResponse, RpcError> {
        let script = &self.agent.script;
        if !script.loads() {
            return Err(RpcError::method_not_found(<v1::methods::SessionLoad as Method>::METHOD));
        }
        let steps = script.on_load_session.as_deref().unwrap_or_default();
        self.open(&Side::V1 { cx: &cx, session: &params.session_id }, steps).await?;
        Ok(v1::LoadSessionResponse::new())
    }

    async fn session_prompt(
        &self,
        params: v1::PromptRequest,
        cx: AgentContext,
    ) -> Result<v1::PromptResponse, RpcError> {
        let text = prompt_text(params.prompt.iter().map(|b| match b {
            v1::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        }));
        let side = Side::V1 { cx: &cx, session: &params.session_id };
        match self.play(&side, &text, || cx.is_cancelled()).await {
            End::Stop(reason) => Ok(v1::PromptResponse::new(answer(&json!(reason.wire()))?)),
            End::Error(e) => Err(e),
        }
    }
}

impl v2::methods::agent::Handler<AgentContext> for Mock {
    async fn initialize(&self, _: v2::InitializeRequest, _: AgentContext) -> Result<v2::InitializeResponse, RpcError> {
        answer(&self.agent.init_v2)
    }

    async fn auth_login(
        &self,
        params: v2::LoginAuthRequest,
        _: AgentContext,
    ) -> Result<v2::LoginAuthResponse, RpcError> {
        match offers(&self.agent.init_v2, &params.method_id.0) {
            true => Ok(v2::LoginAuthResponse::new()),
            false => Err(no_auth_method(<v2::methods::AuthLogin as Method>::METHOD, &params.method_id.0)),
        }
    }

    async fn session_new(
        &self,
        _: v2::NewSessionRequest,
        cx: AgentContext,
    ) -> Result<v2::NewSessionResponse, RpcError> {
        let session = v2::SessionId(self.new_session());
        let ids = || v2::MessageId(format!("mock-message-{}", self.messages.fetch_add(1, Ordering::Relaxed) + 1));
        let side = Side::V2 { cx: &cx, session: &session, ids: &ids };
        self.open(&side, &self.agent.script.on_new_session).await?;
        Ok(v2::NewSessionResponse::new(session))
    }
}

/// v2: the runtime inserts the user message, answers with its id and reports `running`, then
/// `idle` with the stop reason returned here.
impl PromptTurn for Mock {
    async fn prompt_turn(&self, params: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        let text = prompt_text(params.prompt.iter().map(|b| match b {
            v2::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        }));
        let ids = || turn.new_message_id();
        let side = Side::V2 { cx: turn.context(), session: turn.session_id(), ids: &ids };
        match self.play(&side, &text, || turn.is_cancelled()).await {
            End::Stop(reason) => answer(&json!({ "stopReason": reason.wire() })),
            End::Error(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the module docs, as written there.
    fn documented_example() -> String {
        let source = include_str!("agent.rs");
        let lines = source.lines().map_while(|l| l.strip_prefix("//!")).map(|l| l.strip_prefix(' ').unwrap_or(l));
        let example: Vec<&str> = lines.skip_while(|l| *l != "```json").skip(1).take_while(|l| *l != "```").collect();
        example.join("\n")
    }

    #[test]
    fn the_documented_example_is_a_valid_script() {
        let example = documented_example();
        assert!(example.contains("\"turns\""), "{example}");
        let agent = MockAgent::from_json(&example).expect("the documented example is valid");
        assert_eq!(agent.script.turns.len(), 2);
        assert_eq!(agent.init_v1["agentCapabilities"]["loadSession"], true, "onLoadSession implies it");
        assert_eq!(agent.script.on_new_session.len(), 2);
        assert_eq!(agent.init_v1["agentCapabilities"]["promptCapabilities"]["image"], true);
    }

    #[test]
    fn a_bad_initialize_answer_is_named_below_its_version() {
        let bad = json!({ "initialize": { "v1": { "protocolVersion": "one" } } });
        let error = MockAgent::from_script(bad).expect_err("not a version");
        assert!(error.pointer.starts_with("/initialize/v1"), "{error}");
    }
}
