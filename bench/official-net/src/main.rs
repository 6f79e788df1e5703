//! The official Rust SDK over the network, for the network rows of `cargo xtask bench`: an echo
//! agent served by `agent-client-protocol-http`'s `AcpHttpServer` (Streamable HTTP and WebSocket
//! on one endpoint) and a client on its `HttpClient`, both ACP v1 on `agent-client-protocol`
//! 5.0.0, with the flags and output `xtask/src/bench/net.rs` expects of our examples:
//!
//! - `official-net agent --listen ADDR:PORT` prints `listening on http://ADDR:PORT` on stderr once
//!   bound; each `session/new` gets a new id; a prompt is echoed as one `agent_message_chunk`,
//!   after K one-character chunks when its words hold `flood K`; every turn ends with `end_turn`.
//! - `official-net client --url URL --prompt TEXT [--repeat N]` initializes, opens one session,
//!   prompts N times one turn after another, prints each update as one JSON line and then
//!   `{"stopReason":…}` of the last turn. The URL's scheme (`http`/`ws`) picks the transport.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse,
    PromptRequest, PromptResponse, SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::{Agent, Client, ConnectTo};
use agent_client_protocol_http::{AcpHttpServer, HttpClient};
use axum::serve::ListenerExt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The N of `flood N` in the prompt's words (0 without it), as our `echo_agent` reads it.
fn flood(text: &str) -> usize {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.windows(2).find(|w| w[0] == "flood").and_then(|w| w[1].parse().ok()).unwrap_or(0)
}

fn text_of(prompt: &[ContentBlock]) -> String {
    prompt
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

/// One agent per connection; session ids are unique across the whole server.
fn echo_agent(sessions: Arc<AtomicU64>) -> impl ConnectTo<Client> {
    Agent
        .v1()
        .on_receive_request(
            async |initialize: InitializeRequest, responder, _cx| {
                responder.respond(InitializeResponse::new(initialize.protocol_version))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_: NewSessionRequest, responder, _cx| {
                let n = sessions.fetch_add(1, Ordering::Relaxed) + 1;
                responder.respond(NewSessionResponse::new(format!("session-{n}")))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async |prompt: PromptRequest, responder, cx| {
                let text = text_of(&prompt.prompt);
                let chunk = |text: String| {
                    SessionNotification::new(
                        prompt.session_id.clone(),
                        SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text))),
                    )
                };
                for _ in 0..flood(&text) {
                    cx.send_notification(chunk(".".into()))?;
                }
                cx.send_notification(chunk(text))?;
                responder.respond(PromptResponse::new(StopReason::EndTurn))
            },
            agent_client_protocol::on_receive_request!(),
        )
}

async fn serve(addr: &str) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let sessions = Arc::new(AtomicU64::new(0));
    let router = AcpHttpServer::new(move || echo_agent(sessions.clone())).into_router();
    eprintln!("listening on http://{bound}");
    // axum::serve leaves Nagle's algorithm on; with it, the update and the response of a turn
    // over WebSocket (two small writes) wait out the client's delayed ACK, about 40 ms a turn.
    // Our agent sets TCP_NODELAY too.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router).await.map_err(|e| e.to_string())
}

struct ClientArgs {
    url: String,
    prompt: String,
    repeat: usize,
}

async fn prompt(args: ClientArgs) -> Result<String, String> {
    let transport = HttpClient::new(&args.url).map_err(|e| format!("{}: {e}", args.url))?;
    Client
        .v1()
        .on_receive_notification(
            async |n: SessionNotification, _cx| {
                println!("{}", serde_json::to_string(&n.update).unwrap_or_default());
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
            let session = cx.send_request(NewSessionRequest::new(cwd)).block_task().await?;
            let mut stop = StopReason::EndTurn;
            for _ in 0..args.repeat {
                let request =
                    PromptRequest::new(session.session_id.clone(), vec![ContentBlock::from(args.prompt.clone())]);
                stop = cx.send_request(request).block_task().await?.stop_reason;
            }
            Ok(stop)
        })
        .await
        .map_err(|e| e.to_string())
        .map(|stop| serde_json::to_value(stop).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default())
}

fn parse_client(mut args: impl Iterator<Item = String>) -> Result<ClientArgs, String> {
    let (mut url, mut prompt, mut repeat) = (None, None, 1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => url = Some(value()?),
            "--prompt" => prompt = Some(value()?),
            "--repeat" => repeat = value()?.parse().map_err(|e| format!("--repeat: {e}"))?,
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    Ok(ClientArgs { url: url.ok_or("--url is required")?, prompt: prompt.ok_or("--prompt is required")?, repeat })
}

const USAGE: &str =
    "usage: official-net agent --listen ADDR:PORT | official-net client --url URL --prompt TEXT [--repeat N]";

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let result = match (args.next().as_deref(), args.next().as_deref()) {
        (Some("agent"), Some("--listen")) => match args.next() {
            Some(addr) => serve(&addr).await,
            None => Err("--listen needs ADDR:PORT".into()),
        },
        (Some("client"), Some(first)) => match parse_client(std::iter::once(first.to_string()).chain(args)) {
            Ok(client) => prompt(client).await.map(|stop| println!("{}", serde_json::json!({ "stopReason": stop }))),
            Err(e) => {
                eprintln!("official-net: {e}\n{USAGE}");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("official-net: {e}");
            ExitCode::FAILURE
        }
    }
}
