//! `acp conform --client`: stands in for the agent of a client and judges the client's traffic
//! against every rule that binds a client (the rows of [`acp_rpc::rules::RULES`] that bind the
//! client or both ends), with the [`Checker`](crate::check::Checker), printing one verdict per
//! rule as `acp conform` does for agents.
//!
//! The client is started once per scenario with the stand-in's command where `{agent}` stands (a
//! lone `{agent}` argument becomes its words, `{agent}` inside an argument the command as one
//! shell-quoted string) and the `--prompt` text where `{prompt}` stands. The stand-in's command,
//! `acp conform-stand-in --socket PATH`, is a relay: it copies its stdin to a Unix socket the
//! conform process listens on and the socket back to its stdout, so that the conform process
//! plays the agent itself. A socket path, rather than a pipe the client would have to pass on
//! to its agent: clients and their SDKs start agents with the standard streams only (Node's
//! `spawn`, Python's `subprocess` close every other descriptor).
//!
//! Scenarios, one client process each, per protocol version (the stand-in answers `initialize`
//! with the scenario's version when the client asks for it or more; a client that asks for an
//! older one, or asks for a newer one and does not go on with the answer, gets that version's
//! rules SKIPped, not judged):
//!
//! - `turn`: the stand-in advertises the baseline only (v1: no `loadSession`, no prompt
//!   capabilities; v2: `capabilities.session: {}`) and, on the client's prompt, sends a `_`
//!   notification (which no one answers), a `_` request it must answer -32601, the turn's updates
//!   (v2: `running`, the `user_message`, then the text), a `session/request_permission` with two
//!   options, and once answered ends the turn `end_turn` (or `cancelled` after `session/cancel`:
//!   in v1 the client answers the pending permission request `cancelled`; in v2 the stand-in
//!   then cancels that request with `$/cancel_request`, which the client answers `cancelled`);
//!   every other request is answered -32601. Then it waits for the client to close its side.

mod conn;
mod offers;

use super::report::Results;
use super::steps::Unstartable;
use crate::check::{wire, Role};
use acp_rpc::rules::{self, RuleId};
use acp_rpc::spawn::ProcessGroup;
use acp_types::support::rpc::{Method, RpcError};
use acp_types::{v2, MethodName, Version};
use conn::{Conn, Event};
use offers::{Calls, Offered};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;
use tokio::net::UnixListener;
use tokio::time::Instant;

/// The placeholder for the stand-in agent's command in the client's command.
pub const AGENT: &str = "{agent}";
/// The placeholder for the prompt text in the client's command.
pub const PROMPT: &str = "{prompt}";
/// The internal subcommand the stand-in runs as.
pub const STAND_IN: &str = "conform-stand-in";
/// A request and a notification no one implements (`_`: an extension name).
const PROBE: &str = "_acp_conform/probe";
const NOTICE: &str = "_acp_conform/notice";
/// How long a client may keep running once its turn ended, before it is ended.
const AFTER_TURN: Duration = Duration::from_secs(2);
/// How long the stand-in holds `session/new` and `session/prompt` before answering them.
const HOLD: Duration = Duration::from_millis(200);

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The versions to drive (both by default).
    pub versions: Vec<Version>,
    /// The text put where `{prompt}` stands.
    pub prompt: String,
    /// Every wait.
    pub timeout: Duration,
    /// JSON output.
    pub json: bool,
    /// The client command, with `{agent}` (and `{prompt}`) in it.
    pub client: Vec<String>,
}

/// Runs the scenarios and prints the verdicts; exit 0 (every MUST passes), 1 (one fails),
/// 2 (the client cannot be started, never starts the agent, or the command has no `{agent}`),
/// 3 (the client never sent its prompt in some scenario).
pub fn run(options: Options) -> ExitCode {
    if !options.client.iter().any(|word| word.contains(AGENT)) {
        eprintln!("acp conform --client: the client command has no {AGENT} (where the agent command goes)");
        return ExitCode::from(2);
    }
    let json = options.json;
    super::verdict("acp conform --client", json, |scratch| async move { conform(&options, &scratch).await })
}

