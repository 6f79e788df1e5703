//! What an agent advertises, exercised: read from its `initialize` answer (and the `session/new`
//! answer's modes and config options), each advertised method is called once and each
//! advertised prompt content type sent once, in the main scenario's connection; `session/load`
//! and `session/resume` there too, and in a fresh process when the agent refuses them in the
//! connection that holds the session. Each gets a verdict: PASS with what was seen, FAIL with
//! what broke it, or SKIP naming the capability the agent did not advertise.

use super::driver::{Agent, ClientSide};
use super::options::Options;
use super::report::Results;
use super::steps::{authenticate, end, error_text, start, turn, Session, Unstartable, QUIET};
use crate::check::{wire, Role, RuleViolation};
use acp_rpc::rules::RuleId;
use acp_types::{MethodName, Version};
use serde_json::{json, Value};
use tokio::time::Instant;

/// A 1x1 PNG and an eight-sample WAV: the smallest valid payloads of their kinds.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGP4DwQACfsD/fteaysAAAAASUVORK5CYII=";
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The `session/update` kinds that carry conversation entries (what a replay is made of; an
/// `available_commands_update` after the load answer is not one).
const ENTRIES: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "user_message",
    "agent_message",
    "agent_thought",
];

/// What the agent advertised in its `initialize` answer.
#[derive(Debug, Default, Clone, Copy)]
pub struct Advertised {
    pub load: bool,
    pub list: bool,
    pub resume: bool,
    pub close: bool,
    pub fork: bool,
    pub image: bool,
    pub audio: bool,
    pub embedded_context: bool,
}

/// A capability flag: `true` (v1 booleans) or an object (`{}` means supported).
fn on(value: &Value) -> bool {
    value == &Value::Bool(true) || value.is_object()
}

impl Advertised {
    /// Reads the `initialize` result of `version`.
    pub fn of(version: Version, init: &Value) -> Self {
        match version {
            Version::V1 => {
                let caps = &init["agentCapabilities"];
                let session = &caps["sessionCapabilities"];
                let prompt = &caps["promptCapabilities"];
                Advertised {
                    load: on(&caps["loadSession"]),
                    list: on(&session["list"]),
                    resume: on(&session["resume"]),
                    close: on(&session["close"]),
                    fork: on(&session["fork"]),
                    image: on(&prompt["image"]),
                    audio: on(&prompt["audio"]),
                    embedded_context: on(&prompt["embeddedContext"]),
                }
            }
            Version::V2 => {
                // `{}` means the baseline: new, list, resume, close, prompt, cancel, update.
                let session = &init["capabilities"]["session"];
                let baseline = session.is_object();
                let prompt = &session["prompt"];
                Advertised {
                    list: baseline,
                    resume: baseline,
                    close: baseline,
                    image: on(&prompt["image"]),
                    audio: on(&prompt["audio"]),
                    embedded_context: on(&prompt["embeddedContext"]),
                    ..Advertised::default()
                }
            }
        }
    }

    /// Says, for each capability not advertised, why its rule may SKIP.
    pub fn skip_reasons(&self, version: Version, results: &mut Results) {
        let (session, prompt) = match version {
            Version::V1 => ("agentCapabilities.sessionCapabilities", "agentCapabilities.promptCapabilities"),
            Version::V2 => ("capabilities.session", "capabilities.session.prompt"),
        };
        let rows = [
            (self.load, RuleId::LoadReplay, "agentCapabilities.loadSession".to_string()),
            (self.load, RuleId::ServesLoad, "agentCapabilities.loadSession".to_string()),
            (self.list, RuleId::ServesList, format!("{session}.list")),
            (self.resume, RuleId::ServesResume, format!("{session}.resume")),
            (self.close, RuleId::ServesClose, format!("{session}.close")),
            (self.fork, RuleId::ServesFork, format!("{session}.fork")),
            (self.image, RuleId::ServesImage, format!("{prompt}.image")),
            (self.audio, RuleId::ServesAudio, format!("{prompt}.audio")),
            (self.embedded_context, RuleId::ServesEmbeddedContext, format!("{prompt}.embeddedContext")),
        ];
        for (advertised, rule, path) in rows {
            if !advertised && rule.rule().applies_to(version) {
                results.skip_reason(rule, format!("the agent did not advertise `{path}` ({version})"));
            }
        }
    }
}

/// Whether `m` is a `session/update` with a conversation entry for `session` (either version's).
fn entry_for(m: &Value, session: &str) -> bool {
    matches!(m["method"].as_str().and_then(MethodName::of), Some(MethodName::SessionUpdate))
        && m["params"]["sessionId"] == session
        && m["params"]["update"]["sessionUpdate"].as_str().is_some_and(|kind| ENTRIES.contains(&kind))
}

