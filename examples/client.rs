//! An ACP client: spawns an agent, negotiates the protocol version (`initialize`), authenticates
//! when asked to, runs `session/new` (cwd = current directory) and one `session/prompt`; allows
//! every permission request; in v1 serves `fs/read_text_file`, `fs/write_text_file` inside the
//! cwd and `terminal/*` (the command runs in the cwd; v2 has no client methods for files or
//! terminals); prints every `session/update` as one JSON line, then `{"stopReason": …}`; exits 0
//! when the turn ended.
//!
//! `cargo run --example client -- [--protocol-version N] [--auth METHOD_ID] --prompt TEXT
//! [--repeat N] [--cancel-after MS] [--turn-times FILE] [--agentao-answer TEXT] [--agentao-model MODEL]
//! [--ext-answer METHOD=JSON] [--ext-call METHOD=JSON] (--url URL [--ca-file PEM] | -- AGENT_CMD [ARGS…])`
//!
//! `--protocol-version N` asks for at most version N (default: the newest this client speaks)
//! and goes on with the version the agent answers; the version agreed is printed on stderr.
//! `--auth METHOD_ID` authenticates with that method of the agent's `authMethods` before
//! `session/new`; without it, an agent that requires authentication ends the run with exit
//! status 3 and an error naming its methods. `--repeat N` prompts N times in the one session,
//! one turn after another (the stop reason printed is the last turn's); `--cancel-after MS` sends
//! `session/cancel` that long after each prompt; `--turn-times FILE` writes each turn's time
//! (from sending the prompt to its outcome) to FILE in microseconds, one turn per line.
//!
//! `--mcp-echo` (built with the `mcp` feature) offers one MCP server over the ACP connection
//! (`{"type": "acp"}` in `session/new`'s `mcpServers`, v1 and v2), an rmcp server with one tool,
//! `echo`, that returns its `text` argument, and answers the agent's `mcp/message` for it.
//!
//! Agentao's vendor methods, typed (`acp_types::v1::ext::agentao`, generated from
//! `schema/ext/agentao.json` and served next to the core handler with `Extended`):
//! `--agentao-answer TEXT` answers the agent's `_agentao.cn/ask_user` with that text (without it,
//! -32601); `--agentao-model MODEL` calls `_agentao.cn/set_model` after the last turn and prints
//! `client: _agentao.cn/set_model answered {"model": …}` on stderr.
//!
//! Any other extension method, untyped: `--ext-answer METHOD=JSON` (repeatable) answers the agent's
//! `METHOD` requests with that result (v1; others get -32601); `--ext-call METHOD=JSON`
//! (repeatable) sends that request to the agent after the last turn, the string `$SESSION` in the
//! JSON replaced by the session id, and prints `client: METHOD answered RESULT` on stderr (an
//! error answer fails the run).
//!
//! `--url http://…` (Streamable HTTP) or `--url ws://…` (WebSocket) connects to an agent served
//! over the network instead of spawning one (built with the `ws` feature); `https://` and
//! `wss://` too with the `tls` feature, the server verified against the webpki roots and, with
//! `--ca-file PEM`, that file's CA certificates (a private CA's).

use acp_rpc::client::{ClientConnection, Initialized, Offer};
use acp_rpc::spawn::ProcessGroup;
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::v1::ext::agentao;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::{ClientContext, Extended};
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The exit status when the agent requires authentication and `--auth` was not given.
const AUTH_REQUIRED: u8 = 3;

struct Client {
    cwd: PathBuf,
    terminals: Terminals,
    /// `--ext-answer`: the result of each extension method the agent may call.
    ext_answers: HashMap<String, serde_json::Value>,
    /// `--mcp-echo`: the MCP server offered over ACP.
    #[cfg(feature = "mcp")]
    mcp: acp_rpc::mcp::McpProvider,
}

// ANCHOR: agentao
/// Agentao's vendor methods that the agent calls (`--agentao-answer`), typed.
struct Agentao {
    answer: Option<String>,
}

impl agentao::methods::client::Handler<ClientContext> for Agentao {
    async fn agentao_cn_ask_user(
        &self,
        params: agentao::AskUserRequest,
        _: ClientContext,
    ) -> Result<agentao::AskUserResponse, RpcError> {
        let method = <agentao::methods::AgentaoCnAskUser as acp_rpc::types::support::rpc::Method>::METHOD;
        let answer = self.answer.clone().ok_or_else(|| RpcError::method_not_found(method))?;
        eprintln!("client: {method} asked {:?}, answered {answer:?}", params.question);
        Ok(agentao::AskUserResponse::Answered(agentao::AskUserResponseAnswered::new(answer)))
    }
}