/// The client's command for one scenario: `{agent}` and `{prompt}` replaced.
pub fn client_command(client: &[String], stand_in: &[String], prompt: &str) -> Vec<String> {
    let quoted = stand_in.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
    let mut words = Vec::new();
    for word in client {
        if word == AGENT {
            words.extend(stand_in.iter().cloned());
        } else {
            words.push(word.replace(AGENT, &quoted).replace(PROMPT, prompt));
        }
    }
    words
}

/// A word as a POSIX shell reads it back.
fn quote(word: &str) -> String {
    let plain = !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./=:,+@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

async fn conform(options: &Options, scratch: &Path) -> Result<Results, Unstartable> {
    let exe = std::env::current_exe().map_err(|e| Unstartable(format!("cannot find the acp binary: {e}")))?;
    let mut results = Results::judging(Role::Client);
    for version in Version::ALL.iter().copied() {
        if !options.versions.contains(&version) {
            skip_version(&mut results, version, format!("--protocol-version selects another version than {version}"));
            continue;
        }
        let socket = scratch.join(format!("agent-v{}.sock", version.number()));
        let stand_in =
            vec![exe.display().to_string(), STAND_IN.to_string(), "--socket".to_string(), socket.display().to_string()];
        let command = client_command(&options.client, &stand_in, &options.prompt);
        let name = format!("turn v{}", version.number());
        let mut scenario = Scenario::start(&name, &command, &socket, scratch, options.timeout).await?;
        let outcome = scenario.turn(version, options).await;
        let Scenario { mut conn, mut client, group, stderr, calls, .. } = scenario;
        conn.close().await;
        end(&mut client, &group).await;
        conn.checker.judge_replies(Role::Agent, conn.requests());
        conn.checker.finish();
        results.add(&name, conn.checker.rule_results_of(Role::Client));
        results.lossy(&name, std::mem::take(&mut conn.lossy));
        for (rule, evidence) in calls.evidence {
            results.evidence(rule, format!("v{}: {evidence}", version.number()));
        }
        for (rule, why) in calls.skipped {
            results.skip_reason(rule, why);
        }
        results.scenarios.push(json!({ "name": name, "transcript": conn.transcript }));
        match outcome {
            Outcome::Prompted => {}
            Outcome::Negotiated(why) => skip_version(&mut results, version, why),
            Outcome::NoPrompt(why) => {
                let tail = std::fs::read_to_string(&stderr).unwrap_or_default();
                let tail: Vec<&str> = tail.lines().rev().take(3).collect();
                let said = if tail.is_empty() {
                    String::new()
                } else {
                    format!(" (its stderr ends: {})", tail.into_iter().rev().collect::<Vec<_>>().join(" / "))
                };
                results.unreached(&name, format!("{why}{said}"));
            }
        }
    }
    results.skip_reason(
        RuleId::CancelPermission,
        "the client never sent `session/cancel` while a permission request was pending",
    );
    results.skip_reason(RuleId::CapPromptContent, "the client sent only text and resource links");
    results.skip_reason(RuleId::CapLoadSession, "the client never called `session/load`");
    results.skip_reason(
        RuleId::MethodNotFound,
        "the client never answered the stand-in's `_` request (which `rpc.reply` judges)",
    );
    results.skip_reason(RuleId::ClientServesFs, "the client advertised `fs` in no v1 scenario that ran");
    results.skip_reason(RuleId::ClientServesTerminal, "the client advertised `terminal` in no v1 scenario that ran");
    Ok(results)
}

fn skip_version(results: &mut Results, version: Version, why: String) {
    for rule in rules::RULES.iter().filter(|r| r.versions == [version]) {
        results.skip_reason(rule.id, why.clone());
    }
}

/// Ends the client and its process group: `SIGTERM`, half a second, then `SIGKILL`.
async fn end(client: &mut tokio::process::Child, group: &ProcessGroup) {
    let _ = group.end(client, Duration::from_millis(500)).await;
}

/// How a scenario went.
enum Outcome {
    /// The client prompted (the rules of a turn are judged).
    Prompted,
    /// The client settled on another version, or does not speak the scenario's (its
    /// version-specific rules SKIP), and why.
    Negotiated(String),
    /// The client never prompted, and why.
    NoPrompt(String),
}

/// One client process and its connection to the stand-in.
struct Scenario {
    conn: Conn,
    client: tokio::process::Child,
    /// The client's process group (its agent, the stand-in, is in it too).
    group: ProcessGroup,
    stderr: PathBuf,
    scratch: PathBuf,
    timeout: Duration,
    /// The calls of what the client advertised (v1), and what they showed.
    calls: Calls,
}

/// The turn running.
struct Turn {
    session: Value,
    /// The prompt request's id (v1: answered when the turn ends).
    prompt: Value,
    permission: Value,
    /// The permission request was answered.
    permitted: bool,
    cancelled: bool,
}

/// Where the `turn` scenario is.
struct State {
    /// The scenario's version.
    target: Version,
    /// The version agreed, once `initialize` is answered.
    version: Option<Version>,
    /// What the client advertised (v1).
    offered: Offered,
    prompted: bool,
    sessions: usize,
    turn: Option<Turn>,
    /// Prompts that came while a turn ran, oldest last.
    queued: Vec<Value>,
    /// When the last turn ended.
    ended: Option<Instant>,
    /// The client asked for a newer version than the scenario's (and was answered this one).
    asked_newer: Option<u64>,
    /// Requests of the client answered after [`HOLD`] (`session/new`, `session/prompt`), oldest
    /// first, with when: while they are pending, a client that reuses their id is seen doing so.
    held: VecDeque<(Instant, Value)>,
}

impl State {
    fn new(target: Version) -> Self {
        State {
            target,
            version: None,
            offered: Offered::default(),
            prompted: false,
            sessions: 0,
            turn: None,
            queued: Vec::new(),
            ended: None,
            asked_newer: None,
            held: VecDeque::new(),
        }
    }

    /// The next held request whose time has come.
    fn due(&mut self) -> Option<Value> {
        match self.held.front() {
            Some((at, _)) if *at <= Instant::now() => self.held.pop_front().map(|(_, message)| message),
            _ => None,
        }
    }
}

impl Scenario {
    /// Starts the client and waits for its agent (the stand-in) to connect.
    async fn start(
        name: &str,
        command: &[String],
        socket: &Path,
        scratch: &Path,
        timeout: Duration,
    ) -> Result<Scenario, Unstartable> {
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket)
            .map_err(|e| Unstartable(format!("cannot listen on {}: {e}", socket.display())))?;
        let (program, args) = command.split_first().ok_or_else(|| Unstartable("no client command".into()))?;
        let stderr = scratch.join(format!("{}.stderr", name.replace(' ', "-")));
        let log = std::fs::File::create(&stderr).map_err(|e| Unstartable(format!("cannot create a log: {e}")))?;
        let (mut client, group) = ProcessGroup::spawn(
            tokio::process::Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .kill_on_drop(true),
        )
        .map_err(|e| Unstartable(format!("cannot start {program}: {e}")))?;
        let stream = tokio::select! {
            accepted = tokio::time::timeout(timeout, listener.accept()) => match accepted {
                Ok(Ok((stream, _))) => stream,
                Ok(Err(e)) => return Err(Unstartable(format!("[{name}] the stand-in could not connect: {e}"))),
                Err(_) => {
                    end(&mut client, &group).await;
                    return Err(Unstartable(format!(
                        "[{name}] the client did not start its agent ({AGENT}) within {timeout:?}: {}",
                        command.join(" ")
                    )));
                }
            },
            status = client.wait() => {
                let said = std::fs::read_to_string(&stderr).unwrap_or_default();
                return Err(Unstartable(format!(
                    "[{name}] the client exited ({}) without starting its agent ({AGENT}): {}\n{said}",
                    status.map_or_else(|e| e.to_string(), |s| s.to_string()),
                    command.join(" ")
                )));
            }
        };
        let _ = std::fs::remove_file(socket);
        let scratch = scratch.to_path_buf();
        Ok(Scenario { conn: Conn::new(stream), client, group, stderr, scratch, timeout, calls: Calls::default() })
    }

    /// The `turn` scenario (see the module docs).
    async fn turn(&mut self, target: Version, options: &Options) -> Outcome {
        let mut state = State::new(target);
        self.conn.checker.treat_as_unknown(PROBE);
        loop {
            while let Some(held) = state.due() {
                self.answer_held(&mut state, held, &options.prompt).await;
            }
            let mut deadline = match state.ended {
                Some(at) => at + AFTER_TURN,
                None => Instant::now() + self.timeout,
            };
            if let Some((at, _)) = state.held.front() {
                deadline = deadline.min(*at);
            }
            let message = match self.conn.next(deadline).await {
                Event::Message(message) => message,
                Event::Junk => continue,
                Event::Closed => break,
                Event::Timeout if !state.held.is_empty() => continue,
                Event::Timeout if state.ended.is_some() => break,
                Event::Timeout if state.sessions == 0 && state.asked_newer.is_some() => break,
                Event::Timeout => return Outcome::NoPrompt(self.stalled(&state)),
            };
            if let Some(outcome) = self.handle(&mut state, message, &options.prompt).await {
                return outcome;
            }
        }
        if state.prompted {
            Outcome::Prompted
        } else if let (0, Some(asked)) = (state.sessions, state.asked_newer) {
            Outcome::Negotiated(format!(
                "the client asked for version {asked} and did not go on with {target} (the stand-in's answer)"
            ))
        } else {
            Outcome::NoPrompt("the client closed its agent without sending `session/prompt`".into())
        }
    }

    /// Why the client stopped before its turn ended.
    fn stalled(&self, state: &State) -> String {
        match (&state.turn, state.prompted) {
            (Some(turn), _) if turn.permitted => {
                format!("the calls of what the client advertised were not answered within {:?}", self.timeout)
            }
            (Some(_), _) => format!("the permission request was not answered within {:?}", self.timeout),
            (None, true) => format!("the client stopped sending within {:?}", self.timeout),
            (None, false) => format!("no `session/prompt` within {:?}", self.timeout),
        }
    }

    /// One message of the client; `Some` when it ends the scenario.
    async fn handle(&mut self, state: &mut State, message: Value, text: &str) -> Option<Outcome> {
        let method = message.get("method").and_then(Value::as_str).map(str::to_string);
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        // The method as sent, and what it is if a schema defines it.
        let method = method.as_deref().map(|m| (m, MethodName::of(m)));
        match (method, id) {
            // A response: the permission's, once the calls of what the client advertised are
            // answered too, ends the turn.
            (None, Some(id)) => {
                match &mut state.turn {
                    Some(turn) if turn.permission == id => turn.permitted = true,
                    _ => {
                        self.calls.answered(&mut self.conn, &message).await;
                    }
                }
                if state.turn.as_ref().is_some_and(|t| t.permitted) && self.calls.done() {
                    if let Some(done) = state.turn.take() {
                        self.end_turn(state.version, done).await;
                        state.ended = Some(Instant::now());
                    }
                    if let Some(next) = state.queued.pop() {
                        state.turn = self.start_turn(state, next, text).await;
                        state.ended = None;
                    }
                }
            }
            (Some((_, Some(MethodName::SessionCancel))), None) => self.cancel(state, &params).await,
            (Some(_), None) | (None, None) => {}
            (Some((_, Some(MethodName::Initialize))), Some(id)) => return self.initialize(state, id, &params).await,
            (Some((_, Some(MethodName::SessionNew))), Some(_)) => {
                state.held.push_back((Instant::now() + HOLD, message))
            }
            (Some((_, Some(MethodName::SessionPrompt))), Some(_)) => {
                state.prompted = true;
                state.held.push_back((Instant::now() + HOLD, message));
            }
            (Some((other, _)), Some(id)) => {
                self.conn
                    .respond(id, Err((i64::from(RpcError::METHOD_NOT_FOUND), format!("Method not found: {other}"))))
                    .await;
            }
        }
        None
    }

    /// Answers `initialize`; `Some` when the client settled on another version.
    async fn initialize(&mut self, state: &mut State, id: Value, params: &Value) -> Option<Outcome> {
        let requested = params.get("protocolVersion").and_then(Value::as_u64).unwrap_or(0);
        let number = requested.min(u64::from(state.target.number()));
        let Some(agreed) = u16::try_from(number).ok().and_then(Version::from_number) else {
            let text = "Unsupported protocol version".to_string();
            self.conn.respond(id, Err((i64::from(v2::ErrorCode::UnsupportedProtocolVersion.code()), text))).await;
            return Some(Outcome::Negotiated(format!("the client asked for version {requested}")));
        };
        state.version = Some(agreed);
        state.offered = Offered::of(params);
        self.conn.respond(id, Ok(initialize_result(agreed))).await;
        if agreed != state.target {
            return Some(Outcome::Negotiated(format!("the client asked for version {requested}")));
        }
        if requested > number {
            state.asked_newer = Some(requested);
        }
        None
    }

    /// A held request's answer, now: a session, or the prompt's turn.
    async fn answer_held(&mut self, state: &mut State, message: Value, text: &str) {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        if matches!(message["method"].as_str().and_then(MethodName::of), Some(MethodName::SessionNew)) {
            state.sessions += 1;
            self.conn.respond(id, Ok(json!({ "sessionId": format!("conform-session-{}", state.sessions) }))).await;
        } else if state.turn.is_some() {
            state.queued.insert(0, message);
        } else {
            state.turn = self.start_turn(state, message, text).await;
            state.ended = None;
        }
    }

    /// `session/cancel` of the running turn's session.
    async fn cancel(&mut self, state: &mut State, params: &Value) {
        let Some(turn) = &mut state.turn else { return };
        if params.get("sessionId") == Some(&turn.session) && !turn.cancelled {
            turn.cancelled = true;
            // v2: the agent gives up its pending permission request with `$/cancel_request`,
            // which the client answers `cancelled`.
            if state.version == Some(Version::V2) {
                let cancel = json!({ "requestId": turn.permission });
                self.conn.notify(<v2::methods::CancelRequest as Method>::METHOD, cancel).await;
            }
        }
    }

    /// Starts a turn for the prompt request `prompt`: the probes, the calls of what the client
    /// advertised (v1), the updates, the permission request; `None` when the prompt names no
    /// session (answered with an error).
    async fn start_turn(&mut self, state: &State, prompt: Value, text: &str) -> Option<Turn> {
        let version = state.version;
        let id = prompt.get("id").cloned().unwrap_or(Value::Null);
        let Some(session) = prompt.pointer("/params/sessionId").cloned() else {
            self.conn.respond(id, Err((i64::from(RpcError::INVALID_PARAMS), "no sessionId".into()))).await;
            return None;
        };
        let update = |update: Value| json!({ "sessionId": session, "update": update });
        self.conn.notify(NOTICE, json!({})).await;
        self.conn.request(PROBE, json!({})).await;
        if version == Some(Version::V1) {
            self.calls.start(&mut self.conn, state.offered, &session, &self.scratch).await;
        }
        if version == Some(Version::V2) {
            let message = format!("conform-message-{}", self.conn.line());
            let content = prompt.pointer("/params/prompt").cloned().unwrap_or(json!([]));
            self.conn.respond(id.clone(), Ok(json!({ "messageId": message }))).await;
            self.conn
                .notify(wire::SESSION_UPDATE, update(json!({ "sessionUpdate": "state_update", "state": "running" })))
                .await;
            let user = json!({ "sessionUpdate": "user_message", "messageId": message, "content": content });
            self.conn.notify(wire::SESSION_UPDATE, update(user)).await;
        }
        let chunk = json!({ "type": "text", "text": format!("acp conform stands in for the agent: {text}") });
        let mut said = json!({ "sessionUpdate": "agent_message_chunk", "content": chunk });
        if version == Some(Version::V2) {
            said["messageId"] = json!("conform-reply");
        }
        self.conn.notify(wire::SESSION_UPDATE, update(said)).await;
        let options = json!([
            { "optionId": "allow", "name": "Allow", "kind": "allow_once" },
            { "optionId": "reject", "name": "Reject", "kind": "reject_once" },
        ]);
        // v1 names the tool call; v2 titles the prompt (its `title` is required).
        let params = if version == Some(Version::V2) {
            json!({ "sessionId": session, "title": "Read notes.txt", "options": options })
        } else {
            let call = json!({ "toolCallId": "conform-call", "title": "Read notes.txt", "kind": "read" });
            json!({ "sessionId": session, "toolCall": call, "options": options })
        };
        let permission = self.conn.request(wire::SESSION_REQUEST_PERMISSION, params).await;
        Some(Turn { session, prompt: id, permission, permitted: false, cancelled: false })
    }

    /// Ends a turn: v1 answers the prompt, v2 reports the session `idle`.
    async fn end_turn(&mut self, version: Option<Version>, turn: Turn) {
        let stop = if turn.cancelled { "cancelled" } else { "end_turn" };
        if version == Some(Version::V2) {
            let idle = json!({ "sessionUpdate": "state_update", "state": "idle", "stopReason": stop });
            self.conn.notify(wire::SESSION_UPDATE, json!({ "sessionId": turn.session, "update": idle })).await;
        } else {
            self.conn.respond(turn.prompt, Ok(json!({ "stopReason": stop }))).await;
        }
    }
}

