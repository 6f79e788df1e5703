//! The `acp` tool end to end: `check` on hand-made faulty transcripts and on sessions recorded
//! live by `tap` between the example client and the example agent (v1 and v2), and `tap` as a
//! byte-exact pipe.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

// The runtime tests' helpers: the tool is tested against the examples of `acp-rpc`.
use acp_testkit::example;

const ACP: &str = env!("CARGO_BIN_EXE_acp");

fn transcripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts")
}

fn check(args: &[&str]) -> Output {
    Command::new(ACP).arg("check").args(args).current_dir(transcripts()).output().expect("acp runs")
}

/// `acp check --format json FILE`: the message reports (the last line is the summary).
fn json_reports(file: &str) -> (Vec<Value>, Value, Option<i32>) {
    let out = check(&["--format", "json", file]);
    let mut lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{file}: not JSON ({e}): {l}")))
        .collect();
    let summary = lines.pop().expect("summary line");
    (lines, summary, out.status.code())
}

/// The one report that is not `ok`.
fn the_fault(file: &str) -> (Value, Option<i32>) {
    let (reports, _, code) = json_reports(file);
    let faults: Vec<Value> = reports.into_iter().filter(|r| r["status"] != "ok").collect();
    assert_eq!(faults.len(), 1, "{file}: {faults:#?}");
    (faults.into_iter().next().unwrap_or_default(), code)
}

#[test]
fn each_fault_is_reported_with_its_path_and_reason() {
    // (file, line, status, path, reason prefix, exit status)
    let cases = [
        ("missing-field.jsonl", 6, "error", "params.update.toolCallId", "missing field", 1),
        ("wrong-enum-type.jsonl", 6, "error", "result.stopReason", "invalid type: integer `5`, expected one of", 1),
        ("unknown-id.jsonl", 5, "error", "id", "no request of the client with id 7 is pending", 1),
        ("before-initialize.jsonl", 1, "error", "method", "`session/new` sent before `initialize`", 1),
        ("malformed.jsonl", 3, "error", "", "invalid JSON: EOF while parsing an object", 1),
    ];
    for (file, line, status, path, reason, exit) in cases {
        let (fault, code) = the_fault(file);
        assert_eq!(fault["line"], line, "{file}: {fault}");
        assert_eq!(fault["status"], status, "{file}: {fault}");
        assert_eq!(fault["problems"][0]["path"], path, "{file}: {fault}");
        let got = fault["problems"][0]["reason"].as_str().unwrap_or_default();
        assert!(got.starts_with(reason), "{file}: reason {got:?}, expected {reason:?}…");
        assert_eq!(code, Some(exit), "{file}: exit status");
    }
}

#[test]
fn lossy_shows_the_difference() {
    let (fault, code) = the_fault("lossy.jsonl");
    assert_eq!(fault["status"], "lossy", "{fault}");
    assert_eq!(
        fault["differences"],
        serde_json::json!([{ "path": "params.sandbox", "received": "strict", "reencoded": null }])
    );
    assert_eq!(code, Some(0));
}

