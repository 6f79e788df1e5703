//! `cargo xtask interop`: interop scenarios against the official ACP peers.
//!
//! The peers are installed by the project itself into `.cache/interop/` (gitignored):
//!
//! | path | what |
//! |---|---|
//! | `.cache/interop/node/` | npm project with `@agentclientprotocol/sdk` [`TS_SDK_VERSION`] (and its `zod` peer dependency, pinned), `ws` [`WS_VERSION`] for the network drivers, and `@modelcontextprotocol/server` and `…/client` [`mcp::MCP_SERVER_VERSION`] for the MCP-over-ACP drivers |
//! | `.cache/interop/venv/` | Python venv with `agent-client-protocol` [`PY_SDK_VERSION`] from PyPI |
//! | `.cache/interop/sdist/` | that package's source distribution, unpacked, for `examples/echo_agent.py` |
//! | `.cache/interop/rust-sdk/` | the crates.io source of `agent-client-protocol` [`RS_SDK_VERSION`] (the official Rust SDK) and its four examples built in `target/` |
//! | `.cache/interop/agents/` | npm project with the production agents `@google/gemini-cli` [`production::GEMINI_VERSION`] and `@agentclientprotocol/codex-acp` [`production::CODEX_ACP_VERSION`] (with `@openai/codex` [`production::CODEX_VERSION`]), installed without install scripts |
//! | `.cache/interop/agentao/venv/` | Python venv with the production agent `agentao[cli]` [`agentao::AGENTAO_VERSION`] from PyPI |
//! | `.cache/interop/production/` | each production scenario's throwaway HOME, workspace, `acp tap` transcript and client output; the stand-in model server's `model.log`; `conform-gemini.txt`, `conform-codex.txt` |
//!
//! Each step leaves a marker naming the version it installed, so a second run reuses the
//! cache (delete `.cache/interop/` to start over). Our drivers on top of the SDKs live in
//! `interop/ts/` (`agent.mjs`, `client.mjs`) and `interop/py/` (`client.py`); every client
//! driver, including our Rust `client` example, shares one contract:
//!
//! ```text
//! CLIENT [--protocol-version N] --prompt TEXT -- AGENT_CMD [ARGS...]
//! ```
//!
//! prints each `session/update` notification's `params.update` as one JSON line, then
//! `{"stopReason": ...}` as the last line, and exits 0 when the turn ended. A scenario passes
//! when the client exits 0 within [`TIMEOUT`], its output parses ([`parse_client_output`]),
//! the stop reason is `end_turn` and the agent's text chunks contain the prompt.
//!
//! The Rust SDK's examples are run as they are: `simple_agent` (v1, answers only `initialize`),
//! `simple_agent_v2` (v2 only, echoes `Echo: PROMPT`), and the one-shot clients
//! `yolo_one_shot_client` (v1) and `v2_one_shot_client` (v2), both
//! `CLIENT --command "AGENT_CMD ARGS..." PROMPT` (the command split into words as a shell would,
//! leading `NAME=value` words taken as environment variables). Their output has its own readers:
//! [`parse_yolo_output`] and [`parse_v2_one_shot_output`]. Against `simple_agent`, our client
//! passes when it fails the way it must: `session/new` answered with -32601 ([`Expect`]).
//!
//! Scenarios that need the project's own examples (`echo_agent`, `client`) report `SKIP`
//! while those are not built; [`skipped`] counts them so that CI can refuse a SKIP once the
//! examples exist.
//!
//! Network scenarios ([`Transport::Http`], [`Transport::Ws`]) start the agent first, as
//! `AGENT --listen 127.0.0.1:0` (`interop/ts/net-agent.mjs`, the TypeScript SDK's `AcpServer`, or
//! our `echo_agent`), read the URL from its `listening on URL` stderr line ([`crate::listener`]),
//! then run `CLIENT --url URL [--protocol-version N] --prompt TEXT` (`interop/ts/net-client.mjs` or
//! our `client`) with the same output contract; WebSocket clients get the URL as `ws://`. The
//! agent is killed when the client is done. [`Expect::Cancelled`] scenarios send [`SLOW_PROMPT`]
//! with `--cancel-after` (both client drivers have it).
//! Over TLS ([`Transport::Https`], [`Transport::Wss`]; `--only tls`) the agent also gets
//! `--tls-cert`/`--tls-key` ([`crate::tls`] makes the certificates each run), our client
//! `--ca-file`, and Node the CA in `NODE_EXTRA_CA_CERTS`.
//!
//! The production scenarios ([`PRODUCTION`], names starting `production: `, so `--only
//! production` selects them) run our `client` and `acp conform` against gemini-cli, codex-acp and Agentao,
//! offline, against the stand-in model server `interop/model/server.mjs`; each client run goes
//! through `acp tap`, and `acp check` reads its transcript. See [`production`].
//!
//! Modules, by job (each imports only siblings, never this one): [`scenario`] (what a run must
//! show, running one prepared command and judging it), [`peers`] (our examples and the peers'
//! command lines), [`report`] (result-line text), `install` (the pinned peers), [`output`] (the
//! clients' output), [`agentao`] (its venv and the check of its extension schema), [`matrix`] (the scenario matrix and the whole run), and the composed
//! scenarios [`production`], [`chains`], [`mcp`], [`conform_client`], and `browser` (web pages in
//! headless Chromium against our listeners: `--only browser`).

