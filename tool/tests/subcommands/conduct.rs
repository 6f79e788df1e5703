//! `acp conduct agent` end to end: the example client through the conductor, a pass-through
//! proxy and the echo agent (the turn ends, the trace holds every link and `acp check` reads it,
//! and no process is left once the client has exited); the same chain per client connection on
//! `--listen`, ended by `SIGTERM` without leaving a process; unusable components refused.
//!
//! Processes are counted by a marker in the environment of `acp conduct`, which every component
//! inherits; a process counts while `/proc/PID/environ` holds it.

#![cfg(target_os = "linux")]

use acp_rpc::types::v1;
use acp_rpc::ClientContext;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use acp_testkit::example;

const ACP: &str = env!("CARGO_BIN_EXE_acp");

/// Long enough for a loaded machine; the tests wait for an outcome, they do not time it.
const LIMIT: Duration = Duration::from_secs(20);

fn passthrough() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conductor/passthrough.py")
}

/// `python3 PASSTHROUGH` and the echo agent, as COMPONENT strings.
fn chain() -> Vec<String> {
    vec![format!("python3 '{}'", passthrough().display()), format!("'{}'", example("echo_agent").display())]
}

fn marker(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("ACP_CONDUCT_MARK={name}-{}-{nanos}", std::process::id())
}