#[test]
fn lenient_repairs_are_ok_with_a_warning_naming_the_field() {
    let (reports, summary, code) = json_reports("lenient.jsonl");
    assert_eq!(code, Some(0));
    assert_eq!(summary["summary"]["ok"], 7, "{summary}");
    let update = &reports[5];
    assert_eq!(update["status"], "ok", "{update}");
    let warnings: Vec<(String, String)> = update["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| (w["path"].as_str().unwrap_or("?").to_string(), w["reason"].as_str().unwrap_or("").to_string()))
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(warnings[0].0, "params.update.content[1]");
    assert!(warnings[0].1.starts_with("skip-invalid-items: item dropped (path: invalid type"), "{warnings:?}");
    assert_eq!(warnings[1].0, "params.update.status");
    assert!(warnings[1].1.starts_with("default-on-error: 42 replaced by the default"), "{warnings:?}");
}

#[test]
fn values_not_in_the_schema_are_ok_with_a_warning_naming_the_field() {
    // A newer v1 peer: an unknown `sessionUpdate`, tool kind, content block and stop reason, each
    // kept by a catch-all the generator added.
    let (reports, summary, code) = json_reports("future.jsonl");
    assert_eq!(code, Some(0));
    assert_eq!(summary["summary"]["ok"], 8, "{summary}");
    let warnings: Vec<(Value, Value)> = reports
        .iter()
        .inspect(|r| assert_eq!(r["status"], "ok", "{r}"))
        .flat_map(|r| r["warnings"].as_array().cloned().unwrap_or_default())
        .map(|w| (w["path"].clone(), w["reason"].clone()))
        .collect();
    let expected = [
        ("params.update.sessionUpdate", "\"future_thing\" not in this schema; kept"),
        // `title` holds the same text first; the warning names the field the value was kept in.
        ("params.update.kind", "\"future_kind\" not in this schema; kept"),
        ("params.update.content[1].type", "\"hologram\" not in this schema; kept"),
        ("result.stopReason", "\"future_reason\" not in this schema; kept"),
    ];
    let expected: Vec<(Value, Value)> = expected.iter().map(|(p, r)| (Value::from(*p), Value::from(*r))).collect();
    assert_eq!(warnings, expected);
}

#[test]
fn text_output_matches_the_snapshots() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(transcripts())
        .expect("transcripts")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "{files:?}");
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some();
    for file in files {
        let name = file.file_name().and_then(|n| n.to_str()).expect("name").to_string();
        let out = check(&[&name]);
        let text = String::from_utf8(out.stdout).expect("utf-8");
        let snapshot = file.with_extension("out");
        if update {
            std::fs::write(&snapshot, &text).expect("write snapshot");
        } else {
            let expected = std::fs::read_to_string(&snapshot).unwrap_or_default();
            assert_eq!(
                text,
                expected,
                "{name}: output differs from {} (UPDATE_SNAPSHOTS=1 rewrites)",
                snapshot.display()
            );
        }
    }
}

#[test]
fn unreadable_input_exits_2() {
    let out = check(&["no-such-file.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read no-such-file.jsonl"));
}

/// The rule ids of the violations in `reports` and the summary's end-of-conversation ones.
fn violated_rules(reports: &[Value], summary: &Value) -> Vec<String> {
    let mut rules: Vec<String> = reports
        .iter()
        .chain(std::iter::once(summary))
        .flat_map(|r| r["violations"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v["rule"].as_str().map(str::to_string))
        .collect();
    rules.sort();
    rules.dedup();
    rules
}

#[test]
fn committed_recordings_check_clean() {
    for file in ["echo-v1.jsonl", "echo-v2.jsonl"] {
        let (reports, summary, code) = json_reports(file);
        assert!(reports.len() >= 10, "{file}: {} messages", reports.len());
        assert!(
            reports.iter().all(|r| r["problems"] == serde_json::json!([]) && r["warnings"] == serde_json::json!([])),
            "{file}"
        );
        assert_eq!(summary["protocolVersion"], if file.contains("v1") { 1 } else { 2 });
        // Our agents keep the rules: no violation, every message ok, exit 0.
        assert_eq!(violated_rules(&reports, &summary), Vec::<String>::new(), "{file}");
        assert!(reports.iter().all(|r| r["status"] == "ok"), "{file}");
        assert_eq!(code, Some(0), "{file}");
    }
}

/// The client's output with every `messageId` value replaced by `<id>`: an agent's v2 message ids
/// are unique to its process, so two runs differ in nothing else.
fn without_message_ids(stdout: &str) -> String {
    fn blank(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    if key == "messageId" {
                        *value = Value::from("<id>");
                    } else {
                        blank(value);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(blank),
            _ => {}
        }
    }
    let line = |l: &str| match serde_json::from_str::<Value>(l) {
        Ok(mut value) => {
            blank(&mut value);
            value.to_string()
        }
        Err(_) => l.to_string(),
    };
    stdout.lines().map(line).collect::<Vec<_>>().join("\n")
}

/// Runs the example client (in `dir`) against `agent`; its stdout (message ids blanked) and exit
/// status.
fn run_client(dir: &Path, version: u16, agent: &[&Path]) -> (String, Option<i32>) {
    let out = Command::new(example("client"))
        .args(["--protocol-version", &version.to_string(), "--prompt", "hello perm read notes.txt", "--"])
        .args(agent)
        .current_dir(dir)
        .stderr(Stdio::null())
        .output()
        .expect("client runs");
    (without_message_ids(&String::from_utf8_lossy(&out.stdout)), out.status.code())
}

#[test]
fn tap_between_the_examples_changes_nothing_and_logs_a_clean_transcript() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().canonicalize().expect("temp dir");
    std::fs::write(dir.join("notes.txt"), "remember the milk\n").expect("write");
    let agent = example("echo_agent");
    for version in [1u16, 2] {
        let direct = run_client(&dir, version, &[&agent]);
        let log = dir.join(format!("v{version}.jsonl"));
        let tapped = run_client(
            &dir,
            version,
            &[Path::new(ACP), Path::new("tap"), Path::new("--log"), &log, Path::new("--"), &agent],
        );
        assert_eq!(direct.1, Some(0), "v{version}: {}", direct.0);
        assert_eq!(tapped, direct, "v{version}: the tap changed the session");
        let out = Command::new(ACP).args(["check", "--format", "json"]).arg(&log).output().expect("acp check");
        let text = String::from_utf8_lossy(&out.stdout);
        let reports: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("json")).collect();
        let (summary, messages) = reports.split_last().expect("summary");
        assert_eq!(summary["protocolVersion"], version);
        // Clean both ways: the schema and the rules.
        assert_eq!(violated_rules(messages, summary), Vec::<String>::new(), "v{version}:\n{text}");
        assert!(messages.iter().all(|m| m["problems"] == serde_json::json!([])), "v{version}:\n{text}");
        assert_eq!(out.status.code(), Some(0), "v{version}:\n{text}");
        assert_eq!(summary["summary"]["ok"], messages.len(), "v{version}:\n{text}");
        // Both directions are there, and the turn with its permission request and file read (v1).
        let methods: Vec<&str> = messages.iter().filter_map(|m| m["method"].as_str()).collect();
        for expected in ["initialize", "session/new", "session/prompt", "session/update", "session/request_permission"]
        {
            assert!(methods.contains(&expected), "v{version}: {methods:?}");
        }
        if version == 1 {
            assert!(methods.contains(&"fs/read_text_file"), "{methods:?}");
        }
    }
}

