//! Hostile input against live connections: the example echo agent as a child process spoken to in
//! raw bytes, and our client (in process) facing a raw agent. Each case sends the hostile input,
//! checks the exact JSON-RPC error (or that nothing is answered where nothing should be), then
//! checks that a valid request is still answered. The memory cases read the agent's peak RSS
//! (`VmHWM`) and hold it to a bound far below what unbounded growth would reach.

use acp_rpc::jsonrpc::{BoxFuture, Raw as RawValueBox, RequestContext, Service};
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::{ClientContext, Config, Connection, Error, Misuse};
use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::common;

/// Turns a hang into a failure; never a statement about speed.
const LIMIT: Duration = Duration::from_secs(60);

/// The echo agent, spoken to in raw lines.
struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: i64,
}

impl Agent {
    fn spawn() -> Agent {
        let mut child = tokio::process::Command::new(common::example("echo_agent"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Its log (one line per dropped message) is not under test.
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the echo agent starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        Agent { child, stdin, lines: BufReader::new(stdout).lines(), next_id: 1000 }
    }

    /// A v1 agent, initialized.
    async fn initialized() -> Agent {
        let mut agent = Agent::spawn();
        let answer = agent.call("initialize", json!({ "protocolVersion": 1 })).await;
        assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
        agent
    }

    fn stdin(&mut self) -> &mut ChildStdin {
        self.stdin.as_mut().expect("stdin still open")
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin();
        stdin.write_all(bytes).await.expect("write");
        stdin.write_all(b"\n").await.expect("write");
        stdin.flush().await.expect("flush");
    }

    async fn send(&mut self, message: Value) {
        self.send_bytes(message.to_string().as_bytes()).await;
    }

    /// The next line the agent writes, as JSON.
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(LIMIT, self.lines.next_line())
            .await
            .expect("an answer in time")
            .expect("read")
            .expect("the agent is still there");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("the agent wrote a line that is not JSON ({e}): {line}"))
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })).await;
        let answer = self.recv().await;
        assert_eq!(answer["id"], id, "the next line answers the request: {answer}");
        answer
    }

    /// A valid request is answered: the connection survived what came before.
    async fn still_serves(&mut self) {
        let answer = self.call("session/new", json!({ "cwd": "/", "mcpServers": [] })).await;
        let session = answer["result"]["sessionId"].as_str().unwrap_or_default();
        assert!(session.starts_with("sess-"), "session/new after the hostile input: {answer}");
    }

    /// The agent's peak resident memory so far, in MiB.
    fn peak_rss_mib(&self) -> u64 {
        let pid = self.child.id().expect("the agent is running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/PID/status");
        kib / 1024
    }
}

/// `answer` is the error `code`/`message` for `id`.
fn assert_error(answer: &Value, id: Value, code: i64, message: &str) {
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["error"]["code"], code, "{answer}");
    assert_eq!(answer["error"]["message"], message, "{answer}");
}

#[tokio::test]
async fn invalid_json_is_32700_with_a_null_id() {
    let mut agent = Agent::initialized().await;
    agent.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":").await;
    assert_eq!(
        agent.recv().await,
        json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "parse error: not valid JSON" } })
    );
    agent.still_serves().await;
}

#[tokio::test]
async fn invalid_utf8_is_32700_naming_utf8() {
    let mut agent = Agent::initialized().await;
    agent
        .send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/new\",\"params\":{\"cwd\":\"/\xff\xfe\"}}")
        .await;
    assert_error(&agent.recv().await, Value::Null, -32700, "parse error: not valid UTF-8");
    agent.still_serves().await;
}

