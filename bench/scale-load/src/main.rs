//! The load generator of `cargo xtask bench --scale`: the same raw requests for every server, so
//! that the curves compare servers and not clients. ACP v1, JSON-RPC written by hand.
//!
//! - `scale-load idle URL N`: opens N connections (each `initialize` and `session/new`; over
//!   HTTP also holding the connection's and the session's SSE streams), prints `ready OPENED`,
//!   and holds them until its stdin closes.
//! - `scale-load active URL N SECONDS [PID]`: opens N connections, then each does prompt turns of
//!   `x` one after another for SECONDS; prints `turns T seconds S p99_ms P opened O errors E`, and
//!   with the server's PID also `memory_kib M`: its peak `VmRSS` from the opening of the
//!   connections to the end of the turns, minus its `VmRSS` before (see [`Memory`]).
//! - `scale-load stdio N SECONDS -- AGENT ARGS…`: one stdio connection to AGENT, N sessions on it,
//!   each doing turns for SECONDS; prints the same line, `memory_kib` the agent's from after
//!   `initialize` to the end of the turns.
//!
//! The URL's scheme picks the transport: `ws://` is the WebSocket profile (one JSON-RPC message
//! per text frame), `http://` Streamable HTTP (`POST /` for each message, answers on the
//! connection's and the session's SSE streams, as `acp-rpc`'s `net` module describes it).

use futures::{FutureExt, SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, Mutex, Semaphore};
use tokio_tungstenite::tungstenite::Message;

/// Connections being opened at once (the rest wait): a listener's accept backlog is finite.
const OPENING: usize = 256;

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}
    }})
}

fn new_session(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}})
}

fn prompt(id: u64, session: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {
        "sessionId": session, "prompt": [{"type": "text", "text": "x"}]
    }})
}

/// The `result` of a response, or the error it carries.
fn result(message: Value) -> Result<Value, String> {
    match message.get("result") {
        Some(result) => Ok(result.clone()),
        None => Err(format!("error response: {message}")),
    }
}

fn session_id(result: &Value) -> Result<String, String> {
    result.get("sessionId").and_then(Value::as_str).map(str::to_string).ok_or_else(|| "no sessionId".into())
}

/// One open ACP connection with one session.
enum Conn {
    Ws(Box<WsConn>),
    Http(HttpConn),
}

struct WsConn {
    socket: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    session: String,
    next: u64,
}

struct HttpConn {
    client: reqwest::Client,
    url: String,
    connection: String,
    session: String,
    /// Messages of both SSE streams.
    inbox: mpsc::UnboundedReceiver<Value>,
    next: u64,
    /// The stream readers, ended with the connection.
    _streams: Vec<tokio::task::JoinHandle<()>>,
}

impl WsConn {
    async fn open(url: &str) -> Result<WsConn, String> {
        let (socket, _) = tokio_tungstenite::connect_async(url).await.map_err(|e| format!("connect: {e}"))?;
        let mut conn = WsConn { socket, session: String::new(), next: 0 };
        conn.call(initialize(0)).await?;
        conn.session = session_id(&conn.call(new_session(1)).await?)?;
        conn.next = 2;
        Ok(conn)
    }

    async fn call(&mut self, request: Value) -> Result<Value, String> {
        let id = request["id"].clone();
        self.socket.send(Message::text(request.to_string())).await.map_err(|e| format!("send: {e}"))?;
        while let Some(frame) = self.socket.next().await {
            let frame = frame.map_err(|e| format!("receive: {e}"))?;
            let Message::Text(text) = frame else { continue };
            let message: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
            if message.get("id") == Some(&id) && message.get("method").is_none() {
                return result(message);
            }
        }
        Err("connection closed".into())
    }
}

/// Reads an SSE body, sending each event's JSON `data` to `inbox`.
async fn read_events(mut response: reqwest::Response, inbox: mpsc::UnboundedSender<Value>) {
    let mut buffer = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buffer.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&event);
            let data: String = text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
            if let Ok(message) = serde_json::from_str(&data) {
                if inbox.send(message).is_err() {
                    return;
                }
            }
        }
    }
}

