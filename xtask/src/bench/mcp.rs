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
//! No reference: the official Rust crate's MCP-over-ACP (`agent-client-protocol-rmcp`) is not
//! built by the bench, and the TypeScript driver (`interop/ts/mcp-client.mjs`) runs one turn
//! only. The HTTP bridge (`mcp_http_proxy`) has no row: its only agent that speaks HTTP MCP is the
//! TypeScript `interop/ts/mcp-http-agent.mjs`, which opens a new MCP client per call.

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

/// The row; `quick` fewer turns and runs.
pub fn rows(root: &Path, quick: bool) -> Result<Vec<Row>, String> {
    let release = build_ours(root)?;
    let exe = |name: &str| release.join("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let (client, agent) = (exe("client"), exe("echo_agent"));
    let (turns, runs) = if quick { (300, 1) } else { (2_000, 3) };
    let time = |prompt: &str, repeat: usize, expect: Option<&str>| -> Result<f64, String> {
        let mut times = Vec::new();
        for _ in 0..runs {
            let mut command = Command::new(&client);
            command.args([
                "--mcp-echo",
                "--protocol-version",
                "1",
                "--prompt",
                prompt,
                "--repeat",
                &repeat.to_string(),
            ]);
            command.arg("--").arg(&agent);
            let run = run_with_timeout(&mut command, RUN_TIMEOUT)?;
            if !run.status.is_some_and(|s| s.success()) {
                return Err(format!("`{}` failed: {}", describe(&command), run.stderr.lines().last().unwrap_or("")));
            }
            // A failed tool call still ends the turn: what the agent said tells the two apart.
            if let Some(expect) = expect {
                if run.stdout.matches(expect).count() < repeat {
                    return Err(format!("`{}` did not say {expect:?} each turn", describe(&command)));
                }
            }
            times.push(run.elapsed.as_secs_f64());
        }
        median(&times).ok_or_else(|| "no run".to_string())
    };
    let span = |prompt: &str, expect| -> Result<f64, String> {
        Ok((time(prompt, 1 + turns, expect)? - time(prompt, 1, expect)?).max(1e-9))
    };
    eprintln!("bench: mcp over acp, {turns} turns with and without a tool call");
    let row = match (span(PROMPT.0, Some(PROMPT.1)), span(PLAIN, None)) {
        (Ok(mcp), Ok(plain)) => Row {
            name: "mcp tool call turns over mcp/message, ours".into(),
            unit: "turns/s".into(),
            ours: Some(turns as f64 / mcp),
            reference: Some(turns as f64 / plain),
            ratio: Some(plain / mcp),
            note: format!(
                "{turns} prompt turns in which echo_agent calls the `echo` tool our client offers over ACP (tools/list and tools/call, each over mcp/message to an rmcp server), our client over stdio, v1; reference = the same turns without the call (the ratio: the share of a plain turn's pace left); the two MCP round trips and three updates cost {} µs a turn; no official reference (see xtask/src/bench/mcp.rs)",
                sig3((mcp - plain).max(0.0) / turns as f64 * 1e6)
            ),
        },
        (mcp, plain) => Row {
            name: "mcp tool call turns over mcp/message, ours".into(),
            unit: "turns/s".into(),
            ours: None,
            reference: None,
            ratio: None,
            note: format!("not measured: {}", mcp.err().or(plain.err()).unwrap_or_default()),
        },
    };
    Ok(vec![row])
}
