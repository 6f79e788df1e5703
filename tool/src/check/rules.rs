//! The rules of [`acp_rpc::rules`] judged on one conversation, fed every message in order by the
//! [`Checker`](super::Checker). Keeps what the rules need (capabilities, sessions, turns, pending
//! permission requests), counts per rule and side how often a rule could have been broken
//! (exercised) and records where it was. End-of-conversation findings come from [`Judge::finish`].

use super::pending::Pending;
use super::report::{Kind, Report, RuleResult, RuleViolation, Status};
use super::tables::tables;
use super::wire;
use acp_rpc::rules::{self, RuleId};
use acp_types::support::rpc::{MessageKind, Role, RpcError};
use acp_types::{v1, v2, MethodName, Version};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

#[cfg(feature = "unstable")]
mod mcp;
mod tally;

use tally::Tally;

/// `session/update` kinds that belong to a v1 prompt turn (others, such as
/// `available_commands_update`, may come at any time).
const TURN_CONTENT: &[&str] =
    &["user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"];

/// How much of an invalid message a `schema.valid` finding quotes.
const EVIDENCE: usize = 300;

/// The v2 stop reasons (`schema/v2/schema.json#/$defs/IdleStateUpdate/anyOf`), from the generated
/// union: its catch-all keeps any other value, which is judged here.
const STOP_REASONS: &[&str] = v2::IdleStateUpdateStopReason::KNOWN_TAGS;

#[derive(Debug, Default)]
struct Session {
    /// `session/prompt` requests awaiting their response.
    prompts: Vec<Prompt>,
    /// Line of the last `session/prompt` response that ended a cancelled turn (v1).
    cancelled_answer: Option<usize>,
    /// A `session/load` or `session/resume` of the session is pending: what the agent sends
    /// now is history replay (or, v2, the state snapshot), not a turn's.
    opening: bool,
    /// v2 `session/resume` pending: a `state_update` came since its request.
    resume_state: Option<bool>,
    /// Line of the `running` (or `requires_action`) that started the foreground work (v2).
    running: Option<usize>,
    /// A prompt was sent and its turn has not ended (v2).
    open: bool,
    /// Line of the last `session/prompt`.
    prompted: usize,
    /// Line of a `session/cancel` sent during the turn (v2).
    cancel: Option<usize>,
    /// Message ids of user messages reported (v2).
    reported: HashSet<String>,
    /// Message ids of accepted prompts not reported yet, with the response's line (v2).
    awaiting: Vec<(String, usize)>,
}

#[derive(Debug)]
struct Prompt {
    id: String,
    line: usize,
    /// Line of the `session/cancel` sent while it was pending.
    cancelled: Option<usize>,
    /// Its turn ended (a turn-ending idle) before its response came (v2).
    ended: bool,
}

#[derive(Debug)]
struct Permission {
    session: Option<String>,
    line: usize,
    /// The `optionId`s of the request's `options`.
    options: Vec<String>,
    /// Line of the `session/cancel` (v1) or `$/cancel_request` (v2) that asks for `cancelled`.
    cancelled: Option<usize>,
}

/// The rules' view of one conversation.
#[derive(Debug, Default)]
pub(super) struct Judge {
    tally: Tally,
    /// The transcript may start after `initialize` (a forced version): lifecycle rules are off.
    forced: bool,
    version: Option<Version>,
    client_requests: usize,
    initialize_line: Option<usize>,
    /// The `initialize` params (client capabilities) and result (agent capabilities).
    client_init: Option<Value>,
    agent_init: Option<Value>,
    session_ids: HashSet<String>,
    sessions: HashMap<String, Session>,
    /// The agent's pending `session/request_permission` requests, by id (JSON text).
    permissions: HashMap<String, Permission>,
    /// Lines sent to a side that were not JSON, or not JSON-RPC, not answered yet.
    not_json: HashMap<Role, usize>,
    not_rpc: HashMap<Role, usize>,
    /// Notifications received, per side.
    notified: HashMap<Role, usize>,
    /// Methods the receiver is known not to implement (`acp conform`'s probes).
    unknown: HashSet<String>,
    /// The checker forgot pending requests (beyond its bound).
    forgot: bool,
    /// MCP over ACP: declared servers, `mcp/message` calls in flight.
    #[cfg(feature = "unstable")]
    mcp: mcp::Mcp,
}

impl Judge {
    pub(super) fn new(forced: bool) -> Self {
        Judge { forced, ..Judge::default() }
    }

    /// Treats `method` as one the receiver does not implement: it is answered with -32601.
    pub(super) fn treat_as_unknown(&mut self, method: &str) {
        self.unknown.insert(method.to_string());
    }

    /// A finding of a driver (a timeout, a cross-check over several conversations).
    pub(super) fn note(&mut self, rule: RuleId, by: Role, line: usize, detail: String) {
        self.tally.exercise(rule, by);
        self.tally.late(rule, by, line, detail);
    }

