//! `acp conform`: drives an agent through scenarios that give every rule binding an agent the
//! chance to be broken, checks all traffic with the [`Checker`](crate::check::Checker) (schema and
//! rules), and prints one verdict per rule. A fresh agent process per scenario, so that no state
//! leaks from one to the next:
//!
//! - negotiation: `initialize` asking for 1, 2, 65535 and 0, then a cross-check of the answers;
//! - per protocol version: a main scenario (unknown and `_` methods, notifications, a line that
//!   is not JSON, `authenticate` with `--auth`, two sessions, a prompt turn, a `--tool-prompt`
//!   turn, what the agent advertises (the `advertised` module), a cancelled turn with
//!   `--cancel-prompt`) and, in v1, a turn with no client capabilities (the agent must not call
//!   `fs/*` or `terminal/*`). Methods the agent did not advertise are not called: the rules
//!   against calling them bind the client, which `acp conform` is.
//!
//! An agent that cannot be brought to a session (`session/new` or `authenticate` refused) gets a
//! report that says why, with the `authMethods` it lists, and exit status 3.

/// The wire name of the method `$marker` in `version` (a method both versions have), from that
/// version's generated marker. Defined before the submodules, so that they can use it too.
macro_rules! method {
    ($version:expr, $marker:ident) => {
        match $version {
            acp_types::Version::V1 => <acp_types::v1::methods::$marker as acp_types::support::rpc::Method>::METHOD,
            acp_types::Version::V2 => <acp_types::v2::methods::$marker as acp_types::support::rpc::Method>::METHOD,
        }
    };
}

mod advertised;
pub mod client;
mod driver;
mod options;
mod report;
mod steps;
mod terminal;

use crate::check::{wire, Role, RuleViolation};
use acp_rpc::rules::{self, RuleId};
use acp_types::Version;
use driver::{Agent, ClientSide};
use report::Results;
use steps::{auth_methods, authenticate, end, error_text, finish, start, turn, Session, QUIET};

pub use options::Options;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
pub(crate) use steps::Unstartable;
use tokio::time::Instant;

/// An `initialize` probe of a version no one publishes, and one below every version.
const FUTURE: u64 = 65535;
const BELOW: u64 = 0;

/// Runs the scenarios and prints the verdicts; exit 0 (every MUST passes), 1 (one fails),
/// 2 (the agent cannot be started), 3 (the agent could not be brought to a session: the
/// verdicts cover little, whatever they say).
pub fn run(options: Options) -> ExitCode {
    let json = options.json;
    verdict("acp conform", json, |scratch| async move { conform(&options, &scratch).await })
}

/// What `acp conform` and `acp conform --client` share around their scenarios: a runtime and a
/// scratch directory for `run`, then its verdicts printed (text or JSON) and the exit status
/// (2 when it could not start, 3 when a scenario went unreached, 1 when a MUST fails).
pub(crate) fn verdict<F, Fut>(command: &str, json: bool, run: F) -> ExitCode
where
    F: FnOnce(PathBuf) -> Fut,
    Fut: std::future::Future<Output = Result<Results, Unstartable>>,
{
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{command}: {e}");
            return ExitCode::from(2);
        }
    };
    let scratch = match tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("{command}: cannot create a scratch directory: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(run(scratch.clone()));
    let _ = std::fs::remove_dir_all(&scratch);
    let results = match outcome {
        Ok(results) => results,
        Err(Unstartable(why)) => {
            eprintln!("{command}: {why}");
            return ExitCode::from(2);
        }
    };
    let exit = if results.incomplete() { 3 } else { u8::from(results.must_failed()) };
    if json {
        println!("{}", results.json(exit));
    } else {
        print!("{}", results.text());
    }
    ExitCode::from(exit)
}

/// A fresh scratch directory (absolute, canonical: `fs/*` paths are compared with it).
fn tempdir() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir().canonicalize()?;
    for n in 0..1000u32 {
        let dir = base.join(format!("acp-conform-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                std::fs::write(dir.join("notes.txt"), "a scratch file of acp conform\n")?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free name"))
}