/// How a restoring call went.
enum Restored {
    /// It held: what was seen.
    Pass(String),
    /// The agent refused it (it may not know the session in that process).
    Refused(String),
    /// It broke the rule: why.
    Broken(usize, String),
}

/// The main scenario's connection, for the calls of this module.
pub struct Scenario<'a> {
    pub agent: &'a mut Agent,
    pub options: &'a Options,
    pub version: Version,
    pub name: &'a str,
    pub cwd: &'a str,
}

impl Scenario<'_> {
    /// A request; its response, or a violation of `rule` when it is not answered in time.
    async fn ask(&mut self, method: &str, params: Value, rule: RuleId, results: &mut Results) -> Option<Value> {
        let line = self.agent.line();
        let id = self.agent.request(method, params).await;
        let response = self.agent.response(&id, Instant::now() + self.options.timeout).await;
        if response.is_none() {
            let detail = format!("`{method}` (line {line}) not answered within {:?}", self.options.timeout);
            results.violate(self.name, RuleViolation::new(rule, Role::Agent, line, detail));
        }
        response
    }

    /// Records an answer to an advertised call: PASS with `evidence` for a result, FAIL for an error.
    fn judge(
        &self,
        rule: RuleId,
        line: usize,
        what: &str,
        response: Option<&Value>,
        evidence: String,
        results: &mut Results,
    ) {
        match response {
            Some(r) if r.get("error").is_some() => {
                let detail = format!("{what} (line {line}) answered {} though advertised", error_text(r));
                results.violate(self.name, RuleViolation::new(rule, Role::Agent, line, detail));
            }
            Some(_) => {
                results.exercise(rule);
                results.evidence(rule, format!("{}: {evidence}", self.version));
            }
            None => {}
        }
    }

    /// In the first session, after its prompt turn: one prompt per advertised content type,
    /// `session/list`, `session/fork`, `session/set_mode` and `session/set_config_option`.
    pub async fn in_session(&mut self, advertised: &Advertised, session: &Session, results: &mut Results) {
        let uri = format!("file://{}/notes.txt", self.cwd);
        let blocks = [
            (
                advertised.image,
                RuleId::ServesImage,
                "an image",
                json!({ "type": "image", "mimeType": "image/png", "data": PNG }),
            ),
            (
                advertised.audio,
                RuleId::ServesAudio,
                "an audio clip",
                json!({ "type": "audio", "mimeType": "audio/wav", "data": WAV }),
            ),
            (
                advertised.embedded_context,
                RuleId::ServesEmbeddedContext,
                "an embedded resource",
                json!({ "type": "resource", "resource": { "uri": uri, "mimeType": "text/plain", "text": "a scratch file of acp conform\n" } }),
            ),
        ];
        for (on, rule, what, block) in blocks {
            if !on {
                continue;
            }
            let line = self.agent.line();
            let prompt = json!([{ "type": "text", "text": format!("Describe {what} in one word.") }, block]);
            let response = turn(self.agent, self.options, self.version, &session.id, prompt, false).await;
            let evidence = match &response {
                Some(r) => format!("a prompt with {what} answered {}", r["result"]),
                None => String::new(),
            };
            if response.is_none() {
                let detail =
                    format!("a prompt with {what} (line {line}) not answered within {:?}", self.options.timeout);
                results.violate(self.name, RuleViolation::new(rule, Role::Agent, line, detail));
            }
            self.judge(rule, line, &format!("a prompt with {what}"), response.as_ref(), evidence, results);
        }
        if advertised.list {
            let line = self.agent.line();
            let response = self
                .ask(method!(self.version, SessionList), json!({ "cwd": self.cwd }), RuleId::ServesList, results)
                .await;
            let sessions = response.as_ref().and_then(|r| r["result"]["sessions"].as_array());
            let ours = sessions.is_some_and(|s| s.iter().any(|s| s["sessionId"] == session.id.as_str()));
            let evidence = format!(
                "listed {} session(s) in the scratch directory, {}",
                sessions.map_or(0, Vec::len),
                if ours { "the one just used among them" } else { "not the one just used" }
            );
            self.judge(RuleId::ServesList, line, "`session/list`", response.as_ref(), evidence, results);
        }
        if advertised.fork {
            self.fork(session, results).await;
        }
        self.set_mode(session, results).await;
        self.set_config_option(session, results).await;
    }

    /// `session/fork` of `session`: its answer names a new session.
    #[cfg(feature = "unstable")]
    async fn fork(&mut self, session: &Session, results: &mut Results) {
        let line = self.agent.line();
        let params = json!({ "sessionId": session.id, "cwd": self.cwd, "mcpServers": [] });
        let response = self.ask(method!(self.version, SessionFork), params, RuleId::ServesFork, results).await;
        let forked = response.as_ref().and_then(|r| r["result"]["sessionId"].as_str());
        if forked == Some(session.id.as_str()) {
            let detail = format!("`session/fork` (line {line}) answered the id of the session forked, not a new one");
            results.violate(self.name, RuleViolation::new(RuleId::ServesFork, Role::Agent, line, detail));
        } else {
            let evidence = format!("forked into {}", forked.unwrap_or("?"));
            self.judge(RuleId::ServesFork, line, "`session/fork`", response.as_ref(), evidence, results);
        }
    }

    /// Not called: without the unstable tables the checker takes `session/fork` for a method no
    /// one implements (and its answer for a broken `rpc.method-not-found`).
    #[cfg(not(feature = "unstable"))]
    async fn fork(&mut self, _session: &Session, results: &mut Results) {
        results.skip_reason(RuleId::ServesFork, "`session/fork` is unstable: build acp with `--features unstable`");
    }

    /// `session/set_mode` to a mode the agent listed (another than the current one if it can).
    async fn set_mode(&mut self, session: &Session, results: &mut Results) {
        let modes = &session.answer["modes"];
        let current = modes["currentModeId"].as_str();
        let ids: Vec<&str> =
            modes["availableModes"].as_array().into_iter().flatten().filter_map(|m| m["id"].as_str()).collect();
        let Some(mode) = ids.iter().find(|id| Some(**id) != current).or(ids.first()) else {
            // v2 has no session modes (they are config options): the rule is v1's.
            if self.version == Version::V1 {
                results.skip_reason(RuleId::ServesSetMode, "the agent listed no `modes` in its `session/new` answer");
            }
            return;
        };
        let line = self.agent.line();
        let params = json!({ "sessionId": session.id, "modeId": mode });
        // v1's method, asked of any agent that lists modes.
        let response = self.ask(wire::SESSION_SET_MODE, params, RuleId::ServesSetMode, results).await;
        let evidence = format!("mode {} -> {mode}", current.unwrap_or("?"));
        self.judge(RuleId::ServesSetMode, line, "`session/set_mode`", response.as_ref(), evidence, results);
    }

    /// `session/set_config_option` on the first option listed, to another value it lists (a
    /// select) or the other value (a boolean); the answer's list shows the value taken.
    async fn set_config_option(&mut self, session: &Session, results: &mut Results) {
        // v1 has no keyword for it (a finding); v2's sentence is a MUST.
        let (key, rule) = match self.version {
            Version::V1 => ("id", RuleId::ServesConfigOption),
            Version::V2 => ("configId", RuleId::V2ServesConfigOption),
        };
        let options = session.answer["configOptions"].as_array().cloned().unwrap_or_default();
        let chosen = options.iter().find_map(|o| Some((o[key].as_str()?, pick(o)?)));
        let Some((config, value)) = chosen else {
            results.skip_reason(
                rule,
                "the agent listed no `configOptions` (with a value to choose) in its `session/new` answer",
            );
            return;
        };
        let mut params = json!({ "sessionId": session.id, "configId": config, "value": value });
        match (&value, self.version) {
            (Value::Bool(_), _) => params["type"] = json!("boolean"),
            (_, Version::V2) => params["type"] = json!("id"),
            // v1: the value id is the variant without `type`.
            (_, Version::V1) => {}
        }
        let line = self.agent.line();
        let response = self.ask(method!(self.version, SessionSetConfigOption), params, rule, results).await;
        let after = response
            .as_ref()
            .and_then(|r| r["result"]["configOptions"].as_array())
            .and_then(|list| list.iter().find(|o| o[key] == config))
            .map(|o| o["currentValue"].clone());
        if response.as_ref().is_some_and(|r| r.get("result").is_some()) && after.as_ref() != Some(&value) {
            let shown = after.map_or_else(|| "does not list the option".to_string(), |v| format!("shows {v}"));
            let detail = format!(
                "`session/set_config_option` {config} = {value} (line {line}) succeeded but its answer {shown}"
            );
            results.violate(self.name, RuleViolation::new(rule, Role::Agent, line, detail));
            return;
        }
        let evidence = format!("{config} = {value}, the answer shows it");
        self.judge(rule, line, "`session/set_config_option`", response.as_ref(), evidence, results);
    }

    /// `session/close` on `session` (idle by now).
    pub async fn close(&mut self, advertised: &Advertised, session: &str, results: &mut Results) {
        if !advertised.close {
            return;
        }
        let line = self.agent.line();
        let method = method!(self.version, SessionClose);
        let response = self.ask(method, json!({ "sessionId": session }), RuleId::ServesClose, results).await;
        self.judge(
            RuleId::ServesClose,
            line,
            "`session/close`",
            response.as_ref(),
            format!("closed {session}"),
            results,
        );
    }

    /// `session/load` and `session/resume` of `session` (which had a prompt turn), last in the
    /// scenario: in this connection first; what the agent refuses there is asked again of a fresh
    /// process once this one is stopped (an agent may refuse to load a session it holds live, or
    /// hold a lock on it, or write it out only on exit). A refusal in both is a finding of
    /// `cap.serves-load` / `cap.serves-resume`; `session.load-replay` judges the loads answered.
    pub async fn restore(
        &mut self,
        advertised: &Advertised,
        client: &ClientSide,
        init: &Value,
        session: &str,
        results: &mut Results,
    ) {
        let calls: Vec<(RuleId, &str)> = [
            (advertised.load, RuleId::ServesLoad, wire::SESSION_LOAD),
            (advertised.resume, RuleId::ServesResume, method!(self.version, SessionResume)),
        ]
        .into_iter()
        .filter(|(on, _, _)| *on)
        .map(|(_, rule, method)| (rule, method))
        .collect();
        let conversation = had_a_turn(&self.agent.transcript, session);
        let mut outcomes = Vec::new();
        for (rule, method) in calls {
            let outcome = restore_once(self.agent, self.options, method, session, self.cwd, conversation).await;
            outcomes.push((rule, method, self.name.to_string(), "in the same connection", outcome));
        }
        if outcomes.iter().any(|o| matches!(o.4, Restored::Refused(_))) {
            self.agent.stop().await;
            let name = format!("{} restore", self.name);
            let mut fresh = match start(self.options, client, u64::from(self.version.number())).await {
                Ok((mut agent, Some(_), _)) => match authenticate(&mut agent, self.options, self.version, init).await {
                    Ok(()) => Ok(agent),
                    Err(why) => Err((Some(agent), why)),
                },
                Ok((agent, None, _)) => Err((Some(agent), "no answer to `initialize`".to_string())),
                Err(Unstartable(why)) => Err((None, why)),
            };
            for (_, method, scenario, place, outcome) in &mut outcomes {
                let Restored::Refused(first) = outcome else { continue };
                let again = match &mut fresh {
                    Ok(agent) => restore_once(agent, self.options, method, session, self.cwd, conversation).await,
                    Err((_, why)) => Restored::Refused(format!("a fresh process could not be asked: {why}")),
                };
                *outcome = match again {
                    Restored::Refused(why) => {
                        Restored::Refused(format!("{first} in the same connection, {why} in a fresh process"))
                    }
                    Restored::Pass(evidence) => Restored::Pass(format!("{evidence} (the same connection: {first})")),
                    broken => broken,
                };
                scenario.clone_from(&name);
                *place = "in a fresh process";
            }
            match fresh {
                Ok(agent) | Err((Some(agent), _)) => end(agent, &name, results).await,
                Err((None, _)) => {}
            }
        }
        for (rule, method, scenario, place, outcome) in outcomes {
            judge_restored(results, self.version, session, (rule, method, &scenario, place), outcome);
        }
    }
}

