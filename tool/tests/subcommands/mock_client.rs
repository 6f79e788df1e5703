//! `acp mock-client` end to end against the example echo agent: a turn printed as JSON lines
//! (v1 and v2), permission, an in-memory file and a scripted terminal, a failed turn, and bad
//! scripts named by their JSON pointer.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output};

use acp_testkit::example;

const ACP: &str = env!("CARGO_BIN_EXE_acp");

fn mock_client(script: &str) -> Output {
    mock_client_with(script, &[])
}

/// `acp mock-client --script FILE -- echo_agent AGENT_ARGS…`.
fn mock_client_with(script: &str, agent_args: &[&str]) -> Output {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(script.as_bytes()).expect("script written");
    let agent = example("echo_agent");
    Command::new(ACP)
        .arg("mock-client")
        .arg("--script")
        .arg(file.path())
        .arg("--")
        .arg(agent)
        .args(agent_args)
        .output()
        .expect("acp runs")
}

/// Every line of stdout, as JSON.
fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn said(lines: &[Value]) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| l["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|l| l["content"]["text"].as_str())
        .collect()
}

/// The stop reason lines (a v2 `idle` state update has a `stopReason` too).
fn stops(lines: &[Value]) -> Vec<&str> {
    lines.iter().filter(|l| l.get("sessionUpdate").is_none()).filter_map(|l| l["stopReason"].as_str()).collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_turn_is_printed_and_ends_zero_in_both_versions() {
    for version in [1, 2] {
        let script =
            format!(r#"{{"protocolVersion": {version}, "sessions": [{{"prompts": [{{"text": "hello there"}}]}}]}}"#);
        let out = mock_client(&script);
        assert_eq!(out.status.code(), Some(0), "v{version}: {}", stderr(&out));
        let lines = lines(&out);
        assert_eq!(said(&lines), ["hello there"], "v{version}: {lines:?}");
        assert_eq!(stops(&lines), ["end_turn"]);
        assert_eq!(lines.last().map(|l| l["stopReason"].clone()), Some(Value::from("end_turn")));
    }
}

#[test]
fn permission_files_and_a_terminal_come_from_the_script() {
    let out = mock_client(
        r#"{"protocolVersion": 1, "files": {"/w/notes.txt": "the notes"},
            "terminals": [{"command": "make", "output": "built\n", "exitCode": 2}],
            "sessions": [{"cwd": "/w", "prompts": [{"text": "perm read /w/notes.txt"}, {"text": "run make"},
                                                {"text": "run make limit 4"}]}]}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = lines(&out);
    let expected = [
        "the notes",
        "perm read /w/notes.txt",
        "built\n(exit 2)",
        "run make",
        // `outputByteLimit` keeps the end of the output.
        "ilt\n(exit 2, truncated)",
        "run make limit 4",
    ];
    assert_eq!(said(&lines), expected, "{lines:?}");
    assert_eq!(stops(&lines), ["end_turn", "end_turn", "end_turn"]);
}

#[test]
fn a_rejected_permission_ends_the_echo_agents_turn_cancelled() {
    // The echo agent ends the turn `cancelled` when its permission request is not allowed.
    let out = mock_client(
        r#"{"protocolVersion": 1, "defaultPermission": "cancelled", "sessions": [{"prompts": [{"text": "perm"}]}]}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stops(&lines(&out)), ["cancelled"]);
}

#[test]
fn the_scripted_method_authenticates_when_the_agent_requires_it() {
    let script = r#"{"auth": "echo-login", "sessions": [{"prompts": [{"text": "hi"}]}]}"#;
    for version in [1, 2] {
        let script = script.replacen('{', &format!(r#"{{"protocolVersion": {version}, "#), 1);
        let out = mock_client_with(&script, &["--require-auth"]);
        assert_eq!(out.status.code(), Some(0), "v{version}: {}", stderr(&out));
        assert_eq!(stops(&lines(&out)), ["end_turn"]);
    }
    // Without a method in the script, the refusal ends the run.
    let out = mock_client_with(r#"{"sessions": [{"prompts": [{"text": "hi"}]}]}"#, &["--require-auth"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("echo-login"), "{}", stderr(&out));
}

#[test]
fn a_failed_turn_exits_one() {
    let out = mock_client(r#"{"protocolVersion": 1, "sessions": [{"prompts": [{"text": "read /nowhere"}]}]}"#);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stops(&lines(&out)).is_empty());
    assert!(stderr(&out).contains("session/prompt"), "{}", stderr(&out));
}

#[test]
fn a_bad_script_exits_two_naming_the_pointer() {
    let cases = [
        (r#"{"sessions": [{"prompts": [{"txt": "hello"}]}]}"#, "/sessions/0/prompts/0/txt"),
        (r#"{"protocolVersion": 9}"#, "/protocolVersion"),
        (r#"{"sessions": [{"prompts": [{"text": "x", "cancel": {}}]}]}"#, "/sessions/0/prompts/0/cancel"),
    ];
    for (script, pointer) in cases {
        let out = mock_client(script);
        assert_eq!(out.status.code(), Some(2), "{script}: {}", stderr(&out));
        assert!(stderr(&out).contains(pointer), "{script}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn an_agent_that_cannot_start_exits_two() {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(br#"{"sessions": [{"prompts": [{"text": "hi"}]}]}"#).expect("script written");
    let missing = std::env::temp_dir().join("no-such-agent-for-acp-mock-client");
    let out = Command::new(ACP).arg("mock-client").arg("--script").arg(file.path()).arg("--").arg(&missing).output();
    let out = out.expect("acp runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot start"), "{}", stderr(&out));
}