    /// A violation found by the checker itself on `report`'s message.
    pub(super) fn violation(&mut self, report: &mut Report, rule: RuleId, by: Role, detail: String) {
        self.tally.violate(report, rule, by, detail);
    }

    /// The request `id` (JSON text) of `requester` was forgotten: unmatched responses no longer
    /// prove anything, and what was kept for its answer goes too (else it would stay forever).
    pub(super) fn forgot(&mut self, requester: Option<Role>, id: &str) {
        self.forgot = true;
        if requester != Some(Role::Client) {
            self.permissions.remove(id);
            #[cfg(feature = "unstable")]
            self.mcp.forget(id);
        }
    }

    /// An opportunity a driver saw, without a violation.
    pub(super) fn exercise(&mut self, rule: RuleId, by: Role) {
        self.tally.exercise(rule, by);
    }

    /// Whether `rule` applies now: to the negotiated version, or, before one is known, when it
    /// applies to every version.
    fn applies(&self, rule: RuleId) -> bool {
        let rule = rule.rule();
        match self.version {
            Some(version) => rule.applies_to(version),
            None => Version::ALL.iter().all(|v| rule.applies_to(*v)),
        }
    }

    fn known(&self, method: &str) -> bool {
        tables(self.version.unwrap_or(Version::V1)).find(method, MessageKind::Request).is_some()
    }

    /// Whether `method` is in the namespace of the protocol-level methods (`$/cancel_request`),
    /// which a receiver may ignore: not judged as custom or unknown (see [`wire::protocol_level`]).
    fn protocol_level(&self, method: &str) -> bool {
        match self.version.unwrap_or(Version::V1) {
            Version::V1 => wire::protocol_level::<v1::methods::Tables>(method),
            Version::V2 => wire::protocol_level::<v2::methods::Tables>(method),
        }
    }

    /// A line that is not JSON (`not_json`), or JSON but not a JSON-RPC message.
    pub(super) fn invalid(&mut self, report: &mut Report, not_json: bool) {
        let Some(from) = report.from else { return };
        self.tally.exercise(RuleId::JsonOnly, from);
        let what = if not_json { "a line that is not JSON" } else { "JSON that is not a JSON-RPC message" };
        self.tally.violate(report, RuleId::JsonOnly, from, format!("the {from} wrote {what}"));
        if from == Role::Client {
            if not_json {
                self.tally.exercise(RuleId::ParseError, Role::Agent);
                *self.not_json.entry(Role::Agent).or_default() += 1;
            } else {
                *self.not_rpc.entry(Role::Agent).or_default() += 1;
            }
        }
    }

    /// `schema.valid` on a message that is JSON-RPC: an extension's is not the schema's to
    /// judge; any other breaks the rule when its schema problems are not all another rule's. The
    /// finding names the message, the first problem's path and reason, and the message itself
    /// (cut at [`EVIDENCE`] bytes); `report` itself already lists the problems, so it gets no
    /// second line for them.
    pub(super) fn schema(&mut self, report: &Report, message: &Map<String, Value>) {
        let Some(from) = report.from else { return };
        if report.status == Status::Extension {
            return;
        }
        self.tally.exercise(RuleId::SchemaValid, from);
        let mut invalid = report.schema_problems();
        let Some(first) = invalid.next() else { return };
        let others = invalid.count();
        let what = match &report.method {
            Some(method) => format!("{} {method}", report.kind),
            None => report.kind.to_string(),
        };
        let at = if first.path.is_empty() { String::new() } else { format!("{}: ", first.path) };
        let more = if others > 0 { format!(" (+{others} more)") } else { String::new() };
        let mut text = Value::Object(message.clone()).to_string();
        if text.len() > EVIDENCE {
            let cut = (0..=EVIDENCE).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
            text.truncate(cut);
            text.push('…');
        }
        let detail = format!("the {from}'s {what} does not match the schema: {at}{}{more}; {text}", first.reason);
        self.tally.late(RuleId::SchemaValid, from, report.line, detail);
    }

    /// Values only a catch-all kept (`path`, JSON text of the value), in `report`'s message.
    pub(super) fn unknown_values(&mut self, report: &mut Report, found: &[(Option<String>, String)]) {
        let Some(from) = report.from else { return };
        for (path, value) in found {
            self.tally.exercise(RuleId::Underscore, from);
            let custom = serde_json::from_str::<Value>(value)
                .ok()
                .is_some_and(|v| v.as_str().is_some_and(|s| s.starts_with('_')));
            if !custom {
                let at = path.as_deref().map(|p| format!(" at `{p}`")).unwrap_or_default();
                let detail = format!("{value}{at} is not in this schema, and a custom value begins with `_`");
                self.tally.violate(report, RuleId::Underscore, from, detail);
            }
        }
    }

