//! An ACP agent on stdio that speaks v1 and v2: it streams each prompt's text back as agent
//! message chunks and ends the turn with `end_turn`. The word `perm` makes it ask
//! `session/request_permission` first; `read PATH` makes it call `fs/read_text_file`, `write PATH`
//! write the prompt's text to PATH (`fs/write_text_file`), and `run CMD` run CMD in a client
//! terminal (`terminal/create`, `wait_for_exit`, `output`, `release`; `limit N` sets its
//! `outputByteLimit`) and say its output (v1, when the client advertised them: the runtime's
//! helpers check); `slow` makes it wait 10 s, which `session/cancel` cuts short; `flood N` sends N
//! one-character chunks before the echo (for the notification benchmarks); `mcp` (built with the
//! `mcp` feature) calls the tool `echo` of the first MCP server the session was offered over ACP
//! (`{"type": "acp"}` in `mcpServers`) that lists one, with the prompt's text, reports the call
//! as a tool call and says `mcp echo: TEXT` with the text the tool returned. In v2 the runtime runs
//! each turn's lifecycle (the user message, `running`, then `idle` with the stop reason
//! `prompt_turn` returns).
//!
//! With `--require-auth` (on stdio) it lists one authentication method, `echo-login`, in its
//! `initialize` answer and refuses `session/new` with `auth_required` (-32000) until the client
//! called `authenticate` (v1) / `auth/login` (v2) with it (once per process).
//!
//! `cargo run --example echo_agent`, or over the network (feature `ws`: Streamable HTTP and
//! WebSocket on `/`): `cargo run --features ws --example echo_agent -- --listen 127.0.0.1:0`,
//! which prints `listening on http://ADDR:PORT` to stderr once bound. With `--tls-cert CHAIN.pem
//! --tls-key KEY.pem` (feature `tls` too) it serves `https://` and `wss://` instead, and prints
//! `listening on https://ADDR:PORT`. `--max-connections N` raises (or lowers) how many TCP
//! connections it serves at once (`Limits::max_tcp_connections`, 1,024 by default; an HTTP
//! client holds up to three, a WebSocket client one). Web pages are refused unless their origin
//! is given with `--allow-origin ORIGIN` (repeatable), `Host` names other than the bound
//! address's with `--allow-host NAME`; `--token-file FILE` makes every request need
//! `Authorization: Bearer <the file's token>`, and is required beyond loopback (or
//! `--insecure-no-auth`).

use acp_rpc::agent::{ClientV1, Turn};
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2};
use acp_rpc::AgentContext;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

#[derive(Default)]
struct Echo {
    /// `--require-auth`: sessions only after `echo-login`.
    require_auth: bool,
    authenticated: std::sync::atomic::AtomicBool,
    sessions: AtomicU64,
    /// v2: the open sessions and their cwd, for `session/list`, `session/resume` and
    /// `session/close` (the baseline that `capabilities.session` advertises).
    open: Mutex<BTreeMap<String, v2::AbsolutePath>>,
    /// `mcp`: the ACP MCP servers each session was offered, and the calls to them.
    #[cfg(feature = "mcp")]
    mcp: mcp::Servers,
}

const LOGIN: &str = "echo-login";

impl Echo {
    /// -32000 while authentication is required and has not happened.
    fn gate(&self) -> Result<(), RpcError> {
        match self.require_auth && !self.authenticated.load(Ordering::SeqCst) {
            true => Err(RpcError::new(RpcError::AUTH_REQUIRED, format!("Authentication required: use {LOGIN}"))),
            false => Ok(()),
        }
    }