impl HttpConn {
    async fn open(url: &str) -> Result<HttpConn, String> {
        let client = reqwest::Client::builder().build().map_err(|e| e.to_string())?;
        let response = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize(0).to_string())
            .send()
            .await
            .map_err(|e| format!("initialize: {e}"))?;
        let connection = response
            .headers()
            .get("acp-connection-id")
            .and_then(|v| v.to_str().ok())
            .ok_or("initialize answered without Acp-Connection-Id")?
            .to_string();
        let body = response.text().await.map_err(|e| format!("initialize: {e}"))?;
        let json = body.lines().find_map(|l| l.strip_prefix("data:")).unwrap_or(&body).trim();
        result(serde_json::from_str(json).map_err(|e| format!("initialize answer: {e}"))?)?;
        let (sender, inbox) = mpsc::unbounded_channel();
        let mut conn = HttpConn {
            client,
            url: url.into(),
            connection,
            session: String::new(),
            inbox,
            next: 1,
            _streams: Vec::new(),
        };
        let stream = conn.stream(None).await?;
        conn._streams.push(tokio::spawn(read_events(stream, sender.clone())));
        conn.session = session_id(&conn.call(new_session(1)).await?)?;
        let stream = conn.stream(Some(conn.session.clone())).await?;
        conn._streams.push(tokio::spawn(read_events(stream, sender)));
        conn.next = 2;
        Ok(conn)
    }

    async fn stream(&self, session: Option<String>) -> Result<reqwest::Response, String> {
        let mut get = self.client.get(&self.url).header("accept", "text/event-stream");
        get = get.header("acp-connection-id", &self.connection);
        if let Some(session) = session {
            get = get.header("acp-session-id", session);
        }
        let response = get.send().await.map_err(|e| format!("GET stream: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("GET stream: {}", response.status()));
        }
        Ok(response)
    }

    async fn call(&mut self, request: Value) -> Result<Value, String> {
        let id = request["id"].clone();
        let mut post = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("acp-connection-id", &self.connection);
        if !self.session.is_empty() {
            post = post.header("acp-session-id", &self.session);
        }
        let response = post.body(request.to_string()).send().await.map_err(|e| format!("POST: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("POST: {}", response.status()));
        }
        while let Some(message) = self.inbox.recv().await {
            if message.get("id") == Some(&id) && message.get("method").is_none() {
                return result(message);
            }
        }
        Err("streams closed".into())
    }
}

impl Conn {
    async fn open(url: &str) -> Result<Conn, String> {
        if url.starts_with("ws://") {
            WsConn::open(url).await.map(|c| Conn::Ws(Box::new(c)))
        } else {
            HttpConn::open(url).await.map(Conn::Http)
        }
    }

    async fn turn(&mut self) -> Result<(), String> {
        match self {
            Conn::Ws(c) => {
                c.next += 1;
                let request = prompt(c.next, &c.session);
                c.call(request).await.map(drop)
            }
            Conn::Http(c) => {
                c.next += 1;
                let request = prompt(c.next, &c.session);
                c.call(request).await.map(drop)
            }
        }
    }
}

/// Opens `n` connections, at most [`OPENING`] at a time; the ones that opened and the first error.
async fn open_all(url: &str, n: usize) -> (Vec<Conn>, Option<String>) {
    let gate = Arc::new(Semaphore::new(OPENING));
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (gate, url) = (gate.clone(), url.to_string());
            tokio::spawn(async move {
                let _permit = gate.acquire().await;
                Conn::open(&url).await
            })
        })
        .collect();
    let mut conns = Vec::new();
    let mut error = None;
    for task in tasks {
        match task.await {
            Ok(Ok(conn)) => conns.push(conn),
            Ok(Err(e)) => error = error.or(Some(e)),
            Err(e) => error = error.or(Some(e.to_string())),
        }
    }
    (conns, error)
}

/// Turn latencies in microseconds and errors of one session's loop until `end`.
#[derive(Default)]
struct Tally {
    latencies: Vec<u32>,
    errors: usize,
}

