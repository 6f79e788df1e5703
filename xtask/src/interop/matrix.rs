//! The scenario matrix: every client against every agent over every transport ([`SCENARIOS`]),
//! and the run of all selected scenarios, production, chains, MCP and conformance ones included
//! ([`run_report`]).

use super::install::{install_py, install_rs, install_ts};
use super::peers::{agent_argv, build_examples, client_argv, path_arg, peer_command, Env, Ours, Peer};
use super::production::{self, Production, PRODUCTION};
use super::report::{details, first_line, indent_rest, indented_tail};
use super::scenario::{evaluate, run_judged, Argv, Expect, Output, ScenarioResult, Unavailable, Verdict};
use super::scenario::{CANCEL_AFTER, LISTEN_TIMEOUT, PROMPT, SLOW_PROMPT, TIMEOUT};
use super::{browser, chains, conform_client, mcp};
use crate::listener::{Listener, NotListening};
use crate::process::{describe, run_with_timeout};
use std::path::Path;
use std::process::Command;

/// How the client reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The client spawns the agent and speaks over its stdin and stdout.
    Stdio,
    /// The agent listens (`--listen 127.0.0.1:0`); the client connects to its `http://` URL
    /// (Streamable HTTP).
    Http,
    /// The same listener, the client on its `ws://` URL (WebSocket).
    Ws,
    /// The agent listens over TLS (`--tls-cert`, `--tls-key`, the certificates of [`crate::tls`]);
    /// the client connects to its `https://` URL trusting the run's CA.
    Https,
    /// The same TLS listener, the client on its `wss://` URL.
    Wss,
}

impl Transport {
    /// `""`, `" over http"`, `" over ws"`, `" over tls/https"`, `" over tls/wss"`: the part of a
    /// scenario's name (`--only tls` selects the TLS ones, `--only " over http"` not them).
    fn suffix(self) -> &'static str {
        match self {
            Transport::Stdio => "",
            Transport::Http => " over http",
            Transport::Ws => " over ws",
            Transport::Https => " over tls/https",
            Transport::Wss => " over tls/wss",
        }
    }

    fn is_tls(self) -> bool {
        matches!(self, Transport::Https | Transport::Wss)
    }
}

/// A client driving an agent through one prompt turn at one protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    pub client: Peer,
    pub agent: Peer,
    pub protocol_version: u32,
    pub transport: Transport,
    pub expect: Expect,
}

impl Scenario {
    const fn new(client: Peer, agent: Peer, protocol_version: u32) -> Self {
        Scenario { client, agent, protocol_version, transport: Transport::Stdio, expect: Expect::EndTurn }
    }

    const fn expecting(self, expect: Expect) -> Self {
        Scenario { expect, ..self }
    }

    const fn over(self, transport: Transport) -> Self {
        Scenario { transport, ..self }
    }

    /// `ts-client -> our-agent v1`, `ts-client -> our-agent v2 over ws, cancelled`: what `only`
    /// filters on and result lines start with.
    pub fn name(&self) -> String {
        let cancelled = if self.expect == Expect::Cancelled { ", cancelled" } else { "" };
        format!(
            "{}-client -> {}-agent v{}{}{cancelled}",
            self.client.label(),
            self.agent.label(),
            self.protocol_version,
            self.transport.suffix()
        )
    }

    fn uses(&self, peer: Peer) -> bool {
        self.client == peer || self.agent == peer
    }
}