fn count(marker: &str) -> usize {
    let Ok(procs) = std::fs::read_dir("/proc") else { return 0 };
    procs
        .filter_map(Result::ok)
        .filter(|p| p.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter(|p| {
            std::fs::read(p.path().join("environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == marker.as_bytes()))
        })
        .count()
}

/// Waits (bounded) until no process carries `marker`; the count left at the end.
fn count_after_waiting(marker: &str) -> usize {
    let deadline = Instant::now() + LIMIT;
    loop {
        let left = count(marker);
        if left == 0 || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_example_client_through_acp_conduct_ends_its_turn_and_leaves_no_process() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("chain.jsonl");
    let mark = marker("client");
    for version in ["1", "2"] {
        let mut args = vec!["--protocol-version".to_string(), version.into(), "--prompt".into(), "hello chain".into()];
        args.extend(["--".into(), "env".into(), mark.clone(), ACP.into(), "conduct".into(), "agent".into()]);
        args.extend(["--trace".into(), trace.display().to_string()]);
        args.extend(chain());
        let out = Command::new(example("client")).args(&args).current_dir(dir.path()).output().expect("client runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "v{version}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains(r#"{"stopReason":"end_turn"}"#), "v{version}: {stdout}");
        assert!(stdout.contains("hello chain"), "v{version}: the echo came back: {stdout}");
        // The client awaited the conductor's end, which awaited its components'.
        assert_eq!(count_after_waiting(&mark), 0, "v{version}: processes left behind");

        let text = std::fs::read_to_string(&trace).expect("the trace");
        let records: Vec<Value> =
            text.lines().map(|l| serde_json::from_str(l).expect("one JSON record a line")).collect();
        for link in 0..=2 {
            for from in ["client", "agent"] {
                let here = |r: &&Value| r["link"] == link && r["from"] == from && r["message"].is_object();
                assert!(records.iter().any(|r| here(&r)), "v{version}: link {link} from {from}");
            }
        }
        let check = Command::new(ACP).args(["check", &trace.display().to_string()]).output().expect("acp check runs");
        assert!(check.status.success(), "v{version}: {}", String::from_utf8_lossy(&check.stdout));
    }
}

#[test]
fn a_component_that_only_sigkill_ends_is_gone_before_the_client_signals_the_conductor() {
    // The agent behind a launcher that ignores SIGTERM and outlives it: the conductor must reach
    // SIGKILL (1 s + 500 ms) before the client, which gives the conductor 2 s and then 500 ms,
    // signals and then kills it.
    let dir = tempfile::tempdir().expect("temp dir");
    let mark = marker("stubborn");
    let stubborn = format!(r#"sh -c "trap '' TERM; '{}'; sleep 600""#, example("echo_agent").display());
    let args = ["--protocol-version", "1", "--prompt", "hi", "--", "env", &mark, ACP, "conduct", "agent", &stubborn];
    // stderr not captured: a process left behind would hold it open.
    let status = Command::new(example("client"))
        .args(args)
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("client runs");
    assert!(status.success(), "{status:?}");
    let left = count_after_waiting(&mark);
    reap(&mark);
    assert_eq!(left, 0, "processes left behind");
}

/// Kills what a failed test left behind.
fn reap(marker: &str) {
    let Ok(procs) = std::fs::read_dir("/proc") else { return };
    for p in procs.filter_map(Result::ok) {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<libc::pid_t>().ok()) else { continue };
        if std::fs::read(p.path().join("environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == marker.as_bytes()))
        {
            // SAFETY: `kill` takes two integers and touches no memory of this process.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

struct Quiet;
impl v1::methods::client::Handler<ClientContext> for Quiet {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_serves_a_chain_per_connection_and_sigterm_ends_them_all() {
    let mark = marker("listen");
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("chain.jsonl");
    let mut conductor = Command::new("env")
        .arg(&mark)
        .args([ACP, "conduct", "agent", "--listen", "127.0.0.1:0", "--trace"])
        .arg(&trace)
        .args(chain())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("acp conduct starts");
    let stderr = conductor.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = tx.send(url.to_string());
            }
        }
    });
    let url = rx.recv_timeout(LIMIT).expect("the listening line");

    for n in 1..=2 {
        let (conn, driver, transport) =
            acp_rpc::net::http::connect(acp_rpc::V1(Quiet), &url, Default::default(), Default::default())
                .expect("connect");
        tokio::spawn(driver);
        let turn = async {
            conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.expect("initialize");
            let mut session =
                conn.new_session_v1(v1::NewSessionRequest::new("/tmp".into(), vec![])).await.expect("session");
            let text = v1::ContentBlock::from(v1::TextContent::new(format!("connection {n}")));
            let mut turn = session.prompt(vec![text]).await;
            while turn.next().await.is_some() {}
            turn.outcome().await.expect("the turn ends").stop_reason
        };
        let stop = tokio::time::timeout(LIMIT, turn).await.expect("in time");
        assert_eq!(stop, v1::StopReason::EndTurn);
        assert!(count(&mark) >= 3, "the conductor and this connection's chain run");
        transport.close().await;
    }

    // SIGTERM ends the listener and every chain, as the end of input would.
    sigterm(&conductor);
    let status = exit_status(&mut conductor);
    assert!(status.success(), "a clean end: {status:?}");
    assert_eq!(count_after_waiting(&mark), 0, "processes left behind");
    // A trace per connection, each with its own chain's links.
    for n in 1..=2 {
        let path = format!("{}.{n}", trace.display());
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let prompt = format!("connection {n}");
        assert!(text.lines().any(|l| l.contains(r#""link":2"#) && l.contains(&prompt)), "{path}: {text}");
    }
}

/// Waits (bounded) for `child` to exit.
fn exit_status(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "acp conduct ends in time");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sigterm(child: &std::process::Child) {
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    // SAFETY: `kill` takes two integers and touches no memory of this process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
}

#[test]
fn sigterm_on_stdio_ends_the_chain_while_the_editor_is_still_there() {
    use std::io::Write;
    let mark = marker("stdio-sigterm");
    let mut conductor = Command::new("env")
        .arg(&mark)
        .args([ACP, "conduct", "agent"])
        .args(chain())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("acp conduct starts");
    let mut stdin = conductor.stdin.take().expect("piped");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":1}}}}"#)
        .expect("write");
    let mut answer = String::new();
    BufReader::new(conductor.stdout.take().expect("piped")).read_line(&mut answer).expect("read");
    assert!(answer.contains(r#""protocolVersion":1"#), "{answer}");
    assert_eq!(count(&mark), 3, "the conductor, the proxy and the agent");
    // The editor keeps its side open; the signal alone ends everything.
    sigterm(&conductor);
    assert!(exit_status(&mut conductor).success());
    assert_eq!(count_after_waiting(&mark), 0, "processes left behind");
    drop(stdin);
}

#[test]
fn unusable_components_are_refused() {
    for bad in ["'open", "   "] {
        let out = Command::new(ACP).args(["conduct", "agent", bad]).stdin(Stdio::null()).output().expect("runs");
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = Command::new(ACP)
        .args(["conduct", "agent", "/nonexistent/agent --flag"])
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("component 0 (`/nonexistent/agent`)"));
}

/// Our proxy example behind our conductor prefixes a v2 agent's whole `agent_message` upserts
/// (the TypeScript SDK's echo agent sends those, not chunks), not only `agent_message_chunk`.
#[test]
fn the_proxy_example_prefixes_whole_v2_agent_messages() {
    use std::io::Write as _;
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/raw_agent.py");
    let proxy = format!("'{}' --prefix P:", example("proxy").display());
    let agent = format!("python3 '{}' --whole-messages", agent.display());
    let mut conduct = Command::new(ACP)
        .args(["conduct", "agent", &proxy, &agent])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("acp conduct runs");
    let mut stdin = conduct.stdin.take().expect("stdin");
    let mut lines = BufReader::new(conduct.stdout.take().expect("stdout")).lines();
    let mut read_until = |done: &dyn Fn(&Value) -> bool| -> Vec<Value> {
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let message: Value = serde_json::from_str(&line.expect("a line")).expect("JSON");
            let end = done(&message);
            seen.push(message);
            if end {
                break;
            }
        }
        seen
    };
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"capabilities":{}}}"#;
    writeln!(stdin, "{init}").expect("write");
    read_until(&|m| m["id"] == 0);
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"session/new","params":{{"cwd":"/tmp"}}}}"#).expect("write");
    let session = read_until(&|m| m["id"] == 1).pop().expect("an answer")["result"]["sessionId"].clone();
    let prompt = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "whole"}]}});
    writeln!(stdin, "{prompt}").expect("write");
    let seen = read_until(&|m| m["params"]["update"]["state"] == "idle");
    drop(stdin);
    let _ = conduct.wait();
    let message = seen.iter().find(|m| m["params"]["update"]["sessionUpdate"] == "agent_message");
    let message = message.unwrap_or_else(|| panic!("no agent_message in {seen:?}"));
    assert_eq!(message["params"]["update"]["content"][0]["text"], "P:whole", "{message}");
}

/// `acp conduct agent --listen ADDR ARGS… AGENT`, killed when dropped.
struct Listening(std::process::Child);

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the conductor on `addr` with `args` in front of the echo agent: the port it listens
/// on, or its exit status and stderr when it does not.
fn conduct_listening(addr: &str, args: &[&str]) -> Result<(Listening, u16), (std::process::ExitStatus, String)> {
    let mut child = Command::new(ACP)
        .args(["conduct", "agent", "--listen", addr])
        .args(args)
        .arg(format!("'{}'", example("echo_agent").display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("acp conduct");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    match first.strip_prefix("listening on http://").and_then(|a| a.rsplit_once(':')) {
        Some((_, port)) => Ok((Listening(child), port.parse().expect("a port"))),
        None => {
            let status = child.wait().expect("exit");
            Err((status, first))
        }
    }
}

/// POSTs `initialize` to `127.0.0.1:port` with `headers`: the answer's status.
fn post_initialize(port: u16, headers: &[&str]) -> u16 {
    use std::io::{Read as _, Write as _};
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
    let mut request = format!("POST / HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\n");
    for header in headers {
        request.push_str(&format!("{header}\r\n"));
    }
    request.push_str(&format!("content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()));
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(LIMIT)).expect("timeout");
    stream.write_all(request.as_bytes()).expect("write");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status in {answer:?}"))
}

#[test]
fn listen_beyond_loopback_needs_a_token_file_and_then_the_token() {
    let (status, said) = conduct_listening("0.0.0.0:0", &[]).err().expect("refused to start");
    assert_eq!(status.code(), Some(2), "{said}");
    assert!(said.contains("--token-file") && said.contains("0.0.0.0"), "names the flag: {said}");
    let dir = tempfile::tempdir().expect("temp dir");
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret-token\n").expect("write the token");
    let token_arg = token.display().to_string();
    let (_conductor, port) = conduct_listening("0.0.0.0:0", &["--token-file", &token_arg]).expect("listening");
    assert_eq!(post_initialize(port, &[]), 401, "no token");
    assert_eq!(post_initialize(port, &["authorization: Bearer s3cret-tokeN"]), 401, "a wrong token");
    assert_eq!(post_initialize(port, &["authorization: Bearer s3cret-token2"]), 401, "a longer token");
    assert_eq!(post_initialize(port, &["authorization: Bearer s3cret-token"]), 200, "the token");
    let insecure = conduct_listening("0.0.0.0:0", &["--insecure-no-auth"]);
    assert!(insecure.is_ok(), "--insecure-no-auth starts: {:?}", insecure.err());
}

#[test]
fn listen_refuses_web_pages_but_allowed_origins() {
    let (_conductor, port) =
        conduct_listening("127.0.0.1:0", &["--allow-origin", "http://app.example"]).expect("listening");
    assert_eq!(post_initialize(port, &["origin: https://evil.example"]), 403);
    assert_eq!(post_initialize(port, &["origin: http://app.example"]), 200);
    assert_eq!(post_initialize(port, &[]), 200, "no Origin: a client, served");
}