#[tokio::test]
async fn json_nested_100000_deep_is_refused_without_parsing_it() {
    let mut agent = Agent::initialized().await;
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let message = "invalid request: JSON nested more than 100 levels deep";
    // A bare array, and one never closed.
    agent.send_bytes(deep(100_000).as_bytes()).await;
    assert_error(&agent.recv().await, Value::Null, -32600, message);
    agent.send_bytes("[".repeat(100_000).as_bytes()).await;
    assert_error(&agent.recv().await, Value::Null, -32600, message);
    // Inside a request's params: answered with the request's id.
    let request = format!(r#"{{"jsonrpc":"2.0","id":5,"method":"session/new","params":{{"cwd":{}}}}}"#, deep(100_000));
    agent.send_bytes(request.as_bytes()).await;
    assert_error(&agent.recv().await, json!(5), -32600, message);
    // Inside a notification's: dropped (a notification is never answered), so the next line
    // is the answer to the next request.
    let note = format!(r#"{{"jsonrpc":"2.0","method":"_x/note","params":{{"a":{}}}}}"#, deep(100_000));
    agent.send_bytes(note.as_bytes()).await;
    // 100 levels are fine.
    let params =
        json!({ "cwd": "/", "mcpServers": [], "_meta": serde_json::from_str::<Value>(&deep(98)).expect("JSON") });
    let answer = agent.call("session/new", params).await;
    assert!(answer["result"]["sessionId"].is_string(), "{answer}");
    agent.still_serves().await;
}

#[tokio::test]
async fn a_gib_without_a_newline_is_skipped_in_bounded_memory() {
    const GIB: usize = 1 << 30;
    let mut agent = Agent::initialized().await;
    let head = br#"{"jsonrpc":"2.0","id":"big","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":""#;
    let tail = br#""}]}}"#;
    let chunk = vec![b'x'; 1 << 16];
    {
        let stdin = agent.stdin();
        stdin.write_all(head).await.expect("write");
        for _ in 0..GIB / chunk.len() {
            stdin.write_all(&chunk).await.expect("the agent keeps reading");
        }
        stdin.write_all(tail).await.expect("write");
    }
    agent.send_bytes(b"").await; // the newline
    let len = head.len() + GIB + tail.len();
    let limit = Config::default().max_message_size;
    assert_error(
        &agent.recv().await,
        json!("big"),
        -32600,
        &format!("message of {len} bytes exceeds the limit of {limit}"),
    );
    let peak = agent.peak_rss_mib();
    eprintln!("1 GiB without a newline: echo_agent peak RSS {peak} MiB (limit {} MiB)", limit >> 20);
    // The line is held up to the limit (128 MiB), then only its first 4 KiB are.
    assert!(peak < (limit >> 20) as u64 + 64, "peak RSS {peak} MiB for a 1 GiB line");
    agent.still_serves().await;
}

#[tokio::test]
async fn a_batch_is_32600_with_a_null_id() {
    let mut agent = Agent::initialized().await;
    let message = "invalid request: a batch (JSON array); ACP sends one message object per line";
    let batch =
        json!([{ "jsonrpc": "2.0", "id": 1, "method": "session/new", "params": { "cwd": "/", "mcpServers": [] } }]);
    agent.send(batch).await;
    assert_error(&agent.recv().await, Value::Null, -32600, message);
    agent.send_bytes(b"[]").await;
    assert_error(&agent.recv().await, Value::Null, -32600, message);
    agent.still_serves().await;
}

#[tokio::test]
async fn ids_of_every_json_type() {
    let mut agent = Agent::initialized().await;
    let params = json!({ "cwd": "/", "mcpServers": [] });
    // Strings, numbers (integer, negative, fractional, exponent) and null are ids: answered with
    // the same id.
    for id in [json!("s-1"), json!(42), json!(-7), json!(1.5), json!(1e3), Value::Null] {
        agent.send(json!({ "jsonrpc": "2.0", "id": id, "method": "session/new", "params": params })).await;
        let answer = agent.recv().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert!(answer["result"]["sessionId"].is_string(), "{answer}");
    }
    // Objects, arrays and booleans are not: -32600 with a null id.
    let message = "invalid request: needs \"jsonrpc\": \"2.0\" and a string, number or null id";
    for id in [json!({ "a": 1 }), json!([1]), json!(true)] {
        agent.send(json!({ "jsonrpc": "2.0", "id": id, "method": "session/new", "params": params })).await;
        assert_error(&agent.recv().await, Value::Null, -32600, message);
    }
    agent.still_serves().await;
}

#[tokio::test]
async fn duplicate_keys() {
    let mut agent = Agent::initialized().await;
    // Two ids: neither is the one to answer to.
    agent
        .send_bytes(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#)
        .await;
    assert_error(&agent.recv().await, Value::Null, -32600, "invalid request: duplicate member `id`");
    agent.send_bytes(br#"{"jsonrpc":"2.0","id":3,"method":"session/new","method":"session/load","params":{}}"#).await;
    assert_error(&agent.recv().await, json!(3), -32600, "invalid request: duplicate member `method`");
    // Inside params, the typed decoding refuses them.
    agent
        .send_bytes(
            br#"{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/","cwd":"/tmp","mcpServers":[]}}"#,
        )
        .await;
    assert_error(&agent.recv().await, json!(4), -32602, "invalid params for session/new: duplicate field `cwd`");
    agent.still_serves().await;
}

#[tokio::test]
async fn protocol_versions_out_of_range() {
    let mut agent = Agent::spawn();
    for (version, reason) in [
        (json!(70000), "invalid value: integer `70000`, expected u16"),
        (json!(-1), "invalid value: integer `-1`, expected u16"),
        (json!(1.5), "invalid type: floating point `1.5`, expected u16"),
    ] {
        let answer = agent.call("initialize", json!({ "protocolVersion": version })).await;
        let id = answer["id"].clone();
        assert_error(&answer, id, -32602, &format!("invalid params for initialize: protocolVersion: {reason}"));
        assert_eq!(
            answer["error"]["data"],
            json!({ "method": "initialize", "path": "protocolVersion", "reason": reason })
        );
    }
    let answer = agent.call("initialize", json!({ "protocolVersion": "1" })).await;
    assert_eq!(answer["error"]["data"]["path"], "protocolVersion", "{answer}");
    // 0 is in range but below every version the agent speaks.
    let answer = agent.call("initialize", json!({ "protocolVersion": 0 })).await;
    assert_eq!(answer["error"]["code"], -32022, "{answer}");
    assert_eq!(agent.call("initialize", json!({ "protocolVersion": 1 })).await["result"]["protocolVersion"], 1);
    agent.still_serves().await;
}

#[tokio::test]
async fn unknown_methods_and_wrong_kinds() {
    let mut agent = Agent::initialized().await;
    let answer = agent.call("session/fly", json!({})).await;
    let id = answer["id"].clone();
    assert_error(&answer, id, -32601, "method not found: session/fly");
    assert_eq!(answer["error"]["data"], json!({ "method": "session/fly" }));
    // A notification sent as a request.
    let answer = agent.call("session/cancel", json!({ "sessionId": "s" })).await;
    let id = answer["id"].clone();
    assert_error(&answer, id, -32601, "session/cancel is a notification, not a request");
    // An unknown notification: nothing is answered.
    agent.send(json!({ "jsonrpc": "2.0", "method": "session/fly", "params": {} })).await;
    agent.still_serves().await;
}

#[tokio::test]
async fn params_of_the_wrong_type() {
    let mut agent = Agent::initialized().await;
    for (params, reason) in [
        (json!(["/", []]), "an array where an object is expected (ACP passes params and results by name)"),
        (json!("cwd"), "invalid type: string \"cwd\", expected struct NewSessionRequest"),
        (json!(42), "invalid type: integer `42`, expected struct NewSessionRequest"),
    ] {
        let answer = agent.call("session/new", params).await;
        let id = answer["id"].clone();
        assert_error(&answer, id, -32602, &format!("invalid params for session/new: {reason}"));
    }
    let answer = agent.call("session/new", json!({ "cwd": 7, "mcpServers": [] })).await;
    let id = answer["id"].clone();
    assert_error(
        &answer,
        id,
        -32602,
        "invalid params for session/new: cwd: invalid type: integer `7`, expected a string",
    );
    agent.still_serves().await;
}

#[tokio::test]
async fn responses_to_ids_never_sent_are_not_answered() {
    let mut agent = Agent::initialized().await;
    agent.send(json!({ "jsonrpc": "2.0", "id": 999, "result": {} })).await;
    agent.send(json!({ "jsonrpc": "2.0", "id": "nope", "error": { "code": -32000, "message": "no" } })).await;
    agent.send(json!({ "jsonrpc": "2.0", "id": 998, "result": {}, "error": { "code": 1, "message": "both" } })).await;
    // `call` checks that the next line is the answer to the request, not to any of the above.
    agent.still_serves().await;
}

#[tokio::test]
async fn a_request_before_initialize_is_32600() {
    let mut agent = Agent::spawn();
    for method in ["session/new", "session/fly"] {
        let answer = agent.call(method, json!({ "cwd": "/", "mcpServers": [] })).await;
        let id = answer["id"].clone();
        assert_error(&answer, id, -32600, &format!("{method} before initialize: the first request must be initialize"));
        // The data names the method and the rule broken.
        assert_eq!(answer["error"]["data"], json!({ "method": method, "rule": "init.first" }));
    }
    assert_eq!(agent.call("initialize", json!({ "protocolVersion": 1 })).await["result"]["protocolVersion"], 1);
    agent.still_serves().await;
}

#[tokio::test]
async fn a_flood_of_notifications_while_a_prompt_runs() {
    const NOTES: usize = 100_000;
    let mut agent = Agent::initialized().await;
    let session =
        agent.call("session/new", json!({ "cwd": "/", "mcpServers": [] })).await["result"]["sessionId"].clone();
    // `slow`: the turn waits until its session is cancelled.
    let prompt = json!({ "sessionId": session, "prompt": [{ "type": "text", "text": "slow" }] });
    agent.send(json!({ "jsonrpc": "2.0", "id": "turn", "method": "session/prompt", "params": prompt })).await;
    let pad = "x".repeat(1000);
    let mut flood = Vec::with_capacity(NOTES * 1100);
    for i in 0..NOTES {
        let note = json!({ "jsonrpc": "2.0", "method": "_flood/note", "params": { "i": i, "pad": pad } });
        flood.extend_from_slice(note.to_string().as_bytes());
        flood.push(b'\n');
    }
    let flooded = flood.len();
    agent.stdin().write_all(&flood).await.expect("the agent keeps reading");
    drop(flood);
    agent.send(json!({ "jsonrpc": "2.0", "method": "session/cancel", "params": { "sessionId": session } })).await;
    // The turn ends (its update, then its answer), so the cancel got through the flood.
    let mut answer = agent.recv().await;
    while answer.get("method").is_some() {
        answer = agent.recv().await;
    }
    // Cancelled, unless the flood took longer than the turn's 10 s: either way it was answered.
    assert_eq!(answer["id"], "turn", "{answer}");
    let stop = answer["result"]["stopReason"].as_str();
    assert!(matches!(stop, Some("cancelled" | "end_turn")), "{answer}");
    let peak = agent.peak_rss_mib();
    eprintln!("{NOTES} notifications ({} MiB) during a prompt: echo_agent peak RSS {peak} MiB", flooded >> 20);
    // Handled as fast as they come, or held to Config::notification_queue_pause (16 MiB).
    assert!(peak < 64, "peak RSS {peak} MiB for {} MiB of notifications", flooded >> 20);
    agent.still_serves().await;
}

#[tokio::test]
async fn a_peer_that_stops_reading_meets_backpressure() {
    const REQUESTS: usize = 20_000;
    let mut agent = Agent::initialized().await;
    let mut stdin = agent.stdin.take().expect("stdin");
    let sent = Arc::new(AtomicUsize::new(0));
    // Requests only, answers never read (for now).
    let writer = {
        let sent = sent.clone();
        tokio::spawn(async move {
            for i in 0..REQUESTS {
                let request = json!({ "jsonrpc": "2.0", "id": i, "method": "session/new", "params": { "cwd": "/", "mcpServers": [] } });
                stdin.write_all(format!("{request}\n").as_bytes()).await.expect("write");
                sent.store(i + 1, Ordering::SeqCst);
            }
            stdin
        })
    };
    // Wait until the writer is blocked (no progress for a while) or done.
    let mut last = usize::MAX;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = sent.load(Ordering::SeqCst);
        if now == last || writer.is_finished() {
            break;
        }
        last = now;
    }
    let blocked_at = sent.load(Ordering::SeqCst);
    let peak = agent.peak_rss_mib();
    eprintln!("peer not reading: the agent stopped reading after {blocked_at} requests; peak RSS {peak} MiB");
    assert!(blocked_at < REQUESTS, "the agent read all {REQUESTS} requests without anyone reading its answers");
    assert!(peak < 64, "peak RSS {peak} MiB while its answers pile up");
    // Reading again: every request is answered exactly once, with its result or a busy error.
    let mut answered = vec![false; REQUESTS];
    for _ in 0..REQUESTS {
        let answer = agent.recv().await;
        let id = answer["id"].as_u64().expect("an integer id") as usize;
        assert!(!std::mem::replace(&mut answered[id], true), "answered twice: {answer}");
        if answer.get("error").is_some() {
            assert_eq!(answer["error"]["code"], -32603, "{answer}");
            assert_eq!(answer["error"]["data"], json!({ "method": "session/new", "limit": 1024 }), "{answer}");
        } else {
            assert!(answer["result"]["sessionId"].is_string(), "{answer}");
        }
    }
    agent.stdin = Some(tokio::time::timeout(LIMIT, writer).await.expect("the writer finishes").expect("task"));
    agent.still_serves().await;
}

#[tokio::test]
async fn a_peer_that_closes_mid_message() {
    let mut agent = Agent::initialized().await;
    agent
        .send(json!({ "jsonrpc": "2.0", "id": 7, "method": "session/new", "params": { "cwd": "/", "mcpServers": [] } }))
        .await;
    let stdin = agent.stdin();
    stdin.write_all(br#"{"jsonrpc":"2.0","id":8,"method":"session/ne"#).await.expect("write");
    drop(agent.stdin.take());
    // The request before is answered, the cut one is not valid JSON, then the agent exits.
    let mut answers = vec![agent.recv().await, agent.recv().await];
    answers.sort_by_key(|a| a["id"].is_null());
    assert!(answers[0]["result"]["sessionId"].is_string(), "{answers:?}");
    assert_error(&answers[1], Value::Null, -32700, "parse error: not valid JSON");
    let end = tokio::time::timeout(LIMIT, agent.lines.next_line()).await.expect("in time").expect("read");
    assert_eq!(end, None, "nothing after the answers");
    let status = tokio::time::timeout(LIMIT, agent.child.wait()).await.expect("exits").expect("status");
    assert!(status.success(), "the agent exits cleanly at end of input: {status}");
}

// ---- Our client, facing a hostile agent (in process). ----

/// The raw agent's side of a pipe to our client.
struct RawAgent {
    lines: Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl RawAgent {
    async fn send_text(&mut self, text: &str) {
        self.write.write_all(format!("{text}\n").as_bytes()).await.expect("write");
    }
    async fn recv(&mut self) -> Value {
        let line =
            tokio::time::timeout(LIMIT, self.lines.next_line()).await.expect("in time").expect("read").expect("open");
        serde_json::from_str(&line).expect("the client writes JSON")
    }
}

struct QuietClient;
impl v1::methods::client::Handler<ClientContext> for QuietClient {
    async fn fs_read_text_file(
        &self,
        p: v1::ReadTextFileRequest,
        _: ClientContext,
    ) -> Result<v1::ReadTextFileResponse, RpcError> {
        Ok(v1::ReadTextFileResponse::new(format!("contents of {}", p.path)))
    }
}
impl v2::methods::client::Handler<ClientContext> for QuietClient {}

fn client() -> (acp_rpc::client::ClientConnection, RawAgent) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(ours);
    let (conn, driver) = acp_rpc::client::connect(QuietClient, r, w, Config::default());
    tokio::spawn(driver);
    let (tr, tw) = tokio::io::split(theirs);
    (conn, RawAgent { lines: BufReader::new(tr).lines(), write: tw })
}

#[tokio::test]
async fn our_client_facing_a_hostile_agent() {
    let (conn, mut agent) = client();
    // A request before the client sent initialize.
    agent
        .send_text(r#"{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s","path":"f"}}"#)
        .await;
    let refused = agent.recv().await;
    assert_error(
        &refused,
        json!(1),
        -32600,
        "fs/read_text_file before initialize: the client has not sent initialize, so no protocol version is agreed",
    );
    // No rule of the table binds the agent here (`init.first` binds the client): none is named.
    assert_eq!(refused["error"]["data"], json!({ "method": "fs/read_text_file" }));
    // An initialize the agent refuses leaves no version agreed (its requests stay refused).
    let init = tokio::spawn({
        let conn = conn.clone();
        async move { conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await }
    });
    let request = agent.recv().await;
    let refusal = json!({ "jsonrpc": "2.0", "id": request["id"], "error": { "code": -32603, "message": "no" } });
    agent.send_text(&refusal.to_string()).await;
    assert!(matches!(init.await.expect("task"), Err(Error::Peer(e)) if e.code == -32603));
    assert_eq!(conn.version(), None);
    // Garbage.
    agent.send_text("\u{0}\u{1}garbage").await;
    assert_error(&agent.recv().await, Value::Null, -32700, "parse error: not valid JSON");
    // An answer to initialize with a version out of range.
    let init = tokio::spawn({
        let conn = conn.clone();
        async move { conn.initialize(Version::V1, json!({})).await }
    });
    let request = agent.recv().await;
    assert_eq!(request["method"], "initialize");
    agent
        .send_text(
            &json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "protocolVersion": 70000 } }).to_string(),
        )
        .await;
    let refused = init.await.expect("task");
    assert_eq!(refused, Err(Error::NoCommonVersion { asked: Version::V1, agent: vec![], client: Version::ALL }));
    // Non-object initialize params are the caller's mistake, reported, not a panic.
    assert!(matches!(conn.initialize(Version::V1, json!([1])).await, Err(Error::Misuse(Misuse::Params(_)))));
    // A well-formed negotiation.
    let init = tokio::spawn({
        let conn = conn.clone();
        async move { conn.initialize(Version::V1, json!({})).await }
    });
    let request = agent.recv().await;
    agent
        .send_text(&json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "protocolVersion": 1 } }).to_string())
        .await;
    init.await.expect("task").expect("initialized");
    // A response to nothing, then a typed call answered with the wrong shape.
    agent.send_text(r#"{"jsonrpc":"2.0","id":12345,"result":{}}"#).await;
    let call = tokio::spawn({
        let conn = conn.connection().clone();
        async move { conn.request::<v1::methods::SessionNew>(&v1::NewSessionRequest::new("/".into(), vec![])).await }
    });
    let request = agent.recv().await;
    assert_eq!(request["method"], "session/new");
    agent.send_text(&json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "sessionId": 5 } }).to_string()).await;
    assert_eq!(
        call.await.expect("task"),
        Err(Error::Protocol(
            "the response to session/new does not decode: sessionId: invalid type: integer `5`, expected a string"
                .into()
        ))
    );
    // Still serving the agent's requests.
    agent
        .send_text(r#"{"jsonrpc":"2.0","id":"r","method":"fs/read_text_file","params":{"sessionId":"s","path":"f"}}"#)
        .await;
    assert_eq!(agent.recv().await, json!({ "jsonrpc": "2.0", "id": "r", "result": { "content": "contents of f" } }));
}

