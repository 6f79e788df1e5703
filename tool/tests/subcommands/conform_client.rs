//! `acp conform --client` against our example client (examples/client.rs) and raw clients
//! (tool/tests/clients/raw_client.py): the well-behaved ones pass every MUST rule; each
//! `--break RULE` variant fails that rule, named on a FAIL line, and no other; a command without
//! `{agent}`, a client that cannot be started and one that never starts its agent exit 2.

use std::path::PathBuf;
use std::process::{Command, Output};

const ACP: &str = env!("CARGO_BIN_EXE_acp");

fn raw_client() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/raw_client.py").display().to_string()
}

/// `acp conform --client [args] -- client…`.
fn conform(args: &[&str], client: &[&str]) -> Output {
    Command::new(ACP)
        .args(["conform", "--client", "--timeout", "5"])
        .args(args)
        .arg("--")
        .args(client)
        .output()
        .expect("acp runs")
}

/// `acp conform --client [args] -- python3 raw_client.py [client_args] --prompt {prompt} -- {agent}`.
fn conform_raw(args: &[&str], client_args: &[&str]) -> Output {
    let raw = raw_client();
    let mut client = vec!["python3", raw.as_str()];
    client.extend(client_args);
    client.extend(["--prompt", "{prompt}", "--", "{agent}"]);
    conform(args, &client)
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

/// A passing run: exit 0, no FAIL, and each of `rules` PASS (exercised).
fn passes(out: &Output, rules: &[&str], what: &str) {
    let text = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{what}:\n{text}{stderr}");
    assert_eq!(failing(out), Vec::<String>::new(), "{what}:\n{text}");
    let verdicts = verdicts(out);
    for rule in rules {
        assert!(verdicts.iter().any(|(v, _, r)| v == "PASS" && r == rule), "{what}: {rule} not PASS:\n{text}");
    }
}

/// What every turn exercises, in either version.
const TURN: &[&str] = &[
    "rpc.json-only",
    "rpc.response-to-pending",
    "rpc.no-response-to-notification",
    "rpc.method-not-found",
    "init.first",
    "init.once",
    "perm.offered-option",
];

/// Our example client, in v1, in v2 and in both (it asks for 2 and takes 1).
#[test]
fn our_example_client_passes() {
    let client = acp_testkit::example("client").display().to_string();
    for version in ["1", "2"] {
        let out = conform(
            &["--protocol-version", version],
            &[&client, "--protocol-version", version, "--prompt", "{prompt}", "--", "{agent}"],
        );
        let mut rules = TURN.to_vec();
        rules.push(if version == "1" { "rpc.v1-unique-ids" } else { "cap.session" });
        passes(&out, &rules, &format!("client v{version}"));
    }
    let out = conform(&[], &[&client, "--prompt", "{prompt}", "--", "{agent}"]);
    let mut rules = TURN.to_vec();
    rules.extend(["rpc.v1-unique-ids", "rpc.unique-ids", "cap.session"]);
    passes(&out, &rules, "client, both versions");
}

/// The raw client passes as it is, and with the stand-in's command given as one argument to a
/// shell (`{agent}` inside a larger argument: shell-quoted).
#[test]
fn the_raw_client_passes_with_agent_alone_or_quoted() {
    passes(&conform_raw(&[], &[]), TURN, "raw client");
    let raw = raw_client();
    let quoted = conform(&[], &["python3", &raw, "--prompt", "{prompt}", "--", "sh", "-c", "exec {agent}"]);
    passes(&quoted, TURN, "raw client, sh -c \"exec {agent}\"");
}

/// A client that speaks v2 only, run for both versions: the v1 scenario's rules SKIP (it asked
/// for 2 and closed when answered 1), not a missing prompt; v2 passes.
#[test]
fn a_v2_only_client_skips_v1() {
    let out = conform_raw(&[], &["--protocol-version", "2", "--strict-version"]);
    let mut rules = TURN.to_vec();
    rules.extend(["rpc.unique-ids", "cap.session"]);
    passes(&out, &rules, "raw client, v2 only");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("rpc.v1-unique-ids")).unwrap_or_default();
    assert!(
        line.starts_with("SKIP") && line.contains("the client asked for version 2 and did not go on with v1"),
        "{text}"
    );
}

/// A client that cancels its turn when asked for permission and answers the request
/// `cancelled`: in v1 after its `session/cancel`, in v2 after the stand-in's `$/cancel_request`.
#[test]
fn a_client_that_cancels_during_a_permission_request_passes() {
    for version in ["1", "2"] {
        let out = conform_raw(&["--protocol-version", version], &["--protocol-version", version, "--cancel"]);
        passes(&out, &["turn.cancel-permission"], &format!("raw client --cancel, v{version}"));
    }
}

