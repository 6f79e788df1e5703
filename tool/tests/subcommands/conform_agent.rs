//! `acp conform` against raw agents (tool/tests/agents/raw_agent.py): the well-behaved one
//! passes every MUST rule; each `--break RULE` variant fails that rule, named on a FAIL line,
//! and no other; an agent that cannot be started exits 2, one that cannot be brought to a
//! session exits 3; what an agent advertises (`--advertise`) and a tool prompt are exercised
//! with evidence. Our own example agents pass too.

use serde_json::Value;
use std::path::PathBuf;

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
    let tier = acp_rpc::rules::find(rule).map(|r| r.tier).expect("a rule of the table");
    let expected = if tier == acp_rpc::rules::Tier::Must { 1 } else { 0 };
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
    v1_update_after_the_cancelled_prompt_response: "turn.v1-updates-before-response", &["--protocol-version", "1"], CANCEL;
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
    request_served_before_initialize: "init.refuse-before-initialize", &["--protocol-version", "1"];
    response_to_nothing: "rpc.response-to-pending", &["--protocol-version", "1"];
    request_id_reused_while_pending: "rpc.v1-unique-ids", &["--protocol-version", "1"];
    non_json_line_not_answered: "rpc.parse-error", &["--protocol-version", "1"];
    v1_update_without_a_required_field: "schema.valid", &["--protocol-version", "1"];
    v2_update_without_a_required_field: "schema.valid", &["--protocol-version", "2"];
    request_never_answered: "rpc.reply", &["--protocol-version", "1"];
}

/// A message that does not decode fails `schema.valid` with its evidence: the message, the JSON
/// path and the reason (issue 47), in text and in JSON.
#[test]
fn an_invalid_message_is_named_with_its_path_and_reason() {
    let cases: [(&str, &str, &[&str]); 4] = [
        ("1", "schema.valid", &["params.update.toolCallId: missing field", "\"sessionUpdate\":\"tool_call\""]),
        ("2", "schema.valid", &["params.update.messageId: missing field", "\"agent_message_chunk\""]),
        ("1", "schema.valid-response", &["response session/prompt", "result.stopReason: invalid type: integer `42`"]),
        ("2", "schema.valid-response", &["response session/prompt", "result.messageId: invalid type: integer `42`"]),
    ];
    for (version, break_, evidence) in cases {
        let out = conform(&["--protocol-version", version], &["--break", break_]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "v{version} {break_}:\n{text}");
        assert!(failing(&out).contains(&"schema.valid".to_string()), "v{version} {break_}:\n{text}");
        let line = line_of(&text, "schema.valid").unwrap_or_default();
        for seen in evidence {
            assert!(line.contains(seen), "v{version} {break_}: {seen} not in {line}");
        }
        let out = conform(&["--protocol-version", version, "--format", "json"], &["--break", break_]);
        let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        let rule = report["rules"].as_array().into_iter().flatten().find(|r| r["id"] == "schema.valid");
        let detail = rule.and_then(|r| r["violations"][0]["detail"].as_str()).unwrap_or_default();
        assert!(evidence.iter().all(|seen| detail.contains(seen)), "{detail}");
    }
}