#[tokio::test]
async fn our_client_when_the_agent_closes_mid_message() {
    let (conn, mut agent) = client();
    let init = tokio::spawn({
        let conn = conn.clone();
        async move { conn.initialize(Version::V1, json!({})).await }
    });
    let request = agent.recv().await;
    let cut = json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "protocolVersion": 1 } }).to_string();
    agent.write.write_all(&cut.as_bytes()[..cut.len() / 2]).await.expect("write");
    agent.write.shutdown().await.expect("shutdown");
    drop(agent);
    // The half answer is not an answer; the call fails when the agent is gone.
    assert_eq!(tokio::time::timeout(LIMIT, init).await.expect("in time").expect("task"), Err(Error::Closed));
    assert!(conn.connection().is_closed());
}

// ---- The notification queue's bound, at the connection level (in process). ----

/// Notification handlers wait at a gate until the test opens it; every notification is counted.
struct Gated {
    open: Arc<tokio::sync::Notify>,
    opened: Arc<AtomicBool>,
    handled: Arc<AtomicUsize>,
    in_order: Arc<AtomicBool>,
}

impl Service for Gated {
    fn request(
        &self,
        method: String,
        _: Option<RawValueBox>,
        _: RequestContext,
    ) -> BoxFuture<Result<RawValueBox, RpcError>> {
        Box::pin(async move {
            serde_json::value::to_raw_value(&json!({ "echo": method })).map_err(|e| RpcError::internal(e.to_string()))
        })
    }
    fn notification(&self, _: String, params: Option<RawValueBox>, _: Connection) -> BoxFuture<()> {
        let (open, opened, handled, in_order) =
            (self.open.clone(), self.opened.clone(), self.handled.clone(), self.in_order.clone());
        Box::pin(async move {
            let notified = open.notified();
            if !opened.load(Ordering::SeqCst) {
                notified.await;
            }
            let i = params.and_then(|p| serde_json::from_str::<Value>(p.get()).ok()).and_then(|p| p["i"].as_u64());
            let n = handled.fetch_add(1, Ordering::SeqCst);
            if i != Some(n as u64) {
                in_order.store(false, Ordering::SeqCst);
            }
        })
    }
}

