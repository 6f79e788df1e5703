//! `acp conform` against raw agents (tool/tests/agents/raw_agent.py): the well-behaved one
//! passes every MUST rule; each `--break RULE` variant fails that rule, named on a FAIL line,
//! and no other; an agent that cannot be started exits 2. Our own example agents pass too.

use serde_json::Value;
use std::path::PathBuf;

#[path = "../../tests/common/mod.rs"]
mod common;
use std::process::{Command, Output};

const ACP: &str = env!("CARGO_BIN_EXE_acp");

fn raw_agent() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/raw_agent.py")
}

/// `acp conform [args] -- python3 raw_agent.py [agent_args]`.
fn conform(args: &[&str], agent_args: &[&str]) -> Output {
    Command::new(ACP)
        .arg("conform")
        .args(["--timeout", "3"])
        .args(args)
        .arg("--")
        .arg("python3")
        .arg(raw_agent())
        .args(agent_args)
        .output()
        .expect("acp runs")
}

/// The `(verdict, tier, rule)` of each rule line.
fn verdicts(out: &Output) -> Vec<(String, String, String)> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some(v @ ("PASS" | "FAIL" | "SKIP")), Some(tier), Some(rule)) => {
                    Some((v.to_string(), tier.to_string(), rule.to_string()))
                }
                _ => None,
            }
        })
        .collect()
}

fn failing(out: &Output) -> Vec<String> {
    verdicts(out).into_iter().filter(|(v, _, _)| v == "FAIL").map(|(_, _, rule)| rule).collect()
}

/// The agent broken in `rule` fails exactly that rule; the exit status says whether it is a MUST.
fn broken(rule: &str, args: &[&str]) {
    let out = conform(args, &["--break", rule]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(failing(&out), [rule], "--break {rule}:\n{text}");
    let tier = acp_tool::rules::find(rule).map(|r| r.tier).expect("a rule of the table");
    let expected = if tier == acp_tool::rules::Tier::Must { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(expected), "--break {rule}:\n{text}");
}

const CANCEL: &[&str] = &["--cancel-prompt", "please be slow"];

macro_rules! broken {
    ($($name:ident: $rule:literal $(, $arg:expr)*;)*) => {
        $(
            #[test]
            fn $name() {
                let parts: &[&[&str]] = &[$($arg),*];
                let args: Vec<&str> = parts.concat();
                broken($rule, &args);
            }
        )*
    };
}

broken! {
    session_ids_reused: "session.distinct-ids", &["--protocol-version", "1"];
    v1_update_after_the_prompt_response: "turn.v1-updates-before-response", &["--protocol-version", "1"];
    v1_cancel_not_ending_cancelled: "turn.v1-cancelled", &["--protocol-version", "1"], CANCEL;
    v2_no_running_before_idle: "turn.v2-running-idle", &["--protocol-version", "2"];
    v2_user_message_missing: "turn.v2-user-message", &["--protocol-version", "2"];
    v2_cancel_ignored: "turn.v2-cancelled", &["--protocol-version", "2"], CANCEL;
    v2_idle_without_stop_reason: "turn.v2-stop-reason", &["--protocol-version", "2"];
    v2_unprefixed_custom_stop_reason: "ext.underscore", &["--protocol-version", "2"];
    wrong_version_negotiation: "init.version", &["--protocol-version", "1"];
    unknown_method_not_answered_32601: "rpc.method-not-found", &["--protocol-version", "1"];
    notification_answered: "rpc.no-response-to-notification", &["--protocol-version", "1"];
    junk_on_stdout: "rpc.json-only", &["--protocol-version", "1"];
    fs_call_without_capability: "cap.client-fs", &["--protocol-version", "1"];
    sessions_served_without_capability: "cap.session", &["--protocol-version", "2"];
    load_served_without_capability: "cap.load-session", &["--protocol-version", "1"];
    request_served_before_initialize: "init.first", &["--protocol-version", "1"];
    response_to_nothing: "rpc.response-to-pending", &["--protocol-version", "1"];
    request_id_reused_while_pending: "rpc.unique-ids", &["--protocol-version", "1"];
    non_json_line_not_answered: "rpc.parse-error", &["--protocol-version", "1"];
}

#[test]
fn the_well_behaved_agent_passes_both_versions() {
    let out = conform(CANCEL, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(failing(&out), Vec::<String>::new(), "{text}");
    let verdicts = verdicts(&out);
    // One line per rule that binds an agent; the turn rules of both versions were exercised.
    let binding = acp_tool::rules::RULES.iter().filter(|r| r.binds != acp_tool::rules::Binds::Client).count();
    assert_eq!(verdicts.len(), binding, "{text}");
    for rule in ["turn.v1-cancelled", "turn.v2-cancelled", "turn.v2-user-message", "init.version", "cap.client-fs"] {
        assert!(verdicts.iter().any(|(v, _, r)| v == "PASS" && r == rule), "{rule}:\n{text}");
    }
}

#[test]
fn json_output_has_the_rules_negotiations_and_transcripts() {
    let out = conform(&["--protocol-version", "2", "--format", "json"], &["--break", "turn.v2-user-message"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let rule = report["rules"].as_array().into_iter().flatten().find(|r| r["id"] == "turn.v2-user-message");
    let rule = rule.expect("the rule");
    assert_eq!(rule["status"], "FAIL", "{rule}");
    assert_eq!(rule["violations"][0]["scenario"], "v2 main", "{rule}");
    assert_eq!(report["negotiation"].as_array().map(Vec::len), Some(4));
    let main = report["scenarios"].as_array().into_iter().flatten().find(|s| s["name"] == "v2 main").expect("v2 main");
    assert!(main["transcript"].as_array().is_some_and(|t| t.len() > 10), "{main}");
    assert_eq!(report["exit"], 1);
}

#[test]
fn an_agent_that_cannot_be_started_exits_2() {
    let out = Command::new(ACP).args(["conform", "--", "/no/such/agent"]).output().expect("acp runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot start /no/such/agent"));
    let out = Command::new(ACP).args(["conform", "--", "python3", "-c", "pass"]).output().expect("acp runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exited before answering `initialize`"));
}

/// `acp conform` against our example agents (issue 19's Done-when): `echo_agent` in v1 and v2 with
/// a cancelled turn, `minimal_agent` in v1; no MUST fails, and the session and turn rules of the
/// version are all exercised (none skipped for want of a capability).
#[test]
fn our_example_agents_pass() {
    let runs: [(&str, &str, &[&str]); 3] = [
        ("echo_agent", "1", &["turn.v1-cancelled", "turn.v1-updates-before-response"]),
        ("echo_agent", "2", &["turn.v2-cancelled", "turn.v2-running-idle", "turn.v2-user-message"]),
        ("minimal_agent", "1", &["turn.v1-updates-before-response"]),
    ];
    for (agent, version, exercised) in runs {
        let mut args = vec!["conform", "--timeout", "5", "--protocol-version", version];
        if agent == "echo_agent" {
            args.extend(["--cancel-prompt", "slow"]);
        }
        let out = Command::new(ACP).args(&args).arg("--").arg(common::example(agent)).output().expect("acp runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{agent} v{version}:\n{text}");
        assert_eq!(failing(&out), Vec::<String>::new(), "{agent} v{version}:\n{text}");
        for rule in ["session.distinct-ids", "init.version", "init.first"].iter().chain(exercised) {
            let verdicts = verdicts(&out);
            assert!(verdicts.iter().any(|(v, _, r)| v == "PASS" && r == rule), "{agent} v{version}: {rule}:\n{text}");
        }
    }
}
