//! The conductor (`acp_rpc::conductor`) on real chains: two pass-through proxies (a raw-wire
//! Python script, `tests/conductor/passthrough.py`) in front of the echo agent example, driven by
//! a raw-line editor. Ids stay per link and cancellation goes hop by hop; envelopes where none
//! belongs and malformed ones get the errors the official conductor gives, and the chain keeps
//! serving; the trace records every message of every link; the chain ends as one unit and leaves
//! no process, also when a component ends early.
//!
//! Processes are counted by a marker: each component is started with `ACP_CHAIN_MARK=<token>`
//! in its environment (`Component::env`), which every process it starts inherits; a process
//! counts while `/proc/PID/environ` holds it.

#![cfg(all(target_os = "linux", feature = "unstable"))]

use acp_rpc::conductor::{Component, Conductor};
use acp_rpc::jsonrpc::Pipe;
use acp_rpc::spawn::SpawnOptions;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

use crate::common;

/// Long enough for a loaded machine; the tests wait for an outcome, they do not time it.
const LIMIT: Duration = Duration::from_secs(20);

fn passthrough() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conductor/passthrough.py")
}

/// The processes of one test's chain, by the marker in their environment.
struct Marker(String);

impl Marker {
    fn new(name: &str) -> Marker {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        Marker(format!("ACP_CHAIN_MARK={name}-{}-{nanos}", std::process::id()))
    }