/// Turns one after another until `end`: their latencies, and the error that stopped them.
async fn turns_until<F, T>(end: Instant, mut turn: F) -> (Tally, Option<String>)
where
    F: FnMut() -> T,
    T: std::future::Future<Output = Result<(), String>>,
{
    let mut tally = Tally::default();
    while Instant::now() < end {
        let t = Instant::now();
        match turn().await {
            Ok(()) => tally.latencies.push(t.elapsed().as_micros().min(u32::MAX as u128) as u32),
            Err(e) => {
                tally.errors += 1;
                return (tally, Some(e));
            }
        }
    }
    (tally, None)
}

/// The tallies of the turn loops, and the first error (after `first_error`).
async fn gather(
    tasks: Vec<tokio::task::JoinHandle<(Tally, Option<String>)>>,
    mut first_error: Option<String>,
) -> (Vec<Tally>, Option<String>) {
    let mut tallies = Vec::new();
    for task in tasks {
        if let Ok((tally, error)) = task.await {
            tallies.push(tally);
            first_error = first_error.or(error);
        }
    }
    (tallies, first_error)
}

/// The memory a busy phase costs a process (Linux `/proc`): its `VmRSS` when the phase begins,
/// and its peak `VmRSS` (`VmHWM`) at the end, the peak reset to the current value at the start by
/// writing `5` to `/proc/PID/clear_refs` (the kernel's Documentation/filesystems/proc.rst,
/// "clear_refs"), so that start-up peaks before the phase do not count.
struct Memory {
    pid: u32,
    before: Result<u64, String>,
}

impl Memory {
    fn start(pid: u32) -> Memory {
        let before = status_kib(pid, "VmRSS:").and_then(|rss| {
            std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
                .map(|()| rss)
                .map_err(|e| format!("cannot reset the peak RSS of {pid}: {e}"))
        });
        Memory { pid, before }
    }

    /// KiB of peak growth since [`Memory::start`].
    fn growth(&self) -> Result<u64, String> {
        Ok(status_kib(self.pid, "VmHWM:")?.saturating_sub(self.before.clone()?))
    }
}

/// A `kB` field of `/proc/PID/status`.
fn status_kib(pid: u32, key: &str) -> Result<u64, String> {
    let text =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    let line = text.lines().find(|l| l.starts_with(key)).ok_or_else(|| format!("no {key} in /proc/{pid}/status"))?;
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).ok_or_else(|| format!("bad {key} line: {line}"))
}

fn report(tallies: Vec<Tally>, seconds: f64, opened: usize, first_error: Option<String>, memory: Option<Memory>) {
    let mut latencies: Vec<u32> = tallies.iter().flat_map(|t| t.latencies.iter().copied()).collect();
    let errors: usize = tallies.iter().map(|t| t.errors).sum();
    latencies.sort_unstable();
    let p99 = match latencies.len() {
        0 => 0.0,
        n => f64::from(latencies[(n * 99).div_ceil(100) - 1]) / 1000.0,
    };
    let memory = match memory.map(|m| m.growth()) {
        Some(Ok(kib)) => format!(" memory_kib {kib}"),
        Some(Err(e)) => {
            eprintln!("scale-load: memory not measured: {e}");
            String::new()
        }
        None => String::new(),
    };
    println!("turns {} seconds {seconds:.3} p99_ms {p99:.3} opened {opened} errors {errors}{memory}", latencies.len());
    if let Some(error) = first_error {
        eprintln!("scale-load: first error: {error}");
    }
}

async fn active(url: &str, n: usize, seconds: f64, server: Option<u32>) {
    let memory = server.map(Memory::start);
    let (conns, first_error) = open_all(url, n).await;
    let opened = conns.len();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|conn| {
            let conn = Arc::new(Mutex::new(conn));
            tokio::spawn(turns_until(end, move || {
                let conn = conn.clone();
                async move { conn.lock().await.turn().await }
            }))
        })
        .collect();
    let (tallies, first_error) = gather(tasks, first_error).await;
    report(tallies, start.elapsed().as_secs_f64(), opened, first_error, memory);
}

async fn idle(url: &str, n: usize) {
    let (conns, error) = open_all(url, n).await;
    println!("ready {}", conns.len());
    if let Some(error) = error {
        eprintln!("scale-load: first error: {error}");
    }
    let mut rest = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut rest).await;
    drop(conns);
}

