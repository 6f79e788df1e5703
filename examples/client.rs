//! An ACP client: spawns an agent, runs `initialize`, `session/new` (cwd = current directory) and
//! one `session/prompt`; allows every permission request; serves `fs/read_text_file` inside the
//! cwd; prints every `session/update` as one JSON line, then `{"stopReason": …}`; exits 0 when the
//! turn ended.
//!
//! `cargo run --example client -- [--protocol-version N] --prompt TEXT [--repeat N] [--cancel-after MS]
//! (--url URL | -- AGENT_CMD [ARGS…])`
//!
//! `--repeat N` prompts N times in the one session, one turn after another (the stop reason
//! printed is the last turn's); `--cancel-after MS` sends `session/cancel` that long after each
//! prompt.
//!
//! `--url http://…` (Streamable HTTP) or `--url ws://…` (WebSocket) connects to an agent served
//! over the network instead of spawning one (built with the `ws` feature).

use acp_rpc::client::ClientConnection;
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::Context;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

struct Client {
    cwd: PathBuf,
}

impl v1::methods::client::Handler<Context> for Client {
    async fn session_request_permission(
        &self,
        params: v1::RequestPermissionRequest,
        _: Context,
    ) -> Result<v1::RequestPermissionResponse, RpcError> {
        let allow = params
            .options
            .iter()
            .find(|o| matches!(o.kind, v1::PermissionOptionKind::AllowOnce | v1::PermissionOptionKind::AllowAlways));
        let outcome = match allow.or(params.options.first()) {
            Some(o) => v1::RequestPermissionOutcome::Selected(v1::SelectedPermissionOutcome::new(o.option_id.clone())),
            None => v1::RequestPermissionOutcome::Cancelled,
        };
        Ok(v1::RequestPermissionResponse::new(outcome))
    }

    async fn fs_read_text_file(
        &self,
        params: v1::ReadTextFileRequest,
        _: Context,
    ) -> Result<v1::ReadTextFileResponse, RpcError> {
        let path = self.cwd.join(&params.path);
        let inside = path.canonicalize().ok().filter(|p| p.starts_with(&self.cwd));
        let path = inside.ok_or_else(|| {
            RpcError::new(RpcError::RESOURCE_NOT_FOUND, format!("{} is not a file inside the cwd", params.path))
        })?;
        let content =
            std::fs::read_to_string(&path).map_err(|e| RpcError::new(RpcError::RESOURCE_NOT_FOUND, e.to_string()))?;
        Ok(v1::ReadTextFileResponse::new(content))
    }
}

impl v2::methods::client::Handler<Context> for Client {
    async fn session_request_permission(
        &self,
        params: v2::RequestPermissionRequest,
        _: Context,
    ) -> Result<v2::RequestPermissionResponse, RpcError> {
        let allow = params
            .options
            .iter()
            .find(|o| matches!(o.kind, v2::PermissionOptionKind::AllowOnce | v2::PermissionOptionKind::AllowAlways));
        let outcome = match allow.or(params.options.first()) {
            Some(o) => v2::RequestPermissionOutcome::Selected(v2::SelectedPermissionOutcome::new(o.option_id.clone())),
            None => v2::RequestPermissionOutcome::Cancelled(v2::CancelledPermissionOutcome::default()),
        };
        Ok(v2::RequestPermissionResponse::new(outcome))
    }
}

struct Args {
    version: Version,
    prompt: String,
    repeat: usize,
    cancel_after: Option<std::time::Duration>,
    agent: Vec<String>,
    url: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut version, mut prompt, mut url) = (Version::V1, None, None);
    let (mut repeat, mut cancel_after) = (1, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--protocol-version" => {
                let number = args.next().and_then(|v| v.parse().ok()).ok_or("--protocol-version needs a number")?;
                version = Version::from_number(number)
                    .ok_or(format!("protocol version {number} is not one of {:?}", Version::ALL))?;
            }
            "--prompt" => prompt = Some(args.next().ok_or("--prompt needs a text")?),
            "--url" => url = Some(args.next().ok_or("--url needs a URL")?),
            "--repeat" => repeat = args.next().and_then(|n| n.parse().ok()).ok_or("--repeat needs a count")?,
            "--cancel-after" => {
                let ms = args.next().and_then(|n| n.parse().ok()).ok_or("--cancel-after needs milliseconds")?;
                cancel_after = Some(std::time::Duration::from_millis(ms));
            }
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
    Ok(Args { version, prompt, repeat, cancel_after, agent, url })
}

