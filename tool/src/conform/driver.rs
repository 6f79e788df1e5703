//! One agent process driven as a raw JSON-RPC client over its stdin/stdout: every line either
//! way is checked (schema and rules) and kept in a transcript; the agent's requests are answered
//! as a client that advertised what it serves would (a scratch directory for `fs/*`, real
//! commands for `terminal/*` (see [`super::terminal`]), permissions allowed once, or `cancelled`
//! after a cancel). Raw, so that malformed lines can be sent too. The process runs in its own
//! process group ([`acp_rpc::spawn`]), ended with it when the scenario ends.

use super::terminal::Terminals;
use crate::check::{Checker, Role, Status};
use acp_rpc::spawn::{spawn_command, AgentProcess, AgentStdin, SpawnOptions, Stderr};
use acp_types::support::rpc::RpcError;
use acp_types::MethodName;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Longest line read from an agent; the rest of a longer one is dropped (and reported).
const MAX_LINE: u64 = 16 << 20;
/// How long [`Agent::stop`] reads after closing the agent's stdin: its grace to exit by itself.
const QUIET: Duration = Duration::from_millis(50);
/// From `SIGTERM` to `SIGKILL` when a scenario's agent is ended.
const TERM_GRACE: Duration = Duration::from_millis(250);

/// What the client side advertises and holds.
#[derive(Debug, Clone)]
pub struct ClientSide {
    /// `fs/read_text_file` and `fs/write_text_file` are served (v1 `clientCapabilities.fs`).
    pub fs: bool,
    /// `terminal/*` is advertised and served (v1 `clientCapabilities.terminal`).
    pub terminal: bool,
    /// The directory sessions work in; `fs/*` is served inside it only.
    pub scratch: PathBuf,
}

/// One line from the agent.
#[derive(Debug)]
pub enum Event {
    /// A JSON value (a message, or JSON that is not one).
    Message(Value),
    /// A line that is not JSON.
    Junk,
    /// Stdout closed: the agent exited.
    Closed,
    /// Nothing before the deadline.
    Timeout,
}

/// A running agent and the conversation with it.
pub struct Agent {
    /// `None` once stopped.
    process: Option<AgentProcess>,
    stdin: Option<AgentStdin>,
    lines: mpsc::Receiver<Line>,
    /// Schema and rules, fed every line in order.
    pub checker: Checker,
    /// One `{"from", "message"}` (or `{"from", "line"}`) record per line.
    pub transcript: Vec<Value>,
    count: usize,
    next_id: i64,
    client: ClientSide,
    /// Sessions a `session/cancel` was sent for: their permission requests are answered `cancelled`.
    cancelled: HashSet<String>,
    /// The agent's requests read but not answered yet.
    deferred: Vec<Value>,
    closed: bool,
    terminals: Terminals,
    /// Answers computed apart (`terminal/wait_for_exit`), sent when they are ready.
    replies: mpsc::UnboundedReceiver<Value>,
    reply: mpsc::UnboundedSender<Value>,
    /// How many requests of each method the agent sent.
    pub called: BTreeMap<String, usize>,
    /// Whether the scenario's end judges `rpc.reply` on the requests sent to the agent (not
    /// before `initialize`, where no version, and so no protocol, is agreed yet).
    pub judge_replies: bool,
    /// The agent's messages that re-encode differently: their line and first difference.
    pub lossy: Vec<(usize, String)>,
}

struct Line {
    bytes: Vec<u8>,
    /// Length of a line longer than [`MAX_LINE`] (only its start is kept).
    over_long: Option<usize>,
}

