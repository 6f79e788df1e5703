//! Spawned agents end with everything they started: the echo agent behind an npx-style wrapper (a
//! shell script that starts a shell that starts the agent) leaves no process behind once the
//! connection and its process handle are dropped or shut down, even when part of it ignores
//! `SIGTERM`; and the agent's stderr can be captured without touching the protocol stream.
//!
//! Processes are counted by a marker: the outer wrapper starts with `ACP_SPAWN_MARK=<token unique
//! to the test>` in its environment, which every process it starts inherits; a process counts when `/proc/PID/environ`
//! holds it (a zombie's is empty, so only live processes count).

#![cfg(target_os = "linux")]

use acp_rpc::client::{spawn_agent_with, ClientConnection};
use acp_rpc::spawn::{AgentProcess, SpawnOptions, Stderr};
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::{ClientContext, Config};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common;

/// Long enough for a loaded machine; the tests wait for an outcome, they do not time it.
const LIMIT: Duration = Duration::from_secs(20);

struct Quiet;
impl v1::methods::client::Handler<ClientContext> for Quiet {}
impl v2::methods::client::Handler<ClientContext> for Quiet {}

/// The inner shell: runs the agent (not `exec`: the shell stays, as npm's and uv's do). The
/// stubborn one ignores `SIGTERM` (the agent inherits that) and outlives the agent by a `sleep`,
/// so only `SIGKILL` ends it.
enum Inner {
    Polite,
    Stubborn,
}

struct Wrapper {
    _dir: tempfile::TempDir,
    outer: PathBuf,
    token: String,
}

impl Wrapper {
    fn new(name: &str, inner: Inner) -> Wrapper {
        let dir = tempfile::tempdir().expect("temp dir");
        let outer = dir.path().join("outer.sh");
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let token = format!("{name}-{}-{nanos}", std::process::id());
        std::fs::write(
            &outer,
            "# npx-style: a wrapper that starts a child that starts the agent.\n\
             sh \"$(dirname \"$0\")/inner.sh\" \"$1\"\n\
             exit $?\n",
        )
        .expect("outer.sh");
        let inner = match inner {
            Inner::Polite => "\"$1\"\nexit $?\n",
            Inner::Stubborn => "trap '' TERM\n\"$1\"\nsleep 600\n",
        };
        std::fs::write(dir.path().join("inner.sh"), inner).expect("inner.sh");
        Wrapper { _dir: dir, outer, token }
    }

    /// `env ACP_SPAWN_MARK=… sh outer.sh AGENT` (`env` execs the outer shell with the marker).
    fn args(&self) -> Vec<String> {
        vec![
            format!("ACP_SPAWN_MARK={}", self.token),
            "sh".into(),
            self.outer.display().to_string(),
            common::example("echo_agent").display().to_string(),
        ]
    }

    /// Starts the wrapped agent and initializes it; all three processes are up by then.
    async fn start(&self, options: &SpawnOptions) -> (ClientConnection, AgentProcess) {
        let (conn, driver, process) =
            spawn_agent_with(Quiet, "env", &self.args(), Config::default(), options).expect("spawn");
        tokio::spawn(driver);
        let answer = tokio::time::timeout(LIMIT, conn.initialize(Version::V1, serde_json::json!({})))
            .await
            .expect("initialize in time")
            .expect("initialize");
        assert_eq!(answer["protocolVersion"], 1, "{answer}");
        assert_eq!(self.count(), 3, "outer sh, inner sh and the agent carry the marker");
        (conn, process)
    }