#[test]
fn tap_forwards_bytes_unchanged_and_keeps_the_agents_exit_status() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("cat.jsonl");
    let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\r\nnot json \xff\n\n{\"jsonrpc\":\"2.0\",\"method\":\"_x\"}\n{\"unterminated\":";
    let mut child = Command::new(ACP)
        .args(["tap", "--log"])
        .arg(&log)
        .args(["--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tap");
    child.stdin.take().expect("stdin").write_all(input).expect("write");
    let out = child.wait_with_output().expect("tap exits when the client closes");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, input, "bytes changed on the way");
    let records: Vec<Value> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record per line"))
        .collect();
    // `cat` echoes each line back: 4 lines from the client, the same 4 from the "agent".
    assert_eq!(records.len(), 8, "{records:#?}");
    assert_eq!(records.iter().filter(|r| r["from"] == "client").count(), 4);
    assert_eq!(records[0]["message"]["method"], "initialize");
    assert!(records.iter().any(|r| r["line"] == "not json \u{fffd}"), "{records:#?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not UTF-8"), "{stderr}");

    let out = Command::new(ACP).args(["tap", "--", "sh", "-c", "exit 3"]).stdin(Stdio::null()).output().expect("tap");
    assert_eq!(out.status.code(), Some(3));
    let out = Command::new(ACP).args(["tap", "--", "/no/such/agent"]).stdin(Stdio::null()).output().expect("tap");
    assert_eq!(out.status.code(), Some(127));
}

#[test]
fn help_follows_clap_conventions() {
    for args in [&["--help"][..], &["check", "--help"], &["tap", "--help"]] {
        let out = Command::new(ACP).args(args).output().expect("acp");
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Usage: acp"), "{args:?}: {text}");
    }
    let out = Command::new(ACP).arg("check").output().expect("acp");
    assert_eq!(out.status.code(), Some(2), "a usage error is clap's exit status 2");
}

