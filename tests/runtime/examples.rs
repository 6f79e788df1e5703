//! The example binaries end to end: the example client driving the echo agent over real pipes in
//! both protocol versions, and the agent's stdout carrying nothing but JSON-RPC messages.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

use crate::common;
use common::example;

fn run_client(version: u16, prompt: &str) -> (Vec<Value>, bool) {
    let out = Command::new(example("client"))
        .args(["--protocol-version", &version.to_string(), "--prompt", prompt, "--"])
        .arg(example("echo_agent"))
        .output()
        .expect("client runs");
    let lines =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("JSON lines")).collect();
    (lines, out.status.success())
}

#[test]
fn client_and_echo_agent_complete_a_turn_in_v1_and_v2() {
    for version in [1, 2] {
        let (lines, ok) = run_client(version, "hello perm world");
        assert!(ok, "v{version}: {lines:?}");
        assert_eq!(lines.last(), Some(&serde_json::json!({ "stopReason": "end_turn" })), "v{version}");
        assert!(lines.iter().any(|l| l["content"]["text"] == "hello perm world"), "v{version}: {lines:?}");
    }
}

#[test]
fn agent_stdout_carries_only_protocol_messages() {
    let mut child = Command::new(example("echo_agent"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agent");
    let input = concat!(
        "not json\n",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"}\n",
    );
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write");
    let out = child.wait_with_output().expect("exits at end of input");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let messages: Vec<Value> =
        stdout.lines().map(|l| serde_json::from_str(l).expect("every stdout line is JSON")).collect();
    assert_eq!(messages.len(), 3, "{stdout}");
    assert!(
        messages.iter().all(|m| m["jsonrpc"] == "2.0" && (m.get("result").is_some() || m.get("error").is_some())),
        "{stdout}"
    );
}

#[test]
fn readme_shows_the_minimal_examples_as_they_are() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README");
    for name in ["minimal_agent", "minimal_client"] {
        let code = std::fs::read_to_string(format!("{root}/examples/{name}.rs")).expect("example");
        assert!(readme.contains(code.trim_end()), "README's copy of examples/{name}.rs is out of date");
    }
}

#[test]
fn minimal_client_runs_the_minimal_agent() {
    let out = Command::new(example("minimal_client")).arg(example("minimal_agent")).output().expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.ends_with("stop reason: end_turn\n"), "{stdout}");
}