/// The client with Agentao's vendor methods beside it.
type Served = Extended<Client, agentao::serve::Client<Agentao>>;
// ANCHOR_END: agentao

/// The option to select: the first that allows, else the first; `None` when there are none.
fn allow<T>(options: &[T], allows: impl Fn(&T) -> bool) -> Option<&T> {
    options.iter().find(|o| allows(o)).or(options.first())
}

impl Client {
    /// `path` if it names something inside the cwd (symbolic links resolved); for a file still
    /// to be written, its directory must be inside, and it must not be a dangling link (writing
    /// through one creates its target, wherever that is).
    fn inside(&self, path: &str, existing: bool) -> Result<PathBuf, RpcError> {
        let path = self.cwd.join(path);
        // An existing path is resolved whole (a link to outside is outside).
        let resolved = path.canonicalize().ok().or_else(|| match existing || path.symlink_metadata().is_ok() {
            true => None,
            false => path.parent().and_then(|d| d.canonicalize().ok()).zip(path.file_name()).map(|(d, n)| d.join(n)),
        });
        resolved.filter(|p| p.starts_with(&self.cwd)).ok_or_else(|| {
            RpcError::new(RpcError::RESOURCE_NOT_FOUND, format!("{} is not inside the cwd", path.display()))
        })
    }
}

impl v1::methods::client::Handler<ClientContext> for Client {
    async fn ext_method(
        &self,
        method: String,
        _: Option<serde_json::Value>,
        _: ClientContext,
    ) -> Result<serde_json::Value, RpcError> {
        self.ext_answers.get(&method).cloned().ok_or_else(|| RpcError::method_not_found(&method))
    }

    // ANCHOR: mcp_message
    #[cfg(feature = "mcp")]
    async fn mcp_message(
        &self,
        params: v1::MessageMcpRequest,
        cx: ClientContext,
    ) -> Result<v1::MessageMcpResponse, RpcError> {
        self.mcp.handle_v1(params, &cx).await
    }
    // ANCHOR_END: mcp_message

    async fn session_request_permission(
        &self,
        params: v1::RequestPermissionRequest,
        _: ClientContext,
    ) -> Result<v1::RequestPermissionResponse, RpcError> {
        let allows = |o: &v1::PermissionOption| {
            matches!(o.kind, v1::PermissionOptionKind::AllowOnce | v1::PermissionOptionKind::AllowAlways)
        };
        let outcome = match allow(&params.options, allows) {
            Some(o) => v1::RequestPermissionOutcome::Selected(v1::SelectedPermissionOutcome::new(o.option_id.clone())),
            None => v1::RequestPermissionOutcome::Cancelled,
        };
        Ok(v1::RequestPermissionResponse::new(outcome))
    }

    async fn fs_read_text_file(
        &self,
        params: v1::ReadTextFileRequest,
        _: ClientContext,
    ) -> Result<v1::ReadTextFileResponse, RpcError> {
        // A file not there yet (an agent about to write it asks first) is -32002 with the schema's
        // own message, "Resource not found": agents such as gemini-cli read "absent" from that text.
        let path = self.inside(&params.path, false)?;
        let content = std::fs::read_to_string(&path).map_err(|e| {
            RpcError::new(RpcError::RESOURCE_NOT_FOUND, format!("Resource not found: {}: {e}", path.display()))
        })?;
        // `line` is 1-based; `limit` counts lines.
        let skip = params.line.as_value().map_or(0, |line| line.saturating_sub(1) as usize);
        let take = params.limit.as_value().map_or(usize::MAX, |limit| *limit as usize);
        let content = match (skip, take) {
            (0, usize::MAX) => content,
            _ => content.split_inclusive('\n').skip(skip).take(take).collect(),
        };
        Ok(v1::ReadTextFileResponse::new(content))
    }

    async fn fs_write_text_file(
        &self,
        params: v1::WriteTextFileRequest,
        _: ClientContext,
    ) -> Result<v1::WriteTextFileResponse, RpcError> {
        let path = self.inside(&params.path, false)?;
        std::fs::write(&path, params.content).map_err(|e| RpcError::internal(format!("{}: {e}", path.display())))?;
        Ok(v1::WriteTextFileResponse::new())
    }