    /// Judges one message (`message` as received; `answered`: for a response, the request it
    /// answers).
    pub(super) fn observe(
        &mut self,
        report: &mut Report,
        version: Option<Version>,
        message: &Map<String, Value>,
        answered: Option<&Pending>,
    ) {
        self.version = version;
        let Some(from) = report.from else { return };
        self.tally.exercise(RuleId::JsonOnly, from);
        match report.kind {
            Kind::Request | Kind::Notification => self.call(report, from, message),
            Kind::Response | Kind::ErrorResponse => self.response(report, from, message, answered),
            Kind::Invalid => {}
        }
    }

    fn call(&mut self, report: &mut Report, from: Role, message: &Map<String, Value>) {
        let method = report.method.clone().unwrap_or_default();
        let params = message.get("params").unwrap_or(&Value::Null);
        let line = report.line;
        if self.applies(RuleId::Underscore) {
            self.tally.exercise(RuleId::Underscore, from);
            if !method.starts_with('_') && !self.protocol_level(&method) && !self.known(&method) {
                let version = self.version.map_or_else(|| "this version".to_string(), |v| v.to_string());
                let detail =
                    format!("`{method}` is no method of {version}, and a custom method's name begins with `_`");
                self.tally.violate(report, RuleId::Underscore, from, detail);
            }
        }
        let session = params.get("sessionId").and_then(Value::as_str).map(str::to_string);
        if report.kind == Kind::Notification {
            return self.notification(report, from, &method, params, session);
        }
        let id = message.get("id").map(Value::to_string).unwrap_or_default();
        if from == Role::Client {
            self.client_request(report, &method, params);
        }
        self.gated_call(report, from, &method);
        #[cfg(feature = "unstable")]
        if from == Role::Client {
            if let Some(servers) = params.get("mcpServers") {
                self.mcp.declare(&mut self.tally, report, servers);
            }
        }
        match (from, MethodName::of(&method)) {
            (Role::Client, Some(MethodName::SessionPrompt)) => {
                self.prompt_content(report, params);
                if let Some(session) = session {
                    let state = self.sessions.entry(session).or_default();
                    state.prompts.push(Prompt { id, line, cancelled: None, ended: false });
                    state.open = true;
                    state.prompted = line;
                }
            }
            (Role::Agent, Some(MethodName::SessionRequestPermission)) => {
                let options = params["options"].as_array().map_or(&[][..], Vec::as_slice);
                let options = options.iter().filter_map(|o| o["optionId"].as_str()).map(String::from).collect();
                self.permissions.insert(id, Permission { session, line, options, cancelled: None });
            }
            #[cfg(feature = "unstable")]
            (Role::Agent, Some(MethodName::McpMessage)) => {
                self.mcp.call(&mut self.tally, report, id, params, self.forced)
            }
            (Role::Client, Some(name @ (MethodName::SessionLoad | MethodName::SessionResume))) => {
                if let Some(session) = session {
                    let state = self.sessions.entry(session).or_default();
                    state.opening = true;
                    // What the agent sends from here on is the load's (replay) or a later turn's,
                    // not the cancelled turn's: an update after the load's answer is no late one.
                    state.cancelled_answer = None;
                    if self.version == Some(Version::V2) && matches!(name, MethodName::SessionResume) {
                        state.resume_state = Some(false);
                    }
                }
            }
            _ => {}
        }
    }

    /// A notification from `from`: cancels, updates, MCP messages.
    fn notification(&mut self, report: &mut Report, from: Role, method: &str, params: &Value, session: Option<String>) {
        let line = report.line;
        self.tally.exercise(RuleId::NoResponseToNotification, from.peer());
        *self.notified.entry(from.peer()).or_default() += 1;
        match (from, MethodName::of(method)) {
            (Role::Client, Some(MethodName::SessionCancel)) => {
                if let Some(session) = session {
                    self.cancel(&session, line);
                }
            }
            (Role::Agent, Some(MethodName::CancelRequest)) if self.version == Some(Version::V2) => {
                let id = params.get("requestId").map(Value::to_string).unwrap_or_default();
                if let Some(permission) = self.permissions.get_mut(&id) {
                    permission.cancelled.get_or_insert(line);
                }
            }
            (Role::Agent, Some(MethodName::SessionUpdate)) => {
                if let Some(session) = session {
                    self.update(report, &session, params.get("update").unwrap_or(&Value::Null));
                }
            }
            #[cfg(feature = "unstable")]
            (Role::Client, Some(MethodName::McpMessage)) => {
                // After a forgotten request, a call not in flight may be one forgotten.
                self.mcp.notified(&mut self.tally, report, params, self.forced || self.forgot)
            }
            _ => {}
        }
    }

    /// A request of the client's: the lifecycle rules (`initialize` first, and once).
    fn client_request(&mut self, report: &mut Report, method: &str, params: &Value) {
        if !self.forced {
            if self.client_requests == 0 {
                self.tally.exercise(RuleId::InitFirst, Role::Client);
                if !wire::opens_connection(method) {
                    let detail = format!("the client's first request is `{method}`, not `initialize`");
                    self.tally.violate(report, RuleId::InitFirst, Role::Client, detail);
                }
            }
            self.client_requests += 1;
        }
        if wire::opens_connection(method) {
            self.tally.exercise(RuleId::InitOnce, Role::Client);
            match self.initialize_line {
                Some(first) => {
                    let detail = format!("`initialize` again (first at line {first})");
                    self.tally.violate(report, RuleId::InitOnce, Role::Client, detail);
                }
                None => self.initialize_line = Some(report.line),
            }
            self.client_init = Some(params.clone());
        }
    }