/// Every scenario, in the order they run. The Python SDK speaks v1 only; the TypeScript SDK
/// also speaks the v2 draft (its `experimental/v2` entrypoint and `agentProtocolRouter`); each
/// Rust SDK example speaks one version.
pub const SCENARIOS: &[Scenario] = &[
    // Sanity: the drivers and SDK examples against each other, none of our code involved.
    Scenario::new(Peer::Ts, Peer::Ts, 1),
    Scenario::new(Peer::Ts, Peer::Ts, 2),
    Scenario::new(Peer::Py, Peer::Py, 1),
    Scenario::new(Peer::Ts, Peer::Py, 1),
    Scenario::new(Peer::Py, Peer::Ts, 1),
    Scenario::new(Peer::Rs, Peer::Rs, 2),
    // The official peers against our examples.
    Scenario::new(Peer::Ts, Peer::Ours, 1),
    Scenario::new(Peer::Ts, Peer::Ours, 2),
    Scenario::new(Peer::Py, Peer::Ours, 1),
    Scenario::new(Peer::Ours, Peer::Ts, 1),
    Scenario::new(Peer::Ours, Peer::Ts, 2),
    Scenario::new(Peer::Ours, Peer::Py, 1),
    Scenario::new(Peer::Rs, Peer::Ours, 1),
    Scenario::new(Peer::Rs, Peer::Ours, 2),
    // `simple_agent` answers only `initialize`.
    Scenario::new(Peer::Ours, Peer::Rs, 1).expecting(Expect::Rejected { method: "session/new", code: -32601 }),
    Scenario::new(Peer::Ours, Peer::Rs, 2),
    // Over the network: the TypeScript SDK's `AcpServer` (`interop/ts/net-agent.mjs`) and its
    // HTTP and WebSocket client transports (`interop/ts/net-client.mjs`), our `echo_agent
    // --listen` and `client --url`. Sanity first.
    Scenario::new(Peer::Ts, Peer::Ts, 1).over(Transport::Http),
    Scenario::new(Peer::Ts, Peer::Ts, 2).over(Transport::Http),
    Scenario::new(Peer::Ts, Peer::Ts, 1).over(Transport::Ws),
    Scenario::new(Peer::Ts, Peer::Ts, 2).over(Transport::Ws),
    Scenario::new(Peer::Ts, Peer::Ts, 1).over(Transport::Http).expecting(Expect::Cancelled),
    Scenario::new(Peer::Ts, Peer::Ts, 2).over(Transport::Ws).expecting(Expect::Cancelled),
    Scenario::new(Peer::Ts, Peer::Ours, 1).over(Transport::Http),
    Scenario::new(Peer::Ts, Peer::Ours, 2).over(Transport::Http),
    Scenario::new(Peer::Ts, Peer::Ours, 1).over(Transport::Ws),
    Scenario::new(Peer::Ts, Peer::Ours, 2).over(Transport::Ws),
    Scenario::new(Peer::Ts, Peer::Ours, 1).over(Transport::Http).expecting(Expect::Cancelled),
    Scenario::new(Peer::Ts, Peer::Ours, 2).over(Transport::Http).expecting(Expect::Cancelled),
    Scenario::new(Peer::Ts, Peer::Ours, 1).over(Transport::Ws).expecting(Expect::Cancelled),
    Scenario::new(Peer::Ts, Peer::Ours, 2).over(Transport::Ws).expecting(Expect::Cancelled),
    Scenario::new(Peer::Ours, Peer::Ts, 1).over(Transport::Http),
    Scenario::new(Peer::Ours, Peer::Ts, 2).over(Transport::Http),
    Scenario::new(Peer::Ours, Peer::Ts, 1).over(Transport::Ws),
    Scenario::new(Peer::Ours, Peer::Ts, 2).over(Transport::Ws),
    Scenario::new(Peer::Ours, Peer::Ts, 1).over(Transport::Http).expecting(Expect::Cancelled),
    Scenario::new(Peer::Ours, Peer::Ts, 2).over(Transport::Ws).expecting(Expect::Cancelled),
    Scenario::new(Peer::Ours, Peer::Ours, 1).over(Transport::Http),
    Scenario::new(Peer::Ours, Peer::Ours, 2).over(Transport::Http),
    Scenario::new(Peer::Ours, Peer::Ours, 1).over(Transport::Ws),
    Scenario::new(Peer::Ours, Peer::Ours, 2).over(Transport::Ws),
    Scenario::new(Peer::Ours, Peer::Ours, 2).over(Transport::Http).expecting(Expect::Cancelled),
    // Over TLS (`--only tls`): the TypeScript clients trusting the run's CA through
    // `NODE_EXTRA_CA_CERTS` against our `echo_agent --tls-cert … --tls-key …`, and our `client
    // --ca-file` against the `AcpServer` behind Node's `https` server.
    Scenario::new(Peer::Ts, Peer::Ours, 1).over(Transport::Https),
    Scenario::new(Peer::Ts, Peer::Ours, 2).over(Transport::Https),
    Scenario::new(Peer::Ts, Peer::Ours, 1).over(Transport::Wss),
    Scenario::new(Peer::Ts, Peer::Ours, 2).over(Transport::Wss),
    Scenario::new(Peer::Ours, Peer::Ts, 1).over(Transport::Https),
    Scenario::new(Peer::Ours, Peer::Ts, 2).over(Transport::Https),
    Scenario::new(Peer::Ours, Peer::Ts, 1).over(Transport::Wss),
    Scenario::new(Peer::Ours, Peer::Ts, 2).over(Transport::Wss),
];