impl Agent {
    /// Starts `command` in a process group of its own.
    pub fn spawn(
        command: &[String],
        client: ClientSide,
        ext: Option<std::sync::Arc<crate::check::ExtSchemas>>,
    ) -> Result<Agent, String> {
        let (program, args) = command.split_first().ok_or("no agent command")?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args);
        // Stop has closed stdin and read for `QUIET` before it ends the agent, so no more grace
        // before `SIGTERM` (a dropped agent gets `SIGTERM` at once too).
        let options = SpawnOptions::new().stderr(Stderr::Null).grace(Duration::ZERO).term_grace(TERM_GRACE);
        let (process, stdin, stdout) =
            spawn_command(cmd, &options).map_err(|e| format!("cannot start {program}: {e}"))?;
        let (tx, lines) = mpsc::channel(1024);
        tokio::spawn(read_lines(stdout, tx));
        let (reply, replies) = mpsc::unbounded_channel();
        Ok(Agent {
            process: Some(process),
            stdin: Some(stdin),
            lines,
            checker: match ext {
                Some(ext) => Checker::new(None).with_ext(ext),
                None => Checker::new(None),
            },
            transcript: Vec::new(),
            count: 0,
            next_id: 0,
            client,
            cancelled: HashSet::new(),
            deferred: Vec::new(),
            closed: false,
            terminals: Terminals::default(),
            replies,
            reply,
            called: BTreeMap::new(),
            judge_replies: true,
            lossy: Vec::new(),
        })
    }

    /// The line number the next message gets.
    pub fn line(&self) -> usize {
        self.count + 1
    }

    /// Whether the agent closed its stdout.
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// Sends a message (checked and recorded first).
    pub async fn send(&mut self, message: Value) {
        let text = message.to_string();
        self.count += 1;
        self.checker.check_value(self.count, Some(Role::Client), message.clone());
        self.transcript.push(json!({ "from": "client", "message": message }));
        self.write(text.as_bytes()).await;
    }

    /// Sends a line as it is (malformed on purpose).
    pub async fn send_raw(&mut self, line: &str) {
        self.count += 1;
        self.checker.check_message(self.count, Some(Role::Client), line.as_bytes());
        self.transcript.push(json!({ "from": "client", "line": line }));
        self.write(line.as_bytes()).await;
    }

    async fn write(&mut self, line: &[u8]) {
        if let Some(stdin) = &mut self.stdin {
            let mut bytes = line.to_vec();
            bytes.push(b'\n');
            // An agent that stopped reading is seen as one that stops answering.
            if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
                self.stdin = None;
            }
        }
    }

    /// Sends a request; its id.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = Value::from(self.next_id);
        self.next_id += 1;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })).await;
        id
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Value) {
        if matches!(MethodName::of(method), Some(MethodName::SessionCancel)) {
            if let Some(session) = params.get("sessionId").and_then(Value::as_str) {
                self.cancelled.insert(session.to_string());
            }
        }
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params })).await;
    }

    /// The next line from the agent before `deadline`, checked and recorded; the agent's
    /// requests are answered on the way.
    pub async fn next(&mut self, deadline: Instant) -> Event {
        if self.closed {
            return Event::Closed;
        }
        // Lines already there are read before the agent's requests are answered, as a client
        // busy elsewhere would: an agent reusing the id of a pending request is then seen doing so.
        let line = match self.lines.try_recv() {
            Ok(line) => line,
            Err(_) => {
                self.answer_deferred().await;
                loop {
                    let line = tokio::select! {
                        line = tokio::time::timeout_at(deadline, self.lines.recv()) => line,
                        Some(reply) = self.replies.recv() => {
                            self.send(reply).await;
                            continue;
                        }
                    };
                    match line {
                        Err(_) => return Event::Timeout,
                        Ok(None) => {
                            self.closed = true;
                            return Event::Closed;
                        }
                        Ok(Some(line)) => break line,
                    }
                }
            }
        };
        self.count += 1;
        if let Some(len) = line.over_long {
            self.checker.over_long(self.count, Some(Role::Agent), len, MAX_LINE as usize);
            self.transcript
                .push(json!({ "from": "agent", "line": String::from_utf8_lossy(&line.bytes), "truncated": len }));
            return Event::Junk;
        }
        let text = String::from_utf8_lossy(&line.bytes).trim_end_matches('\r').to_string();
        let report = self.checker.check_message(self.count, Some(Role::Agent), &line.bytes);
        if let Some(difference) = report.first_difference().filter(|_| report.status == Status::Lossy) {
            self.lossy.push((self.count, difference));
        }
        let Ok(message) = serde_json::from_str::<Value>(&text) else {
            self.transcript.push(json!({ "from": "agent", "line": text }));
            return Event::Junk;
        };
        self.transcript.push(json!({ "from": "agent", "message": message }));
        if let (Some(method), Some(_)) = (message.get("method").and_then(Value::as_str), message.get("id")) {
            *self.called.entry(method.to_string()).or_default() += 1;
            self.deferred.push(message.clone());
        }
        Event::Message(message)
    }

    /// Answers the agent's requests read so far.
    async fn answer_deferred(&mut self) {
        for request in std::mem::take(&mut self.deferred) {
            let method = request["method"].as_str().unwrap_or_default();
            let params = request.get("params").unwrap_or(&Value::Null);
            if matches!(MethodName::of(method), Some(MethodName::TerminalWaitForExit)) && self.client.terminal {
                match self.terminals.wait_for_exit(params) {
                    Ok(wait) => {
                        let (reply, id) = (self.reply.clone(), request["id"].clone());
                        tokio::spawn(async move {
                            let _ = reply.send(response(id, wait.await));
                        });
                    }
                    Err(e) => self.send(response(request["id"].clone(), Err(e))).await,
                }
                continue;
            }
            let answer = self.answer(method, params);
            self.send(response(request["id"].clone(), answer)).await;
        }
    }

    /// Waits until a message satisfies `done`, or the deadline; whether one did.
    pub async fn wait_for(&mut self, deadline: Instant, mut done: impl FnMut(&Value) -> bool) -> bool {
        loop {
            match self.next(deadline).await {
                Event::Message(message) if done(&message) => return true,
                Event::Message(_) | Event::Junk => {}
                Event::Closed | Event::Timeout => return false,
            }
        }
    }

    /// The response to the request `id`, if it comes before the deadline.
    pub async fn response(&mut self, id: &Value, deadline: Instant) -> Option<Value> {
        let mut found = None;
        let matched = self
            .wait_for(deadline, |m| {
                let is = m.get("method").is_none() && m.get("id") == Some(id);
                if is {
                    found = Some(m.clone());
                }
                is
            })
            .await;
        found.filter(|_| matched)
    }

    /// Reads (and answers) whatever comes for `period`.
    pub async fn quiet(&mut self, period: Duration) {
        let deadline = Instant::now() + period;
        while !matches!(self.next(deadline).await, Event::Closed | Event::Timeout) {}
    }

    /// What the client answers to the agent's request `method`.
    fn answer(&mut self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        let not_found = || Err((i64::from(RpcError::METHOD_NOT_FOUND), format!("Method not found: {method}")));
        let Some(name) = MethodName::of(method) else {
            return not_found();
        };
        match name {
            MethodName::SessionRequestPermission => {
                let session = params.get("sessionId").and_then(Value::as_str).unwrap_or_default();
                if self.cancelled.contains(session) {
                    return Ok(json!({ "outcome": { "outcome": "cancelled" } }));
                }
                let options = params.get("options").and_then(Value::as_array).cloned().unwrap_or_default();
                let allow = options.iter().find(|o| o["kind"] == "allow_once").or(options.first());
                match allow.and_then(|o| o.get("optionId")) {
                    Some(option) => Ok(json!({ "outcome": { "outcome": "selected", "optionId": option } })),
                    None => Ok(json!({ "outcome": { "outcome": "cancelled" } })),
                }
            }
            MethodName::FsReadTextFile if self.client.fs => {
                let path = self.inside_scratch(params)?;
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| (i64::from(RpcError::RESOURCE_NOT_FOUND), format!("{}: {e}", path.display())))?;
                Ok(json!({ "content": text }))
            }
            MethodName::FsWriteTextFile if self.client.fs => {
                let path = self.inside_scratch(params)?;
                let content = params.get("content").and_then(Value::as_str).unwrap_or_default();
                std::fs::write(&path, content)
                    .map_err(|e| (i64::from(RpcError::INTERNAL_ERROR), format!("{}: {e}", path.display())))?;
                Ok(json!({}))
            }
            MethodName::TerminalCreate if self.client.terminal => self.terminals.create(params, &self.client.scratch),
            MethodName::TerminalOutput if self.client.terminal => self.terminals.output(params),
            MethodName::TerminalKill if self.client.terminal => self.terminals.kill(params),
            MethodName::TerminalRelease if self.client.terminal => self.terminals.release(params),
            _ => not_found(),
        }
    }

    /// The `path` of `params`, if inside the scratch directory.
    fn inside_scratch(&self, params: &Value) -> Result<PathBuf, (i64, String)> {
        let path = Path::new(params.get("path").and_then(Value::as_str).unwrap_or_default());
        let inside = path.is_absolute()
            && path.starts_with(&self.client.scratch)
            && !path.components().any(|c| matches!(c, std::path::Component::ParentDir));
        if inside {
            Ok(path.to_path_buf())
        } else {
            Err((
                i64::from(RpcError::INVALID_PARAMS),
                format!("{} is outside the scratch directory {}", path.display(), self.client.scratch.display()),
            ))
        }
    }

    /// `rpc.reply` at the end of the scenario: every request sent to the agent was answered,
    /// however late; each one that was not is a violation with the request as evidence.
    pub fn judge_replies(&mut self) {
        if !self.judge_replies {
            return;
        }
        self.checker.judge_replies(Role::Client, usize::try_from(self.next_id).unwrap_or_default());
    }

    /// Ends the scenario: closes stdin, reads what is left for a moment, then ends the process
    /// group (`SIGTERM`, then `SIGKILL`) and reaps the agent.
    pub async fn stop(&mut self) {
        self.answer_deferred().await;
        self.terminals.kill_all();
        self.stdin = None;
        if let Some(process) = &self.process {
            process.close_stdin();
        }
        self.quiet(QUIET).await;
        if let Some(process) = self.process.take() {
            // Dropped at the time limit, the shutdown still ends the group (as a dropped handle does).
            let _ = tokio::time::timeout(Duration::from_secs(5), process.shutdown()).await;
        }
    }
}