#[test]
fn each_rule_transcript_breaks_its_rule_and_clean_ones_break_none() {
    // (file, the one rule broken, by whom, at which line (0: at the end), exit status)
    let cases = [
        ("rule-v1-update-after-response.jsonl", "turn.v1-updates-before-response", "agent", 9, 1),
        ("rule-v2-resume-without-state.jsonl", "session.v2-resume-state", "agent", 4, 1),
        ("rule-v1-cancel-not-cancelled.jsonl", "turn.v1-cancelled", "agent", 8, 1),
        ("rule-v1-session-ids-reused.jsonl", "session.distinct-ids", "agent", 6, 1),
        ("rule-v1-fs-without-capability.jsonl", "cap.client-fs", "agent", 6, 1),
        ("rule-v1-notification-answered.jsonl", "rpc.no-response-to-notification", "agent", 6, 1),
        ("rule-v1-permission-after-cancel.jsonl", "turn.cancel-permission", "client", 8, 1),
        // Without a keyword: a SHOULD finding, exit 0.
        ("rule-v1-permission-option-not-offered.jsonl", "perm.offered-option", "client", 7, 0),
        ("rule-v2-no-running.jsonl", "turn.v2-running-idle", "agent", 8, 1),
        ("rule-v2-never-idle.jsonl", "turn.v2-running-idle", "agent", 7, 1),
        // "must" in lower case: a SHOULD finding, exit 0.
        ("rule-v2-user-message-missing.jsonl", "turn.v2-user-message", "agent", 8, 0),
        ("rule-v2-cancel-ignored.jsonl", "turn.v2-cancelled", "agent", 10, 1),
        ("unknown-id.jsonl", "rpc.response-to-pending", "agent", 5, 1),
        ("before-initialize.jsonl", "init.first", "client", 1, 1),
    ];
    for (file, rule, by, line, exit) in cases {
        let (reports, summary, code) = json_reports(file);
        assert_eq!(violated_rules(&reports, &summary), [rule], "{file}");
        let violation = reports
            .iter()
            .chain(std::iter::once(&summary))
            .flat_map(|r| r["violations"].as_array().cloned().unwrap_or_default())
            .next()
            .unwrap_or_default();
        assert_eq!(
            (violation["by"].as_str(), violation["line"].as_u64()),
            (Some(by), Some(line)),
            "{file}: {violation}"
        );
        assert_eq!(code, Some(exit), "{file}");
    }
    for file in [
        "clean-v1-turns.jsonl",
        "clean-v2-turns.jsonl",
        "echo-v1.jsonl",
        // History replayed before the `session/load` answer, after a cancelled turn.
        "clean-v1-load-replay.jsonl",
        // An update after the `session/load` answer that followed a cancelled turn: not the
        // cancelled turn's.
        "clean-v1-update-after-load-after-cancel.jsonl",
        // Asked for v2, answered v1: everything after the request decodes as v1.
        "clean-downgrade-v2-to-v1.jsonl",
    ] {
        let (reports, summary, code) = json_reports(file);
        assert_eq!(violated_rules(&reports, &summary), Vec::<String>::new(), "{file}");
        assert_eq!(code, Some(0), "{file}");
    }
}

#[test]
fn an_empty_v2_prompt_is_an_error_citing_min_items() {
    let (fault, code) = the_fault("rule-v2-empty-prompt.jsonl");
    assert_eq!((fault["line"].as_u64(), fault["status"].as_str()), (Some(5), Some("error")), "{fault}");
    assert_eq!(fault["problems"][0]["path"], "params.prompt", "{fault}");
    assert!(fault["problems"][0]["reason"].as_str().unwrap_or_default().contains("`minItems`"), "{fault}");
    assert_eq!(code, Some(1));
}

#[test]
fn a_lower_answer_to_initialize_is_decoded_in_the_version_it_names() {
    let (reports, summary, code) = json_reports("clean-downgrade-v2-to-v1.jsonl");
    let statuses: Vec<&str> = reports.iter().filter_map(|r| r["status"].as_str()).collect();
    assert!(statuses.iter().all(|s| *s == "ok"), "{statuses:?}");
    // The answer itself carries v1's fields (`agentCapabilities`, no `info`): decoded as v1.
    assert_eq!(reports[1]["problems"], serde_json::json!([]), "{}", reports[1]);
    assert_eq!(summary["protocolVersion"], 1, "{summary}");
    assert_eq!(code, Some(0));
}

#[test]
fn an_agent_answering_before_initialize_is_a_should_finding_and_the_client_breaks_the_must() {
    let (reports, summary, _) = json_reports("agent-answers-before-initialize.jsonl");
    let violations: Vec<(String, String, String)> = reports
        .iter()
        .chain(std::iter::once(&summary))
        .flat_map(|r| r["violations"].as_array().cloned().unwrap_or_default())
        .map(|v| {
            let field = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (field("rule"), field("tier"), field("by"))
        })
        .collect();
    assert_eq!(
        violations,
        [
            ("init.first".to_string(), "MUST".to_string(), "client".to_string()),
            ("init.refuse-before-initialize".to_string(), "SHOULD".to_string(), "agent".to_string()),
        ]
    );
    // The agent's answer is a finding, not an error.
    assert_eq!(reports[1]["status"], "ok", "{}", reports[1]);
}