    async fn terminal_create(
        &self,
        params: v1::CreateTerminalRequest,
        _: ClientContext,
    ) -> Result<v1::CreateTerminalResponse, RpcError> {
        let cwd = match params.cwd.as_value() {
            Some(dir) => self.inside(dir, true)?,
            None => self.cwd.clone(),
        };
        let env = params.env.unwrap_or_default().into_iter().map(|e| (e.name, e.value));
        let mut command = tokio::process::Command::new(&params.command);
        command.args(params.args.unwrap_or_default()).envs(env).current_dir(cwd);
        let limit = params.output_byte_limit.as_value().map(|l| usize::try_from(*l).unwrap_or(usize::MAX));
        let id = self.terminals.create(command, limit)?;
        Ok(v1::CreateTerminalResponse::new(v1::TerminalId(id)))
    }

    async fn terminal_output(
        &self,
        params: v1::TerminalOutputRequest,
        _: ClientContext,
    ) -> Result<v1::TerminalOutputResponse, RpcError> {
        let terminal = self.terminals.get(&params.terminal_id.0)?;
        let (output, truncated) = terminal.output();
        let mut answer = v1::TerminalOutputResponse::new(output, truncated);
        if let Some(status) = *terminal.exit.borrow() {
            let mut exit = v1::TerminalExitStatus::new();
            (exit.exit_code, exit.signal) = exit_fields(status);
            answer.exit_status = exit.into();
        }
        Ok(answer)
    }

    async fn terminal_wait_for_exit(
        &self,
        params: v1::WaitForTerminalExitRequest,
        cx: ClientContext,
    ) -> Result<v1::WaitForTerminalExitResponse, RpcError> {
        let terminal = self.terminals.get(&params.terminal_id.0)?;
        let mut exit = terminal.exit.clone();
        let status = tokio::select! {
            status = exit.wait_for(Option::is_some) => status.ok().and_then(|s| *s),
            _ = cx.cancelled() => None,
        };
        let status = status.ok_or_else(|| RpcError::new(RpcError::REQUEST_CANCELLED, "no exit: cancelled"))?;
        let mut answer = v1::WaitForTerminalExitResponse::new();
        (answer.exit_code, answer.signal) = exit_fields(status);
        Ok(answer)
    }

    async fn terminal_kill(
        &self,
        params: v1::KillTerminalRequest,
        _: ClientContext,
    ) -> Result<v1::KillTerminalResponse, RpcError> {
        self.terminals.get(&params.terminal_id.0)?.kill.notify_one();
        Ok(v1::KillTerminalResponse::new())
    }

    async fn terminal_release(
        &self,
        params: v1::ReleaseTerminalRequest,
        _: ClientContext,
    ) -> Result<v1::ReleaseTerminalResponse, RpcError> {
        // Released: killed if still running, and its id no longer valid.
        self.terminals.get(&params.terminal_id.0)?.kill.notify_one();
        self.terminals.release(&params.terminal_id.0);
        Ok(v1::ReleaseTerminalResponse::new())
    }
}

impl v2::methods::client::Handler<ClientContext> for Client {
    #[cfg(feature = "mcp")]
    async fn mcp_message(
        &self,
        params: v2::MessageMcpRequest,
        cx: ClientContext,
    ) -> Result<v2::MessageMcpResponse, RpcError> {
        self.mcp.handle_v2(params, &cx).await
    }

    async fn session_request_permission(
        &self,
        params: v2::RequestPermissionRequest,
        _: ClientContext,
    ) -> Result<v2::RequestPermissionResponse, RpcError> {
        let allows = |o: &v2::PermissionOption| {
            matches!(o.kind, v2::PermissionOptionKind::AllowOnce | v2::PermissionOptionKind::AllowAlways)
        };
        let outcome = match allow(&params.options, allows) {
            Some(o) => v2::RequestPermissionOutcome::Selected(v2::SelectedPermissionOutcome::new(o.option_id.clone())),
            None => v2::RequestPermissionOutcome::Cancelled(v2::CancelledPermissionOutcome::default()),
        };
        Ok(v2::RequestPermissionResponse::new(outcome))
    }
}

/// The exit code and signal of a finished command, as v1's `TerminalExitStatus` has them.
fn exit_fields(
    status: std::process::ExitStatus,
) -> (acp_rpc::types::support::Patch<u32>, acp_rpc::types::support::Patch<String>) {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status).map(|s| s.to_string());
    #[cfg(not(unix))]
    let signal: Option<String> = None;
    (status.code().and_then(|c| u32::try_from(c).ok()).into(), signal.into())
}