/// The results of a run, in scenario order.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub results: Vec<ScenarioResult>,
}

impl Report {
    pub fn lines(&self) -> Vec<String> {
        self.results.iter().map(|r| r.line.clone()).collect()
    }

    fn count(&self, verdict: Verdict) -> usize {
        self.results.iter().filter(|r| r.verdict == verdict).count()
    }

    pub fn passed(&self) -> usize {
        self.count(Verdict::Pass)
    }

    pub fn failed(&self) -> usize {
        self.count(Verdict::Fail)
    }

    pub fn skipped(&self) -> usize {
        self.count(Verdict::Skip)
    }
}

/// Like [`super::run`], but returns the report even when scenarios fail (errors only when a peer cannot
/// be installed or `only` matches nothing).
pub fn run_report(root: &Path, only: Option<&str>) -> Result<Report, String> {
    let matches = |name: String| only.is_none_or(|needle| name.contains(needle));
    let selected: Vec<Scenario> = SCENARIOS.iter().copied().filter(|s| matches(s.name())).collect();
    let production: Vec<Production> = PRODUCTION.iter().copied().filter(|s| matches(s.name())).collect();
    let chains: Vec<String> = chains::names().into_iter().filter(|n| matches(n.clone())).collect();
    let mcp: Vec<String> = mcp::names().into_iter().filter(|n| matches(n.clone())).collect();
    let conform: Vec<String> = conform_client::names().into_iter().filter(|n| matches(n.clone())).collect();
    let pages: Vec<String> = browser::names().into_iter().filter(|n| matches(n.clone())).collect();
    let composed = !chains.is_empty() || !mcp.is_empty();
    if selected.is_empty() && production.is_empty() && !composed && conform.is_empty() && pages.is_empty() {
        let names: Vec<String> = SCENARIOS
            .iter()
            .map(Scenario::name)
            .chain(PRODUCTION.iter().map(Production::name))
            .chain(chains::names())
            .chain(mcp::names())
            .chain(conform_client::names())
            .chain(browser::names())
            .collect();
        return Err(format!(
            "no interop scenario matches {:?}; scenarios: {}",
            only.unwrap_or_default(),
            names.join(", ")
        ));
    }

    let cache = root.join(".cache").join("interop");
    let ts = if composed || conform_client::uses_ts(&conform) || selected.iter().any(|s| s.uses(Peer::Ts)) {
        Some(install_ts(&cache)?)
    } else {
        None
    };
    let py = if conform_client::uses_py(&conform) || selected.iter().any(|s| s.uses(Peer::Py)) {
        Some(install_py(&cache)?)
    } else {
        None
    };
    let rs = if !chains.is_empty() || selected.iter().any(|s| s.uses(Peer::Rs)) {
        Some(install_rs(root, &cache)?)
    } else {
        None
    };
    let needs_ours = selected.iter().any(|s| s.uses(Peer::Ours))
        || !production.is_empty()
        || composed
        || !conform.is_empty()
        || !pages.is_empty();
    let ours = if needs_ours { Some(build_examples(root)) } else { None };
    let tls =
        if selected.iter().any(|s| s.transport.is_tls()) { Some(crate::tls::make(&cache.join("tls"))?) } else { None };
    let setup = match (&ours, production.is_empty()) {
        (Some(ours), false) => Some(production::set_up(root, &cache, ours, production::build_acp(root))?),
        _ => None,
    };
    let env = Env { root: root.to_path_buf(), ts, py, rs, ours, tls };
    let acp_for_browser = browser::uses_acp(&pages).then(|| production::build_acp(root));

    let mut report = Report::default();
    let results = selected
        .into_iter()
        .map(|scenario| run_scenario(&env, scenario))
        .chain(production.into_iter().filter_map(|scenario| setup.as_ref().map(|s| production::run(s, scenario))))
        .chain(chains::run(&env, &cache, &chains))
        .chain(mcp::run(&env, &cache, &mcp))
        .chain(conform_client::run(&env, &cache, &conform))
        .chain(browser::run(&env, acp_for_browser.as_ref(), &pages));
    for result in results {
        eprintln!("interop: {}", first_line(&result.line));
        report.results.push(result);
    }
    Ok(report)
}

