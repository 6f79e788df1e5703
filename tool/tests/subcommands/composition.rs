//! `acp check` and `acp tap` on composed traffic: chain transcripts (records with `link`),
//! `proxy/initialize` and `proxy/successor` envelopes (the wrapped message checked as its own
//! conversation's, at its path inside the envelope), and `mcp/message` carriers. The transcripts
//! are hand-made (tool/tests/transcripts/); the live proxy is tool/tests/agents/proxy_component.py.
//! Composition is unstable in both versions: without the `unstable` feature the checker knows none of it.
#![cfg(feature = "unstable")]

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ACP: &str = env!("CARGO_BIN_EXE_acp");

fn transcripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts")
}

/// `acp check --format json FILE`: the message reports, the summary, the exit status.
fn json_reports(file: &str) -> (Vec<Value>, Value, Option<i32>) {
    let out = Command::new(ACP)
        .args(["check", "--format", "json", file])
        .current_dir(transcripts())
        .output()
        .expect("acp runs");
    let mut lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{file}: not JSON ({e}): {l}")))
        .collect();
    let summary = lines.pop().expect("summary line");
    (lines, summary, out.status.code())
}

/// Every violation in the reports and the summary's end-of-conversation list.
fn violations(reports: &[Value], summary: &Value) -> Vec<Value> {
    reports
        .iter()
        .chain(std::iter::once(summary))
        .flat_map(|r| r["violations"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn a_clean_chain_transcript_passes_link_by_link() {
    let (reports, summary, code) = json_reports("clean-chain-v1.jsonl");
    assert_eq!(violations(&reports, &summary), Vec::<Value>::new());
    assert!(reports.iter().all(|r| r["status"] == "ok" && r["problems"] == serde_json::json!([])), "{reports:#?}");
    assert_eq!(code, Some(0));
    // Each link is its own conversation: all three use ids 0, 1, 2 without a clash.
    let links: std::collections::BTreeSet<u64> = reports.iter().filter_map(|r| r["link"].as_u64()).collect();
    assert_eq!(links.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
    let versions: Vec<(u64, u64)> = summary["links"]
        .as_array()
        .map(|links| links.iter().filter_map(|l| Some((l["link"].as_u64()?, l["protocolVersion"].as_u64()?))).collect())
        .unwrap_or_default();
    assert_eq!(versions, [(0, 1), (1, 1), (2, 1)], "{summary}");
    // The envelopes name what they wrap; their responses are the wrapped requests'.
    let wrapped: Vec<(&str, &str, &str)> = reports
        .iter()
        .filter(|r| r["wrapped"].is_string())
        .map(|r| {
            (r["kind"].as_str().unwrap_or(""), r["from"].as_str().unwrap_or(""), r["wrapped"].as_str().unwrap_or(""))
        })
        .collect();
    assert!(wrapped.contains(&("request", "agent", "initialize")), "{wrapped:?}");
    assert!(wrapped.contains(&("response", "client", "session/prompt")), "{wrapped:?}");
    assert!(wrapped.contains(&("request", "client", "mcp/message")), "{wrapped:?}");
    assert!(wrapped.contains(&("notification", "client", "session/update")), "{wrapped:?}");
    assert!(reports.iter().all(|r| r["wrapped"].is_null() || r["method"] == "proxy/successor"));
}

/// Recorded by `acp tap --log` between the official conductor 5.0.0 and our `examples/proxy`
/// (`agent-client-protocol-conductor agent "acp tap --log FILE -- proxy --prefix P:" echo_agent`,
/// driven by `examples/client --prompt hello`).
#[test]
fn a_recording_of_the_official_conductor_and_our_proxy_checks_clean() {
    let (reports, summary, code) = json_reports("recorded-official-conductor-proxy-v1.jsonl");
    assert_eq!(violations(&reports, &summary), Vec::<Value>::new());
    assert!(reports.iter().all(|r| r["status"] == "ok"), "{reports:#?}");
    let wrapped: Vec<&str> = reports.iter().filter_map(|r| r["wrapped"].as_str()).collect();
    assert_eq!(
        wrapped,
        [
            "initialize",
            "initialize",
            "session/new",
            "session/new",
            "session/prompt",
            "session/update",
            "session/prompt"
        ]
    );
    assert_eq!(summary["protocolVersion"], 1);
    assert_eq!(code, Some(0));
}

/// Recorded by our conductor (`acp conduct agent --trace FILE "proxy --prefix P:" echo_agent`,
/// driven by `examples/client --prompt hello`, v2): three links, each clean on its own.
#[test]
fn a_trace_of_acp_conduct_checks_clean_link_by_link() {
    let (reports, summary, code) = json_reports("recorded-acp-conduct-proxy-v2.jsonl");
    assert_eq!(violations(&reports, &summary), Vec::<Value>::new());
    assert!(reports.iter().all(|r| r["status"] == "ok"), "{reports:#?}");
    let links: std::collections::BTreeSet<u64> = reports.iter().filter_map(|r| r["link"].as_u64()).collect();
    assert_eq!(links.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
    assert!(reports.iter().any(|r| r["link"] == 1 && r["wrapped"] == "session/update"), "{reports:#?}");
    assert_eq!(summary["protocolVersion"], 2);
    assert_eq!(code, Some(0));
}

/// Recorded the same way with the client's MCP tool over ACP (`examples/client --mcp-echo
/// --prompt "please use mcp"`, examples built with `--features mcp`): the agent's `mcp/message`
/// goes through the proxy's envelope to the editor, who declared the server on every link.
#[test]
fn a_chain_trace_with_mcp_over_acp_checks_clean() {
    let (reports, summary, code) = json_reports("recorded-acp-conduct-mcp-v2.jsonl");
    assert_eq!(violations(&reports, &summary), Vec::<Value>::new());
    assert!(reports.iter().all(|r| r["status"] == "ok"), "{reports:#?}");
    let mcp: Vec<(u64, &str)> = reports
        .iter()
        .filter(|r| r["method"] == "mcp/message" || r["wrapped"] == "mcp/message")
        .map(|r| (r["link"].as_u64().unwrap_or(9), r["kind"].as_str().unwrap_or("")))
        .collect();
    for link in [0, 1, 2] {
        assert!(mcp.contains(&(link, "request")) && mcp.contains(&(link, "response")), "{mcp:?}");
    }
    assert_eq!(code, Some(0));
}

/// The official conductor's own `--trace` of the same chain (`agent-client-protocol-conductor
/// --trace FILE agent "proxy --prefix P:" echo_agent`): envelopes already unwrapped, each pair of
/// neighbours a link; the proxy's forwarded `initialize` is the next link's.
#[test]
fn the_official_conductors_trace_is_read_link_by_link() {
    let (reports, summary, code) = json_reports("recorded-official-conductor-trace.jsonl");
    assert_eq!(violations(&reports, &summary), Vec::<Value>::new());
    assert!(reports.iter().all(|r| r["status"] == "ok"), "{reports:#?}");
    let links: Vec<u64> = reports.iter().filter_map(|r| r["link"].as_u64()).collect();
    assert_eq!(links, [0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0]);
    assert_eq!(reports[0]["method"], "proxy/initialize");
    assert_eq!(reports[1]["method"], "initialize");
    assert_eq!(code, Some(0));

    // The same trace without the proxy's `initialize` to its successor.
    let (reports, summary, code) = json_reports("official-trace-proxy-no-forward.jsonl");
    let found = violations(&reports, &summary);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        (found[0]["rule"].as_str(), found[0]["by"].as_str(), found[0]["line"].as_u64(), found[0]["link"].as_u64()),
        (Some("proxy.forward-initialize"), Some("agent"), Some(2), Some(0))
    );
    assert_eq!(code, Some(1));
}

#[test]
fn each_composition_rule_transcript_breaks_its_rule() {
    // (file, the one rule broken, by whom, line, link, exit status)
    let cases = [
        ("chain-proxy-changes-version.jsonl", "proxy.same-version", "agent", 4, Some(1), 1),
        ("chain-proxy-no-forward.jsonl", "proxy.forward-initialize", "agent", 2, Some(1), 1),
        ("chain-envelope-params-not-object.jsonl", "proxy.successor-params", "agent", 5, Some(1), 1),
        // "must" in lower case: a SHOULD; both outcomes decode (lossy), so exit 0.
        ("rule-mcp-both-outcomes.jsonl", "mcp.one-outcome", "client", 7, None, 0),
        // Neither outcome also fails the schema (each branch requires its key): exit 1.
        ("rule-mcp-no-outcome.jsonl", "mcp.one-outcome", "client", 7, None, 1),
        ("rule-mcp-server-id-reused.jsonl", "mcp.distinct-server-ids", "client", 5, None, 1),
        ("rule-mcp-undeclared-server.jsonl", "mcp.declared-server", "agent", 6, None, 0),
        ("rule-mcp-notification-inactive.jsonl", "mcp.active-request", "client", 9, None, 0),
    ];
    for (file, rule, by, line, link, exit) in cases {
        let (reports, summary, code) = json_reports(file);
        let found = violations(&reports, &summary);
        assert_eq!(found.len(), 1, "{file}: {found:#?}");
        let v = &found[0];
        assert_eq!(
            (v["rule"].as_str(), v["by"].as_str(), v["line"].as_u64(), v["link"].as_u64()),
            (Some(rule), Some(by), Some(line), link),
            "{file}: {v}"
        );
        assert!(acp_rpc::rules::find(rule).is_some(), "{rule} is in the rules table");
        assert_eq!(code, Some(exit), "{file}");
    }
    for file in ["clean-mcp-v1.jsonl", "clean-chain-v1.jsonl"] {
        let (reports, summary, code) = json_reports(file);
        assert_eq!(violations(&reports, &summary), Vec::<Value>::new(), "{file}");
        assert_eq!(code, Some(0), "{file}");
    }
}

#[test]
fn a_bad_wrapped_message_is_reported_at_its_path_inside_the_envelope() {
    let (reports, _, code) = json_reports("chain-bad-envelope.jsonl");
    let faults: Vec<&Value> = reports.iter().filter(|r| r["status"] != "ok").collect();
    assert_eq!(faults.len(), 1, "{faults:#?}");
    let fault = faults[0];
    assert_eq!((fault["line"].as_u64(), fault["link"].as_u64()), (Some(9), Some(1)), "{fault}");
    assert_eq!(
        (fault["method"].as_str(), fault["wrapped"].as_str()),
        (Some("proxy/successor"), Some("session/update"))
    );
    assert_eq!(fault["kind"], "notification");
    // The conductor delivers the successor's message: its sender there is the agent side.
    assert_eq!(fault["from"], "client");
    assert_eq!(fault["problems"][0]["path"], "params.params.update.toolCallId", "{fault}");
    assert!(fault["problems"][0]["reason"].as_str().is_some_and(|r| r.starts_with("missing field")), "{fault}");
    assert_eq!(code, Some(1));
}

#[test]
fn a_link_that_is_not_a_number_is_an_error_of_the_record() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("bad-link.jsonl");
    let record = r#"{"from":"client","link":"one","message":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}}"#;
    std::fs::write(&file, format!("{record}\n")).expect("write");
    let out = Command::new(ACP).args(["check", "--format", "json"]).arg(&file).output().expect("acp");
    let first: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default())
        .expect("a report");
    assert_eq!((first["status"].as_str(), first["problems"][0]["path"].as_str()), (Some("error"), Some("link")));
    assert_eq!(out.status.code(), Some(1));
}

/// `acp tap [--log LOG] -- python3 proxy_component.py ARGS`, driven as a conductor: sends
/// `proxy/initialize` (v2), answers the forwarded `initialize` with v1 as the successor would,
/// reads the proxy's answer, delivers one `session/update` from the successor, and ends. Returns
/// the proxy's answer, tap's stderr and exit status.
fn conduct_through_tap(log: &Path, args: &[&str]) -> (Value, String, Option<i32>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/proxy_component.py");
    let mut child = Command::new(ACP)
        .args(["tap", "--log"])
        .arg(log)
        .args(["--", "python3"])
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("acp tap starts");
    let mut to_proxy = child.stdin.take().expect("stdin");
    let mut from_proxy = BufReader::new(child.stdout.take().expect("stdout"));
    let mut read = || {
        let mut line = String::new();
        from_proxy.read_line(&mut line).expect("read");
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    };
    let mut send = |line: &str| {
        to_proxy.write_all(line.as_bytes()).and_then(|_| to_proxy.write_all(b"\n")).and_then(|_| to_proxy.flush())
    };
    send(r#"{"jsonrpc":"2.0","id":0,"method":"proxy/initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}"#)
        .expect("send");
    let mut answer = read();
    if answer["method"] == "proxy/successor" {
        assert_eq!(answer["params"]["method"], "initialize", "{answer}");
        let reply = serde_json::json!({"jsonrpc":"2.0","id":answer["id"],"result":{"protocolVersion":1,"agentCapabilities":{}}});
        send(&reply.to_string()).expect("send");
        answer = read();
    }
    send(r#"{"jsonrpc":"2.0","method":"proxy/successor","params":{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","title":"x"}}}}"#)
        .expect("send");
    let forwarded = read();
    assert_eq!(forwarded["method"], "session/update", "{forwarded}");
    drop(to_proxy);
    let out = child.wait_with_output().expect("tap ends with the proxy");
    (answer, String::from_utf8_lossy(&out.stderr).into_owned(), out.status.code())
}

#[test]
fn tap_between_a_conductor_and_a_proxy_checks_the_envelopes_live() {
    let dir = tempfile::tempdir().expect("temp dir");

    // A proxy that keeps the successor's version: only the bad wrapped update is reported.
    let log = dir.path().join("good.jsonl");
    let (answer, stderr, code) = conduct_through_tap(&log, &[]);
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("rule proxy."), "{stderr}");
    assert!(stderr.contains("proxy/successor [session/update]"), "{stderr}");
    assert!(stderr.contains("params.params.update.toolCallId: missing field"), "{stderr}");
    // The log checks the same afterwards.
    let out = Command::new(ACP).args(["check"]).arg(&log).output().expect("acp check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("params.params.update.toolCallId"), "{text}");
    assert!(!text.contains("rule proxy."), "{text}");

    // A proxy that changes the version its successor answered.
    let (answer, stderr, _) = conduct_through_tap(&dir.path().join("changed.jsonl"), &["--change-version", "2"]);
    assert_eq!(answer["result"]["protocolVersion"], 2, "{answer}");
    assert!(stderr.contains("rule proxy.same-version (MUST, agent)"), "{stderr}");

    // A proxy that answers without forwarding `initialize`.
    let (answer, stderr, _) = conduct_through_tap(&dir.path().join("alone.jsonl"), &["--no-forward"]);
    assert!(answer["result"].is_object(), "{answer}");
    assert!(stderr.contains("rule proxy.forward-initialize (MUST, agent)"), "{stderr}");
}
