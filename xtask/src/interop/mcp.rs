//! The MCP-over-ACP scenarios of `cargo xtask interop` (`--only mcp`): a client offers an MCP
//! server with one tool, `echo`, over the ACP connection (`{"type": "acp"}` in `session/new`'s
//! `mcpServers`, `mcp/message` answered), and our `echo_agent`, prompted with [`MCP_PROMPT`]
//! (it contains `mcp`), calls that tool with the prompt's text.
//!
//! | client | what it is |
//! |---|---|
//! | ours | `client --mcp-echo`: an rmcp server through `acp_rpc::mcp::McpProvider` |
//! | ts | `interop/ts/mcp-client.mjs`: the TypeScript SDK's `fromMcpServer` (experimental/mcp-server) over an `@modelcontextprotocol/server` [`MCP_SERVER_VERSION`] server, served by its `McpOverAcpProvider` |
//!
//! Each in protocol versions 1 and 2, on stdio. And through the HTTP bridge: our client
//! `--mcp-echo` in front of the official conductor (see [`super::chains`]) running our
//! `mcp_http_proxy` example (`acp_rpc::mcp::McpHttpProxy`) in front of
//! `interop/ts/mcp-http-agent.mjs`, an agent that takes only `{"type": "http"}` MCP servers and
//! calls them with the MCP SDK's own client (`@modelcontextprotocol/client`
//! [`MCP_SERVER_VERSION`], `StreamableHTTPClientTransport`), v1 (the official conductor speaks
//! v1). The clients follow the drivers' contract (see [`super`]). A scenario passes when the client exits 0 within [`super::TIMEOUT`], the turn ends
//! `end_turn`, the agent's text contains `mcp echo: ` followed by the prompt (the tool's text,
//! as the agent says it) and the agent reported its tool call `completed`.
//!
//! By hand, after one run:
//!
//! ```text
//! target/debug/examples/client --mcp-echo --prompt "hello mcp world" -- target/debug/examples/echo_agent
//! target/debug/examples/client --mcp-echo --protocol-version 1 --prompt "hello mcp world" -- \
//!   .cache/interop/conductor/bin/agent-client-protocol-conductor agent \
//!   target/debug/examples/mcp_http_proxy "node interop/ts/mcp-http-agent.mjs"
//! ```

pub use super::install::{MCP_CLIENT_PACKAGE, MCP_SERVER_PACKAGE, MCP_SERVER_VERSION};
use super::output::{parse_client_output, Transcript};
use super::peers::{path_arg, peer_command, Env, Ours};
use super::report::command_string;
use super::scenario::{run_judged, Argv, ScenarioResult, Unavailable, TIMEOUT};
use crate::process::Finished;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The prompt: `mcp` makes our echo agent call the client's `echo` tool with it.
pub const MCP_PROMPT: &str = "hello mcp world";
/// What our echo agent says before the tool's text.
pub const SAID: &str = "mcp echo: ";

/// Who offers the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Ours,
    Ts,
}

/// Who calls it, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    /// Our `echo_agent`, over ACP.
    Ours,
    /// `mcp-http-agent.mjs` over HTTP MCP, behind the official conductor and our bridge proxy.
    TsHttpBehindBridge,
}

#[derive(Debug, Clone, Copy)]
struct Scenario {
    client: Client,
    agent: Agent,
    protocol_version: u32,
}

const SCENARIOS: [Scenario; 5] = [
    Scenario { client: Client::Ours, agent: Agent::Ours, protocol_version: 1 },
    Scenario { client: Client::Ours, agent: Agent::Ours, protocol_version: 2 },
    Scenario { client: Client::Ts, agent: Agent::Ours, protocol_version: 1 },
    Scenario { client: Client::Ts, agent: Agent::Ours, protocol_version: 2 },
    Scenario { client: Client::Ours, agent: Agent::TsHttpBehindBridge, protocol_version: 1 },
];

impl Scenario {
    fn name(self) -> String {
        let client = match self.client {
            Client::Ours => "our-client --mcp-echo",
            Client::Ts => "ts-client (fromMcpServer)",
        };
        let agent = match self.agent {
            Agent::Ours => "our-agent",
            Agent::TsHttpBehindBridge => "official-conductor -> our-mcp_http_proxy -> ts-agent (HTTP MCP)",
        };
        format!("mcp: {client} -> {agent} v{}", self.protocol_version)
    }
}

/// The names of this module's scenarios, in the order [`run`] runs them.
pub(super) fn names() -> Vec<String> {
    SCENARIOS.iter().map(|s| s.name()).collect()
}

/// Runs the scenarios named in `selected` (a subset of [`names`]), one result each.
pub(super) fn run(env: &Env, cache: &Path, selected: &[String]) -> Vec<ScenarioResult> {
    let scenarios: Vec<Scenario> = SCENARIOS.iter().copied().filter(|s| selected.contains(&s.name())).collect();
    // Built (or found) once, when a selected scenario runs it.
    let conductor = scenarios
        .iter()
        .any(|s| s.agent == Agent::TsHttpBehindBridge)
        .then(|| super::chains::install_conductor(&env.root, cache, None));
    scenarios.into_iter().map(|s| run_one(env, conductor.as_ref(), s)).collect()
}