/// `--ext schema/ext/agentao.json`: Agentao's vendor messages are `ok` when they follow it and an
/// `error` at the JSON path when not; a method it does not describe, and every vendor message
/// without `--ext`, stay `extension`.
#[test]
fn ext_schemas_validate_vendor_messages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("agentao.jsonl");
    let lines = [
        r#"{"from":"client","message":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}}"#,
        r#"{"from":"agent","message":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"_meta":{"_agentao.cn/extensions":[{"method":"_agentao.cn/ask_user"}]}}}}"#,
        r#"{"from":"agent","message":{"jsonrpc":"2.0","id":"a1","method":"_agentao.cn/ask_user","params":{"sessionId":"s","question":"Which?"}}}"#,
        r#"{"from":"client","message":{"jsonrpc":"2.0","id":"a1","result":{"outcome":"answered","text":"main"}}}"#,
        r#"{"from":"client","message":{"jsonrpc":"2.0","id":7,"method":"_agentao.cn/set_model","params":{"sessionId":"s","model":"m","apiKey":"k"}}}"#,
        r#"{"from":"agent","message":{"jsonrpc":"2.0","id":7,"result":{"model":5}}}"#,
        r#"{"from":"agent","message":{"jsonrpc":"2.0","method":"_other.example/note","params":{}}}"#,
    ];
    std::fs::write(&file, lines.join("\n") + "\n").expect("transcript written");
    let ext = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/ext/agentao.json");
    let run = |args: &[&Path]| {
        let out = Command::new(ACP).args(["check", "--format", "json"]).args(args).output().expect("acp runs");
        let reports: Vec<Value> =
            String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        (reports, out.status.code())
    };
    let statuses = |reports: &[Value]| -> Vec<String> {
        reports.iter().filter_map(|r| r["status"].as_str()).map(str::to_string).collect()
    };

    let (reports, code) = run(&[Path::new("--ext"), &ext, &file]);
    assert_eq!(statuses(&reports), ["ok", "ok", "ok", "ok", "error", "error", "extension"], "{reports:#?}");
    let first_problem = |i: usize| {
        let problem = &reports[i]["problems"][0];
        (problem["path"].as_str().unwrap_or_default().to_string(), problem["reason"].to_string())
    };
    let (path, reason) = first_problem(4);
    assert_eq!(path, "params", "{reason}");
    assert!(reason.contains("SetModelRequest") && reason.contains("apiKey"), "{reason}");
    let (path, reason) = first_problem(5);
    assert_eq!(path, "result.model", "{reason}");
    assert!(reason.contains("SetModelResponse") && reason.contains("`type`"), "{reason}");
    assert_eq!(code, Some(1));

    let (reports, code) = run(&[&file]);
    assert_eq!(statuses(&reports)[2..], ["extension"; 5], "{reports:#?}");
    assert_eq!(code, Some(0));

    // `x-meta-of`: the initialize answer's `_meta` too.
    let meta = dir.path().join("meta.jsonl");
    let bad_meta = lines[1].replace(r#"{"method":"_agentao.cn/ask_user"}"#, r#"{"method":"ask_user"}"#);
    std::fs::write(&meta, format!("{}\n{bad_meta}\n", lines[0])).expect("transcript written");
    let (reports, _) = run(&[Path::new("--ext"), &ext, &meta]);
    assert_eq!(statuses(&reports), ["ok", "error"], "{reports:#?}");
    let problem = &reports[1]["problems"][0];
    assert!(problem["path"].as_str().unwrap_or_default().starts_with("result._meta"), "{problem}");
    assert!(problem["reason"].as_str().unwrap_or_default().contains("`pattern`"), "{problem}");

    // `acp view --ext` draws the same verdicts: the wrong `_agentao.cn/set_model` is an error
    // naming its schema type, which without `--ext` is only an extension message.
    let page = |ext: &[&Path]| {
        let out = Command::new(ACP).arg("view").args(ext).arg(&file).args(["-o", "-"]).output().expect("acp runs");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(page(&[Path::new("--ext"), &ext]).contains("SetModelRequest"));
    assert!(!page(&[]).contains("SetModelRequest"));

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r##"{"$defs": {"X": {"x-method": "_x", "$ref": "../v9/schema.json#/$defs/Y"}}}"##)
        .expect("written");
    let out = Command::new(ACP).arg("check").arg("--ext").arg(&bad).arg(&file).output().expect("acp runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("#/$defs/X"), "{}", String::from_utf8_lossy(&out.stderr));
}