    /// The capability a call needs, checked on the caller.
    fn gated_call(&mut self, report: &mut Report, from: Role, method: &str) {
        let version = self.version;
        match (from, version) {
            // The `session/*` methods the capability covers: v2's, in the namespace of `session/new`.
            (Role::Client, Some(Version::V2))
                if wire::in_namespace_of::<v2::methods::Tables>(method, MethodName::SessionNew) =>
            {
                if let Some(init) = &self.agent_init {
                    self.tally.exercise(RuleId::CapSession, Role::Client);
                    if !advertises_sessions(init) {
                        let detail =
                            format!("`{method}` called, but the agent did not advertise `capabilities.session`");
                        self.tally.violate(report, RuleId::CapSession, Role::Client, detail);
                    }
                }
            }
            (Role::Client, Some(Version::V1)) if matches!(MethodName::of(method), Some(MethodName::SessionLoad)) => {
                if let Some(init) = &self.agent_init {
                    self.tally.exercise(RuleId::CapLoadSession, Role::Client);
                    if !advertises_load(init) {
                        let detail =
                            "`session/load` called, but the agent did not advertise `agentCapabilities.loadSession`";
                        self.tally.violate(report, RuleId::CapLoadSession, Role::Client, detail.into());
                    }
                }
            }
            (Role::Agent, Some(Version::V1)) if rules::ClientGate::of_v1(method).is_some() => {
                let Some(init) = &self.client_init else { return };
                let Some(gate) = rules::ClientGate::of_v1(method) else { return };
                // The capability, read by its path in the `initialize` params as sent.
                let path = gate.capability();
                let granted = path.split('.').fold(init, |value, key| &value[key]);
                let rule = gate.rule();
                self.tally.exercise(rule, Role::Agent);
                if granted != &Value::Bool(true) {
                    let detail = format!("`{method}` called, but the client did not advertise `{path}`");
                    self.tally.violate(report, rule, Role::Agent, detail);
                }
            }
            _ => {}
        }
    }

    /// Prompt content beyond the baseline (text, resource links) needs the agent's prompt capabilities.
    fn prompt_content(&mut self, report: &mut Report, params: &Value) {
        let Some(init) = &self.agent_init else { return };
        let Some(blocks) = params.get("prompt").and_then(Value::as_array) else { return };
        for (i, block) in blocks.iter().enumerate() {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
            let key = match kind {
                "image" => "image",
                "audio" => "audio",
                "resource" => "embeddedContext",
                _ => continue,
            };
            self.tally.exercise(RuleId::CapPromptContent, Role::Client);
            let (granted, path) = match self.version {
                Some(Version::V2) => {
                    (init["capabilities"]["session"]["prompt"][key].is_object(), "capabilities.session.prompt")
                }
                _ => (
                    init["agentCapabilities"]["promptCapabilities"][key] == Value::Bool(true),
                    "agentCapabilities.promptCapabilities",
                ),
            };
            if !granted {
                let detail =
                    format!("params.prompt[{i}] is a `{kind}` block, but the agent did not advertise `{path}.{key}`");
                self.tally.violate(report, RuleId::CapPromptContent, Role::Client, detail);
            }
        }
    }

    fn cancel(&mut self, session: &str, line: usize) {
        let Some(state) = self.sessions.get_mut(session) else { return };
        match self.version {
            Some(Version::V1) => {
                for prompt in &mut state.prompts {
                    prompt.cancelled.get_or_insert(line);
                }
                for permission in self.permissions.values_mut() {
                    if permission.session.as_deref() == Some(session) {
                        permission.cancelled.get_or_insert(line);
                    }
                }
            }
            Some(Version::V2) if state.running.is_some() || state.open => {
                state.cancel.get_or_insert(line);
            }
            _ => {}
        }
    }

