//! An ACP client: spawns an agent, runs `initialize`, `session/new` (cwd = current directory) and
//! one `session/prompt`; allows every permission request; serves `fs/read_text_file` inside the
//! cwd; prints every `session/update` as one JSON line, then `{"stopReason": …}`; exits 0 when the
//! turn ended.
//!
//! `cargo run --example client -- [--protocol-version N] --prompt TEXT -- AGENT_CMD [ARGS…]`

use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::Context;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::sync::mpsc;

struct Client {
    cwd: PathBuf,
    /// Every session update, as JSON, in arrival order.
    updates: mpsc::UnboundedSender<serde_json::Value>,
}

fn print(update: serde_json::Value) {
    println!("{update}");
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

    async fn session_update(&self, params: v1::SessionNotification, _: Context) {
        let _ = self.updates.send(serde_json::to_value(&params.update).unwrap_or_default());
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

    async fn session_update(&self, params: v2::UpdateSessionNotification, _: Context) {
        let _ = self.updates.send(serde_json::to_value(&params.update).unwrap_or_default());
    }
}

struct Args {
    version: Version,
    prompt: String,
    agent: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut version, mut prompt) = (Version::V1, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--protocol-version" => {
                let number = args.next().and_then(|v| v.parse().ok()).ok_or("--protocol-version needs a number")?;
                version = Version::from_number(number)
                    .ok_or(format!("protocol version {number} is not one of {:?}", Version::ALL))?;
            }
            "--prompt" => prompt = Some(args.next().ok_or("--prompt needs a text")?),
            "--" => break,
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    let agent: Vec<String> = args.collect();
    let prompt = prompt.ok_or("--prompt TEXT is required")?;
    if agent.is_empty() {
        return Err("the agent command goes after --".into());
    }
    Ok(Args { version, prompt, agent })
}

async fn run(args: Args) -> Result<String, String> {
    let cwd = std::env::current_dir().and_then(|d| d.canonicalize()).map_err(|e| e.to_string())?;
    let (tx, mut updates) = mpsc::unbounded_channel();
    let client = Client { cwd: cwd.clone(), updates: tx };
    let (conn, driver, _child) =
        acp_rpc::client::spawn_agent(client, &args.agent[0], &args.agent[1..], acp_rpc::Config::default())
            .map_err(|e| format!("cannot start the agent: {e}"))?;
    tokio::spawn(driver);
    let e = |step: &'static str| move |e: acp_rpc::Error| format!("{step}: {e}");
    let cwd_text = cwd.display().to_string();
    let init = match args.version {
        Version::V1 => json!({ "clientCapabilities": { "fs": { "readTextFile": true } } }),
        Version::V2 => {
            json!({ "info": { "name": "acp-rpc example client", "version": env!("CARGO_PKG_VERSION") } })
        }
    };
    conn.initialize(args.version, init).await.map_err(e("initialize"))?;
    let prompt = json!([{ "type": "text", "text": args.prompt }]);
    let version = conn.version().ok_or("no protocol version after initialize")?;
    match version {
        Version::V1 => run_v1(&conn, &mut updates, cwd_text, prompt).await,
        Version::V2 => run_v2(&conn, &mut updates, cwd_text, prompt).await,
    }
}

async fn run_v1(
    conn: &acp_rpc::client::ClientConnection,
    updates: &mut mpsc::UnboundedReceiver<serde_json::Value>,
    cwd_text: String,
    prompt: serde_json::Value,
) -> Result<String, String> {
    let e = |step: &'static str| move |e: acp_rpc::Error| format!("{step}: {e}");
    let session = conn
        .conn
        .request::<v1::methods::SessionNew>(&v1::NewSessionRequest::new(cwd_text, vec![]))
        .await
        .map_err(e("session/new"))?;
    let params = v1::PromptRequest::new(session.session_id, serde_json::from_value(prompt).map_err(|e| e.to_string())?);
    // Completes with the answer, once every update the agent sent before it was handled.
    let done = conn.prompt_v1(&params).await.map_err(e("session/prompt"))?;
    while let Ok(update) = updates.try_recv() {
        print(update);
    }
    Ok(done.stop_reason.as_str().to_string())
}

async fn run_v2(
    conn: &acp_rpc::client::ClientConnection,
    updates: &mut mpsc::UnboundedReceiver<serde_json::Value>,
    cwd_text: String,
    prompt: serde_json::Value,
) -> Result<String, String> {
    let e = |step: &'static str| move |e: acp_rpc::Error| format!("{step}: {e}");
    let session = conn
        .conn
        .request::<v2::methods::SessionNew>(&v2::NewSessionRequest::new(v2::AbsolutePath(cwd_text)))
        .await
        .map_err(e("session/new"))?;
    let params = v2::PromptRequest::new(session.session_id, serde_json::from_value(prompt).map_err(|e| e.to_string())?);
    // Completes at the `idle` that ends this prompt's turn (an idle snapshot, such as the one
    // some agents send after `session/new`, is not a turn end), once every update was handled.
    let end = conn.prompt_v2(&params).await.map_err(e("session/prompt"))?;
    while let Ok(update) = updates.try_recv() {
        print(update);
    }
    let idle = serde_json::to_value(&end.idle).map_err(|e| e.to_string())?;
    Ok(idle["stopReason"].as_str().unwrap_or("none").to_string())
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
            eprintln!("client: {e}\nusage: client [--protocol-version N] --prompt TEXT -- AGENT_CMD [ARGS…]");
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