pub mod agentao;
mod browser;
pub mod chains;
pub mod conform_client;
mod install;
pub mod matrix;
pub mod mcp;
pub mod output;
pub mod peers;
pub mod production;
pub mod report;
pub mod scenario;
mod state_check;

pub(crate) use chains::install_conductor_release;
pub use chains::CONDUCTOR_VERSION;
pub(crate) use install::{install_ts, TsPeer};
pub use install::{PY_SDK_PACKAGE, PY_SDK_VERSION, RS_SDK_CRATE, RS_SDK_EXAMPLES, RS_SDK_FEATURES, RS_SDK_VERSION};
pub use install::{TS_SDK_PACKAGE, TS_SDK_VERSION, WS_VERSION, ZOD_VERSION};
pub use matrix::{run_report, Report, Scenario, Transport, SCENARIOS};
pub use output::{parse_client_output, parse_v2_one_shot_output, parse_yolo_output, Transcript, Turn};
pub use production::{Production, PRODUCTION};
pub use scenario::{Expect, ScenarioResult, Verdict, SLOW_PROMPT, TIMEOUT};
use std::path::Path;

/// `cargo xtask interop [--only SUBSTRING]`: install the peers (or reuse the cache), build
/// our examples, run the scenarios whose name contains `only`, return one line per scenario
/// (`PASS …`, `SKIP …`, or `FAIL …` followed by indented details). Errors when a peer cannot be
/// installed, when `only` matches nothing, or when any scenario fails; the error then carries
/// every result line.
pub fn run(root: &Path, only: Option<&str>) -> Result<Vec<String>, String> {
    let report = run_report(root, only)?;
    if report.failed() > 0 {
        let mut message = report.lines();
        message.push(format!("{} of {} interop scenarios failed", report.failed(), report.results.len()));
        return Err(message.join("\n"));
    }
    Ok(report.lines())
}

/// `cargo xtask interop` as the command line runs it: [`run`], where a `SKIP` fails too (CI runs
/// it once the examples exist).
pub fn run_command(root: &Path, only: Option<&str>) -> Result<Vec<String>, String> {
    let lines = run(root, only)?;
    match skipped(&lines) {
        0 => Ok(lines),
        n => Err(format!("{}\n{n} scenario(s) skipped", lines.join("\n"))),
    }
}

/// How many result lines of [`run`] are `SKIP`s (scenarios that need examples not built yet).
pub fn skipped(lines: &[String]) -> usize {
    lines.iter().filter(|line| line.starts_with("SKIP ")).count()
}