/// The terminals the agent created: each a command running in a task that captures its output
/// (stdout and stderr, as they come) and reports its exit.
#[derive(Default)]
struct Terminals {
    running: Mutex<HashMap<String, Arc<Terminal>>>,
    next: std::sync::atomic::AtomicU64,
}

struct Terminal {
    /// The output kept (at most the limit asked for, cut at the front), and whether any was cut.
    output: Mutex<(Vec<u8>, bool)>,
    limit: Option<usize>,
    exit: tokio::sync::watch::Receiver<Option<std::process::ExitStatus>>,
    kill: tokio::sync::Notify,
}

impl Terminal {
    fn append(&self, bytes: &[u8]) {
        let mut kept = self.output.lock().unwrap_or_else(|p| p.into_inner());
        kept.0.extend_from_slice(bytes);
        if let Some(limit) = self.limit.filter(|limit| kept.0.len() > *limit) {
            // "The Client MUST ensure truncation happens at a character boundary" (v1
            // `CreateTerminalRequest.outputByteLimit`): no UTF-8 continuation byte first.
            let mut cut = kept.0.len() - limit;
            while kept.0.get(cut).is_some_and(|b| b & 0xC0 == 0x80) {
                cut += 1;
            }
            kept.0.drain(..cut);
            kept.1 = true;
        }
    }

    fn output(&self) -> (String, bool) {
        let kept = self.output.lock().unwrap_or_else(|p| p.into_inner());
        (String::from_utf8_lossy(&kept.0).into_owned(), kept.1)
    }
}

/// A terminal command's process group, killed when asked to and when dropped.
struct Group(ProcessGroup);

