//! The steps the agent scenarios are made of: start an agent and send `initialize`,
//! authenticate, run a prompt turn, and end a scenario with its results recorded.

use super::driver::{Agent, ClientSide};
use super::options::Options;
use super::report::Results;
use crate::check::{wire, Role};
use acp_types::support::rpc::Method;
use acp_types::{v1, v2, Version};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::time::Duration;
use tokio::time::Instant;

/// Quiet period after the last expected message, to see what comes late.
pub(super) const QUIET: Duration = Duration::from_millis(250);

/// Time a turn runs before `session/cancel`.
pub(super) const BEFORE_CANCEL: Duration = Duration::from_millis(300);

/// Why a run stopped early: the agent (or, with `--client`, the client) cannot be started.
pub(crate) struct Unstartable(pub(crate) String);

/// A session the agent created: its id and the `session/new` answer (modes, config options).
pub(super) struct Session {
    pub(super) id: String,
    pub(super) answer: Value,
}

/// `initialize` params for a requested version: the fields of both versions' shapes, so that
/// an agent reads whichever it expects.
pub(super) fn initialize_params(requested: u64, client: &ClientSide) -> Value {
    let info = json!({ "name": "acp conform", "version": env!("CARGO_PKG_VERSION") });
    let fs = json!({ "readTextFile": client.fs, "writeTextFile": client.fs });
    if requested >= 2 {
        json!({ "protocolVersion": requested, "info": info, "capabilities": {} })
    } else {
        json!({
            "protocolVersion": requested,
            "clientCapabilities": { "fs": fs, "terminal": client.terminal },
            "clientInfo": info,
        })
    }
}

/// Starts an agent and sends `initialize`; `Unstartable` when it cannot be started or exits
/// before answering.
pub(super) async fn start(
    options: &Options,
    client: &ClientSide,
    requested: u64,
) -> Result<(Agent, Option<Value>, Value), Unstartable> {
    let mut agent = Agent::spawn(&options.agent, client.clone(), options.ext.clone()).map_err(Unstartable)?;
    // `requested` may be no version at all: the name is both versions'.
    let id = agent.request(wire::INITIALIZE, initialize_params(requested, client)).await;
    let response = agent.response(&id, Instant::now() + options.timeout).await;
    if response.is_none() && agent.closed() {
        agent.stop().await;
        return Err(Unstartable(format!(
            "the agent exited before answering `initialize` ({})",
            options.agent.join(" ")
        )));
    }
    Ok((agent, response, id))
}

/// `--auth`: `authenticate` (v1) or `auth/login` (v2) with the method; why not, when refused.
pub(super) async fn authenticate(
    agent: &mut Agent,
    options: &Options,
    version: Version,
    init: &Value,
) -> Result<(), String> {
    let Some(method) = &options.auth else { return Ok(()) };
    let name = match version {
        Version::V1 => v1::methods::Authenticate::METHOD,
        Version::V2 => v2::methods::AuthLogin::METHOD,
    };
    let id = agent.request(name, json!({ "methodId": method })).await;
    match agent.response(&id, Instant::now() + options.timeout).await {
        Some(r) if r.get("error").is_none() => Ok(()),
        Some(r) => Err(format!("`{name}` with {method:?} answered {}; {}", error_text(&r), auth_methods(init))),
        None => Err(format!("`{name}` with {method:?} not answered within {:?}", options.timeout)),
    }
}

/// The `authMethods` of an `initialize` answer in words (v1 names them `id`, v2 `methodId`).
pub(super) fn auth_methods(init: &Value) -> String {
    let methods: Vec<String> = init["authMethods"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let id = m.get("methodId").or_else(|| m.get("id")).and_then(Value::as_str).unwrap_or("?");
            match (m["name"].as_str(), m["type"].as_str()) {
                (Some(name), Some(kind)) => format!("{id} ({name}, type {kind})"),
                (Some(name), None) => format!("{id} ({name})"),
                _ => id.to_string(),
            }
        })
        .collect();
    if methods.is_empty() {
        "the agent lists no `authMethods`".into()
    } else {
        format!("the agent lists authMethods: {}", methods.join(", "))
    }
}

/// An error response in words: `error CODE "MESSAGE"` and its `data`, if any.
pub(super) fn error_text(response: &Value) -> String {
    let error = &response["error"];
    let mut text = format!("error {} {}", error["code"], error["message"]);
    if let Some(data) = error.get("data").filter(|d| !d.is_null()) {
        let _ = write!(text, " (data: {data})");
    }
    text
}

/// A prompt turn on `session`; with `cancel`, `session/cancel` after a moment. Waits for the
/// response (v1) or the response and the turn-ending idle (v2; an error response before any
/// `running` is a prompt refused, with no turn to end), then a quiet period; the response, if
/// one came.
pub(super) async fn turn(
    agent: &mut Agent,
    options: &Options,
    version: Version,
    session: &str,
    prompt: Value,
    cancel: bool,
) -> Option<Value> {
    let params = json!({ "sessionId": session, "prompt": prompt });
    let id = agent.request(method!(version, SessionPrompt), params).await;
    let update_method = method!(version, SessionUpdate);
    let deadline = Instant::now() + options.timeout;
    let mut answered = false;
    let mut response = None;
    let mut running = false;
    let mut ended = false;
    let mut refused = false;
    let mut watch = |m: &Value| {
        if m.get("method").is_none() && m.get("id") == Some(&id) {
            answered = true;
            refused = m.get("error").is_some() && !running;
            response = Some(m.clone());
        }
        let update = &m["params"]["update"];
        if m["method"] == update_method
            && m["params"]["sessionId"] == session
            && update["sessionUpdate"] == "state_update"
        {
            match update["state"].as_str() {
                Some("running" | "requires_action") => running = true,
                Some("idle") if running || update["stopReason"].is_string() => ended = true,
                _ => {}
            }
        }
        answered && (version == Version::V1 || ended || refused)
    };
    if cancel {
        let early = Instant::now() + BEFORE_CANCEL;
        if agent.wait_for(early, &mut watch).await {
            // Over before the cancel could be sent: the prompt did not keep the agent busy.
            agent.quiet(QUIET).await;
            return response;
        }
        agent.notify(method!(version, SessionCancel), json!({ "sessionId": session })).await;
    }
    // A turn that never ends is judged by the checker at the end (v2: `running` never idle; v1:
    // a cancelled prompt never answered).
    agent.wait_for(deadline, &mut watch).await;
    agent.quiet(QUIET).await;
    response
}

/// Stops nothing: judges the replies (`rpc.reply`), records the scenario's agent-side results
/// and transcript.
pub(super) fn finish(name: &str, mut agent: Agent, results: &mut Results) {
    agent.judge_replies();
    agent.checker.finish();
    results.add(name, agent.checker.rule_results_of(Role::Agent));
    results.lossy(name, std::mem::take(&mut agent.lossy));
    results.called(&agent.called);
    results.scenarios.push(json!({ "name": name, "transcript": agent.transcript }));
}

pub(super) async fn end(mut agent: Agent, name: &str, results: &mut Results) {
    agent.stop().await;
    finish(name, agent, results);
}