    /// `program args…` with the marker in its environment.
    fn component(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Component {
        let (key, value) = self.0.split_once('=').expect("KEY=VALUE");
        Component::new(program.as_ref(), args.iter().copied()).env(key, value)
    }

    fn proxy(&self) -> Component {
        self.component("python3", &[&passthrough().display().to_string()])
    }

    fn agent(&self) -> Component {
        self.component(common::example("echo_agent"), &[])
    }

    fn count(&self) -> usize {
        let Ok(procs) = std::fs::read_dir("/proc") else { return 0 };
        procs
            .filter_map(Result::ok)
            .filter(|p| p.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
            .filter(|p| {
                std::fs::read(p.path().join("environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == self.0.as_bytes()))
            })
            .count()
    }

    /// Sends `SIGKILL` to every process that carries the marker.
    fn kill_all(&self) {
        let Ok(procs) = std::fs::read_dir("/proc") else { return };
        for pid in procs.filter_map(Result::ok).filter_map(|p| p.file_name().to_str().map(str::to_string)) {
            let marked = std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == self.0.as_bytes()));
            if marked && pid.bytes().all(|b| b.is_ascii_digit()) {
                let _ = std::process::Command::new("kill").args(["-9", &pid]).status();
            }
        }
    }

    /// Waits (bounded) until no process carries the marker; the count left at the end.
    async fn count_after_waiting(&self) -> usize {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let left = self.count();
            if left == 0 || tokio::time::Instant::now() >= deadline {
                return left;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The editor: JSON lines written and read by hand, counted for the trace.
struct Editor {
    writer: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    sent: usize,
    received: usize,
    /// Notifications read while waiting for an answer.
    notes: Vec<Value>,
}

impl Editor {
    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.writer.write_all(line.as_bytes()).await.expect("the conductor reads");
        self.sent += 1;
    }

    async fn send_line(&mut self, line: &str) {
        self.writer.write_all(format!("{line}\n").as_bytes()).await.expect("the conductor reads");
        self.sent += 1;
    }

    async fn request(&mut self, id: &str, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        self.answer(id).await
    }

    /// The next message; `None` once the conductor closed its side.
    async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(LIMIT, self.lines.next_line()).await.expect("a message in time").expect("read");
        let line = line?;
        self.received += 1;
        Some(serde_json::from_str(&line).expect("JSON"))
    }

    /// The answer to `id`, keeping the notifications that come first.
    async fn answer(&mut self, id: &str) -> Value {
        loop {
            let message = self.next().await.expect("the answer before the end");
            match (message.get("method"), message.get("id")) {
                (Some(_), None) => self.notes.push(message),
                (None, Some(got)) if got == id => return message,
                _ => panic!("unexpected while waiting for {id}: {message}"),
            }
        }
    }

    /// Closes the editor's side: the conductor ends the chain.
    async fn close(&mut self) {
        self.writer.shutdown().await.expect("shutdown");
    }
}

fn start(conductor: Conductor) -> (Editor, JoinHandle<std::io::Result<()>>) {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (reader, writer) = tokio::io::split(theirs);
    let serving = tokio::spawn(async move { conductor.serve_over(Pipe { reader, writer }).await });
    let (read, write) = tokio::io::split(ours);
    let editor = Editor { writer: write, lines: BufReader::new(read).lines(), sent: 0, received: 0, notes: vec![] };
    (editor, serving)
}

async fn finished(serving: JoinHandle<std::io::Result<()>>) -> std::io::Result<()> {
    tokio::time::timeout(LIMIT, serving).await.expect("the chain ends in time").expect("no panic")
}

fn text(text: &str) -> Value {
    json!([{"type": "text", "text": text}])
}

/// `initialize` (v1) and `session/new`; the session id.
async fn open_session(editor: &mut Editor) -> String {
    let init = editor.request("init", "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let new = editor.request("new", "session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    new["result"]["sessionId"].as_str().unwrap_or_else(|| panic!("{new}")).to_string()
}

/// The trace's records.
fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the trace");
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect()
}

fn on_link(records: &[Value], link: u64) -> impl Iterator<Item = &Value> {
    records.iter().filter(move |r| r["link"] == link)
}

#[tokio::test]
async fn two_proxies_keep_ids_per_link_and_cancel_hop_by_hop() {
    let marker = Marker::new("two-proxies");
    let proxies = [marker.proxy(), marker.proxy()];
    two_proxies(marker, proxies, "hello").await;
}

/// The same chain with two of our proxies (`examples/proxy`, the `acp_rpc::proxy` role), each
/// prefixing the agent's text: the first proxy's prefix comes first.
#[tokio::test]
async fn two_of_our_proxies_keep_ids_per_link_and_cancel_hop_by_hop() {
    let marker = Marker::new("two-of-ours");
    let proxies = [
        marker.component(common::example("proxy"), &["--prefix", "A:"]),
        marker.component(common::example("proxy"), &["--prefix", "B:"]),
    ];
    two_proxies(marker, proxies, "A:B:hello").await;
}

async fn two_proxies(marker: Marker, proxies: [Component; 2], echoed: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("chain.jsonl");
    // A cancelled request's handler is given the whole test's time to pass the agent's answer.
    let config = acp_rpc::Config { cancel_grace: LIMIT, ..Default::default() };
    let [first, second] = proxies;
    let conductor = Conductor::new([first, second, marker.agent()]).trace(&trace).config(config);
    let (mut editor, serving) = start(conductor);
    let session = open_session(&mut editor).await;
    assert_eq!(marker.count(), 3, "two proxies and the agent");

    // A turn: its updates come before its answer, under the editor's own id.
    let done = editor.request("p1", "session/prompt", json!({"sessionId": session, "prompt": text("hello")})).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let update = editor.notes.iter().find(|n| n["method"] == "session/update").expect("an update before the answer");
    assert_eq!(update["params"]["update"]["content"]["text"], echoed, "{update}");

    // A slow turn, cancelled by the editor: it gets the cancelled outcome under its id.
    editor
        .send(json!({"jsonrpc": "2.0", "id": "p2", "method": "session/prompt",
        "params": {"sessionId": session, "prompt": text("slow")}}))
        .await;
    editor.send(json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "p2"}})).await;
    // The agent's own answer to its cancelled request is passed back (v1: the turn ends
    // `cancelled`), not an answer of the conductor's (-32800 after the cancel grace).
    let cancelled = editor.answer("p2").await;
    assert_eq!(cancelled["result"]["stopReason"], "cancelled", "{cancelled}");
    // The cancellation reaches the agent, hop by hop (waited for in the trace).
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !on_link(&records(&trace), 3).any(|r| r["message"]["method"] == "$/cancel_request") {
        assert!(tokio::time::Instant::now() < deadline, "the agent was never sent $/cancel_request");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    editor.close().await;
    assert!(editor.next().await.is_none(), "the conductor closes its side after the chain ended");
    finished(serving).await.expect("a clean end");

    let records = records(&trace);
    // Every message the editor sent and read is on link 0, in the right direction.
    let link0 = |from: &str| on_link(&records, 0).filter(|r| r["from"] == from).count();
    assert_eq!(link0("client"), editor.sent);
    assert_eq!(link0("agent"), editor.received);
    // Every link has traffic both ways, and nothing else is recorded.
    for link in 1..=3 {
        for from in ["client", "agent"] {
            assert!(on_link(&records, link).any(|r| r["from"] == from), "link {link} from {from}");
        }
    }
    assert!(records.iter().all(|r| (0..=3).contains(&r["link"].as_u64().unwrap_or(9))));
    // `initialize` reaches the proxies as `proxy/initialize` and the agent as itself.
    let first_request =
        |link| on_link(&records, link).find(|r| r["from"] == "client").map(|r| r["message"]["method"].clone());
    assert_eq!(first_request(1), Some(json!("proxy/initialize")));
    assert_eq!(first_request(2), Some(json!("proxy/initialize")));
    assert_eq!(first_request(3), Some(json!("initialize")));
    // The agent saw the slow prompt under the conductor's id on its link, and exactly one
    // `$/cancel_request`, for that id.
    let slow = on_link(&records, 3)
        .find(|r| r["message"]["method"] == "session/prompt" && r["message"]["params"]["prompt"][0]["text"] == "slow")
        .expect("the slow prompt reached the agent");
    let slow_id = &slow["message"]["id"];
    assert!(slow_id.is_number(), "the conductor's own id on the agent's link: {slow_id}");
    let cancels: Vec<_> = on_link(&records, 3).filter(|r| r["message"]["method"] == "$/cancel_request").collect();
    assert_eq!(cancels.len(), 1, "{cancels:?}");
    assert_eq!(&cancels[0]["from"], "client");
    assert_eq!(&cancels[0]["message"]["params"]["requestId"], slow_id);
    // Each proxy cancelled its own `proxy/successor` request, under its own id.
    for link in [1, 2] {
        let cancels: Vec<_> =
            on_link(&records, link).filter(|r| r["message"]["method"] == "$/cancel_request").collect();
        assert_eq!(cancels.len(), 2, "the conductor's to the proxy and the proxy's own, link {link}: {cancels:?}");
        assert_eq!(cancels.iter().filter(|r| r["from"] == "agent").count(), 1, "{cancels:?}");
    }
    assert_eq!(marker.count_after_waiting().await, 0, "processes left behind");
}

#[tokio::test]
async fn envelopes_where_none_belongs_are_refused_and_the_chain_keeps_serving() {
    let marker = Marker::new("envelopes");
    let (mut editor, serving) = start(Conductor::new([marker.proxy(), marker.agent()]));
    // From the editor: -32600 for a request, a notification dropped; `proxy/initialize` too.
    let envelope = json!({"method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
    let refused = editor.request("e1", "proxy/successor", envelope.clone()).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    editor.send(json!({"jsonrpc": "2.0", "method": "proxy/successor", "params": envelope})).await;
    let refused = editor.request("e2", "proxy/initialize", json!({"protocolVersion": 1})).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    // From a proxy: a malformed envelope is -32602; a nested one, a `proxy/initialize` or a
    // `$/cancel_request` (which never crosses a hop) -32600.
    let probes =
        [("_test/malformed", -32602), ("_test/nested", -32600), ("_test/initialize", -32600), ("_test/cancel", -32600)];
    for (probe, code) in probes {
        let outcome = editor.request(probe, probe, json!({})).await;
        let error = &outcome["result"]["error"];
        assert_eq!(error["code"], code, "{probe}: {outcome}");
        // The conductor's own refusal (the same envelope parsing as a proxy's), not the agent's.
        assert_eq!(error["data"]["method"], "proxy/successor", "{probe}: {outcome}");
    }
    let outcome = editor.request("m", "_test/malformed", json!({})).await;
    assert_eq!(outcome["result"]["error"]["data"]["rule"], "proxy.successor-params", "{outcome}");
    // The chain goes on serving.
    let session = open_session(&mut editor).await;
    // Inner `params: null` is no params (schema `ProxySuccessorRequest.params`): the agent gets
    // the wrapped request, and answers that it does not know the method.
    let outcome = editor.request("_test/null-params", "_test/null-params", json!({})).await;
    assert_eq!(outcome["result"]["error"]["code"], -32601, "reached the agent: {outcome}");
    let done = editor.request("p", "session/prompt", json!({"sessionId": session, "prompt": text("still here")})).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    editor.close().await;
    finished(serving).await.expect("a clean end");
    assert_eq!(marker.count_after_waiting().await, 0, "processes left behind");
}

#[tokio::test]
async fn a_version_above_the_conductors_goes_on_lowered() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("chain.jsonl");
    let marker = Marker::new("version");
    let (mut editor, serving) = start(Conductor::new([marker.proxy(), marker.agent()]).trace(&trace));
    // Written by hand: `1.50` stays `1.50` only as text.
    let line = r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":65535,"info":{"name":"t","version":"1"},"_x":{"kept":1.50}}}"#;
    editor.send_line(line).await;
    let init = editor.answer("i").await;
    assert_eq!(init["result"]["protocolVersion"], 2, "the chain's answer: {init}");
    editor.close().await;
    finished(serving).await.expect("a clean end");
    let text = std::fs::read_to_string(&trace).expect("trace");
    let sent = text.lines().find(|l| l.contains(r#""link":1"#) && l.contains("proxy/initialize")).expect("sent on");
    assert!(
        sent.contains(r#""params":{"protocolVersion":2,"info":{"name":"t","version":"1"},"_x":{"kept":1.50}}"#),
        "lowered in place, the rest as sent: {sent}"
    );
    assert_eq!(marker.count_after_waiting().await, 0, "processes left behind");
}

#[tokio::test]
async fn the_chain_ends_as_one_unit_leaving_no_process() {
    let marker = Marker::new("teardown");
    // A proxy behind a shell that ignores SIGTERM and outlives its proxy: only SIGKILL ends it.
    let stubborn =
        marker.component("sh", &["-c", &format!("trap '' TERM; python3 '{}'; sleep 600", passthrough().display())]);
    let options = SpawnOptions::new().grace(Duration::from_millis(300)).term_grace(Duration::from_millis(300));
    let conductor = Conductor::new([stubborn, marker.proxy(), marker.agent()]).spawn_options(options);
    let (mut editor, serving) = start(conductor);
    open_session(&mut editor).await;
    assert!(marker.count() >= 3, "every component runs");
    editor.close().await;
    finished(serving).await.expect("a clean end");
    // `serve_over` returns once every group is gone or was sent SIGKILL.
    assert_eq!(marker.count_after_waiting().await, 0, "processes left behind");
}

#[tokio::test]
async fn a_component_that_ends_early_fails_what_waits_on_it_and_ends_the_chain() {
    let marker = Marker::new("early");
    let (mut editor, serving) = start(Conductor::new([marker.proxy(), marker.agent()]));
    open_session(&mut editor).await;
    // The proxy exits without answering: the request fails with an error naming it.
    let failed = editor.request("x", "_test/exit", json!({})).await;
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("component 0"), "names the component: {message}");
    // The chain ends without the editor leaving: the conductor closes its side, and says why.
    assert!(editor.next().await.is_none(), "the conductor closed its side");
    let error = finished(serving).await.expect_err("a component ended early");
    assert!(error.to_string().contains("component 0"), "{error}");
    assert_eq!(marker.count_after_waiting().await, 0, "processes left behind");
}

#[tokio::test]
async fn a_component_that_cannot_start_is_named() {
    let conductor = Conductor::new([Component::new("/nonexistent/proxy", Vec::<String>::new())]);
    let (_editor, serving) = start(conductor);
    let error = finished(serving).await.expect_err("cannot start");
    assert!(error.to_string().contains("component 0 (`/nonexistent/proxy`)"), "{error}");
}

/// An agent that, asked `_test/burst`, writes 200 notifications and then a request to the
/// editor in one write, and answers once the editor answered that request.
const BURST_AGENT: &str = r#"
import json, sys
burst = None
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "_test/burst":
        burst = message["id"]
        notes = [{"jsonrpc": "2.0", "method": "_test/note", "params": {"n": n}} for n in range(200)]
        ask = {"jsonrpc": "2.0", "id": "ask", "method": "_test/ask", "params": {}}
        sys.stdout.write("".join(json.dumps(m) + "\n" for m in notes + [ask]))
        sys.stdout.flush()
    elif message.get("id") == "ask":
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": burst, "result": {}}) + "\n")
        sys.stdout.flush()
"#;

// Two workers: the request's handler and the notifications' task run in parallel, as in
// `acp conduct`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_goes_on_after_the_notifications_its_sender_wrote_before_it() {
    let marker = Marker::new("order");
    let (mut editor, serving) = start(Conductor::new([marker.component("python3", &["-c", BURST_AGENT])]));
    editor.send(json!({"jsonrpc": "2.0", "id": "b", "method": "_test/burst", "params": {}})).await;
    let ask = loop {
        let message = editor.next().await.expect("the agent's request");
        match message["method"].as_str() {
            Some("_test/note") => editor.notes.push(message),
            Some("_test/ask") => break message,
            _ => panic!("unexpected: {message}"),
        }
    };
    let seen: Vec<_> = editor.notes.iter().map(|n| n["params"]["n"].as_u64().unwrap_or(999)).collect();
    assert_eq!(seen, (0..200).collect::<Vec<_>>(), "every notification written before the request, in order");
    editor.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {}})).await;
    let done = editor.answer("b").await;
    assert_eq!(done["result"], json!({}), "{done}");
    editor.close().await;
    finished(serving).await.expect("a clean end");
    assert_eq!(marker.count_after_waiting().await, 0, "processes left behind");
}

/// Kills the marked processes when dropped (a test's escaped process, even when it fails).
struct KillOnDrop<'a>(&'a Marker);

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        self.0.kill_all();
    }
}

#[tokio::test]
async fn the_chain_ends_even_when_a_process_outside_the_group_holds_a_components_output() {
    let marker = Marker::new("escaped");
    let _cleanup = KillOnDrop(&marker);
    // The agent starts a process in a session of its own that keeps the agent's stdout open.
    let agent = common::example("echo_agent").display().to_string();
    let escaping = marker.component("sh", &["-c", &format!("setsid sleep 600 & exec '{agent}'")]);
    let (mut editor, serving) = start(Conductor::new([escaping]));
    open_session(&mut editor).await;
    editor.close().await;
    finished(serving).await.expect("a clean end once the agent is gone");
}