impl Group {
    fn kill(&self) {
        self.0.kill();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Terminals {
    fn create(&self, mut command: tokio::process::Command, limit: Option<usize>) -> Result<String, RpcError> {
        use std::process::Stdio;
        use tokio::io::AsyncReadExt;
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        // In a process group of its own, so that what the command starts ends with it (on
        // kill, release and this client's exit; not when this client is killed with SIGKILL, as
        // with `spawn_agent`: the group is no longer this client's).
        let (mut child, group) = ProcessGroup::spawn(&mut command)
            .map_err(|e| RpcError::internal(format!("cannot run the command: {e}")))?;
        let group = Group(group);
        let (report, exit) = tokio::sync::watch::channel(None);
        let terminal = Arc::new(Terminal { output: Default::default(), limit, exit, kill: Default::default() });
        let streams: [Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>>; 2] = [
            child.stdout.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child.stderr.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ];
        let mut readers = Vec::new();
        for mut stream in streams.into_iter().flatten() {
            let terminal = terminal.clone();
            readers.push(tokio::spawn(async move {
                let mut buffer = [0u8; 8192];
                while let Ok(n @ 1..) = stream.read(&mut buffer).await {
                    terminal.append(&buffer[..n]);
                }
            }));
        }
        let waiter = terminal.clone();
        tokio::spawn(async move {
            // Dropped (the client exits) or asked to: the command's group is killed.
            let group = group;
            let status = tokio::select! {
                status = child.wait() => status,
                _ = waiter.kill.notified() => {
                    group.kill();
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            // The exit is reported once its output is kept; a process the command left running
            // with its stdout or stderr open does not hold the report back for long.
            let drained = async {
                for reader in readers {
                    let _ = reader.await;
                }
            };
            let _ = tokio::time::timeout(std::time::Duration::from_millis(500), drained).await;
            let _ = report.send(status.ok());
            // `terminal/kill` or `terminal/release` after the exit ends what it left running.
            waiter.kill.notified().await;
        });
        let id = format!("term-{}", self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        self.running.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), terminal);
        Ok(id)
    }

    fn get(&self, id: &str) -> Result<Arc<Terminal>, RpcError> {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.get(id).cloned().ok_or_else(|| RpcError::new(RpcError::RESOURCE_NOT_FOUND, format!("no terminal {id}")))
    }

    fn release(&self, id: &str) {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    }
}

struct Args {
    at_most: Version,
    auth: Option<String>,
    prompt: String,
    repeat: usize,
    cancel_after: Option<std::time::Duration>,
    /// `--turn-times FILE`: where each turn's time goes.
    turn_times: Option<PathBuf>,
    agent: Vec<String>,
    url: Option<String>,
    /// `--ca-file`: CA certificates trusted for `https://` and `wss://`.
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    ca_file: Option<PathBuf>,
    /// `--ext-answer METHOD=JSON`, read.
    ext_answers: HashMap<String, serde_json::Value>,
    /// `--ext-call METHOD=JSON`: method and params text (`$SESSION` not yet replaced).
    ext_calls: Vec<(String, String)>,
    /// `--agentao-answer TEXT`: the answer to `_agentao.cn/ask_user`.
    agentao_answer: Option<String>,
    /// `--agentao-model MODEL`: `_agentao.cn/set_model` after the last turn.
    agentao_model: Option<String>,
    /// `--mcp-echo`: offer the `echo` tool over ACP.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    mcp_echo: bool,
    /// The MCP servers offered over ACP in `session/new` (set in `run`).
    #[cfg(feature = "mcp")]
    offered: Vec<acp_rpc::mcp::AcpServer>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let newest = Version::ALL.iter().copied().max().unwrap_or(Version::V1);
    let (mut at_most, mut auth, mut prompt, mut url) = (newest, None, None, None);
    let (mut repeat, mut cancel_after, mut mcp_echo, mut ca_file) = (1, None, false, None);
    let (mut ext_answers, mut ext_calls) = (HashMap::new(), Vec::new());
    let (mut agentao_answer, mut agentao_model, mut turn_times) = (None, None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--protocol-version" => {
                let number: u16 =
                    args.next().and_then(|v| v.parse().ok()).ok_or("--protocol-version needs a number")?;
                at_most = Version::ALL.iter().copied().filter(|v| v.number() <= number).max().ok_or(format!(
                    "no protocol version at most {number}: this client speaks {:?}",
                    Version::ALL.iter().map(|v| v.number()).collect::<Vec<_>>()
                ))?;
            }
            "--auth" => auth = Some(args.next().ok_or("--auth needs a method id")?),
            "--prompt" => prompt = Some(args.next().ok_or("--prompt needs a text")?),
            "--url" => url = Some(args.next().ok_or("--url needs a URL")?),
            "--ca-file" if cfg!(feature = "tls") => {
                ca_file = Some(PathBuf::from(args.next().ok_or("--ca-file needs a PEM file")?));
            }
            "--ca-file" => return Err("--ca-file needs the example built with --features tls".into()),
            "--repeat" => repeat = args.next().and_then(|n| n.parse().ok()).ok_or("--repeat needs a count")?,
            "--cancel-after" => {
                let ms = args.next().and_then(|n| n.parse().ok()).ok_or("--cancel-after needs milliseconds")?;
                cancel_after = Some(std::time::Duration::from_millis(ms));
            }
            "--turn-times" => turn_times = Some(PathBuf::from(args.next().ok_or("--turn-times needs a file")?)),
            "--ext-answer" => {
                let (method, result) = method_and_json(args.next(), "--ext-answer")?;
                if agentao::methods::METHODS.iter().any(|m| m.name == method) {
                    return Err(format!("--ext-answer {method}: Agentao's methods are typed: --agentao-answer TEXT"));
                }
                let result = serde_json::from_str(&result).map_err(|e| format!("--ext-answer {method}: {e}"))?;
                ext_answers.insert(method, result);
            }
            "--ext-call" => ext_calls.push(method_and_json(args.next(), "--ext-call")?),
            "--agentao-answer" => agentao_answer = Some(args.next().ok_or("--agentao-answer needs a text")?),
            "--agentao-model" => agentao_model = Some(args.next().ok_or("--agentao-model needs a model id")?),
            "--mcp-echo" if cfg!(feature = "mcp") => mcp_echo = true,
            "--mcp-echo" => return Err("--mcp-echo needs the example built with --features mcp".into()),
            "--" => break,
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    let agent: Vec<String> = args.collect();
    let prompt = prompt.ok_or("--prompt TEXT is required")?;
    match (&url, agent.is_empty()) {
        (None, true) => return Err("--url URL, or the agent command after --, is required".into()),
        (Some(_), false) => return Err("--url and an agent command exclude each other".into()),
        _ => {}
    }
    #[cfg(feature = "mcp")]
    let offered = Vec::new();
    #[rustfmt::skip]
    let args = Args { at_most, auth, prompt, repeat, cancel_after, turn_times, agent, url, ca_file, ext_answers, ext_calls, agentao_answer, agentao_model, mcp_echo, #[cfg(feature = "mcp")] offered };
    Ok(args)
}

/// `METHOD=JSON`, split at the first `=`.
fn method_and_json(arg: Option<String>, flag: &str) -> Result<(String, String), String> {
    let arg = arg.ok_or(format!("{flag} needs METHOD=JSON"))?;
    let (method, json) = arg.split_once('=').ok_or(format!("{flag} needs METHOD=JSON, got {arg}"))?;
    Ok((method.to_string(), json.to_string()))
}

/// `--ext-call`: each request sent, `$SESSION` replaced by `session`, its answer on stderr; then
/// `--agentao-model`, typed.
async fn ext_calls(conn: &ClientConnection, session: &str, args: &Args) -> Result<(), Failure> {
    for (method, params) in &args.ext_calls {
        let params = params.replace("$SESSION", session);
        let params = serde_json::value::RawValue::from_string(params)
            .map_err(|e| Failure(format!("--ext-call {method}: {e}"), 2))?;
        let answer = conn.connection().request_raw(method, Some(&params)).await;
        let answer = answer.map_err(|e| Failure(format!("{method}: {e}"), 1))?;
        eprintln!("client: {method} answered {}", answer.get());
    }
    if let Some(model) = &args.agentao_model {
        let set = agentao::SetModelRequest::new(session.into(), model.clone());
        let method = <agentao::methods::AgentaoCnSetModel as acp_rpc::types::support::rpc::Method>::METHOD;
        let answer = conn.request::<agentao::methods::AgentaoCnSetModel>(&set).await;
        let answer = answer.map_err(|e| Failure(format!("{method}: {e}"), 1))?;
        eprintln!("client: {method} answered {}", serde_json::to_string(&answer).unwrap_or_default());
    }
    Ok(())
}

/// Why a run failed: the message, and the exit status.
struct Failure(String, u8);

/// The step a failure happened in; an `auth_required` refusal gets its own exit status.
fn step(step: &'static str) -> impl Fn(acp_rpc::Error) -> Failure {
    move |e| match e.auth_required() {
        Some(refused) => Failure(format!("{step}: {refused}; pass --auth METHOD_ID"), AUTH_REQUIRED),
        None => Failure(format!("{step}: {e}"), 1),
    }
}

async fn run(#[allow(unused_mut)] mut args: Args) -> Result<String, Failure> {
    let cwd = std::env::current_dir().and_then(|d| d.canonicalize()).map_err(|e| Failure(e.to_string(), 1))?;
    // ANCHOR: mcp_offer
    #[cfg(feature = "mcp")]
    let mcp = acp_rpc::mcp::McpProvider::new();
    #[cfg(feature = "mcp")]
    if args.mcp_echo {
        args.offered.push(mcp.register("echo", mcp_echo::EchoTool));
    }
    // ANCHOR_END: mcp_offer
    #[rustfmt::skip]
    let client = Client { cwd: cwd.clone(), terminals: Terminals::default(), ext_answers: std::mem::take(&mut args.ext_answers), #[cfg(feature = "mcp")] mcp };
    let client: Served = Extended(client, agentao::serve::Client(Agentao { answer: args.agentao_answer.take() }));
    if let Some(url) = args.url.clone() {
        return run_url(client, &url, &cwd, args).await;
    }
    let (conn, driver, agent) =
        acp_rpc::client::spawn_agent(client, &args.agent[0], &args.agent[1..], Default::default())
            .map_err(|e| Failure(format!("cannot start the agent: {e}"), 1))?;
    tokio::spawn(driver);
    let result = run_on(&conn, &cwd, args).await;
    // Awaited, not dropped: stdin closed, then the grace before any signal, so that an agent that
    // ends its own children on end of input (a conductor) can; a drop's thread would die with us.
    if let Err(e) = agent.shutdown().await {
        eprintln!("client: ending the agent: {e}");
    }
    result
}

/// Connects over the network; the transport is closed (HTTP: `DELETE`) once the turn is over.
#[cfg(feature = "ws")]
// ANCHOR: connect
async fn run_url(client: Served, url: &str, cwd: &Path, args: Args) -> Result<String, Failure> {
    use acp_rpc::net::{http, ws};
    let cannot = |e: std::io::Error| Failure(format!("cannot connect to {url}: {e}"), 1);
    #[allow(unused_mut)]
    let mut options = acp_rpc::net::ClientOptions::default();
    #[cfg(feature = "tls")]
    if let Some(path) = &args.ca_file {
        options = options.ca_file(path);
    }
    let (result, transport) = if url.starts_with("ws://") || url.starts_with("wss://") {
        let (conn, driver, socket) = ws::connect(client, url, options, Default::default()).await.map_err(cannot)?;
        tokio::spawn(driver);
        (run_on(&conn, cwd, args).await, socket)
    } else {
        let (conn, driver, transport) = http::connect(client, url, options, Default::default()).map_err(cannot)?;
        tokio::spawn(driver);
        (run_on(&conn, cwd, args).await, transport)
    };
    // Why the transport failed (a refused certificate, say) says more than the closed connection
    // the step saw.
    let result = match (result, transport.error()) {
        (Err(Failure(message, status)), Some(why)) => Err(Failure(format!("{message} ({url}: {why})"), status)),
        (result, _) => result,
    };
    transport.close().await;
    result
}
// ANCHOR_END: connect

#[cfg(not(feature = "ws"))]
async fn run_url(_: Served, _: &str, _: &Path, _: Args) -> Result<String, Failure> {
    Err(Failure("--url needs the example built with --features ws".into(), 2))
}

/// Negotiates (each version's own request: v1 advertises files and terminals, v2 has neither),
/// authenticates when asked to, and runs the session in the version agreed.
async fn run_on(conn: &ClientConnection, cwd: &Path, args: Args) -> Result<String, Failure> {
    let mut v1_init = v1::InitializeRequest::new(v1::ProtocolVersion(1));
    v1_init.client_capabilities.fs.read_text_file = true.into();
    v1_init.client_capabilities.fs.write_text_file = true.into();
    v1_init.client_capabilities.terminal = true.into();
    let name = || "acp-rpc example client".to_string();
    v1_init.client_info = v1::Implementation::new(name(), env!("CARGO_PKG_VERSION").into()).into();
    let info = v2::Implementation::new(name(), env!("CARGO_PKG_VERSION").into());
    let offer = Offer::new().v1(v1_init).v2(v2::InitializeRequest::new(v2::ProtocolVersion(2), info));
    let agreed = conn.negotiate(offer.at_most(args.at_most)).await.map_err(step("initialize"))?;
    eprintln!(
        "client: protocol version {} agreed (asked for at most {})",
        agreed.version().number(),
        args.at_most.number()
    );
    if let Some(method) = &args.auth {
        conn.authenticate(method).await.map_err(step("authenticate"))?;
    }
    #[cfg(feature = "mcp")]
    let args = mcp_echo::offer_if_accepted(args, &agreed);
    let cwd = cwd.display().to_string();
    match agreed {
        Initialized::V1(_) => run_v1(conn, cwd, &args).await,
        Initialized::V2(_) => run_v2(conn, cwd, &args).await,
    }
}

/// Prints an update as one JSON line.
fn print(update: &impl serde::Serialize) {
    println!("{}", serde_json::to_string(update).unwrap_or_default());
}

/// With `--turn-times FILE`: each turn's time in microseconds, one per line.
fn write_turn_times(args: &Args, times: &[Duration]) -> Result<(), Failure> {
    let Some(path) = &args.turn_times else { return Ok(()) };
    let text: String = times.iter().map(|t| format!("{}\n", t.as_micros())).collect();
    std::fs::write(path, text).map_err(|e| Failure(format!("cannot write {}: {e}", path.display()), 2))
}

/// With `--cancel-after`: sends `session/cancel` for `session` that long from now.
fn cancel_later(conn: &ClientConnection, session: &str, args: &Args) {
    if let Some(after) = args.cancel_after {
        let (conn, session) = (conn.clone(), session.to_string());
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let _ = conn.cancel_session(&session).await;
        });
    }
}

async fn run_v1(conn: &ClientConnection, cwd: String, args: &Args) -> Result<String, Failure> {
    #[allow(unused_mut)]
    let mut new = v1::NewSessionRequest::new(cwd, vec![]);
    #[cfg(feature = "mcp")]
    new.mcp_servers.extend(args.offered.iter().map(acp_rpc::mcp::AcpServer::v1));
    let mut session = conn.new_session_v1(new).await.map_err(step("session/new"))?;
    let (mut stop, mut times) = (String::new(), Vec::with_capacity(args.repeat));
    for _ in 0..args.repeat {
        let (id, start) = (session.id().0.clone(), Instant::now());
        let mut turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new(args.prompt.clone()))]).await;
        cancel_later(conn, &id, args);
        while let Some(update) = turn.next().await {
            print(&update);
        }
        let done = turn.outcome().await.map_err(step("session/prompt"))?;
        stop = done.stop_reason.as_str().to_string();
        times.push(start.elapsed());
    }
    write_turn_times(args, &times)?;
    ext_calls(conn, &session.id().0, args).await?;
    Ok(stop)
}