async fn run(args: Args) -> Result<String, String> {
    let cwd = std::env::current_dir().and_then(|d| d.canonicalize()).map_err(|e| e.to_string())?;
    let client = Client { cwd: cwd.clone() };
    let cwd = cwd.display().to_string();
    if let Some(url) = args.url.clone() {
        return run_url(client, &url, cwd, args).await;
    }
    let (conn, driver, _child) =
        acp_rpc::client::spawn_agent(client, &args.agent[0], &args.agent[1..], Default::default())
            .map_err(|e| format!("cannot start the agent: {e}"))?;
    tokio::spawn(driver);
    run_version(&conn, cwd, args).await
}

async fn run_version(conn: &ClientConnection, cwd: String, args: Args) -> Result<String, String> {
    match args.version {
        Version::V1 => run_v1(conn, cwd, &args).await,
        Version::V2 => run_v2(conn, cwd, &args).await,
    }
}

/// Connects over the network; the transport is closed (HTTP: `DELETE`) once the turn is over.
#[cfg(feature = "ws")]
async fn run_url(client: Client, url: &str, cwd: String, args: Args) -> Result<String, String> {
    use acp_rpc::net::{http, ws};
    let cannot = |e: std::io::Error| format!("cannot connect to {url}: {e}");
    if url.starts_with("ws://") {
        let (conn, driver, socket) =
            ws::connect(client, url, acp_rpc::net::ClientOptions::default(), Default::default())
                .await
                .map_err(cannot)?;
        tokio::spawn(driver);
        let result = run_version(&conn, cwd, args).await;
        socket.close().await;
        result
    } else {
        let (conn, driver, transport) =
            http::connect(client, url, acp_rpc::net::ClientOptions::default(), Default::default()).map_err(cannot)?;
        tokio::spawn(driver);
        let result = run_version(&conn, cwd, args).await;
        transport.close().await;
        result
    }
}

#[cfg(not(feature = "ws"))]
async fn run_url(_: Client, _: &str, _: String, _: Args) -> Result<String, String> {
    Err("--url needs the example built with --features ws".into())
}

fn step(step: &'static str) -> impl Fn(acp_rpc::Error) -> String {
    move |e| format!("{step}: {e}")
}

/// Prints an update as one JSON line.
fn print(update: &impl serde::Serialize) {
    println!("{}", serde_json::to_string(update).unwrap_or_default());
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

async fn run_v1(conn: &ClientConnection, cwd: String, args: &Args) -> Result<String, String> {
    let mut init = v1::InitializeRequest::new(v1::ProtocolVersion(1));
    init.client_capabilities.fs.read_text_file = true.into();
    conn.initialize_v1(init).await.map_err(step("initialize"))?;
    let new = v1::NewSessionRequest::new(cwd, vec![]);
    let mut session = conn.new_session_v1(new).await.map_err(step("session/new"))?;
    let mut stop = String::new();
    for _ in 0..args.repeat {
        let id = session.id.0.clone();
        let mut turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new(args.prompt.clone()))]).await;
        cancel_later(conn, &id, args);
        while let Some(update) = turn.next().await {
            print(&update);
        }
        let done = turn.outcome().await.map_err(step("session/prompt"))?;
        stop = done.stop_reason.as_str().to_string();
    }
    Ok(stop)
}

async fn run_v2(conn: &ClientConnection, cwd: String, args: &Args) -> Result<String, String> {
    let info = v2::Implementation::new("acp-rpc example client".into(), env!("CARGO_PKG_VERSION").into());
    conn.initialize_v2(v2::InitializeRequest::new(v2::ProtocolVersion(2), info)).await.map_err(step("initialize"))?;
    let new = v2::NewSessionRequest::new(v2::AbsolutePath(cwd));
    let mut session = conn.new_session_v2(new).await.map_err(step("session/new"))?;
    // Updates before the prompt (an idle snapshot after `session/new`, say) are not the turn's.
    while let Some(update) = session.next_update() {
        print(&update);
    }
    let mut stop = String::new();
    for _ in 0..args.repeat {
        let id = session.id.0.clone();
        let mut turn = session.prompt(vec![v2::ContentBlock::from(v2::TextContent::new(args.prompt.clone()))]).await;
        cancel_later(conn, &id, args);
        while let Some(update) = turn.next().await {
            print(&update);
        }
        // The turn ends at the `idle` after this prompt's `running`, never at a snapshot.
        let end = turn.outcome().await.map_err(step("session/prompt"))?;
        stop = end.idle.stop_reason.tag().unwrap_or("none").to_string();
    }
    Ok(stop)
}

/// Logs (e.g. a response to an unknown id) go to stderr: stdout is the protocol's.
fn log_to_stderr() {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).init();
}

#[tokio::main]
async fn main() -> ExitCode {
    log_to_stderr();
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!(
                "client: {e}\nusage: client [--protocol-version N] --prompt TEXT (--url URL | -- AGENT_CMD [ARGS…])"
            );
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(stop) => {
            println!("{}", json!({ "stopReason": stop }));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("client: {e}");
            ExitCode::FAILURE
        }
    }
}