struct GatedPeer {
    gate: Arc<tokio::sync::Notify>,
    opened: Arc<AtomicBool>,
    handled: Arc<AtomicUsize>,
    in_order: Arc<AtomicBool>,
    conn: Connection,
    driver: tokio::task::JoinHandle<std::io::Result<()>>,
    lines: Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

fn gated(config: Config) -> GatedPeer {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(ours);
    let gate = Arc::new(tokio::sync::Notify::new());
    let opened = Arc::new(AtomicBool::new(false));
    let handled = Arc::new(AtomicUsize::new(0));
    let in_order = Arc::new(AtomicBool::new(true));
    let svc =
        Gated { open: gate.clone(), opened: opened.clone(), handled: handled.clone(), in_order: in_order.clone() };
    let (conn, driver) = Connection::new(r, w, config, move |_| svc);
    let driver = tokio::spawn(driver);
    let (tr, tw) = tokio::io::split(theirs);
    GatedPeer { gate, opened, handled, in_order, conn, driver, lines: BufReader::new(tr).lines(), write: tw }
}

/// `count` notifications of about 1 KiB each, numbered from 0.
fn notes(count: usize) -> Vec<u8> {
    let pad = "x".repeat(1000);
    let mut out = Vec::new();
    for i in 0..count {
        out.extend_from_slice(
            json!({ "jsonrpc": "2.0", "method": "n", "params": { "i": i, "pad": pad } }).to_string().as_bytes(),
        );
        out.push(b'\n');
    }
    out
}

/// Writes `bytes` in a task; returns the task and how much it has written so far.
fn write_in_background(
    mut write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    bytes: Vec<u8>,
) -> (tokio::task::JoinHandle<tokio::io::WriteHalf<tokio::io::DuplexStream>>, Arc<AtomicUsize>) {
    let written = Arc::new(AtomicUsize::new(0));
    let task = {
        let written = written.clone();
        tokio::spawn(async move {
            for chunk in bytes.chunks(4096) {
                if write.write_all(chunk).await.is_err() {
                    break;
                }
                written.fetch_add(chunk.len(), Ordering::SeqCst);
            }
            write
        })
    };
    (task, written)
}

/// Waits until `written` stops moving (the writer is blocked) or the writer is done.
async fn until_stalled(written: &AtomicUsize, task: &tokio::task::JoinHandle<impl Sized>) -> usize {
    let mut last = usize::MAX;
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = written.load(Ordering::SeqCst);
        if now == last || task.is_finished() {
            return now;
        }
        last = now;
    }
}