async fn conform(options: &Options, scratch: &std::path::Path) -> Result<Results, Unstartable> {
    let mut results = Results::default();
    let full = ClientSide { fs: true, terminal: true, scratch: scratch.to_path_buf() };
    let answers = negotiate(options, &full, &mut results).await?;
    before_initialize(options, &full, &mut results).await;
    // Why each version selected ran no session, for a run that ran none.
    let mut not_run = Vec::new();
    let mut sessions = 0;
    for version in Version::ALL.iter().copied() {
        let number = u64::from(version.number());
        if !options.versions.contains(&version) {
            skip_version(&mut results, version, format!("--protocol-version selects another version than {version}"));
            continue;
        }
        match negotiated(number, answers.get(&number)) {
            Negotiated::Speaks => {}
            Negotiated::Fallback(why) => {
                not_run.push(format!("{version}: {why}"));
                skip_version(&mut results, version, why);
                continue;
            }
            Negotiated::Cannot(why) => {
                results.unreached(&format!("initialize {number}"), why);
                continue;
            }
        }
        match main_scenario(options, version, &full, &mut results).await {
            Ok(()) => sessions += 1,
            Err(why) => not_run.push(format!("{version}: {why}")),
        }
        if version == Version::V1 {
            let bare = ClientSide { fs: false, terminal: false, scratch: scratch.to_path_buf() };
            no_capabilities(options, &bare, &mut results).await;
        }
    }
    if sessions == 0 && !results.incomplete() {
        // Nothing that needs a session was exercised: that is no pass.
        results.unreached("every version", format!("no session was run ({})", not_run.join("; ")));
    }
    if options.cancel_prompt.is_none() {
        // v1's updates-before-response binds the updates of a cancelled turn only.
        for rule in [RuleId::V1Cancelled, RuleId::V1UpdatesBeforeResponse, RuleId::V2Cancelled] {
            results.skip_reason(rule, "no --cancel-prompt given (a prompt that keeps the agent busy)");
        }
    }
    client_methods_unused(options, &mut results);
    Ok(results)
}

/// Why `cap.client-fs` and `cap.client-terminal` may go unexercised.
fn client_methods_unused(options: &Options, results: &mut Results) {
    // An agent that asked for permission did use tools: it ran them itself, which no rule
    // forbids (the client's `fs/*` and `terminal/*` are offered, not imposed).
    let permissions = results.requested(wire::SESSION_REQUEST_PERMISSION);
    let unused = match (&options.tool_prompt, permissions) {
        (Some(_), 0) => "the agent never called it, --tool-prompt included".to_string(),
        (Some(_), n) => {
            format!("the agent used tools ({n} permission request(s)) but ran them itself, never calling it")
        }
        (None, _) => "the agent never called it (--tool-prompt gives a prompt that makes it use tools)".to_string(),
    };
    results.skip_reason(RuleId::CapClientFs, format!("`fs/*`: {unused}"));
    results.skip_reason(RuleId::CapClientTerminal, format!("`terminal/*`: {unused}"));
}

/// Whether a client that offered `asked` can go on with the agent's answer.
enum Negotiated {
    /// It answered the version asked.
    Speaks,
    /// It answered an older version the client speaks too, an error or nothing: this version's
    /// rules are not exercised (the older version's scenarios are), and why.
    Fallback(String),
    /// It answered a version the client did not offer or has no schema for: by the spec the
    /// client closes the connection, so no session can be run, and why.
    Cannot(String),
}

fn negotiated(asked: u64, answer: Option<&Answer>) -> Negotiated {
    match answer {
        Some(Answer::Version(v)) if *v == asked => Negotiated::Speaks,
        Some(Answer::Version(v)) if *v < asked && known(*v) => {
            Negotiated::Fallback(format!("the agent negotiated {v} when asked for {asked}"))
        }
        Some(Answer::Version(v)) => {
            let what = if known(*v) {
                "a version above the one asked, which this client did not offer"
            } else {
                "a version no schema defines"
            };
            Negotiated::Cannot(format!(
                "asked for version {asked}, the agent answered {v}, {what} (this client speaks {}): a client \
                 that cannot speak the answer closes the connection",
                spoken()
            ))
        }
        Some(Answer::Error(code)) => {
            Negotiated::Fallback(format!("the agent answered error {code} when asked for {asked}"))
        }
        Some(Answer::None) | None => Negotiated::Fallback(format!("the agent did not answer `initialize` for {asked}")),
    }
}