/// An answer to `initialize` a client cannot speak (a version no schema defines, or one above
/// the version asked, which was not offered) ends the run as no session (exit 3), naming both
/// versions; `init.version` never passes on an answer it cannot judge, and fails the one above
/// the request.
#[test]
fn a_version_the_client_cannot_speak_is_no_session() {
    let out = conform(&["--protocol-version", "1"], &["--answer-version", "99"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    let line = text.lines().find(|l| l.starts_with("NO SESSION")).unwrap_or_default();
    assert!(line.contains("asked for version 1, the agent answered 99, a version no schema defines"), "{text}");
    assert!(!text.contains("every MUST rule exercised passes"), "{text}");
    let init = line_of(&text, "init.version").unwrap_or_default();
    assert!(init.contains("not judged: asked for 1, the agent answered 99"), "{init}");
    // Judged: only the answer to 0 (error -32022), not the three answers of 99.
    assert!(init.starts_with("PASS") && init.contains(" 1 check;"), "{init}");

    let out = conform(&["--protocol-version", "1"], &["--answer-version", "2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains("NO SESSION  [initialize 1] asked for version 1, the agent answered 2, a version above"),
        "{text}"
    );
    let init = line_of(&text, "init.version").unwrap_or_default();
    assert!(init.starts_with("FAIL") && init.contains("asked for 1, answered 2: above the request"), "{init}");
}

/// A run in which no version ran a session never reads "passes": here the agent falls back to 1
/// when asked for 2, and only 2 was selected.
#[test]
fn a_run_with_no_session_at_all_does_not_pass() {
    let out = conform(&["--protocol-version", "2"], &["--answer-version", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains("NO SESSION  [every version] no session was run (v2: the agent negotiated 1 when asked for 2)"),
        "{text}"
    );
    assert!(!text.contains("every MUST rule exercised passes"), "{text}");
}

#[test]
fn the_well_behaved_agent_passes_both_versions() {
    let out = conform(CANCEL, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(failing(&out), Vec::<String>::new(), "{text}");
    let verdicts = verdicts(&out);
    // One line per rule that binds an agent on any connection (none that only a proxy or MCP
    // over ACP can break: conform runs no proxy and offers no ACP MCP server); the turn rules
    // of both versions were exercised.
    use acp_rpc::rules::{Binds, Scope, RULES};
    let binding = RULES.iter().filter(|r| r.binds != Binds::Client && r.scope == Scope::Connection).count();
    assert_eq!(verdicts.len(), binding, "{text}");
    for (_, _, rule) in &verdicts {
        let scope = acp_rpc::rules::find(rule).map(|r| r.scope);
        assert_eq!(scope, Some(Scope::Connection), "{rule} listed:\n{text}");
    }
    for rule in [
        "turn.v1-cancelled",
        "turn.v1-updates-before-response",
        "turn.v2-cancelled",
        "turn.v2-user-message",
        "init.version",
        "cap.client-fs",
    ] {
        assert!(verdicts.iter().any(|(v, _, r)| v == "PASS" && r == rule), "{rule}:\n{text}");
    }
}

/// A rule of MCP over ACP is left out of the verdicts (conform offers no ACP MCP server) until
/// the agent breaks it anyway: an `mcp/message` to a server nobody declared is named.
#[cfg(feature = "unstable")]
#[test]
fn an_mcp_message_sent_unasked_is_named() {
    broken("mcp.declared-server", &["--protocol-version", "1"]);
}

#[test]
fn json_output_has_the_rules_negotiations_and_transcripts() {
    let out = conform(&["--protocol-version", "2", "--format", "json"], &["--break", "turn.v2-running-idle"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let rule = report["rules"].as_array().into_iter().flatten().find(|r| r["id"] == "turn.v2-running-idle");
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
/// a cancelled turn and a tool prompt, `minimal_agent` in v1; no MUST fails, and the session and
/// turn rules of the version are all exercised (none skipped for want of a capability), v2's
/// baseline session methods (list, resume, close) included.
#[test]
fn our_example_agents_pass() {
    let runs: [(&str, &str, &[&str]); 3] = [
        ("echo_agent", "1", &["turn.v1-cancelled", "turn.v1-updates-before-response", "cap.client-fs"]),
        (
            "echo_agent",
            "2",
            &[
                "turn.v2-cancelled",
                "turn.v2-running-idle",
                "turn.v2-user-message",
                "cap.serves-list",
                "cap.serves-resume",
                "cap.serves-close",
            ],
        ),
        ("minimal_agent", "1", &[]),
    ];
    for (agent, version, exercised) in runs {
        let mut args = vec!["conform", "--timeout", "5", "--protocol-version", version];
        if agent == "echo_agent" {
            // `perm` asks for permission; `read PATH` reads a file of the session's directory.
            args.extend(["--cancel-prompt", "slow", "--tool-prompt", "perm read {cwd}/notes.txt"]);
        }
        let out = Command::new(ACP).args(&args).arg("--").arg(acp_testkit::example(agent)).output().expect("acp runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{agent} v{version}:\n{text}");
        assert_eq!(failing(&out), Vec::<String>::new(), "{agent} v{version}:\n{text}");
        for rule in ["session.distinct-ids", "init.version", "init.refuse-before-initialize"].iter().chain(exercised) {
            let verdicts = verdicts(&out);
            assert!(verdicts.iter().any(|(v, _, r)| v == "PASS" && r == rule), "{agent} v{version}: {rule}:\n{text}");
        }
    }
}

/// The line of `rule`, if it has one.
fn line_of<'a>(text: &'a str, rule: &str) -> Option<&'a str> {
    text.lines().find(|line| line.split_whitespace().nth(2) == Some(rule))
}

/// What an agent advertises, exercised (issue 33, point 4): every optional capability of the raw
/// agent gets a PASS with its evidence (load with the replay before the answer, list, resume, close, set_mode, set_config_option, image/audio/resource prompts), and a
/// tool prompt makes it ask for permission, write and read a file and run `echo` in a terminal,
/// which `acp conform` really runs: the client-request rules PASS instead of SKIP.
#[test]
fn advertised_capabilities_and_tool_use_pass_with_evidence() {
    let out = conform(&["--tool-prompt", "use tools", "--format", "json"], &["--advertise"]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    let rule = |id: &str| {
        report["rules"].as_array().into_iter().flatten().find(|r| r["id"] == id).cloned().unwrap_or_default()
    };
    let passes = [
        ("session.load-replay", "v1: in the same connection: "),
        ("cap.serves-load", "v1: session/load in the same connection"),
        ("cap.serves-list", "the one just used among them"),
        ("cap.serves-resume", "v1: session/resume in the same connection"),
        ("cap.serves-close", "v2: closed sess-1"),
        ("cap.serves-set-mode", "v1: mode ask -> code"),
        ("cap.serves-config-option", "v1: model = \"large\", the answer shows it"),
        ("cap.v2-serves-config-option", "v2: model = \"large\", the answer shows it"),
        ("cap.serves-image", "v2: a prompt with an image answered"),
        ("cap.serves-audio", "v1: a prompt with an audio clip answered {\"stopReason\":\"end_turn\"}"),
        ("cap.serves-embedded-context", "a prompt with an embedded resource"),
    ];
    for (id, evidence) in passes {
        let rule = rule(id);
        assert_eq!(rule["status"], "PASS", "{rule:#}");
        let seen = rule["evidence"].as_array().into_iter().flatten().filter_map(Value::as_str).collect::<Vec<_>>();
        assert!(seen.iter().any(|e| e.contains(evidence)), "{id}: {seen:?}");
    }
    for id in ["cap.client-fs", "cap.client-terminal"] {
        assert_eq!(rule(id)["status"], "PASS", "{:#}", rule(id));
    }
    // The agent's requests are counted over the run (v2 has no `fs/*` or `terminal/*`; the v1
    // scenario whose client advertised nothing sees permission only).
    let requests = &report["agentRequests"];
    for (method, n) in [
        ("session/request_permission", 2),
        ("fs/write_text_file", 1),
        ("terminal/create", 1),
        ("terminal/wait_for_exit", 1),
        ("terminal/output", 1),
        ("terminal/release", 1),
    ] {
        assert_eq!(requests[method], n, "{method}: {requests}");
    }
    // `session/fork` is in the unstable schema only: exercised with the unstable tables.
    let fork = rule("cap.serves-fork");
    let expected = if cfg!(feature = "unstable") { "PASS" } else { "SKIP" };
    assert_eq!(fork["status"], expected, "{fork:#}");
    // The agent's own account of the tool turn: permission allowed, the file written then read
    // back, `echo hi` run for real with its exit status.
    let main = report["scenarios"].as_array().into_iter().flatten().find(|s| s["name"] == "v1 main");
    let said: Vec<&str> = main
        .and_then(|s| s["transcript"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|record| record["message"]["params"]["update"]["content"]["text"].as_str())
        .collect();
    let told = said.iter().find(|text| text.contains("[permission")).copied().unwrap_or_default();
    for seen in [
        r#"permission {"outcome": "selected", "optionId": "allow"}"#,
        "write ok",
        "read 'written'",
        r#"terminal 'hi\n' exit {"exitCode": 0, "signal": null}"#,
    ] {
        assert!(told.contains(seen), "{seen} not in what the agent said: {said:?}");
    }
}

/// An agent that advertises nothing optional: each of those rules SKIPs, saying what was not
/// advertised; v2's baseline (`capabilities.session: {}`) still means list, resume and close.
#[test]
fn what_is_not_advertised_skips_and_says_so() {
    let out = conform(&[], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for (rule, why) in [
        ("session.load-replay", "did not advertise `agentCapabilities.loadSession` (v1)"),
        ("cap.serves-image", "did not advertise `agentCapabilities.promptCapabilities.image` (v1)"),
        ("cap.serves-set-mode", "listed no `modes`"),
        ("cap.serves-config-option", "listed no `configOptions`"),
        ("cap.v2-serves-config-option", "listed no `configOptions`"),
        // Judged on the updates of a cancelled turn only.
        ("turn.v1-updates-before-response", "no --cancel-prompt given"),
    ] {
        let line = line_of(&text, rule).unwrap_or_default();
        assert!(line.starts_with("SKIP") && line.contains(why), "{rule}: {line}\n{text}");
    }
    for rule in ["cap.serves-list", "cap.serves-resume", "cap.serves-close"] {
        let line = line_of(&text, rule).unwrap_or_default();
        assert!(line.starts_with("PASS") && line.contains("v2: "), "{rule}: {line}\n{text}");
    }
}

/// `session/load` answered before the conversation is replayed: the MUST fails, and the FAIL
/// line is followed by the sentence it is judged against.
#[test]
fn load_answered_before_its_replay_fails() {
    let out = conform(&["--protocol-version", "1"], &["--advertise", "--break", "session.load-replay"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(failing(&out), ["session.load-replay"], "{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("came after the `session/load` answer"), "{text}");
    assert!(text.contains("When all the conversation entries have been streamed to the Client"), "{text}");
}

/// A terminal the client did not advertise, used by a tool prompt: `cap.client-terminal` fails.
#[test]
fn terminal_used_without_capability_fails() {
    let out = conform(&["--protocol-version", "1", "--tool-prompt", "use tools"], &["--break", "cap.client-terminal"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(failing(&out), ["cap.client-terminal"], "{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
}

/// An agent that requires authentication: without `--auth` no session, and the report says why
/// (the error, the methods it lists), exits 3 and never says the agent passes; with `--auth`,
/// sessions and turns.
#[test]
fn an_agent_that_requires_auth_exits_3_without_auth_and_runs_with_it() {
    let out = conform(&[], &["--require-auth"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    for version in ["v1 main", "v2 main"] {
        let line = text.lines().find(|l| l.starts_with(&format!("NO SESSION  [{version}]"))).unwrap_or_default();
        assert!(
            line.contains("error -32000 \"Authentication required\"")
                && line.contains("authMethods: raw-key (Raw key")
                && line.contains("--auth METHOD_ID"),
            "{version}: {line}\n{text}"
        );
    }
    assert!(!text.contains("every MUST rule exercised passes"), "{text}");
    assert!(text.contains("could not be brought to a session"), "{text}");

    let out = conform(&["--auth", "raw-key"], &["--require-auth"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("NO SESSION"), "{text}");
    for rule in ["session.distinct-ids", "turn.v2-running-idle", "cap.client-fs"] {
        assert!(line_of(&text, rule).is_some_and(|l| l.starts_with("PASS")), "{rule}:\n{text}");
    }

    let out = conform(&["--protocol-version", "1", "--auth", "nope"], &["--require-auth"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("`authenticate` with \"nope\" answered error -32602"), "{text}");
}

/// An agent that will not load or resume a session it holds open: both are asked again of a fresh
/// process once the first is stopped, which loads the session from its history file.
#[test]
fn a_session_held_open_is_loaded_in_a_fresh_process() {
    let out = conform(&["--protocol-version", "1"], &["--advertise", "--no-reload"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(failing(&out), Vec::<String>::new(), "{text}");
    for (rule, evidence) in [
        ("session.load-replay", "v1: in a fresh process: "),
        ("cap.serves-load", "(the same connection: error -32600 \"session sess-0 is open in this process\")"),
        ("cap.serves-resume", "v1: session/resume in a fresh process"),
    ] {
        let line = line_of(&text, rule).unwrap_or_default();
        assert!(line.starts_with("PASS") && line.contains(evidence), "{rule}: {line}\n{text}");
    }
}

/// `session/load` advertised and refused everywhere: a SHOULD finding of `cap.serves-load` with
/// both refusals, not a MUST of the replay (which judges loads answered, and SKIPs).
#[test]
fn a_load_refused_everywhere_is_a_finding_not_a_replay_failure() {
    let out = conform(&["--protocol-version", "1"], &["--advertise", "--break", "cap.serves-load"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(failing(&out), ["cap.serves-load"], "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
    let line = line_of(&text, "cap.serves-load").unwrap_or_default();
    assert!(line.contains("in the same connection") && line.contains("in a fresh process"), "{line}");
    let replay = line_of(&text, "session.load-replay").unwrap_or_default();
    assert!(replay.starts_with("SKIP") && replay.contains("refused `session/load`"), "{replay}");
}

/// A session whose prompts were all refused has no conversation: a `session/load` that replays
/// nothing does not break `session.load-replay`.
#[test]
fn a_load_with_nothing_to_replay_is_no_replay_failure() {
    let out = conform(&["--protocol-version", "1"], &["--advertise", "--refuse-prompts"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = line_of(&text, "session.load-replay").unwrap_or_default();
    assert!(line.starts_with("PASS") && line.contains("nothing to replay"), "{line}\n{text}");
    assert!(!failing(&out).iter().any(|rule| rule == "session.load-replay"), "{text}");
}

/// A v2 prompt refused with an error has no turn to end: `acp conform` goes on at once instead
/// of waiting out `--timeout` for an idle that never comes (four refused prompts here).
#[test]
fn a_refused_v2_prompt_is_not_waited_for() {
    let started = std::time::Instant::now();
    let out = Command::new(ACP)
        .args(["conform", "--protocol-version", "2", "--timeout", "30", "--"])
        .arg("python3")
        .arg(raw_agent())
        .args(["--advertise", "--refuse-prompts"])
        .output()
        .expect("acp runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(started.elapsed() < std::time::Duration::from_secs(25), "{:?}\n{text}", started.elapsed());
    let line = line_of(&text, "cap.serves-image").unwrap_or_default();
    assert!(line.starts_with("FAIL") && line.contains("the model cannot be reached"), "{line}\n{text}");
}

/// v2's `session/set_config_option` refused though the session listed config options: its
/// sentence is a MUST ("Agents MUST support this method for any session where they advertise
/// config options"), so the run fails.
#[test]
fn v2_config_option_refused_fails_the_must() {
    let out = conform(&["--protocol-version", "2"], &["--advertise", "--break", "cap.v2-serves-config-option"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(failing(&out), ["cap.v2-serves-config-option"], "{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
}

/// A member no schema has (lossy: kept by neither type, dropped on re-encoding) is a finding on the
/// LOSSY line, not a failure: the run still passes.
#[test]
fn a_lossy_message_is_a_finding_not_a_failure() {
    let out = conform(&["--protocol-version", "1"], &["--extra-member"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(failing(&out), Vec::<String>::new(), "{text}");
    let line = text.lines().find(|l| l.starts_with("LOSSY")).unwrap_or_default();
    assert!(line.contains("result.sandbox: received \"strict\", re-encoded (absent)"), "{text}");
    assert!(line.contains("findings, not failures"), "{line}");
}