    fn log_in(&self, method: &str) -> Result<(), RpcError> {
        if method != LOGIN {
            return Err(RpcError::invalid_params("authenticate", "methodId", &format!("no auth method {method}")));
        }
        self.authenticated.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn open(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, v2::AbsolutePath>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `mcp`: calls the tool `echo` of a server the session was offered over ACP, reported as a
    /// tool call, and says what it returned (or why not).
    #[cfg(feature = "mcp")]
    async fn mcp_echo(
        &self,
        client: &ClientV1<'_>,
        session: &v1::SessionId,
        cx: &AgentContext,
        text: &str,
    ) -> Result<(), RpcError> {
        let call = v1::ToolCallId("mcp-echo".into());
        let mut started = v1::ToolCall::new(call.clone(), "mcp echo".into());
        started.status = Some(v1::ToolCallStatus::InProgress);
        client.update(session, v1::SessionUpdate::ToolCall(Box::new(started))).await?;
        let said = self.mcp.echo(&session.0, cx, text).await;
        let mut done = v1::ToolCallUpdate::new(call);
        let status = if said.is_ok() { v1::ToolCallStatus::Completed } else { v1::ToolCallStatus::Failed };
        done.status = status.into();
        client.update(session, v1::SessionUpdate::ToolCallUpdate(Box::new(done))).await?;
        Ok(client.update(session, say_v1(said.unwrap_or_else(|e| e))).await?)
    }
}

fn prompt_text<'a>(blocks: impl Iterator<Item = Option<&'a str>>) -> String {
    blocks.flatten().collect::<Vec<_>>().join(" ")
}

/// The N of `flood N` in the prompt's words (0 without it).
fn flood(words: &[&str]) -> usize {
    words.windows(2).find(|w| w[0] == "flood").and_then(|w| w[1].parse().ok()).unwrap_or(0)
}

/// Waits 10 s unless the turn is cancelled first; true when cancelled.
async fn slow(cx: &AgentContext) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_secs(10)) => false,
        _ = cx.cancelled() => true,
    }
}

/// An agent message chunk of `text` (v1).
fn say_v1(text: String) -> v1::SessionUpdate {
    v1::SessionUpdate::AgentMessageChunk(Box::new(v1::ContentChunk::new(v1::ContentBlock::from(v1::TextContent::new(
        text,
    )))))
}

/// `perm`: asks the client's permission for a tool call (allow or reject, once); true when the
/// turn was cancelled meanwhile.
async fn ask_permission(client: &ClientV1<'_>, session: &v1::SessionId) -> Result<bool, RpcError> {
    let options = vec![
        v1::PermissionOption::new(
            v1::PermissionOptionId("allow".into()),
            "Allow".into(),
            v1::PermissionOptionKind::AllowOnce,
        ),
        v1::PermissionOption::new(
            v1::PermissionOptionId("reject".into()),
            "Reject".into(),
            v1::PermissionOptionKind::RejectOnce,
        ),
    ];
    let tool_call = v1::ToolCallUpdate::new(v1::ToolCallId("echo-1".into()));
    let outcome = client.ask_permission(session, tool_call, options).await?;
    Ok(matches!(outcome, v1::RequestPermissionOutcome::Cancelled))
}