/// One stdio connection to `agent`, `n` sessions on it, each doing turns for `seconds`.
async fn stdio(agent: &[String], n: usize, seconds: f64) -> Result<(), String> {
    let mut child = tokio::process::Command::new(&agent[0])
        .args(&agent[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", agent[0]))?;
    let stdin = Arc::new(Mutex::new(child.stdin.take().ok_or("no stdin")?));
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let waiting: Arc<std::sync::Mutex<HashMap<u64, oneshot::Sender<Value>>>> = Arc::default();
    let reader_waiting = waiting.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
            if message.get("method").is_some() {
                continue;
            }
            if let Some(id) = message.get("id").and_then(Value::as_u64) {
                if let Some(sender) = reader_waiting.lock().unwrap_or_else(|e| e.into_inner()).remove(&id) {
                    let _ = sender.send(message);
                }
            }
        }
    });
    let call = {
        let (stdin, waiting) = (stdin.clone(), waiting.clone());
        move |request: Value| {
            let (stdin, waiting) = (stdin.clone(), waiting.clone());
            async move {
                let id = request["id"].as_u64().unwrap_or(0);
                let (sender, receiver) = oneshot::channel();
                waiting.lock().unwrap_or_else(|e| e.into_inner()).insert(id, sender);
                let mut line = request.to_string();
                line.push('\n');
                stdin.lock().await.write_all(line.as_bytes()).await.map_err(|e| format!("write: {e}"))?;
                result(receiver.await.map_err(|_| "agent closed its stdout".to_string())?)
            }
        }
    };
    call(initialize(0)).await?;
    let memory = child.id().map(Memory::start);
    let mut sessions = Vec::new();
    for i in 0..n {
        sessions.push(session_id(&call(new_session(1 + i as u64)).await?)?);
    }
    let next = Arc::new(std::sync::atomic::AtomicU64::new(1 + n as u64));
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|session| {
            let (call, next) = (call.clone(), next.clone());
            tokio::spawn(turns_until(end, move || {
                let id = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                call(prompt(id, &session)).map(|answer| answer.map(drop))
            }))
        })
        .collect();
    let (tallies, first_error) = gather(tasks, None).await;
    report(tallies, start.elapsed().as_secs_f64(), n, first_error, memory);
    Ok(())
}

/// Raises the soft limit of open files to the hard one: each connection is a socket or three.
fn raise_nofile() {
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

fn number<T: std::str::FromStr>(arg: Option<&String>, what: &str) -> Result<T, String> {
    arg.and_then(|a| a.parse().ok()).ok_or_else(|| format!("expected {what}"))
}

#[tokio::main]
async fn main() -> ExitCode {
    raise_nofile();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("idle") => match (args.get(1), number(args.get(2), "N")) {
            (Some(url), Ok(n)) => {
                idle(url, n).await;
                Ok(())
            }
            (_, Err(e)) => Err(e),
            (None, _) => Err("expected URL".into()),
        },
        Some("active") => match (args.get(1), number(args.get(2), "N"), number(args.get(3), "SECONDS")) {
            (Some(url), Ok(n), Ok(seconds)) => match args.get(4).map(|_| number(args.get(4), "PID")).transpose() {
                Ok(pid) => {
                    active(url, n, seconds, pid).await;
                    Ok(())
                }
                Err(e) => Err(e),
            },
            (_, Err(e), _) | (_, _, Err(e)) => Err(e),
            (None, _, _) => Err("expected URL".into()),
        },
        Some("stdio") => match (number(args.get(1), "N"), number(args.get(2), "SECONDS"), args.get(3)) {
            (Ok(n), Ok(seconds), Some(dashes)) if dashes == "--" && args.len() > 4 => {
                stdio(&args[4..], n, seconds).await
            }
            (Err(e), _, _) | (_, Err(e), _) => Err(e),
            _ => Err("expected -- AGENT ARGS…".into()),
        },
        _ => Err("usage: scale-load idle URL N | active URL N SECONDS [PID] | stdio N SECONDS -- AGENT ARGS…".into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scale-load: {e}");
            ExitCode::from(2)
        }
    }
}
