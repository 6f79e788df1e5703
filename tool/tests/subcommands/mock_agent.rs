//! `acp mock-agent` used the way a user of another language uses it: a Python client
//! (`tool/tests/mock_agent/client.py`, raw JSON-RPC lines over the subprocess's stdio) runs a
//! scripted turn (permission, file read and write, terminal) and the echo against it, in v1 and
//! v2; and a bad script is refused with the JSON pointer of the problem.

use std::path::Path;
use std::process::{Command, Stdio};

const ACP: &str = env!("CARGO_BIN_EXE_acp");

const SCRIPT: &str = r#"{
  "turns": [{
    "match": { "text": "edit" },
    "steps": [
      { "thought": "Looking at the notes" },
      { "toolCall": { "id": "t1", "title": "Edit notes", "kind": "edit", "status": "pending" } },
      { "permission": {
          "toolCall": "t1",
          "options": [{ "id": "yes", "kind": "allow_once" }, { "id": "no", "kind": "reject_once" }],
          "on": { "no": [{ "stop": "refusal" }] } } },
      { "readFile": { "path": "/project/notes.txt" } },
      { "writeFile": { "path": "/project/notes.txt", "content": "new notes" } },
      { "terminal": { "command": "cargo", "args": ["test"] } },
      { "toolCallUpdate": { "id": "t1", "status": "completed" } },
      { "message": "Edited." }
    ]
  }]
}"#;

#[test]
fn a_python_client_runs_a_scripted_turn_and_the_echo_in_v1_and_v2() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let script = dir.path().join("script.json");
    std::fs::write(&script, SCRIPT).expect("the script is written");
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mock_agent/client.py");
    let output = Command::new("python3")
        .arg(&client)
        .arg(ACP)
        .arg(&script)
        .args(["1", "2"])
        .stderr(Stdio::inherit())
        .output()
        .expect("python3 runs (the test needs Python 3 on PATH)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the Python client failed:\n{stdout}");
    assert_eq!(stdout.lines().collect::<Vec<_>>(), ["PASS v1", "PASS v2"]);
}

#[test]
fn a_bad_script_is_refused_naming_its_json_pointer() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let script = dir.path().join("bad.json");
    std::fs::write(&script, r#"{ "turns": [{ "steps": [{ "message": "hi" }, { "delay": "soon" }] }] }"#)
        .expect("the script is written");
    let output = Command::new(ACP)
        .arg("mock-agent")
        .arg("--script")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .expect("acp runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/turns/0/steps/1/delay"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing on stdout: {:?}", String::from_utf8_lossy(&output.stdout));
}