/// The stand-in's `initialize` answer: the baseline only.
fn initialize_result(version: Version) -> Value {
    let info = json!({ "name": "acp conform --client", "version": env!("CARGO_PKG_VERSION") });
    match version {
        Version::V1 => json!({
            "protocolVersion": 1,
            "agentCapabilities": { "loadSession": false },
            "agentInfo": info,
            "authMethods": [],
        }),
        Version::V2 => json!({ "protocolVersion": 2, "info": info, "capabilities": { "session": {} } }),
    }
}

/// `acp conform-stand-in --socket PATH`: copies stdin to the socket and the socket to stdout,
/// until the conform process closes the socket. Exit 0, or 2 when the socket cannot be reached.
pub fn stand_in(socket: &Path) -> ExitCode {
    use std::io::Write as _;
    let stream = match std::os::unix::net::UnixStream::connect(socket) {
        Ok(stream) => stream,
        Err(e) => {
            eprintln!("acp {STAND_IN}: cannot connect to {}: {e}", socket.display());
            return ExitCode::from(2);
        }
    };
    let Ok(mut to_socket) = stream.try_clone() else {
        eprintln!("acp {STAND_IN}: cannot use the socket");
        return ExitCode::from(2);
    };
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut to_socket);
        let _ = to_socket.shutdown(std::net::Shutdown::Write);
    });
    let mut from_socket = stream;
    let mut stdout = std::io::stdout().lock();
    let mut buf = [0u8; 8192];
    loop {
        match std::io::Read::read(&mut from_socket, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if stdout.write_all(&buf[..n]).and_then(|()| stdout.flush()).is_err() {
                    break;
                }
            }
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_alone_becomes_words_inside_one_quoted_string() {
        let stand_in: Vec<String> =
            ["/bin/acp", "conform-stand-in", "--socket", "/tmp/a b.sock"].map(String::from).into();
        let client: Vec<String> =
            ["c", "--prompt", "{prompt}", "--agent", "exec {agent}", "--", "{agent}"].map(String::from).into();
        let words = client_command(&client, &stand_in, "it's");
        assert_eq!(
            words,
            [
                "c",
                "--prompt",
                "it's",
                "--agent",
                "exec /bin/acp conform-stand-in --socket '/tmp/a b.sock'",
                "--",
                "/bin/acp",
                "conform-stand-in",
                "--socket",
                "/tmp/a b.sock"
            ]
        );
        assert_eq!(shlex::split(&words[4][5..]).unwrap(), stand_in);
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }
}