async fn run_v2(conn: &ClientConnection, cwd: String, args: &Args) -> Result<String, Failure> {
    #[allow(unused_mut)]
    let mut new = v2::NewSessionRequest::new(v2::AbsolutePath(cwd));
    #[cfg(feature = "mcp")]
    if !args.offered.is_empty() {
        new.mcp_servers = Some(args.offered.iter().map(acp_rpc::mcp::AcpServer::v2).collect());
    }
    let mut session = conn.new_session_v2(new).await.map_err(step("session/new"))?;
    // Updates before the prompt (an idle snapshot after `session/new`, say) are not the turn's.
    while let Some(update) = session.next_update() {
        print(&update);
    }
    let (mut stop, mut times) = (String::new(), Vec::with_capacity(args.repeat));
    for _ in 0..args.repeat {
        let (id, start) = (session.id().0.clone(), Instant::now());
        let mut turn = session.prompt(vec![v2::ContentBlock::from(v2::TextContent::new(args.prompt.clone()))]).await;
        cancel_later(conn, &id, args);
        while let Some(update) = turn.next().await {
            print(&update);
        }
        // The turn ends at the `idle` after this prompt's `running`, never at a snapshot.
        let end = turn.outcome().await.map_err(step("session/prompt"))?;
        stop = end.idle.stop_reason.tag().unwrap_or("none").to_string();
        times.push(start.elapsed());
    }
    write_turn_times(args, &times)?;
    ext_calls(conn, &session.id().0, args).await?;
    Ok(stop)
}