/// The client broken in `rule` fails exactly that rule; the exit status says whether it is a MUST.
fn broken(rule: &str, version: Option<&str>) {
    let (args, mut client_args) = match version {
        Some(v) => (vec!["--protocol-version", v], vec!["--protocol-version", v]),
        None => (vec![], vec![]),
    };
    client_args.extend(["--break", rule]);
    let out = conform_raw(&args, &client_args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(failing(&out), [rule], "--break {rule}:\n{text}");
    let tier = acp_rpc::rules::find(rule).map(|r| r.tier).expect("a rule of the table");
    let expected = if tier == acp_rpc::rules::Tier::Must { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(expected), "--break {rule}:\n{text}");
}

macro_rules! broken {
    ($($name:ident: $rule:literal, $version:expr;)*) => {
        $(
            #[test]
            fn $name() {
                broken($rule, $version);
            }
        )*
    };
}

broken! {
    junk_on_the_agents_stdin: "rpc.json-only", None;
    session_before_initialize: "init.first", None;
    initialize_twice: "init.once", None;
    unknown_request_answered_with_a_result: "rpc.method-not-found", None;
    notification_answered: "rpc.no-response-to-notification", None;
    response_to_no_request: "rpc.response-to-pending", None;
    image_not_advertised: "cap.prompt-content", None;
    id_of_a_pending_request_reused: "rpc.v1-unique-ids", Some("1");
    load_not_advertised: "cap.load-session", Some("1");
    permission_not_cancelled_after_cancel: "turn.cancel-permission", Some("1");
    v2_permission_not_cancelled_after_cancel_request: "turn.cancel-permission", Some("2");
    permission_option_not_offered: "perm.offered-option", None;
    custom_method_without_underscore: "ext.underscore", None;
    notification_sent_as_a_request: "schema.valid", None;
    advertised_fs_refused: "cap.client-serves-fs", Some("1");
    v2_id_of_the_held_prompt_reused: "rpc.unique-ids", Some("2");
    agents_request_never_answered: "rpc.reply", None;
}

/// The stand-in calls what a v1 client advertises (`fs/*`, `terminal/*`) and a client that
/// serves them passes both twins of `cap.serves-*` with the evidence of each call.
#[test]
fn what_a_client_advertises_is_called_and_judged() {
    let out = conform_raw(&["--protocol-version", "1"], &["--protocol-version", "1", "--serve"]);
    passes(&out, &["cap.client-serves-fs", "cap.client-serves-terminal", "rpc.reply", "schema.valid"], "--serve");
    let text = String::from_utf8_lossy(&out.stdout);
    let fs = text.lines().find(|l| l.contains("cap.client-serves-fs")).unwrap_or_default();
    assert!(fs.contains("notes.txt as it is on disk") && fs.contains("written-by-the-client.txt as asked"), "{fs}");
    let terminal = text.lines().find(|l| l.contains("cap.client-serves-terminal")).unwrap_or_default();
    assert!(terminal.contains("created terminal") && terminal.contains("\"echo acp conform\""), "{terminal}");
    // A client that advertises nothing is not called: the rules SKIP and say why.
    let out = conform_raw(&["--protocol-version", "1"], &["--protocol-version", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let fs = text.lines().find(|l| l.contains("cap.client-serves-fs")).unwrap_or_default();
    assert!(fs.starts_with("SKIP") && fs.contains("did not advertise `fs.readTextFile`"), "{fs}");
}

/// A command without `{agent}`, a client that cannot be started, and one that exits without
/// starting its agent: exit 2, with a reason.
#[test]
fn unusable_clients_exit_2() {
    let out = conform(&[], &["python3", "-c", "pass"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no {agent}"));
    let out = conform(&[], &["/no/such/client", "{agent}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot start /no/such/client"));
    let out = conform(&[], &["python3", "-c", "pass", "{agent}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("without starting its agent"), "{out:?}");
}

/// A client that starts its agent but never prompts: exit 3, the scenario named.
#[test]
fn a_client_that_never_prompts_exits_3() {
    // Starts the agent, initializes, then closes its stdin.
    let script = "import subprocess, sys; p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, \
                  stdout=subprocess.PIPE); p.stdin.write(b'{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\
                  \"params\":{\"protocolVersion\":1}}\\n'); p.stdin.flush(); p.stdout.readline(); p.stdin.close(); p.wait()";
    let out = conform(&["--protocol-version", "1"], &["python3", "-c", script, "{agent}"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains("NO PROMPT  [turn v1] the client closed its agent without sending `session/prompt`"),
        "{text}"
    );
}