fn prepare(env: &Env, scenario: Scenario) -> Result<Command, Unavailable> {
    let agent = agent_argv(env, scenario.agent, scenario.protocol_version)?;
    let argv = client_argv(env, scenario.client, agent, scenario.protocol_version)?;
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).current_dir(&env.root);
    if let Some(ts) = &env.ts {
        command.env("ACP_INTEROP_NODE_DIR", &ts.node_dir);
    }
    Ok(command)
}

fn run_scenario(env: &Env, scenario: Scenario) -> ScenarioResult {
    if scenario.transport != Transport::Stdio {
        return run_net_scenario(env, scenario);
    }
    run_judged(scenario.name(), prepare(env, scenario), |run| evaluate(run, output_of(scenario), scenario.expect))
}

/// How a scenario's client reports the turn: the Rust SDK's clients their own way.
fn output_of(scenario: Scenario) -> Output {
    match (scenario.client, scenario.protocol_version) {
        (Peer::Rs, 1) => Output::YoloOneShot,
        (Peer::Rs, _) => Output::V2OneShot,
        _ => Output::Contract,
    }
}

/// The command line of a listening agent: `AGENT --listen 127.0.0.1:0`, and over TLS
/// `--tls-cert CERT --tls-key KEY`.
fn listening_agent_argv(env: &Env, agent: Peer, transport: Transport) -> Result<Argv, Unavailable> {
    let mut argv = match agent {
        Peer::Ts => vec!["node".into(), path_arg(&env.root.join("interop").join("ts").join("net-agent.mjs"))],
        Peer::Ours => match env.ours.as_ref().expect("examples built") {
            Ours::Built { echo_agent: Some(path), .. } => vec![path_arg(path)],
            Ours::Built { .. } => return Err(Unavailable::Skip("examples not built".into())),
            Ours::BuildFailed(message) => return Err(Unavailable::Fail(message.clone())),
        },
        Peer::Py | Peer::Rs => return Err(Unavailable::Fail(format!("no network agent for {}", agent.label()))),
    };
    argv.extend(["--listen".into(), "127.0.0.1:0".into()]);
    if let (true, Some(pki)) = (transport.is_tls(), &env.tls) {
        argv.extend(["--tls-cert".into(), path_arg(&pki.cert), "--tls-key".into(), path_arg(&pki.key)]);
    }
    Ok(argv)
}