/// `--mcp-echo`: the MCP server offered over ACP (feature `mcp`).
#[cfg(feature = "mcp")]
mod mcp_echo {
    use acp_rpc::client::Initialized;
    use acp_rpc::mcp::rmcp::handler::server::wrapper::Parameters;
    use acp_rpc::mcp::rmcp::{schemars, tool, tool_router};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub(crate) struct EchoArgs {
        /// The text to return.
        text: String,
    }

    /// One tool, `echo`.
    pub(crate) struct EchoTool;

    #[tool_router(server_handler)]
    impl EchoTool {
        #[tool(description = "Returns its text argument")]
        fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
            text
        }
    }

    /// `args` offering its servers only to an agent that advertised `acp` MCP servers
    /// ("Only available when the Agent capabilities indicate `mcp_capabilities.acp`").
    pub(crate) fn offer_if_accepted(mut args: super::Args, agreed: &Initialized) -> super::Args {
        let accepted = match agreed {
            Initialized::V1(answer) => *answer.agent_capabilities.mcp_capabilities.acp,
            Initialized::V2(answer) => answer
                .capabilities
                .session
                .as_value()
                .and_then(|s| s.mcp.as_value())
                .is_some_and(|m| m.acp.as_value().is_some()),
        };
        if !accepted && !args.offered.is_empty() {
            eprintln!("client: the agent does not take MCP servers over ACP; --mcp-echo offers none");
            args.offered.clear();
        }
        args
    }
}