fn run_one(env: &Env, conductor: Option<&Result<PathBuf, String>>, scenario: Scenario) -> ScenarioResult {
    let name = scenario.name();
    run_judged(name, scenario_argv(env, conductor, scenario).map(|argv| peer_command(env, &argv)), judge)
}

/// `CLIENT --protocol-version N --prompt MCP_PROMPT -- AGENT` (ours with `--mcp-echo`), the agent
/// our `echo_agent` or `CONDUCTOR agent mcp_http_proxy "node mcp-http-agent.mjs"`.
fn scenario_argv(
    env: &Env,
    conductor: Option<&Result<PathBuf, String>>,
    scenario: Scenario,
) -> Result<Argv, Unavailable> {
    let (client, agent) = match env.ours.as_ref().expect("examples built") {
        Ours::Built { echo_agent: Some(agent), client: Some(client), .. } => (client, agent),
        Ours::Built { .. } => return Err(Unavailable::Skip("examples not built".into())),
        Ours::BuildFailed(message) => return Err(Unavailable::Fail(message.clone())),
    };
    let mut argv: Argv = match scenario.client {
        Client::Ours => vec![path_arg(client), "--mcp-echo".into()],
        Client::Ts => vec!["node".into(), path_arg(&env.root.join("interop").join("ts").join("mcp-client.mjs"))],
    };
    argv.extend(["--protocol-version".into(), scenario.protocol_version.to_string()]);
    argv.extend(["--prompt".into(), MCP_PROMPT.into(), "--".into()]);
    match scenario.agent {
        Agent::Ours => argv.push(path_arg(agent)),
        Agent::TsHttpBehindBridge => {
            let conductor = match conductor {
                Some(Ok(conductor)) => conductor,
                Some(Err(why)) => return Err(Unavailable::Fail(format!("the official conductor: {why}"))),
                None => return Err(Unavailable::Fail("the official conductor was not installed".into())),
            };
            // Built with the other examples (`EXAMPLE_FEATURES` has `mcp` and `http`).
            let proxy = client.with_file_name(format!("mcp_http_proxy{}", std::env::consts::EXE_SUFFIX));
            if !proxy.is_file() {
                return Err(Unavailable::Skip(format!("{} not built", proxy.display())));
            }
            let node_agent =
                ["node".to_string(), path_arg(&env.root.join("interop").join("ts").join("mcp-http-agent.mjs"))];
            argv.extend([path_arg(conductor), "agent".into(), command_string(&[path_arg(&proxy)])]);
            argv.push(command_string(&node_agent));
        }
    }
    Ok(argv)
}

/// Exit 0, `end_turn`, the tool's text in the agent's message, the tool call completed.
fn judge(run: &Finished) -> Result<String, String> {
    if run.timed_out {
        return Err(format!("timed out after {} s (killed)", TIMEOUT.as_secs()));
    }
    let status = run.status.ok_or("client exit status unknown")?;
    if !status.success() {
        let last = run.stderr.lines().rev().map(str::trim).find(|line| !line.is_empty());
        return Err(format!("client exited with {status}{}", last.map(|l| format!(": {l}")).unwrap_or_default()));
    }
    check(&parse_client_output(&run.stdout)?)
}

/// The judgement on the client's account of the turn (apart from process handling, for tests).
fn check(transcript: &Transcript) -> Result<String, String> {
    let stop = transcript.stop_reason.as_deref().unwrap_or("null");
    if stop != "end_turn" {
        return Err(format!("stopReason {stop}, expected end_turn"));
    }
    let expected = format!("{SAID}{MCP_PROMPT}");
    let text = transcript.agent_text();
    if !text.contains(&expected) {
        return Err(format!("the agent's text {text:?} does not contain the tool's answer {expected:?}"));
    }
    let completed = transcript.updates.iter().any(|u| {
        let kind = u.get("sessionUpdate").and_then(Value::as_str);
        matches!(kind, Some("tool_call" | "tool_call_update"))
            && u.get("status").and_then(Value::as_str) == Some("completed")
    });
    if !completed {
        return Err("no tool call update with status completed".into());
    }
    Ok(format!("{} updates, the tool's text came back, stopReason {stop}", transcript.updates.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript(lines: &[&str]) -> Transcript {
        parse_client_output(&lines.join("\n")).unwrap()
    }

    #[test]
    fn the_tool_text_and_a_completed_call_are_required() {
        let chunk = |text: &str| {
            format!(r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}"#)
        };
        let done = r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}"#;
        let said = chunk(&format!("{SAID}{MCP_PROMPT}"));
        let end = r#"{"stopReason":"end_turn"}"#;
        assert!(check(&transcript(&[done, &said, end])).is_ok());
        assert!(check(&transcript(&[&said, end])).unwrap_err().contains("completed"));
        let echo_only = chunk(MCP_PROMPT);
        assert!(check(&transcript(&[done, &echo_only, end])).unwrap_err().contains("tool's answer"));
        assert!(check(&transcript(&[done, &said, r#"{"stopReason":"cancelled"}"#])).is_err());
    }
}