    /// The live processes that carry this wrapper's marker.
    fn count(&self) -> usize {
        count_marked(&format!("ACP_SPAWN_MARK={}", self.token))
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

fn count_marked(entry: &str) -> usize {
    let Ok(procs) = std::fs::read_dir("/proc") else { return 0 };
    procs
        .filter_map(Result::ok)
        .filter(|p| p.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter(|p| carries(&p.path(), entry))
        .count()
}

fn carries(proc: &Path, entry: &str) -> bool {
    // Unreadable (another user's) or gone in between: not ours.
    std::fs::read(proc.join("environ")).is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == entry.as_bytes()))
}

#[tokio::test]
async fn dropping_the_handle_ends_every_process_of_a_wrapped_agent() {
    let wrapper = Wrapper::new("drop", Inner::Polite);
    let (conn, process) = wrapper.start(&SpawnOptions::new()).await;
    drop(conn);
    drop(process);
    assert_eq!(wrapper.count_after_waiting().await, 0, "processes left behind");
}

#[tokio::test]
async fn dropping_the_handle_kills_what_ignores_sigterm_after_the_grace_period() {
    let wrapper = Wrapper::new("drop-stubborn", Inner::Stubborn);
    let (conn, process) = wrapper.start(&SpawnOptions::new().grace(Duration::from_secs(1))).await;
    drop(conn);
    drop(process);
    // Stdin closed and the grace running (then `SIGTERM`, which the inner shell ignores): it
    // stays until `SIGKILL`.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(wrapper.count() > 0, "the inner shell ignores SIGTERM, so it is there until the grace period ends");
    assert_eq!(wrapper.count_after_waiting().await, 0, "processes left behind");
}

#[tokio::test]
async fn shutdown_lets_a_wrapped_agent_exit_by_itself_when_stdin_closes() {
    let wrapper = Wrapper::new("shutdown", Inner::Polite);
    let (conn, process) = wrapper.start(&SpawnOptions::new().grace(LIMIT)).await;
    drop(conn);
    let status = process.shutdown().await.expect("exit status");
    // Exit code 0 through both shells: the agent ended at the end of its input, not by a signal.
    assert!(status.success(), "{status:?}");
    assert_eq!(wrapper.count(), 0, "shutdown returns once the whole group is gone");
}

#[tokio::test]
async fn shutdown_kills_a_wrapped_agent_that_ignores_sigterm() {
    let wrapper = Wrapper::new("shutdown-stubborn", Inner::Stubborn);
    let options = SpawnOptions::new().grace(Duration::from_millis(200)).term_grace(Duration::from_millis(200));
    let (conn, process) = wrapper.start(&options).await;
    drop(conn);
    let status = tokio::time::timeout(LIMIT, process.shutdown()).await.expect("in time").expect("exit status");
    assert!(!status.success(), "the outer shell ends by SIGTERM: {status:?}");
    assert_eq!(wrapper.count_after_waiting().await, 0, "processes left behind");
}

/// A wrapper that writes `lines` lines to stderr (more than a pipe holds) and then runs the agent.
fn noisy_wrapper(dir: &Path, lines: usize) -> Vec<String> {
    let script = dir.join("noisy.sh");
    std::fs::write(
        &script,
        format!("i=0\nwhile [ $i -lt {lines} ]; do echo \"stderr line $i\" >&2; i=$((i+1)); done\n\"$1\"\nexit $?\n"),
    )
    .expect("noisy.sh");
    vec![script.display().to_string(), common::example("echo_agent").display().to_string()]
}

#[tokio::test]
async fn captured_stderr_keeps_the_newest_lines_and_leaves_the_protocol_alone() {
    const LINES: usize = 10_000;
    let dir = tempfile::tempdir().expect("temp dir");
    let options = SpawnOptions::new().stderr(Stderr::Capture).capture_lines(100).grace(LIMIT);
    let (conn, driver, process) =
        spawn_agent_with(Quiet, "sh", &noisy_wrapper(dir.path(), LINES), Config::default(), &options).expect("spawn");
    tokio::spawn(driver);
    let capture = process.stderr().expect("captured");
    // The agent answers on stdout although ~170 KB went to its stderr first (more than a pipe
    // holds: nobody reads the capture yet, the buffer drops old lines instead of blocking).
    let answer = tokio::time::timeout(LIMIT, conn.initialize(Version::V1, serde_json::json!({})))
        .await
        .expect("initialize in time")
        .expect("initialize");
    assert_eq!(answer["protocolVersion"], 1, "{answer}");
    drop(conn);
    assert!(process.shutdown().await.expect("exit status").success());
    let mut lines = Vec::new();
    while let Some(line) = tokio::time::timeout(LIMIT, capture.next_line()).await.expect("stderr ends") {
        lines.push(line);
    }
    let ours: Vec<&String> = lines.iter().filter(|l| l.starts_with("stderr line ")).collect();
    assert!(lines.len() <= 100, "bounded: {} lines", lines.len());
    assert_eq!(ours.last().map(|l| l.as_str()), Some(format!("stderr line {}", LINES - 1).as_str()));
    assert_eq!(capture.dropped(), (LINES - ours.len()) as u64, "only the oldest were dropped");
    assert!(capture.is_ended());
}

#[tokio::test]
async fn discarded_stderr_leaves_the_protocol_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let options = SpawnOptions::new().stderr(Stderr::Null).grace(LIMIT);
    let (conn, driver, process) =
        spawn_agent_with(Quiet, "sh", &noisy_wrapper(dir.path(), 10), Config::default(), &options).expect("spawn");
    tokio::spawn(driver);
    assert!(process.stderr().is_none());
    let answer = tokio::time::timeout(LIMIT, conn.initialize(Version::V1, serde_json::json!({})))
        .await
        .expect("initialize in time")
        .expect("initialize");
    assert_eq!(answer["protocolVersion"], 1, "{answer}");
    drop(conn);
    assert!(process.shutdown().await.expect("exit status").success());
}