/// `read PATH`: reads the file through the client and says its content.
async fn read_file(client: &ClientV1<'_>, session: &v1::SessionId, path: &str) -> Result<(), RpcError> {
    match client.read_text_file(session, path).await {
        Ok(content) => Ok(client.update(session, say_v1(content)).await?),
        // Nothing was sent: the client did not advertise `fs.readTextFile`.
        Err(acp_rpc::Error::Misuse(acp_rpc::Misuse::NotAdvertised { .. })) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// `write PATH`: writes the prompt's text to the file through the client.
async fn write_file(client: &ClientV1<'_>, session: &v1::SessionId, path: &str, text: &str) -> Result<(), RpcError> {
    match client.write_text_file(session, path, text.to_string()).await {
        Ok(()) | Err(acp_rpc::Error::Misuse(acp_rpc::Misuse::NotAdvertised { .. })) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// `run CMD` (`limit N`): runs the command in a client terminal, waits for it and says its output
/// and exit code.
async fn run_in_terminal(
    client: &ClientV1<'_>,
    session: &v1::SessionId,
    command: &str,
    limit: Option<u64>,
) -> Result<(), RpcError> {
    let mut request = v1::CreateTerminalRequest::new(session.clone(), command.into());
    request.output_byte_limit = limit.into();
    match client.create_terminal_with(request).await {
        Ok(terminal) => {
            let exit = terminal.wait_for_exit().await?;
            let output = terminal.output().await?;
            terminal.release().await?;
            let code = exit.exit_code.as_value().map_or("none".to_string(), u32::to_string);
            let cut = if output.truncated { ", truncated" } else { "" };
            Ok(client.update(session, say_v1(format!("{}(exit {code}{cut})", output.output))).await?)
        }
        Err(acp_rpc::Error::Misuse(acp_rpc::Misuse::NotAdvertised { .. })) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

impl v1::methods::agent::Handler<AgentContext> for Echo {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        let mut answer = v1::InitializeResponse::new(v1::ProtocolVersion(1));
        #[cfg(feature = "mcp")]
        {
            answer.agent_capabilities.mcp_capabilities.acp = true.into();
        }
        if self.require_auth {
            let login = v1::AuthMethodAgent::new(v1::AuthMethodId(LOGIN.into()), "Echo login".into());
            *answer.auth_methods = vec![v1::AuthMethod::Agent(Box::new(login))];
        }
        Ok(answer)
    }

    async fn authenticate(
        &self,
        p: v1::AuthenticateRequest,
        _: AgentContext,
    ) -> Result<v1::AuthenticateResponse, RpcError> {
        self.log_in(&p.method_id.0).map(|()| v1::AuthenticateResponse::new())
    }

    async fn session_new(
        &self,
        _params: v1::NewSessionRequest,
        _: AgentContext,
    ) -> Result<v1::NewSessionResponse, RpcError> {
        self.gate()?;
        let n = self.sessions.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "mcp")]
        self.mcp.offered(format!("sess-{n}"), acp_rpc::mcp::acp_servers_v1(&_params.mcp_servers));
        Ok(v1::NewSessionResponse::new(v1::SessionId(format!("sess-{n}"))))
    }

    #[cfg(feature = "mcp")]
    async fn mcp_message(&self, params: v1::MessageMcpNotification, _: AgentContext) {
        self.mcp.caller.route_v1(&params);
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
        let client = cx.v1()?;
        let session = &params.session_id;
        if text.split_whitespace().any(|w| w == "perm") && ask_permission(&client, session).await? {
            return Ok(v1::PromptResponse::new(v1::StopReason::Cancelled));
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        let after = |word: &str| words.windows(2).find(|w| w[0] == word).map(|w| w[1]);
        if let Some(path) = after("read") {
            read_file(&client, session, path).await?;
        }
        if let Some(path) = after("write") {
            write_file(&client, session, path, &text).await?;
        }
        if let Some(command) = after("run") {
            run_in_terminal(&client, session, command, after("limit").and_then(|n| n.parse().ok())).await?;
        }
        #[cfg(feature = "mcp")]
        if words.contains(&"mcp") {
            self.mcp_echo(&client, session, &cx, &text).await?;
        }
        if words.contains(&"slow") && slow(&cx).await {
            return Ok(v1::PromptResponse::new(v1::StopReason::Cancelled));
        }
        for _ in 0..flood(&words) {
            client.update(session, say_v1(".".into())).await?;
        }
        client.update(session, say_v1(text)).await?;
        Ok(v1::PromptResponse::new(if cx.is_cancelled() { v1::StopReason::Cancelled } else { v1::StopReason::EndTurn }))
    }
}

impl v2::methods::agent::Handler<AgentContext> for Echo {
    async fn initialize(&self, _: v2::InitializeRequest, _: AgentContext) -> Result<v2::InitializeResponse, RpcError> {
        let info = v2::Implementation::new("echo_agent".into(), env!("CARGO_PKG_VERSION").into());
        // `capabilities.session` is filled in by the runtime, which runs the prompt turns.
        let mut answer = v2::InitializeResponse::new(v2::ProtocolVersion(2), info);
        #[cfg(feature = "mcp")]
        {
            let mut mcp = v2::McpCapabilities::default();
            mcp.acp = v2::McpAcpCapabilities::default().into();
            let mut session = v2::SessionCapabilities::default();
            session.mcp = mcp.into();
            answer.capabilities.session = session.into();
        }
        if self.require_auth {
            let login = v2::AuthMethodAgent::new(v2::AuthMethodId(LOGIN.into()), "Echo login".into());
            answer.auth_methods = Some(vec![v2::AuthMethod::Agent(Box::new(login))]);
        }
        Ok(answer)
    }

    async fn auth_login(&self, p: v2::LoginAuthRequest, _: AgentContext) -> Result<v2::LoginAuthResponse, RpcError> {
        self.log_in(&p.method_id.0).map(|()| v2::LoginAuthResponse::new())
    }

    async fn session_new(
        &self,
        params: v2::NewSessionRequest,
        _: AgentContext,
    ) -> Result<v2::NewSessionResponse, RpcError> {
        self.gate()?;
        let id = format!("sess-{}", self.sessions.fetch_add(1, Ordering::Relaxed));
        #[cfg(feature = "mcp")]
        self.mcp.offered(id.clone(), acp_rpc::mcp::acp_servers_v2(params.mcp_servers.as_deref().unwrap_or_default()));
        self.open().insert(id.clone(), params.cwd);
        Ok(v2::NewSessionResponse::new(v2::SessionId(id)))
    }

    async fn session_list(
        &self,
        params: v2::ListSessionsRequest,
        _: AgentContext,
    ) -> Result<v2::ListSessionsResponse, RpcError> {
        let wanted = match params.cwd {
            acp_rpc::types::Patch::Value(cwd) => Some(cwd),
            _ => None,
        };
        let sessions = self
            .open()
            .iter()
            .filter(|(_, cwd)| wanted.as_ref().is_none_or(|w| w == *cwd))
            .map(|(id, cwd)| v2::SessionInfo::new(v2::SessionId(id.clone()), cwd.clone()))
            .collect();
        Ok(v2::ListSessionsResponse::new(sessions))
    }

    /// Nothing is retained to replay; the current state (idle: turns end before their session
    /// can be resumed elsewhere) is reported before the answer, as the schema requires.
    async fn session_resume(
        &self,
        params: v2::ResumeSessionRequest,
        cx: AgentContext,
    ) -> Result<v2::ResumeSessionResponse, RpcError> {
        if !self.open().contains_key(&params.session_id.0) {
            return Err(RpcError::new(RpcError::RESOURCE_NOT_FOUND, format!("no session {}", params.session_id.0)));
        }
        let idle = v2::StateUpdate::Idle(Box::new(v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::None(
            Default::default(),
        ))));
        let snapshot = v2::UpdateSessionNotification::new(params.session_id, v2::SessionUpdate::from(idle));
        cx.notify::<v2::methods::SessionUpdate>(&snapshot).await.map_err(|e| e.to_rpc())?;
        Ok(v2::ResumeSessionResponse::new())
    }

    /// The runtime has ended the session's turns (`cancelled`) before this is called.
    async fn session_close(
        &self,
        params: v2::CloseSessionRequest,
        _: AgentContext,
    ) -> Result<v2::CloseSessionResponse, RpcError> {
        self.open().remove(&params.session_id.0);
        Ok(v2::CloseSessionResponse::new())
    }

    #[cfg(feature = "mcp")]
    async fn mcp_message(&self, params: v2::MessageMcpNotification, _: AgentContext) {
        self.mcp.caller.route_v2(&params);
    }
}

/// v2: the runtime has inserted the prompt, answered with its `messageId` and reported
/// `running`; this is the turn, and the runtime reports `idle` with the stop reason returned.
impl acp_rpc::agent::PromptTurn for Echo {
    async fn prompt_turn(&self, params: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        let text = prompt_text(params.prompt.iter().map(|b| match b {
            v2::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        }));
        let stopped = |stop| Ok(v2::IdleStateUpdate::new(stop));
        if text.split_whitespace().any(|w| w == "perm") {
            let options = vec![
                v2::PermissionOption::new(
                    v2::PermissionOptionId("allow".into()),
                    "Allow".into(),
                    v2::PermissionOptionKind::AllowOnce,
                ),
                v2::PermissionOption::new(
                    v2::PermissionOptionId("reject".into()),
                    "Reject".into(),
                    v2::PermissionOptionKind::RejectOnce,
                ),
            ];
            if let v2::RequestPermissionOutcome::Cancelled(_) = turn.ask_permission("Echo the prompt", options).await? {
                return stopped(v2::IdleStateUpdateStopReason::Cancelled);
            }
        }
        if text.split_whitespace().any(|w| w == "slow") && slow(turn.context()).await {
            return stopped(v2::IdleStateUpdateStopReason::Cancelled);
        }
        let message = turn.new_message_id();
        #[cfg(feature = "mcp")]
        if text.split_whitespace().any(|w| w == "mcp") {
            let call = v2::ToolCallId("mcp-echo".into());
            let mut started = v2::ToolCallUpdate::new(call.clone());
            started.title = "mcp echo".to_string().into();
            started.status = v2::ToolCallStatus::InProgress.into();
            turn.update(v2::SessionUpdate::ToolCallUpdate(Box::new(started))).await?;
            let said = self.mcp.echo(&params.session_id.0, turn.context(), &text).await;
            let mut done = v2::ToolCallUpdate::new(call);
            let status = if said.is_ok() { v2::ToolCallStatus::Completed } else { v2::ToolCallStatus::Failed };
            done.status = status.into();
            turn.update(v2::SessionUpdate::ToolCallUpdate(Box::new(done))).await?;
            let said = v2::TextContent::new(said.unwrap_or_else(|e| e));
            let chunk = v2::ContentChunk::new(message.clone(), v2::ContentBlock::from(said));
            turn.update(v2::SessionUpdate::AgentMessageChunk(Box::new(chunk))).await?;
        }
        for _ in 0..flood(&text.split_whitespace().collect::<Vec<_>>()) {
            let dot = v2::ContentChunk::new(message.clone(), v2::ContentBlock::from(v2::TextContent::new(".".into())));
            turn.update(v2::SessionUpdate::AgentMessageChunk(Box::new(dot))).await?;
        }
        let chunk = v2::ContentChunk::new(message, v2::ContentBlock::from(v2::TextContent::new(text)));
        turn.update(v2::SessionUpdate::AgentMessageChunk(Box::new(chunk))).await?;
        stopped(v2::IdleStateUpdateStopReason::EndTurn)
    }
}

/// `mcp`: the servers offered over ACP and the `echo` call (feature `mcp`).
#[cfg(feature = "mcp")]
mod mcp {
    use acp_rpc::mcp::{AcpServer, McpCaller};
    use acp_rpc::AgentContext;
    use std::collections::HashMap;
    use std::sync::Mutex;

    #[derive(Default)]
    pub(crate) struct Servers {
        pub(crate) caller: McpCaller,
        offered: Mutex<HashMap<String, Vec<AcpServer>>>,
    }

    impl Servers {
        pub(crate) fn offered(&self, session: String, servers: Vec<AcpServer>) {
            self.offered.lock().unwrap_or_else(|p| p.into_inner()).insert(session, servers);
        }

        // ANCHOR: mcp_call
        /// Calls `echo` on the first of the session's servers that lists it: `mcp echo: TEXT` with
        /// the tool's text, or why not.
        pub(crate) async fn echo(&self, session: &str, cx: &AgentContext, text: &str) -> Result<String, String> {
            let servers = self.offered.lock().unwrap_or_else(|p| p.into_inner()).get(session).cloned();
            let mut failures = Vec::new();
            for server in servers.unwrap_or_default() {
                let tools = match self.caller.list_tools(cx, &server.server_id).await {
                    Ok(tools) => tools,
                    Err(e) => {
                        failures.push(format!("{}: {e}", server.name));
                        continue;
                    }
                };
                if !tools.tools.iter().any(|t| t.name == "echo") {
                    continue;
                }
                let arguments = serde_json::json!({ "text": text }).as_object().cloned();
                let result = self.caller.call_tool(cx, &server.server_id, "echo", arguments).await;
                let result = result.map_err(|e| format!("mcp echo failed: {e}"))?;
                let said: String = result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.as_str()).collect();
                return Ok(format!("mcp echo: {said}"));
            }
            Err(format!("mcp echo: no MCP server offered over ACP lists a tool echo ({})", failures.join("; ")))
        }
        // ANCHOR_END: mcp_call
    }
}

/// Logs (e.g. a response to an unknown id) go to stderr: stdout is the protocol's. `ACP_LOG`
/// sets the level (`debug` shows each refused request and each agent connection of `--listen`).
fn log_to_stderr() {
    let level = std::env::var("ACP_LOG").ok().and_then(|l| l.parse().ok()).unwrap_or(tracing::Level::INFO);
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).with_max_level(level).init();
}

/// What `--listen ADDR` is given besides the address.
#[derive(Default)]
struct ListenOptions {
    /// `--tls-cert CHAIN.pem --tls-key KEY.pem`.
    tls: Option<(String, String)>,
    /// `--max-connections N`.
    max_connections: Option<usize>,
    /// `--allow-origin ORIGIN`, repeatable.
    origins: Vec<String>,
    /// `--allow-host NAME`, repeatable.
    hosts: Vec<String>,
    /// `--token-file FILE`: requests need `Authorization: Bearer <its content>`.
    token_file: Option<String>,
    /// `--insecure-no-auth`: serve beyond loopback without a token.
    insecure_no_auth: bool,
}

fn usage_error(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}

/// The options of `--listen` from the command line.
fn listen_options(args: &[String]) -> ListenOptions {
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let all = |name: &str| args.windows(2).filter(|w| w[0] == name).map(|w| w[1].clone()).collect();
    let tls = match (flag("--tls-cert"), flag("--tls-key")) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => usage_error("--tls-cert CHAIN.pem and --tls-key KEY.pem go together"),
    };
    let max_connections = match flag("--max-connections").map(|n| n.parse::<usize>()) {
        None => None,
        Some(Ok(n)) if n > 0 => Some(n),
        Some(_) => usage_error("--max-connections needs a number above 0"),
    };
    ListenOptions {
        tls,
        max_connections,
        origins: all("--allow-origin"),
        hosts: all("--allow-host"),
        token_file: flag("--token-file"),
        insecure_no_auth: args.iter().any(|a| a == "--insecure-no-auth"),
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    log_to_stderr();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().position(|a| a == "--listen") {
        Some(i) => {
            let Some(addr) = args.get(i + 1) else { usage_error("--listen needs ADDR:PORT (e.g. 127.0.0.1:8080)") };
            listen(addr, listen_options(&args)).await
        }
        None => {
            let echo = Echo { require_auth: args.iter().any(|a| a == "--require-auth"), ..Echo::default() };
            acp_rpc::agent::serve_stdio(echo, acp_rpc::types::Version::ALL).await
        }
    }
}

/// Serves HTTP and WebSocket on `addr` until interrupted, as `options` say. Beyond loopback it
/// starts only with `--token-file` or `--insecure-no-auth`.
// ANCHOR: listen
#[cfg(feature = "ws")]
async fn listen(addr: &str, options: ListenOptions) -> std::io::Result<()> {
    use acp_rpc::net::server::{Auth, Limits, Server};
    let mut server = Server::new(std::sync::Arc::new(Echo::default()), acp_rpc::types::Version::ALL)
        .allow_origins(options.origins)
        .allow_hosts(options.hosts);
    if let Some(n) = options.max_connections {
        server = server.limits(Limits { max_tcp_connections: n, ..Limits::default() });
    }
    let credential = options.token_file.is_some();
    if let Some(file) = options.token_file {
        server = server.auth(Auth::bearer_file(file)?);
    }
    if options.insecure_no_auth {
        server = server.insecure_no_auth();
    }
    let scheme = match options.tls {
        None => "http",
        #[cfg(feature = "tls")]
        Some((cert, key)) => {
            server = server.tls(acp_rpc::net::tls::Identity::from_pem_files(cert, key)?);
            "https"
        }
        #[cfg(not(feature = "tls"))]
        Some(_) => usage_error("--tls-cert and --tls-key need TLS: build with `--features ws,tls`"),
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() && !credential && !options.insecure_no_auth {
        usage_error(&format!(
            "refusing to listen on {bound} without a credential: give --token-file FILE (or --insecure-no-auth to let anyone who reaches the port drive the agent)"
        ));
    }
    eprintln!("listening on {scheme}://{bound}");
    let handle = server.handle();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            handle.shutdown().await;
        }
    });
    server.serve(listener).await
}
// ANCHOR_END: listen

#[cfg(not(feature = "ws"))]
async fn listen(_: &str, _: ListenOptions) -> std::io::Result<()> {
    usage_error("--listen needs the network server: build with `--features ws`")
}