    fn update(&mut self, report: &mut Report, session: &str, update: &Value) {
        let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or_default();
        let line = report.line;
        let tally = &mut self.tally;
        match self.version {
            Some(Version::V1) if TURN_CONTENT.contains(&kind) => {
                // History replayed while `session/load` (or `session/resume`) is pending is what
                // the protocol prescribes, not a turn's update.
                let Some(state) = self.sessions.get(session).filter(|s| !s.opening) else { return };
                // The sentence binds the updates of a cancelled turn: they come before its answer.
                if state.prompts.iter().any(|p| p.cancelled.is_some()) {
                    // One the agent sent in time.
                    tally.exercise(RuleId::V1UpdatesBeforeResponse, Role::Agent);
                } else if let (true, Some(answered)) = (state.prompts.is_empty(), state.cancelled_answer) {
                    tally.exercise(RuleId::V1UpdatesBeforeResponse, Role::Agent);
                    let detail = format!(
                        "`{kind}` update for session {session:?} after the `session/prompt` response that ended the \
                         cancelled turn (line {answered}), with no prompt of the session pending"
                    );
                    tally.violate(report, RuleId::V1UpdatesBeforeResponse, Role::Agent, detail);
                }
            }
            Some(Version::V2) => {
                let state = self.sessions.entry(session.to_string()).or_default();
                if kind == "state_update" {
                    if let Some(seen) = &mut state.resume_state {
                        *seen = true;
                    }
                }
                match kind {
                    "user_message" | "user_message_chunk" => {
                        if let Some(id) = update.get("messageId").and_then(Value::as_str) {
                            state.awaiting.retain(|(awaited, _)| awaited != id);
                            state.reported.insert(id.to_string());
                        }
                    }
                    "state_update" => match update.get("state").and_then(Value::as_str) {
                        Some("running" | "requires_action") => {
                            state.running.get_or_insert(line);
                        }
                        Some("idle") => idle(tally, report, session, state, update),
                        _ => {}
                    },
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn response(&mut self, report: &mut Report, from: Role, message: &Map<String, Value>, answered: Option<&Pending>) {
        let result = message.get("result");
        let error = message.get("error");
        let code = error.and_then(|e| e.get("code")).and_then(Value::as_i64);
        let answer = match (result, code) {
            (Some(_), _) => "a result".to_string(),
            (None, Some(code)) => format!("error {code}"),
            (None, None) => "a malformed error".to_string(),
        };
        let id = message.get("id").filter(|id| !id.is_null());
        let Some(id) = id else {
            return self.null_id(report, from, code);
        };
        self.tally.exercise(RuleId::ResponseToPending, from);
        let Some(pending) = answered else {
            if report.status == Status::Unmatched && !self.forced && !self.forgot {
                let detail = format!("no request of the {} with id {id} is pending", from.peer());
                self.tally.violate(report, RuleId::ResponseToPending, from, detail);
            }
            return;
        };
        let ok = result.is_some() && error.is_none();
        let method = pending.method.as_str();
        if from == Role::Agent
            && !self.forced
            && !wire::opens_connection(method)
            && !method.starts_with('_')
            && self.initialize_line.is_none_or(|first| pending.line < first)
        {
            self.tally.exercise(RuleId::InitRefuseEarly, Role::Agent);
            if ok {
                let detail =
                    format!("`{method}` (line {}), sent before `initialize`, answered with a result", pending.line);
                self.tally.violate(report, RuleId::InitRefuseEarly, Role::Agent, detail);
            }
        }
        let unknown = self.unknown.contains(method)
            || (!method.starts_with('_') && !self.protocol_level(method) && !self.known(method));
        if unknown {
            self.tally.exercise(RuleId::MethodNotFound, from);
            if code != Some(RpcError::METHOD_NOT_FOUND.into()) {
                let detail = format!(
                    "`{method}` (line {}) is unknown to the {from}: expected error -32601, got {answer}",
                    pending.line
                );
                self.tally.violate(report, RuleId::MethodNotFound, from, detail);
            }
        }
        let result = result.unwrap_or(&Value::Null);
        let name = MethodName::of(method);
        match (from, name) {
            (Role::Agent, _) if ok && wire::opens_connection(method) => {
                self.initialize_answered(report, pending, result)
            }
            // Without the `unstable` feature (`--no-default-features`) this counts `session/new`
            // answers only: see `opens_session`.
            (Role::Agent, Some(name)) if ok && opens_session(name) => self.session_opened(report, result),
            (Role::Agent, Some(MethodName::SessionPrompt)) => {
                self.prompt_answered(report, pending, &id.to_string(), ok, result, &answer)
            }
            (Role::Agent, Some(MethodName::SessionLoad | MethodName::SessionResume)) => {
                self.session_reopened(report, pending, ok)
            }
            #[cfg(feature = "unstable")]
            (Role::Client, Some(MethodName::McpMessage)) => {
                self.mcp.answered(&mut self.tally, report, &id.to_string(), message.get("result"))
            }
            (Role::Client, Some(MethodName::SessionRequestPermission)) => {
                self.permission_answered(report, &id.to_string(), result, &answer)
            }
            _ => {}
        }
    }

    /// The agent's result to `initialize`: the version it answered.
    fn initialize_answered(&mut self, report: &mut Report, pending: &Pending, result: &Value) {
        self.agent_init = Some(result.clone());
        let answered = result.get("protocolVersion").and_then(Value::as_u64);
        // An answer no schema defines cannot be judged here (unless it merely echoes a
        // request above every published version): it is not counted as a pass.
        let known = answered.and_then(|v| u16::try_from(v).ok()).and_then(Version::from_number).is_some();
        if known || (answered.is_some() && answered == pending.requested) {
            self.tally.exercise(RuleId::InitVersion, Role::Agent);
        }
        let newest = Version::ALL.iter().map(|v| u64::from(v.number())).max().unwrap_or(1);
        if let (Some(requested), Some(answered)) = (pending.requested, answered) {
            if answered == requested && requested > newest {
                let detail = format!(
                    "answered protocolVersion {answered}, the one requested, which is no published version (the newest is {newest})"
                );
                self.tally.violate(report, RuleId::InitVersion, Role::Agent, detail);
            }
        }
    }

    /// The agent's result to a request that opens a session: a session id not seen before.
    fn session_opened(&mut self, report: &mut Report, result: &Value) {
        if let Some(session) = result.get("sessionId").and_then(Value::as_str) {
            self.tally.exercise(RuleId::DistinctSessions, Role::Agent);
            if !self.session_ids.insert(session.to_string()) {
                let detail = format!("sessionId {session:?} was already returned on this connection");
                self.tally.violate(report, RuleId::DistinctSessions, Role::Agent, detail);
            }
        }
    }

    /// The agent's answer to `session/load` or `session/resume`: the session is open, and a
    /// resumed one reported its state before the answer.
    fn session_reopened(&mut self, report: &mut Report, pending: &Pending, ok: bool) {
        let state = pending.session.as_ref().and_then(|s| self.sessions.get_mut(s));
        let Some(state) = state else { return };
        state.opening = false;
        if let (Some(seen), true) = (
            state.resume_state.take(),
            ok && matches!(MethodName::of(&pending.method), Some(MethodName::SessionResume)),
        ) {
            self.tally.exercise(RuleId::V2ResumeState, Role::Agent);
            if !seen {
                let detail = format!(
                    "`session/resume` (line {}) answered without a `state_update` for the session \
                     between the request and the response",
                    pending.line
                );
                self.tally.violate(report, RuleId::V2ResumeState, Role::Agent, detail);
            }
        }
    }

    /// The client's answer to a permission request: an offered option, or `cancelled` after a
    /// cancel.
    fn permission_answered(&mut self, report: &mut Report, id: &str, result: &Value, answer: &str) {
        let Some(permission) = self.permissions.remove(id) else { return };
        if result["outcome"]["outcome"] == "selected" {
            self.tally.exercise(RuleId::PermissionOfferedOption, Role::Client);
            let chosen = result["outcome"]["optionId"].as_str();
            if !chosen.is_some_and(|c| permission.options.iter().any(|o| o == c)) {
                let detail = format!(
                    "the permission request (line {}) answered with optionId {}, not one of the \
                     offered options {:?}",
                    permission.line,
                    chosen.map_or("(none)".to_string(), |c| format!("{c:?}")),
                    permission.options
                );
                self.tally.violate(report, RuleId::PermissionOfferedOption, Role::Client, detail);
            }
        }
        if let Some(cancel) = permission.cancelled {
            self.tally.exercise(RuleId::CancelPermission, Role::Client);
            let outcome = result["outcome"]["outcome"].as_str();
            if outcome != Some("cancelled") {
                let detail = format!(
                    "the permission request (line {}) answered with {} after the cancel at line {cancel}, \
                     not the `cancelled` outcome",
                    permission.line,
                    outcome.map_or(answer.to_string(), |o| format!("outcome {o:?}"))
                );
                self.tally.violate(report, RuleId::CancelPermission, Role::Client, detail);
            }
        }
    }

    fn prompt_answered(
        &mut self,
        report: &mut Report,
        pending: &Pending,
        id: &str,
        ok: bool,
        result: &Value,
        answer: &str,
    ) {
        let Some(session) = &pending.session else { return };
        let state = self.sessions.entry(session.clone()).or_default();
        let prompt = state.prompts.iter().position(|p| p.id == id).map(|i| state.prompts.remove(i));
        let tally = &mut self.tally;
        match self.version {
            Some(Version::V1) => {
                let cancelled = prompt.as_ref().and_then(|p| p.cancelled);
                state.cancelled_answer = cancelled.map(|_| report.line);
                if let Some(cancel) = cancelled {
                    // From here on, an update of the cancelled turn would come too late.
                    tally.exercise(RuleId::V1UpdatesBeforeResponse, Role::Agent);
                    tally.exercise(RuleId::V1Cancelled, Role::Agent);
                    let stop = result.get("stopReason").and_then(Value::as_str);
                    if !ok || stop != Some("cancelled") {
                        let got = stop.map_or(answer.to_string(), |s| format!("stopReason {s:?}"));
                        let detail = format!(
                            "after `session/cancel` (line {cancel}), the `session/prompt` (line {}) ended with {got}, \
                             not stopReason \"cancelled\"",
                            pending.line
                        );
                        tally.violate(report, RuleId::V1Cancelled, Role::Agent, detail);
                    }
                }
            }
            Some(Version::V2) => {
                if let Some(message) = result.get("messageId").and_then(Value::as_str).filter(|_| ok) {
                    tally.exercise(RuleId::V2UserMessage, Role::Agent);
                    if state.reported.contains(message) {
                    } else if prompt.as_ref().is_some_and(|p| p.ended) {
                        let detail = format!(
                            "the turn of the `session/prompt` (line {}) ended before its response, and no user message \
                             with messageId {message:?} was reported",
                            pending.line
                        );
                        tally.violate(report, RuleId::V2UserMessage, Role::Agent, detail);
                    } else {
                        state.awaiting.push((message.to_string(), report.line));
                    }
                }
                if !ok && state.running.is_none() {
                    // Rejected, not inserted: no turn, unless another prompt is pending.
                    state.open = !state.prompts.is_empty();
                }
            }
            None => {}
        }
    }

    /// A response with a null (or no) id: an answer to a line that could not be read, or to a
    /// notification.
    fn null_id(&mut self, report: &mut Report, from: Role, code: Option<i64>) {
        let not_json = self.not_json.get(&from).copied().unwrap_or_default();
        let not_rpc = self.not_rpc.get(&from).copied().unwrap_or_default();
        let take = |map: &mut HashMap<Role, usize>| {
            if let Some(n) = map.get_mut(&from) {
                *n = n.saturating_sub(1);
            }
        };
        let notified = self.notified.get(&from).copied().unwrap_or_default() > 0;
        if not_json > 0 && (code == Some(RpcError::PARSE_ERROR.into()) || (not_rpc == 0 && !notified)) {
            take(&mut self.not_json);
            if code != Some(RpcError::PARSE_ERROR.into()) && from == Role::Agent {
                let got = code.map_or("a result".to_string(), |c| format!("error {c}"));
                let detail = format!("a line that was not JSON answered with {got}, not -32700");
                self.tally.violate(report, RuleId::ParseError, from, detail);
            }
        } else if not_rpc > 0 && (code == Some(RpcError::INVALID_REQUEST.into()) || !notified) {
            take(&mut self.not_rpc);
        } else if notified {
            let detail = format!(
                "a response with id null from the {from} that answers no malformed line (not -32700): it answers a notification"
            );
            self.tally.violate(report, RuleId::NoResponseToNotification, from, detail);
        } else {
            self.tally.exercise(RuleId::ResponseToPending, from);
            let detail = "a response with id null, and nothing it could answer".to_string();
            self.tally.violate(report, RuleId::ResponseToPending, from, detail);
        }
    }

    /// End-of-conversation findings: turns that never ended, messages never reported, cancels
    /// never honoured, lines never answered. Each is reported once.
    pub(super) fn finish(&mut self) -> Vec<RuleViolation> {
        let mut found = Vec::new();
        let mut sessions: Vec<(String, Session)> = std::mem::take(&mut self.sessions).into_iter().collect();
        sessions.sort_by(|a, b| a.0.cmp(&b.0));
        let tally = &mut self.tally;
        for (session, state) in sessions {
            match self.version {
                Some(Version::V1) => {
                    for prompt in &state.prompts {
                        if let Some(cancel) = prompt.cancelled {
                            tally.exercise(RuleId::V1Cancelled, Role::Agent);
                            let detail = format!(
                                "the `session/prompt` (line {}) of session {session:?} was never answered after \
                                 `session/cancel` (line {cancel})",
                                prompt.line
                            );
                            found.push(tally.late(RuleId::V1Cancelled, Role::Agent, prompt.line, detail));
                        }
                    }
                }
                Some(Version::V2) => {
                    if let Some(running) = state.running {
                        tally.exercise(RuleId::V2RunningIdle, Role::Agent);
                        let detail = format!("`running` (line {running}) for session {session:?} never reached idle");
                        found.push(tally.late(RuleId::V2RunningIdle, Role::Agent, running, detail));
                    }
                    if let Some(cancel) = state.cancel {
                        tally.exercise(RuleId::V2Cancelled, Role::Agent);
                        let detail = format!(
                            "after `session/cancel` (line {cancel}) the turn of session {session:?} never ended idle \
                             with stopReason \"cancelled\""
                        );
                        found.push(tally.late(RuleId::V2Cancelled, Role::Agent, cancel, detail));
                    }
                    for (message, line) in &state.awaiting {
                        let detail = format!(
                            "no `user_message` or `user_message_chunk` with messageId {message:?} (the `session/prompt` \
                             response at line {line}) for session {session:?}"
                        );
                        found.push(tally.late(RuleId::V2UserMessage, Role::Agent, *line, detail));
                    }
                }
                None => {}
            }
        }
        let unanswered = self.not_json.remove(&Role::Agent).unwrap_or_default();
        if unanswered > 0 {
            let detail = format!("{unanswered} line(s) that were not JSON never answered with -32700");
            found.push(tally.late(RuleId::ParseError, Role::Agent, 0, detail));
        }
        found
    }

    /// Per rule, for `side` (or both): how often exercised, and the violations.
    pub(super) fn results(&self, side: Option<Role>) -> Vec<RuleResult> {
        let mut counts: HashMap<RuleId, usize> = HashMap::new();
        for ((rule, by), n) in &self.tally.exercised {
            if side.is_none_or(|s| s == *by) {
                *counts.entry(*rule).or_default() += n;
            }
        }
        rules::RULES
            .iter()
            .map(|rule| {
                let violations: Vec<RuleViolation> = self
                    .tally
                    .violations
                    .iter()
                    .filter(|v| v.rule == rule.id && side.is_none_or(|s| s == v.by))
                    .cloned()
                    .collect();
                let exercised = counts.get(&rule.id).copied().unwrap_or_default().max(violations.len());
                RuleResult { rule, exercised, violations }
            })
            .collect()
    }
}

/// The turn of `session` ended (a turn-ending idle with `stop`).
/// A v2 `idle` state update: a known (or `_`) stop reason, and the end of the turn that
/// `running` began, or that a prompt did.
fn idle(tally: &mut Tally, report: &mut Report, session: &str, state: &mut Session, update: &Value) {
    let stop = update.get("stopReason").and_then(Value::as_str);
    if let Some(stop) = stop {
        tally.exercise(RuleId::Underscore, Role::Agent);
        if !STOP_REASONS.contains(&stop) && !stop.starts_with('_') {
            let detail = format!("stopReason {stop:?} is no stop reason of v2, and a custom one begins with `_`");
            tally.violate(report, RuleId::Underscore, Role::Agent, detail);
        }
    }
    if let Some(running) = state.running {
        tally.exercise(RuleId::V2RunningIdle, Role::Agent);
        tally.exercise(RuleId::V2StopReason, Role::Agent);
        if stop.is_none() {
            let detail = format!(
                "the idle that ends the foreground work of session {session:?} (running at line {running}) carries \
                 no `stopReason`"
            );
            tally.violate(report, RuleId::V2StopReason, Role::Agent, detail);
        }
        end_turn(tally, report, session, state, stop);
    } else if let (Some(stop), true) = (stop, state.open) {
        tally.exercise(RuleId::V2RunningIdle, Role::Agent);
        let since = state.prompted;
        let detail = format!(
            "idle with stopReason {stop:?} ends a turn of session {session:?}, but no `running` was reported for it \
             (prompt at line {since})"
        );
        tally.violate(report, RuleId::V2RunningIdle, Role::Agent, detail);
        end_turn(tally, report, session, state, Some(stop));
    }
    // Otherwise a snapshot (after `session/new`, a repeat): no turn ends.
}

fn end_turn(tally: &mut Tally, report: &mut Report, session: &str, state: &mut Session, stop: Option<&str>) {
    if let Some(cancel) = state.cancel.take() {
        tally.exercise(RuleId::V2Cancelled, Role::Agent);
        if stop != Some("cancelled") {
            let got = stop.map_or("no stopReason".to_string(), |s| format!("stopReason {s:?}"));
            let detail =
                format!("after `session/cancel` (line {cancel}) the turn of session {session:?} ended with {got}, not \"cancelled\"");
            tally.violate(report, RuleId::V2Cancelled, Role::Agent, detail);
        }
    }
    for (message, line) in std::mem::take(&mut state.awaiting) {
        let detail = format!(
            "the turn of session {session:?} ended without a `user_message` or `user_message_chunk` with messageId \
             {message:?} (the `session/prompt` response at line {line})"
        );
        tally.violate(report, RuleId::V2UserMessage, Role::Agent, detail);
    }
    for prompt in &mut state.prompts {
        prompt.ended = true;
    }
    state.running = None;
    state.open = false;
}

/// Whether the result of `name` names a session it created: `session/new`, or `session/fork`
/// where the unstable tables are built in (without them the checker knows no `session/fork`).
fn opens_session(name: MethodName) -> bool {
    // Under `--no-default-features` (no `unstable`) the `SessionFork` marker does not exist:
    // `session/fork` answers then no longer count towards `session.distinct-ids`, and a fork
    // that returns an id already returned goes unreported.
    matches!(name, MethodName::SessionNew) || (cfg!(feature = "unstable") && matches!(name, MethodName::SessionFork))
}

/// v2: `capabilities.session` is an object.
fn advertises_sessions(init: &Value) -> bool {
    init["capabilities"]["session"].is_object()
}

/// v1: `agentCapabilities.loadSession` is `true`.
fn advertises_load(init: &Value) -> bool {
    init["agentCapabilities"]["loadSession"] == Value::Bool(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The turn's `session/update` kinds are a choice among v1's, which the generated union
    /// lists: a kind the schema renames or drops fails here, not silently in the checker.
    #[test]
    fn turn_content_kinds_are_v1_session_updates() {
        for kind in TURN_CONTENT {
            assert!(v1::SessionUpdate::KNOWN_TAGS.contains(kind), "{kind} is no v1 SessionUpdate");
        }
    }
}