/// The command line of a network client:
/// `CLIENT --url URL --protocol-version N --prompt TEXT [--cancel-after MS]`, and for ours over
/// TLS `--ca-file CA` (Node is given the CA in its environment: [`peer_command`]).
fn net_client_argv(env: &Env, scenario: Scenario, url: &str) -> Result<Argv, Unavailable> {
    let mut argv: Argv = match scenario.client {
        Peer::Ts => vec!["node".into(), path_arg(&env.root.join("interop").join("ts").join("net-client.mjs"))],
        Peer::Ours => match env.ours.as_ref().expect("examples built") {
            Ours::Built { client: Some(path), .. } => vec![path_arg(path)],
            Ours::Built { .. } => return Err(Unavailable::Skip("examples not built".into())),
            Ours::BuildFailed(message) => return Err(Unavailable::Fail(message.clone())),
        },
        Peer::Py | Peer::Rs => {
            return Err(Unavailable::Fail(format!("no network client for {}", scenario.client.label())))
        }
    };
    argv.extend(["--url".into(), url.into()]);
    if let (Peer::Ours, true, Some(pki)) = (scenario.client, scenario.transport.is_tls(), &env.tls) {
        argv.extend(["--ca-file".into(), path_arg(&pki.ca)]);
    }
    argv.extend(["--protocol-version".into(), scenario.protocol_version.to_string()]);
    match scenario.expect {
        Expect::Cancelled => {
            argv.extend(["--prompt".into(), SLOW_PROMPT.into()]);
            argv.extend(["--cancel-after".into(), CANCEL_AFTER.as_millis().to_string()]);
        }
        Expect::EndTurn | Expect::Rejected { .. } => argv.extend(["--prompt".into(), PROMPT.into()]),
    }
    Ok(argv)
}

/// A network scenario: start the agent listening, read its URL, run the client against it (the
/// `ws://` form for WebSocket), then kill the agent.
fn run_net_scenario(env: &Env, scenario: Scenario) -> ScenarioResult {
    let name = scenario.name();
    let (verdict, line) = match net_scenario(env, scenario) {
        Ok(summary) => (Verdict::Pass, format!("PASS {name} ({summary})")),
        Err(Unavailable::Skip(why)) => (Verdict::Skip, format!("SKIP {name} ({why})")),
        Err(Unavailable::Fail(why)) => (Verdict::Fail, format!("FAIL {name}: {}", indent_rest(&why))),
    };
    ScenarioResult { name, verdict, line }
}