/// Logs (e.g. a response to an unknown id) go to stderr: stdout is the protocol's. rmcp's
/// INFO lines (three per MCP request the `--mcp-echo` server serves) are left out: warnings only.
fn log_to_stderr() {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let quiet_rmcp = Targets::new().with_default(LevelFilter::INFO).with_target("rmcp", LevelFilter::WARN);
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).finish().with(quiet_rmcp).init();
}

// One connection and one turn at a time: the connection's tasks (its reader, writer and
// notification queue) wake each other on every message, which on one thread is a function call
// and on a multi-threaded runtime a thread switch each (`cargo xtask bench`'s WebSocket round
// trips: 7.7 context switches a turn, the turn rate bound by them).
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    log_to_stderr();
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!(
                "client: {e}\nusage: client [--protocol-version N] [--auth METHOD_ID] --prompt TEXT [--repeat N] \
                 [--cancel-after MS] [--agentao-answer TEXT] [--agentao-model MODEL] [--ext-answer METHOD=JSON] \
                 [--ext-call METHOD=JSON] \
                 (--url URL | -- AGENT_CMD [ARGS…])"
            );
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(stop) => {
            println!("{}", json!({ "stopReason": stop }));
            ExitCode::SUCCESS
        }
        Err(Failure(e, status)) => {
            eprintln!("client: {e}");
            ExitCode::from(status)
        }
    }
}