/// The results of one `session/load` or `session/resume`: its rule, method, scenario and where it
/// was asked, and how it went.
fn judge_restored(
    results: &mut Results,
    version: Version,
    session: &str,
    (rule, method, scenario, place): (RuleId, &str, &str, &str),
    outcome: Restored,
) {
    let replay = rule == RuleId::ServesLoad;
    match outcome {
        Restored::Pass(evidence) => {
            results.exercise(rule);
            results.evidence(rule, format!("{version}: {method} {place}: {evidence}"));
            if replay {
                results.exercise(RuleId::LoadReplay);
                results.evidence(RuleId::LoadReplay, format!("{version}: {place}: {evidence}"));
            }
        }
        Restored::Refused(why) => {
            let detail = format!("`{method}` of {session} answered {why}, though advertised");
            results.violate(scenario, RuleViolation::new(rule, Role::Agent, 0, detail));
            if replay {
                results.skip_reason(RuleId::LoadReplay, "the agent refused `session/load` (cap.serves-load)");
            }
        }
        Restored::Broken(line, detail) => {
            // Answered (or not) against the sentence of the call: the replay's for a load.
            let rule = if replay { RuleId::LoadReplay } else { rule };
            if replay {
                results.exercise(RuleId::ServesLoad);
            }
            results.violate(scenario, RuleViolation::new(rule, Role::Agent, line, detail));
        }
    }
}