#[tokio::test]
async fn a_notification_flood_pauses_reading_at_the_queue_bound_and_loses_nothing() {
    const NOTES: usize = 100_000;
    let pause = 1 << 20;
    let peer = gated(Config { notification_queue_pause: pause, ..Config::default() });
    let flood = notes(NOTES);
    let total = flood.len();
    let (writer, written) = write_in_background(peer.write, flood);
    let stalled = until_stalled(&written, &writer).await;
    eprintln!("notification flood of {} MiB: reading paused after {} KiB", total >> 20, stalled >> 10);
    // What the connection read is at most the bound, one message over it, and the buffers of
    // the pipe (64 KiB) and the reader (8 KiB).
    assert!(stalled < pause + (256 << 10), "{stalled} bytes read with the handlers stuck (bound {pause})");
    peer.opened.store(true, Ordering::SeqCst);
    peer.gate.notify_waiters();
    let mut write = tokio::time::timeout(LIMIT, writer).await.expect("the flood gets through").expect("task");
    assert_eq!(written.load(Ordering::SeqCst), total);
    // A request behind the flood is answered; once it is, every notification was read.
    write.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.expect("write");
    let mut lines = peer.lines;
    let answer: Value = serde_json::from_str(&lines.next_line().await.expect("read").expect("open")).expect("JSON");
    assert_eq!(answer, json!({ "jsonrpc": "2.0", "id": 1, "result": { "echo": "ping" } }));
    peer.conn.sync_notifications().await;
    assert_eq!(peer.handled.load(Ordering::SeqCst), NOTES, "every notification handled");
    assert!(peer.in_order.load(Ordering::SeqCst), "in arrival order");
}