/// Whether a schema defines protocol version `v`.
fn known(v: u64) -> bool {
    u16::try_from(v).ok().and_then(Version::from_number).is_some()
}

/// The versions this tool speaks, in words (`1, 2`).
fn spoken() -> String {
    Version::ALL.iter().map(|v| v.number().to_string()).collect::<Vec<_>>().join(", ")
}

fn skip_version(results: &mut Results, version: Version, why: String) {
    for rule in rules::RULES.iter().filter(|r| r.versions == [version]) {
        results.skip_reason(rule.id, why.clone());
    }
}

/// An agent's answer to `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Version(u64),
    Error(i64),
    None,
}

/// Negotiation probes, one process each, and the cross-check of their answers.
async fn negotiate(
    options: &Options,
    client: &ClientSide,
    results: &mut Results,
) -> Result<std::collections::BTreeMap<u64, Answer>, Unstartable> {
    let mut answers = std::collections::BTreeMap::new();
    for requested in [1, 2, FUTURE, BELOW] {
        let (mut agent, response, _) = start(options, client, requested).await?;
        let answer = match &response {
            Some(r) => match (r["result"]["protocolVersion"].as_u64(), r["error"]["code"].as_i64()) {
                (Some(v), _) => Answer::Version(v),
                (None, Some(code)) => Answer::Error(code),
                (None, None) => Answer::None,
            },
            None => Answer::None,
        };
        if requested == 1 && answer == Answer::None && !agent.closed() {
            agent.stop().await;
            return Err(Unstartable(format!("the agent did not answer `initialize` within {:?}", options.timeout)));
        }
        agent.stop().await;
        let name = format!("initialize {requested}");
        results.negotiation.push(json!({ "requested": requested, "response": response }));
        finish(&name, agent, results);
        answers.insert(requested, answer);
    }
    cross_check(&answers, results);
    Ok(answers)
}

/// `init.version` over the answers: each must be the highest version the agent evidently
/// supports (it answered it to some request) at or below the request, or, when there is none,
/// its lowest one or error -32022; the answer to 65535 is not 65535 (ACP-INIT-003); and an
/// answer above the request breaks v2's "at or below" when v2 or later defines it. An answer
/// that no schema defines cannot be judged: it is never counted as a pass, and the report says so.
fn cross_check(answers: &std::collections::BTreeMap<u64, Answer>, results: &mut Results) {
    let supported: Vec<u64> = answers
        .values()
        .filter_map(|a| match a {
            Answer::Version(v) if known(*v) => Some(*v),
            _ => None,
        })
        .collect();
    for (&requested, &answer) in answers {
        let best = supported.iter().copied().filter(|s| *s <= requested).max();
        let name = format!("initialize {requested}");
        match judge_answer(requested, answer, best) {
            Judged::Holds => results.exercise(RuleId::InitVersion),
            Judged::Breaks(detail) => {
                results.violate(&name, RuleViolation::new(RuleId::InitVersion, Role::Agent, 1, detail))
            }
            Judged::Unjudged(why) => {
                results.evidence(RuleId::InitVersion, format!("not judged: {why}"));
                results.skip_reason(RuleId::InitVersion, why);
            }
        }
    }
}

/// One `initialize` answer against `init.version`.
enum Judged {
    Holds,
    Breaks(String),
    Unjudged(String),
}

