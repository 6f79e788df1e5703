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
//! Each in protocol versions 1 and 2, on stdio; the clients follow the drivers' contract (see
//! [`super`]). A scenario passes when the client exits 0 within [`super::TIMEOUT`], the turn ends
//! `end_turn`, the agent's text contains `mcp echo: ` followed by the prompt (the tool's text,
//! as the agent says it) and the agent reported its tool call `completed`.
//!
//! By hand, after one run:
//!
//! ```text
//! target/debug/examples/client --mcp-echo --prompt "hello mcp world" -- target/debug/examples/echo_agent
//! ```

use super::{details, indent_rest, parse_client_output, path_arg, peer_command, Argv, Env, Ours};
use super::{ScenarioResult, Transcript, Unavailable, Verdict, TIMEOUT};
use crate::process::{describe, run_with_timeout, Finished};
use serde_json::Value;
use std::path::Path;

/// The MCP SDK package the TypeScript SDK's `fromMcpServer` serves (its optional peer
/// dependency, `^2.4.0`), installed at exactly [`MCP_SERVER_VERSION`].
pub const MCP_SERVER_PACKAGE: &str = "@modelcontextprotocol/server";
/// Version of [`MCP_SERVER_PACKAGE`].
pub const MCP_SERVER_VERSION: &str = "2.4.0";
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

#[derive(Debug, Clone, Copy)]
struct Scenario {
    client: Client,
    protocol_version: u32,
}

const SCENARIOS: [Scenario; 4] = [
    Scenario { client: Client::Ours, protocol_version: 1 },
    Scenario { client: Client::Ours, protocol_version: 2 },
    Scenario { client: Client::Ts, protocol_version: 1 },
    Scenario { client: Client::Ts, protocol_version: 2 },
];

impl Scenario {
    fn name(self) -> String {
        let client = match self.client {
            Client::Ours => "our-client --mcp-echo",
            Client::Ts => "ts-client (fromMcpServer)",
        };
        format!("mcp: {client} -> our-agent v{}", self.protocol_version)
    }
}

/// The names of this module's scenarios, in the order [`run`] runs them.
pub(super) fn names() -> Vec<String> {
    SCENARIOS.iter().map(|s| s.name()).collect()
}

/// Runs the scenarios named in `selected` (a subset of [`names`]), one result each.
pub(super) fn run(env: &Env, cache: &Path, selected: &[String]) -> Vec<ScenarioResult> {
    let _ = cache;
    SCENARIOS.iter().filter(|s| selected.contains(&s.name())).map(|&s| run_one(env, s)).collect()
}

fn run_one(env: &Env, scenario: Scenario) -> ScenarioResult {
    let name = scenario.name();
    let (verdict, line) = match scenario_argv(env, scenario) {
        Err(Unavailable::Skip(why)) => (Verdict::Skip, format!("SKIP {name} ({why})")),
        Err(Unavailable::Fail(why)) => (Verdict::Fail, format!("FAIL {name}: {}", indent_rest(&why))),
        Ok(argv) => {
            let mut command = peer_command(env, &argv);
            let described = describe(&command);
            match run_with_timeout(&mut command, TIMEOUT) {
                Err(why) => (Verdict::Fail, format!("FAIL {name}: cannot run `{described}`: {why}")),
                Ok(run) => match judge(&run) {
                    Ok(summary) => {
                        (Verdict::Pass, format!("PASS {name} ({summary}, {:.1} s)", run.elapsed.as_secs_f64()))
                    }
                    Err(why) => (
                        Verdict::Fail,
                        format!(
                            "FAIL {name}: {why} ({:.1} s)\n{}",
                            run.elapsed.as_secs_f64(),
                            details(&described, &run)
                        ),
                    ),
                },
            }
        }
    };
    ScenarioResult { name, verdict, line }
}

/// `CLIENT --protocol-version N --prompt MCP_PROMPT -- echo_agent` (ours with `--mcp-echo`).
fn scenario_argv(env: &Env, scenario: Scenario) -> Result<Argv, Unavailable> {
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
    argv.extend(["--prompt".into(), MCP_PROMPT.into(), "--".into(), path_arg(agent)]);
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