/// A JSON-RPC response to `id`.
fn response(id: Value, answer: Result<Value, (i64, String)>) -> Value {
    match answer {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err((code, text)) => json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": text } }),
    }
}

/// Reads the agent's stdout line by line; a line longer than [`MAX_LINE`] is cut.
async fn read_lines(stdout: tokio::process::ChildStdout, lines: mpsc::Sender<Line>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut bytes = Vec::new();
        let read = (&mut reader).take(MAX_LINE).read_until(b'\n', &mut bytes).await;
        let mut over_long = None;
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) if n as u64 == MAX_LINE && bytes.last() != Some(&b'\n') => {
                // Skip the rest of the line, counting it.
                let mut rest = 0usize;
                loop {
                    let buf = match reader.fill_buf().await {
                        Ok([]) | Err(_) => break,
                        Ok(buf) => buf,
                    };
                    let (used, end) = match memchr::memchr(b'\n', buf) {
                        Some(i) => (i + 1, true),
                        None => (buf.len(), false),
                    };
                    rest += used;
                    reader.consume(used);
                    if end {
                        break;
                    }
                }
                bytes.truncate(acp_rpc::jsonrpc::PREFIX);
                over_long = Some(n + rest);
            }
            Ok(_) => {}
        }
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        if bytes.iter().all(u8::is_ascii_whitespace) && over_long.is_none() {
            continue;
        }
        if lines.send(Line { bytes, over_long }).await.is_err() {
            break;
        }
    }
}