/// Judges the answer to a request of `requested`; `best` is the highest version the agent
/// evidently supports at or below it.
fn judge_answer(requested: u64, answer: Answer, best: Option<u64>) -> Judged {
    let newest = Version::ALL.iter().map(|v| u64::from(v.number())).max().unwrap_or(1);
    match answer {
        Answer::Version(v) if v == requested && v > newest => {
            Judged::Breaks(format!("answered {v}, the version requested, which is no published version"))
        }
        Answer::Version(v) if !known(v) => Judged::Unjudged(format!(
            "asked for {requested}, the agent answered {v}, which no schema defines (known: {})",
            spoken()
        )),
        Answer::Version(v) if v > requested && v >= 2 => Judged::Breaks(format!(
            "asked for {requested}, answered {v}: above the request, where the answer is the highest version at \
             or below it (or error -32022)"
        )),
        Answer::Version(v) => match best {
            Some(best) if best != v => Judged::Breaks(format!(
                "asked for {requested}, answered {v}, but it supports {best} (its answer to another request), the \
                 highest at or below the request"
            )),
            _ => Judged::Holds,
        },
        Answer::Error(code) => match best {
            Some(best) => {
                Judged::Breaks(format!("asked for {requested}, answered error {code}, but it supports {best}"))
            }
            None if code != i64::from(acp_types::v2::ErrorCode::UnsupportedProtocolVersion.code()) => {
                Judged::Breaks(format!(
                "asked for {requested}, below every version it supports, answered error {code}: expected its version \
                 or -32022"
            ))
            }
            None => Judged::Holds,
        },
        Answer::None => Judged::Breaks(format!("no answer to `initialize` asking for {requested}")),
    }
}

/// A request and its response, if it comes in time (one that never comes is judged at the
/// scenario's end: `rpc.reply`).
async fn call(agent: &mut Agent, options: &Options, method: &str, params: Value) -> Option<Value> {
    let id = agent.request(method, params).await;
    agent.response(&id, Instant::now() + options.timeout).await
}

/// `--auth` if given, then `session/new`; why not, in words, when the agent refuses.
async fn open_session(
    agent: &mut Agent,
    options: &Options,
    version: Version,
    init: &Value,
    params: &Value,
) -> Result<Session, String> {
    authenticate(agent, options, version, init).await?;
    let response = call(agent, options, method!(version, SessionNew), params.clone()).await;
    let Some(response) = response else {
        return Err(format!("`session/new` not answered within {:?}", options.timeout));
    };
    match response["result"]["sessionId"].as_str() {
        Some(id) => Ok(Session { id: id.to_string(), answer: response["result"].clone() }),
        None if response.get("error").is_some() => {
            let hint = match (&options.auth, init["authMethods"].as_array().is_some_and(|m| !m.is_empty())) {
                (None, true) => "; run again with --auth METHOD_ID",
                _ => "",
            };
            Err(format!("`session/new` answered {}; {}{hint}", error_text(&response), auth_methods(init)))
        }
        None => Err("`session/new` answered without a `sessionId`".into()),
    }
}