/// Whether a `session/prompt` of `session` was answered with a result in `transcript`: a
/// conversation the agent has to replay when the session is loaded.
fn had_a_turn(transcript: &[Value], session: &str) -> bool {
    let prompts: Vec<&Value> = transcript
        .iter()
        .filter(|record| record["from"] == "client")
        .map(|record| &record["message"])
        .filter(|m| matches!(m["method"].as_str().and_then(MethodName::of), Some(MethodName::SessionPrompt)))
        .filter(|m| m["params"]["sessionId"] == session)
        .map(|m| &m["id"])
        .collect();
    transcript.iter().any(|record| {
        let m = &record["message"];
        record["from"] == "agent"
            && m.get("method").is_none()
            && m.get("result").is_some()
            && prompts.contains(&&m["id"])
    })
}

/// One `session/load` (replay before the answer, none after) or `session/resume` call;
/// `conversation`: whether a turn of the session was answered (else there may be nothing to replay).
async fn restore_once(
    agent: &mut Agent,
    options: &Options,
    method: &str,
    session: &str,
    cwd: &str,
    conversation: bool,
) -> Restored {
    let line = agent.line();
    let id = agent.request(method, json!({ "sessionId": session, "cwd": cwd, "mcpServers": [] })).await;
    let mut before = 0usize;
    let mut response = None;
    let answered = agent
        .wait_for(Instant::now() + options.timeout, |m| {
            if entry_for(m, session) {
                before += 1;
            }
            let is = m.get("method").is_none() && m.get("id") == Some(&id);
            if is {
                response = Some(m.clone());
            }
            is
        })
        .await;
    let Some(response) = response.filter(|_| answered) else {
        return Restored::Broken(line, format!("`{method}` (line {line}) not answered within {:?}", options.timeout));
    };
    if response.get("error").is_some() {
        return Restored::Refused(error_text(&response));
    }
    // What comes right after the answer, before anything else is asked.
    let mut after = 0usize;
    agent
        .wait_for(Instant::now() + QUIET, |m| {
            if entry_for(m, session) {
                after += 1;
            }
            false
        })
        .await;
    if matches!(MethodName::of(method), Some(MethodName::SessionResume)) {
        return Restored::Pass(format!("answered, {before} conversation update(s) before the answer"));
    }
    match (before, after) {
        (_, 1..) => Restored::Broken(
            line,
            format!(
                "{after} replayed conversation update(s) came after the `session/load` answer (line {line}); \
                 {before} before it"
            ),
        ),
        (0, 0) if !conversation => Restored::Pass(
            "no turn of the session was answered before: nothing to replay, none replayed, none after".into(),
        ),
        (0, 0) => Restored::Broken(
            line,
            format!(
                "`session/load` (line {line}) answered with no conversation replayed, though the session had turns"
            ),
        ),
        (n, 0) => Restored::Pass(format!("{n} conversation update(s) replayed before the answer, none after")),
    }
}

/// A value for a config option other than its current one, when it lists one.
fn pick(option: &Value) -> Option<Value> {
    let current = &option["currentValue"];
    if option["type"] == "boolean" {
        return current.as_bool().map(|b| Value::Bool(!b));
    }
    // A flat list of `{value, name}`, or groups of them (`{group, name, options}`).
    let mut values = Vec::new();
    for item in option["options"].as_array().into_iter().flatten() {
        match item.get("options").and_then(Value::as_array) {
            Some(group) => values.extend(group.iter().filter_map(|o| o.get("value")).cloned()),
            None => values.extend(item.get("value").cloned()),
        }
    }
    values.iter().find(|v| *v != current).or(values.first()).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conversation entries are a choice among the versions' `session/update` kinds, which
    /// the generated unions list: a kind no schema has any more fails here.
    #[test]
    fn entries_are_session_updates_of_some_version() {
        let known = [acp_types::v1::SessionUpdate::KNOWN_TAGS, acp_types::v2::SessionUpdate::KNOWN_TAGS];
        for kind in ENTRIES {
            assert!(known.iter().any(|tags| tags.contains(kind)), "{kind} is no SessionUpdate kind");
        }
    }
}
