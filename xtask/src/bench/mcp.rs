//! The MCP-over-ACP row of `cargo xtask bench` (issue 52): prompt turns in which our `echo_agent`
//! calls a tool of an MCP server that our `client --mcp-echo` offers over the ACP connection
//! (`{"type": "acp"}`; each MCP request travels as `mcp/message`, served by an rmcp server through
//! `acp_rpc::mcp::McpProvider`), against the same turns without the call, ACP v1 on stdio.
//!
//! A prompt with the word `mcp` makes the agent send `tools/list` and `tools/call` over
//! `mcp/message` and report the call (two `session/update`s and one more message): the difference
//! between the two kinds of turn is the cost of those two MCP round trips and three updates. Each
//! figure is `--repeat 1+T` minus `--repeat 1`, as the network and composition rows do it.
//!
//! The reference is the TypeScript SDK's MCP-over-ACP (`interop/ts/mcp-client.mjs`: the MCP SDK
//! server behind `fromMcpServer` and `McpOverAcpProvider`, `@agentclientprotocol/sdk`) offering
//! the same tool to the same agent, the same turns: a second row, ours against it. The official
//! Rust crate's MCP-over-ACP (`agent-client-protocol-rmcp`) is not built by the bench. The HTTP
//! bridge (`mcp_http_proxy`) has no row: its only agent that speaks HTTP MCP is the TypeScript
//! `interop/ts/mcp-http-agent.mjs`, which opens a new MCP client per call, so the row would
//! measure Node's MCP client.

use super::net::build_ours;
use super::table::{median, sig3, Row};
use crate::process::{describe, run_with_timeout};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The limit of one client run.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);
/// The prompt that makes the agent call the tool, and what it then says.
const PROMPT: (&str, &str) = ("hello mcp world", "mcp echo: hello mcp world");
/// The same turn without the call.
const PLAIN: &str = "hello world";

/// The rows; `quick` fewer turns and runs.
pub fn rows(root: &Path, quick: bool) -> Result<Vec<Row>, String> {
    let release = build_ours(root)?;
    let exe = |name: &str| release.join("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let (client, agent) = (exe("client"), exe("echo_agent"));
    let (turns, runs) = if quick { (300, 1) } else { (2_000, 3) };
    let ours = |prompt: &str, repeat: usize| {
        let mut command = Command::new(&client);
        command.args(["--mcp-echo", "--protocol-version", "1", "--prompt", prompt, "--repeat", &repeat.to_string()]);
        command.arg("--").arg(&agent);
        command
    };
    eprintln!("bench: mcp over acp, {turns} turns with and without a tool call");
    let mcp = span(&ours, PROMPT.0, Some(PROMPT.1), turns, runs);
    let plain = span(&ours, PLAIN, None, turns, runs);
    let mut rows = vec![match (&mcp, plain) {
        (Ok(mcp), Ok(plain)) => Row {
            name: NAME.into(),
            unit: "turns/s".into(),
            ours: Some(turns as f64 / mcp),
            reference: Some(turns as f64 / plain),
            ratio: Some(plain / mcp),
            note: format!(
                "{turns} prompt turns in which echo_agent calls the `echo` tool our client offers over ACP (tools/list and tools/call, each over mcp/message to an rmcp server), our client over stdio, v1; reference = the same turns without the call (the ratio: the share of a plain turn's pace left); the two MCP round trips and three updates cost {} µs a turn",
                sig3((mcp - plain).max(0.0) / turns as f64 * 1e6)
            ),
        },
        (mcp, plain) => unmeasured(NAME, mcp.as_ref().err().cloned().or(plain.err()).unwrap_or_default()),
    }];
    let ts_name = format!("{NAME}, vs TS client");
    let ts = crate::interop::install_ts(&root.join(".cache").join("interop")).and_then(|ts| {
        let script = root.join("interop").join("ts").join("mcp-client.mjs");
        let command = |prompt: &str, repeat: usize| {
            let mut command = Command::new("node");
            command.arg(&script).args(["--protocol-version", "1", "--repeat", &repeat.to_string(), "--prompt", prompt]);
            command.arg("--").arg(&agent).env("ACP_INTEROP_NODE_DIR", &ts.node_dir);
            command
        };
        span(&command, PROMPT.0, Some(PROMPT.1), turns, runs)
    });
    rows.push(match (mcp, ts) {
        (Ok(mcp), Ok(ts)) => Row {
            name: ts_name,
            unit: "turns/s".into(),
            ours: Some(turns as f64 / mcp),
            reference: Some(turns as f64 / ts),
            ratio: Some(ts / mcp),
            note: format!(
                "the same {turns} turns with the tool call, our echo_agent; ours: our client and its rmcp server; reference: interop/ts/mcp-client.mjs (@agentclientprotocol/sdk {}: McpOverAcpProvider and fromMcpServer over the MCP SDK server)",
                crate::interop::TS_SDK_VERSION
            ),
        },
        (mcp, ts) => unmeasured(&ts_name, mcp.err().or(ts.err()).unwrap_or_default()),
    });
    Ok(rows)
}

/// The name of the first row.
const NAME: &str = "mcp tool call turns over mcp/message, ours";

/// A row without figures, saying why.
fn unmeasured(name: &str, why: String) -> Row {
    Row {
        name: name.into(),
        unit: "turns/s".into(),
        ours: None,
        reference: None,
        ratio: None,
        note: format!("not measured: {why}"),
    }
}

/// Seconds for `turns` turns of `prompt` by the client `command` makes: the median over `runs`
/// of `1+turns` turns minus that of 1 turn. With `expect`, every turn must have said it (a
/// failed tool call still ends the turn: what the agent said tells the two apart).
fn span(
    command: &dyn Fn(&str, usize) -> Command,
    prompt: &str,
    expect: Option<&str>,
    turns: usize,
    runs: usize,
) -> Result<f64, String> {
    let time = |repeat: usize| -> Result<f64, String> {
        let mut times = Vec::new();
        for _ in 0..runs {
            let mut command = command(prompt, repeat);
            let run = run_with_timeout(&mut command, RUN_TIMEOUT)?;
            if !run.status.is_some_and(|s| s.success()) {
                return Err(format!("`{}` failed: {}", describe(&command), run.stderr.lines().last().unwrap_or("")));
            }
            if let Some(expect) = expect {
                if run.stdout.matches(expect).count() < repeat {
                    return Err(format!("`{}` did not say {expect:?} each turn", describe(&command)));
                }
            }
            times.push(run.elapsed.as_secs_f64());
        }
        median(&times).ok_or_else(|| "no run".to_string())
    };
    Ok((time(1 + turns)? - time(1)?).max(1e-9))
}