/// The version's main scenario; `Err` with why when it ran no session.
async fn main_scenario(
    options: &Options,
    version: Version,
    client: &ClientSide,
    results: &mut Results,
) -> Result<(), String> {
    let name = format!("{version} main");
    let Ok((mut agent, Some(init), _)) = start(options, client, u64::from(version.number())).await else {
        results.violate(
            &name,
            RuleViolation::new(RuleId::InitVersion, Role::Agent, 1, "no answer to `initialize`".into()),
        );
        return Err("no answer to `initialize`".into());
    };
    let init = init["result"].clone();
    // Unknown methods, notifications, a line that is not JSON; the barrier's answer comes after
    // any answer to those.
    for method in ["_acp_conform/no_such_method", "acp_conform/no_such_method", "_acp_conform/barrier"] {
        agent.checker.treat_as_unknown(method);
    }
    call(&mut agent, options, "_acp_conform/no_such_method", json!({})).await;
    call(&mut agent, options, "acp_conform/no_such_method", json!({})).await;
    agent.notify("_acp_conform/notice", json!({})).await;
    agent.notify("acp_conform/notice", json!({})).await;
    agent.send_raw("{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": ").await;
    call(&mut agent, options, "_acp_conform/barrier", json!({})).await;
    agent.quiet(QUIET).await;

    let cwd = client.scratch.display().to_string();
    let new_params = match version {
        Version::V1 => json!({ "cwd": cwd, "mcpServers": [] }),
        Version::V2 => json!({ "cwd": cwd }),
    };
    if version == Version::V2 && !init["capabilities"]["session"].is_object() {
        // `cap.session` binds the client: an agent without sessions is not asked for one.
        let why = "the agent did not advertise `capabilities.session`";
        for rule in rules::RULES.iter().filter(|r| r.versions == [Version::V2]) {
            results.skip_reason(rule.id, why);
        }
        results.skip_reason(RuleId::DistinctSessions, why);
        end(agent, &name, results).await;
        return Err(why.into());
    }
    let first = match open_session(&mut agent, options, version, &init, &new_params).await {
        Ok(session) => session,
        Err(why) => {
            results.unreached(&name, why.clone());
            end(agent, &name, results).await;
            return Err(why);
        }
    };
    let new = method!(version, SessionNew);
    let response = call(&mut agent, options, new, new_params.clone()).await;
    let second = response.as_ref().and_then(|r| r["result"]["sessionId"].as_str()).map(str::to_string);
    turn(&mut agent, options, version, &first.id, text_prompt(&options.prompt), false).await;
    if let Some(text) = &options.tool_prompt {
        turn(&mut agent, options, version, &first.id, text_prompt(&text.replace("{cwd}", &cwd)), false).await;
    }
    let advertised = advertised::Advertised::of(version, &init);
    advertised.skip_reasons(version, results);
    let mut scenario = advertised::Scenario { agent: &mut agent, options, version, name: &name, cwd: &cwd };
    scenario.in_session(&advertised, &first, results).await;
    if let (Some(text), Some(session)) = (&options.cancel_prompt, &second) {
        turn(scenario.agent, options, version, session, text_prompt(text), true).await;
    }
    if let Some(session) = &second {
        scenario.close(&advertised, session, results).await;
    }
    // `session/load` is not called when not advertised: `cap.load-session` binds the client.
    scenario.restore(&advertised, client, &init, &first.id, results).await;
    end(agent, &name, results).await;
    Ok(())
}

/// A request before `initialize`: the agent answers it with an error (`init.refuse-before-initialize`).
async fn before_initialize(options: &Options, client: &ClientSide, results: &mut Results) {
    let Ok(mut agent) = Agent::spawn(&options.agent, client.clone(), options.ext.clone()) else { return };
    agent.judge_replies = false;
    let params = json!({ "cwd": client.scratch.display().to_string(), "mcpServers": [] });
    let line = agent.line();
    // No version is negotiated: the name is both versions'.
    let id = agent.request(wire::SESSION_NEW, params).await;
    let answered = agent.response(&id, Instant::now() + options.timeout).await.is_some();
    // `init.first` binds the client; what an agent does with an early request is this finding's.
    if !answered && !agent.closed() {
        let detail =
            format!("`session/new` before `initialize` (line {line}) not answered within {:?}", options.timeout);
        agent.checker.note_violation(RuleId::InitRefuseEarly, Role::Agent, line, detail);
    }
    end(agent, "before initialize", results).await;
}

/// v1 with no client capabilities: the agent must not call `fs/*` or `terminal/*`.
async fn no_capabilities(options: &Options, client: &ClientSide, results: &mut Results) {
    let name = "v1 no client capabilities".to_string();
    let Ok((mut agent, Some(init), _)) = start(options, client, 1).await else { return };
    let cwd = client.scratch.display().to_string();
    let params = json!({ "cwd": cwd, "mcpServers": [] });
    match open_session(&mut agent, options, Version::V1, &init["result"], &params).await {
        Ok(session) => {
            // The tool prompt, if any: the agent is asked to use what it was not offered.
            let text = options.tool_prompt.as_ref().unwrap_or(&options.prompt).replace("{cwd}", &cwd);
            turn(&mut agent, options, Version::V1, &session.id, text_prompt(&text), false).await;
        }
        Err(why) => results.unreached(&name, why),
    }
    end(agent, &name, results).await;
}

/// A prompt of one text block.
fn text_prompt(text: &str) -> Value {
    json!([{ "type": "text", "text": text }])
}