fn net_scenario(env: &Env, scenario: Scenario) -> Result<String, Unavailable> {
    let agent_argv = listening_agent_argv(env, scenario.agent, scenario.transport)?;
    let mut agent = peer_command(env, &agent_argv);
    let listener = match Listener::start(&mut agent, LISTEN_TIMEOUT) {
        Ok(listener) => listener,
        Err(NotListening::Exited { status, stderr }) => {
            return Err(Unavailable::Fail(format!(
                "the agent exited with {status} before printing `listening on URL`\n    command: {}\n    stderr:\n{}",
                describe(&agent),
                indented_tail(&stderr)
            )));
        }
        Err(NotListening::TimedOut { stderr }) => {
            return Err(Unavailable::Fail(format!(
                "the agent printed no `listening on URL` within {} s (killed)\n    command: {}\n    stderr:\n{}",
                LISTEN_TIMEOUT.as_secs(),
                describe(&agent),
                indented_tail(&stderr)
            )));
        }
        Err(NotListening::Spawn(why)) => return Err(Unavailable::Fail(why)),
    };
    let url = match scenario.transport {
        Transport::Ws | Transport::Wss => listener.ws_url(),
        Transport::Http | Transport::Https | Transport::Stdio => listener.url.clone(),
    };
    let mut client = peer_command(env, &net_client_argv(env, scenario, &url)?);
    let described = describe(&client);
    let run = run_with_timeout(&mut client, TIMEOUT)
        .map_err(|why| Unavailable::Fail(format!("cannot run `{described}`: {why}")))?;
    let agent_stderr = listener.stderr();
    drop(listener);
    let elapsed = run.elapsed.as_secs_f64();
    match evaluate(&run, Output::Contract, scenario.expect) {
        Ok(summary) => Ok(format!("{summary}, {elapsed:.1} s")),
        Err(why) => Err(Unavailable::Fail(format!(
            "{why} ({elapsed:.1} s)\n{}\n    agent: {}\n    agent stderr:\n{}",
            details(&described, &run),
            describe(&agent),
            indented_tail(&agent_stderr)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::output::parse_client_output;
    use crate::interop::peers::{rs_scenario_argv, scenario_argv};
    use crate::interop::report::command_string;
    use crate::interop::scenario::{check_cancelled, check_rejected, check_turn, CANCELLED_WITHIN};
    use crate::interop::{run, skipped};
    use std::time::Duration;

    #[test]
    fn agent_text_ignores_other_updates_and_content() {
        let out = concat!(
            "{\"sessionUpdate\":\"user_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hello perm world\"}}\n",
            "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"image\",\"data\":\"\",\"mimeType\":\"image/png\"}}\n",
            "{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"m\",\"content\":{\"type\":\"text\",\"text\":\"hello\"}}\n",
            "{\"stopReason\":\"end_turn\"}\n",
        );
        let t = parse_client_output(out).unwrap();
        assert_eq!(t.agent_text(), "hello");
        let err = check_turn(&t.turn(), PROMPT).unwrap_err();
        assert!(err.contains("does not contain the prompt"), "{err}");
    }

    #[test]
    fn scenario_names_are_unique_and_filterable() {
        let names: Vec<String> = SCENARIOS.iter().map(Scenario::name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert!(names.contains(&"ts-client -> our-agent v1".to_string()));
        assert!(names.contains(&"our-client -> py-agent v1".to_string()));
        assert!(names.contains(&"rs-client -> our-agent v2".to_string()));
        assert!(names.contains(&"ts-client -> our-agent v2 over ws, cancelled".to_string()));
        assert!(names.contains(&"our-client -> ts-agent v1 over http".to_string()));
        let stdio = |n: &&String| !n.contains(" over ");
        assert_eq!(names.iter().filter(stdio).filter(|n| n.contains("our-")).count(), 10);
        assert_eq!(names.iter().filter(stdio).filter(|n| !n.contains("our-")).count(), 6);
        assert_eq!(names.iter().filter(|n| n.contains(" over http")).count(), 13);
        assert_eq!(names.iter().filter(|n| n.contains(" over ws")).count(), 12);
        // `--only tls` is the TLS group, which `--only " over http"` and `" over ws"` leave out.
        assert_eq!(names.iter().filter(|n| n.contains("tls")).count(), 8);
        assert!(names.contains(&"ts-client -> our-agent v2 over tls/wss".to_string()));
        assert!(names.contains(&"our-client -> ts-agent v1 over tls/https".to_string()));
        let rejected: Vec<String> =
            SCENARIOS.iter().filter(|s| matches!(s.expect, Expect::Rejected { .. })).map(Scenario::name).collect();
        assert_eq!(rejected, ["our-client -> rs-agent v1"]);
    }

    #[test]
    fn unknown_filter_is_an_error_before_installing() {
        let err = run(Path::new("/nonexistent"), Some("no-such-scenario")).unwrap_err();
        assert!(err.contains("no interop scenario matches"), "{err}");
    }

    #[test]
    fn command_lines() {
        let argv = scenario_argv(vec!["node".into(), "client.mjs".into()], vec!["agent".into()], 1);
        assert_eq!(argv, ["node", "client.mjs", "--protocol-version", "1", "--prompt", PROMPT, "--", "agent"]);
        let argv = scenario_argv(vec!["client".into()], vec!["node".into(), "a.mjs".into()], 2);
        assert_eq!(argv, ["client", "--protocol-version", "2", "--prompt", PROMPT, "--", "node", "a.mjs"]);
    }

    #[test]
    fn counts_skips() {
        let lines = vec![
            "PASS ts-client -> ts-agent v1 (3 updates, stopReason end_turn, 0.9 s)".to_string(),
            "SKIP ts-client -> our-agent v1 (examples not built)".to_string(),
            "FAIL py-client -> our-agent v1: client exited with exit status: 1 (0.5 s)\n    SKIP".to_string(),
        ];
        assert_eq!(skipped(&lines), 1);
    }

    #[test]
    fn indents() {
        assert_eq!(indent_rest("x\ny"), "x\n    y");
    }

    #[cfg(unix)]
    #[test]
    fn a_timeout_fails_the_scenario() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo started; sleep 30"]);
        let run = run_with_timeout(&mut command, Duration::from_millis(300)).unwrap();
        assert!(evaluate(&run, Output::Contract, Expect::EndTurn).unwrap_err().contains("timed out"));
    }

    #[cfg(unix)]
    #[test]
    fn exit_status_and_stderr_are_reported() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo '{\"stopReason\":\"end_turn\"}'; echo oops >&2; exit 3"]);
        let run = run_with_timeout(&mut command, TIMEOUT).unwrap();
        assert!(!run.timed_out);
        assert_eq!(run.stderr.trim(), "oops");
        let err = evaluate(&run, Output::Contract, Expect::EndTurn).unwrap_err();
        assert!(err.contains("exited with") && err.ends_with(": oops"), "{err}");
        assert!(details("sh -c …", &run).contains("      oops"));
    }

    #[test]
    fn a_cancelled_turn() {
        let turn = parse_client_output("{\"stopReason\":\"cancelled\"}").unwrap().turn();
        let fast = Duration::from_secs(1);
        assert_eq!(check_cancelled(&turn, fast).unwrap(), "0 updates, stopReason cancelled");
        assert!(check_cancelled(&turn, CANCELLED_WITHIN).unwrap_err().contains("did not cut"));
        let ended = parse_client_output("{\"stopReason\":\"end_turn\"}").unwrap().turn();
        assert!(check_cancelled(&ended, fast).unwrap_err().contains("expected cancelled"));
    }

    #[test]
    fn a_rejected_session_new() {
        let stderr = "client: peer error: Method not found (-32601)\n";
        let ok = check_rejected(false, "", stderr, "session/new", -32601).unwrap();
        assert_eq!(ok, "session/new answered -32601 as expected: client: peer error: Method not found (-32601)");
        let named = "client: session/new: Method not found (-32601)";
        assert!(check_rejected(false, "\n", named, "session/new", -32601).is_ok());
        let cases = [
            (true, "", stderr, "exited 0"),
            (false, "{\"stopReason\":\"end_turn\"}\n", stderr, "printed on stdout"),
            (false, "", "client: peer error: Invalid params (-32602)", "no error -32601"),
            (false, "", "client: initialize: Method not found (-32601)", "initialize's"),
        ];
        for (succeeded, stdout, stderr, expected) in cases {
            let err = check_rejected(succeeded, stdout, stderr, "session/new", -32601).unwrap_err();
            assert!(err.contains(expected), "{stderr:?}: {err}");
        }
    }

    #[test]
    fn rust_sdk_clients_get_one_command_string() {
        let agent = ["/a dir/echo_agent".to_string(), "it's".into(), "--x=1".into(), String::new()];
        let argv = rs_scenario_argv(Path::new("/sdk/yolo_one_shot_client"), &agent);
        assert_eq!(argv, ["/sdk/yolo_one_shot_client", "--command", r"'/a dir/echo_agent' 'it'\''s' --x=1 ''", PROMPT]);
        assert_eq!(command_string(&["/x/simple_agent_v2".into()]), "/x/simple_agent_v2");
    }
}