#[tokio::test]
async fn a_flood_while_our_call_waits_is_read_up_to_the_hard_limit_then_the_connection_closes() {
    let (pause, limit) = (1 << 20, 4 << 20);
    let mut peer =
        gated(Config { notification_queue_pause: pause, notification_queue_limit: limit, ..Config::default() });
    // Our call is pending: its answer could be behind the flood, so reading cannot pause.
    let call = tokio::spawn({
        let conn = peer.conn.clone();
        async move { conn.request_raw("ping", None).await }
    });
    let request: Value =
        serde_json::from_str(&peer.lines.next_line().await.expect("read").expect("open")).expect("JSON");
    assert_eq!(request["method"], "ping");
    let (writer, written) = write_in_background(peer.write, notes(20_000));
    // The call fails as soon as the connection gives up (its handlers are still stuck).
    let failed = tokio::time::timeout(LIMIT, call).await.expect("in time").expect("task");
    assert!(matches!(failed, Err(Error::Closed)), "{failed:?}");
    let read = until_stalled(&written, &writer).await;
    assert!(read > pause && read < limit + (256 << 10), "read {read} bytes (pause {pause}, limit {limit})");
    // What was read is still handled once the handlers can run: nothing read is lost.
    peer.opened.store(true, Ordering::SeqCst);
    peer.gate.notify_waiters();
    let result = tokio::time::timeout(LIMIT, peer.driver).await.expect("the connection ends").expect("task");
    let error = result.expect_err("closed for the flood").to_string();
    let expected_end = format!("bytes of notifications faster than they were handled (limit {limit})");
    assert!(error.starts_with("the peer sent ") && error.ends_with(&expected_end), "{error}");
    let handled = peer.handled.load(Ordering::SeqCst);
    eprintln!("flood during a pending call: closed after reading {} KiB; {handled} notifications handled", read >> 10);
    // The queue held `limit` bytes of notes of about 1.1 KiB each: all of them were handled.
    assert!(handled * 1100 > limit && peer.in_order.load(Ordering::SeqCst), "{handled} handled, in order");
    writer.abort();
}
