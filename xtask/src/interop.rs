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
//! production` selects them) run our `client` and `acp conform` against gemini-cli and codex-acp,
//! offline, against the stand-in model server `interop/model/server.mjs`; each client run goes
//! through `acp tap`, and `acp check` reads its transcript. See [`production`].

pub mod chains;
pub mod conform_client;
mod install;
pub mod mcp;
pub mod output;
pub mod production;

use crate::listener::{Listener, NotListening};
use crate::process::{self, describe, run_with_timeout, tail, Finished, TAIL_LINES};
use install::{copy_crate, crate_dir, install_py, install_rs, PyPeer, RsPeer};
pub(crate) use install::{install_npm_project, install_ts, TsPeer};
pub use output::{parse_client_output, parse_v2_one_shot_output, parse_yolo_output, Transcript, Turn};
pub use production::{Production, PRODUCTION};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The npm package of the official TypeScript SDK, installed at exactly [`TS_SDK_VERSION`].
pub const TS_SDK_PACKAGE: &str = "@agentclientprotocol/sdk";
/// Version of [`TS_SDK_PACKAGE`].
pub const TS_SDK_VERSION: &str = "2.4.0";
/// The SDK's peer dependency `zod` (`^3.25.76 || ^4.0.0`), pinned so that runs are repeatable.
pub const ZOD_VERSION: &str = "4.6.7";
/// The `ws` package, for the network drivers (`interop/ts/net-*.mjs`): Node 20 has no WebSocket
/// of its own, and the SDK's Node adapter takes a `ws` `WebSocketServer`. The SDK develops and
/// tests against `ws` `^8.18.0`.
pub const WS_VERSION: &str = "8.18.3";
/// The PyPI distribution of the official Python SDK, installed at exactly [`PY_SDK_VERSION`].
pub const PY_SDK_PACKAGE: &str = "agent-client-protocol";
/// Version of [`PY_SDK_PACKAGE`].
pub const PY_SDK_VERSION: &str = "0.12.1";
/// The crates.io crate of the official Rust SDK. Its published source ships the examples run
/// here, and a `Cargo.lock` that pins their build (`--locked`).
pub const RS_SDK_CRATE: &str = "agent-client-protocol";
/// Version of [`RS_SDK_CRATE`]; `interop/rust/Cargo.toml` pins the same one, and
/// `interop/rust/Cargo.lock` the crates fetched with it.
pub const RS_SDK_VERSION: &str = "5.0.0";
/// The features the four examples need (`v2_session_coordination` is not run).
pub const RS_SDK_FEATURES: &str = "process,stdio,unstable_protocol_v2";
/// The examples built: the agent and the one-shot client of each protocol version.
pub const RS_SDK_EXAMPLES: [&str; 4] =
    ["simple_agent", "simple_agent_v2", "yolo_one_shot_client", "v2_one_shot_client"];

/// Wall-clock limit of one scenario; the client and everything it spawned are killed then.
pub const TIMEOUT: Duration = Duration::from_secs(60);
/// The prompt every scenario sends; `perm` makes the echo agents ask for permission first.
pub const PROMPT: &str = "hello perm world";
/// The prompt of the cancellation scenarios: `slow` makes the echo agents wait 10 s, which
/// `session/cancel` cuts short.
pub const SLOW_PROMPT: &str = "hello slow world";
/// How long after the slow prompt the client sends `session/cancel` (`--cancel-after`).
pub const CANCEL_AFTER: Duration = Duration::from_millis(500);
/// A cancelled turn must end before this: well before the 10 s that `slow` waits uncancelled.
pub const CANCELLED_WITHIN: Duration = Duration::from_secs(8);
/// How long a network agent may take to print `listening on URL`.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);

/// One side of a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Our drivers on the TypeScript SDK (`interop/ts/*.mjs`).
    Ts,
    /// The Python SDK: our `interop/py/client.py`, the sdist's `examples/echo_agent.py`.
    Py,
    /// The project's own examples (`client`, `echo_agent`).
    Ours,
    /// The Rust SDK's examples: `simple_agent` or `simple_agent_v2`, `yolo_one_shot_client` or
    /// `v2_one_shot_client`, by protocol version.
    Rs,
}

impl Peer {
    fn label(self) -> &'static str {
        match self {
            Peer::Ts => "ts",
            Peer::Py => "py",
            Peer::Ours => "our",
            Peer::Rs => "rs",
        }
    }
}

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

/// What a scenario's client run must show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Exit 0, the turn ended `end_turn`, the agent's text contains the prompt.
    EndTurn,
    /// The client sends [`SLOW_PROMPT`] and `session/cancel` [`CANCEL_AFTER`] later: exit 0, the
    /// turn ended `cancelled`, within [`CANCELLED_WITHIN`].
    Cancelled,
    /// The agent does not implement `method`: the client exits unsuccessfully, prints nothing on
    /// stdout and reports the error `code` on stderr (without naming another method).
    Rejected { method: &'static str, code: i64 },
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

/// The outcome of one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Skip,
    Fail,
}

/// One scenario's verdict and its result line (with indented details on failure).
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    pub name: String,
    pub verdict: Verdict,
    pub line: String,
}

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

/// Like [`run`], but returns the report even when scenarios fail (errors only when a peer cannot
/// be installed or `only` matches nothing).
pub fn run_report(root: &Path, only: Option<&str>) -> Result<Report, String> {
    let matches = |name: String| only.is_none_or(|needle| name.contains(needle));
    let selected: Vec<Scenario> = SCENARIOS.iter().copied().filter(|s| matches(s.name())).collect();
    let production: Vec<Production> = PRODUCTION.iter().copied().filter(|s| matches(s.name())).collect();
    let chains: Vec<String> = chains::names().into_iter().filter(|n| matches(n.clone())).collect();
    let mcp: Vec<String> = mcp::names().into_iter().filter(|n| matches(n.clone())).collect();
    let conform: Vec<String> = conform_client::names().into_iter().filter(|n| matches(n.clone())).collect();
    let composed = !chains.is_empty() || !mcp.is_empty();
    if selected.is_empty() && production.is_empty() && !composed && conform.is_empty() {
        let names: Vec<String> = SCENARIOS
            .iter()
            .map(Scenario::name)
            .chain(PRODUCTION.iter().map(Production::name))
            .chain(chains::names())
            .chain(mcp::names())
            .chain(conform_client::names())
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
    let needs_ours =
        selected.iter().any(|s| s.uses(Peer::Ours)) || !production.is_empty() || composed || !conform.is_empty();
    let ours = if needs_ours { Some(build_examples(root)) } else { None };
    let tls =
        if selected.iter().any(|s| s.transport.is_tls()) { Some(crate::tls::make(&cache.join("tls"))?) } else { None };
    let setup = match (&ours, production.is_empty()) {
        (Some(ours), false) => Some(production::set_up(root, &cache, ours, production::build_acp(root))?),
        _ => None,
    };
    let env = Env { root: root.to_path_buf(), ts, py, rs, ours, tls };

    let mut report = Report::default();
    let results = selected
        .into_iter()
        .map(|scenario| run_scenario(&env, scenario))
        .chain(production.into_iter().filter_map(|scenario| setup.as_ref().map(|s| production::run(s, scenario))))
        .chain(chains::run(&env, &cache, &chains))
        .chain(mcp::run(&env, &cache, &mcp))
        .chain(conform_client::run(&env, &cache, &conform));
    for result in results {
        eprintln!("interop: {}", first_line(&result.line));
        report.results.push(result);
    }
    Ok(report)
}

// ------------------------------------------------------------------------------------------
// Our examples

/// The features our examples are built with: the network transports (`ws`, as the benchmarks')
/// and MCP over ACP (`mcp`: the client's `--mcp-echo`, the echo agent's `mcp`), over TLS too
/// (`tls`: the client's `--ca-file`, the echo agent's `--tls-cert` and `--tls-key`).
pub const EXAMPLE_FEATURES: &str = "ws,mcp,tls";

/// The project's examples, built by `cargo build --examples`.
#[derive(Debug, Clone)]
enum Ours {
    Built { echo_agent: Option<PathBuf>, client: Option<PathBuf>, proxy: Option<PathBuf> },
    BuildFailed(String),
}

fn build_examples(root: &Path) -> Ours {
    let started = Instant::now();
    let mut build = process::cargo();
    // The network transports and MCP over ACP are behind features; their scenarios need them.
    build.args(["build", "--examples", "--quiet", "--features", EXAMPLE_FEATURES]).current_dir(root);
    if let Err(message) = process::capture(&mut build) {
        return Ours::BuildFailed(message);
    }
    eprintln!(
        "interop: cargo build --examples --features {EXAMPLE_FEATURES} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let examples = target_debug(root).join("examples");
    let find = |name: &str| {
        let path = examples.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        path.is_file().then_some(path)
    };
    Ours::Built { echo_agent: find("echo_agent"), client: find("client"), proxy: find("proxy") }
}

/// `target/debug` (or `$CARGO_TARGET_DIR/debug`), where cargo leaves our builds.
fn target_debug(root: &Path) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| if dir.is_absolute() { dir } else { root.join(dir) })
        .unwrap_or_else(|| root.join("target"));
    target.join("debug")
}

// ------------------------------------------------------------------------------------------
// Scenarios

impl RsPeer {
    fn agent(&self, protocol_version: u32) -> Result<PathBuf, Unavailable> {
        match protocol_version {
            1 => Ok(self.example("simple_agent")),
            2 => Ok(self.example("simple_agent_v2")),
            n => Err(Unavailable::Fail(format!("the Rust SDK has no example agent for v{n}"))),
        }
    }

    fn client(&self, protocol_version: u32) -> Result<PathBuf, Unavailable> {
        match protocol_version {
            1 => Ok(self.example("yolo_one_shot_client")),
            2 => Ok(self.example("v2_one_shot_client")),
            n => Err(Unavailable::Fail(format!("the Rust SDK has no example client for v{n}"))),
        }
    }
}

struct Env {
    root: PathBuf,
    ts: Option<TsPeer>,
    py: Option<PyPeer>,
    rs: Option<RsPeer>,
    ours: Option<Ours>,
    /// The run's CA and server certificate, when a TLS scenario runs.
    tls: Option<crate::tls::Pki>,
}

/// A command line: program and arguments.
type Argv = Vec<String>;

/// Why a scenario cannot run.
enum Unavailable {
    Skip(String),
    Fail(String),
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn agent_argv(env: &Env, agent: Peer, protocol_version: u32) -> Result<Argv, Unavailable> {
    match agent {
        Peer::Ts => Ok(vec!["node".into(), path_arg(&env.root.join("interop").join("ts").join("agent.mjs"))]),
        Peer::Py => {
            let py = env.py.as_ref().expect("python peer installed");
            Ok(vec![path_arg(&py.python), path_arg(&py.echo_agent)])
        }
        Peer::Ours => match env.ours.as_ref().expect("examples built") {
            Ours::Built { echo_agent: Some(path), .. } => Ok(vec![path_arg(path)]),
            Ours::Built { .. } => Err(Unavailable::Skip("examples not built".into())),
            Ours::BuildFailed(message) => Err(Unavailable::Fail(message.clone())),
        },
        Peer::Rs => Ok(vec![path_arg(&env.rs.as_ref().expect("rust peer built").agent(protocol_version)?)]),
    }
}

/// The full command line of a scenario: the client's, with the agent's inside.
fn client_argv(env: &Env, client: Peer, agent: Argv, protocol_version: u32) -> Result<Argv, Unavailable> {
    let driver = match client {
        Peer::Ts => vec!["node".into(), path_arg(&env.root.join("interop").join("ts").join("client.mjs"))],
        Peer::Py => {
            let py = env.py.as_ref().expect("python peer installed");
            vec![path_arg(&py.python), path_arg(&env.root.join("interop").join("py").join("client.py"))]
        }
        Peer::Ours => match env.ours.as_ref().expect("examples built") {
            Ours::Built { client: Some(path), .. } => vec![path_arg(path)],
            Ours::Built { .. } => return Err(Unavailable::Skip("examples not built".into())),
            Ours::BuildFailed(message) => return Err(Unavailable::Fail(message.clone())),
        },
        Peer::Rs => {
            let client = env.rs.as_ref().expect("rust peer built").client(protocol_version)?;
            return Ok(rs_scenario_argv(&client, &agent));
        }
    };
    Ok(scenario_argv(driver, agent, protocol_version))
}

/// The command line of a scenario whose client follows the drivers' contract:
/// `CLIENT --protocol-version N --prompt PROMPT -- AGENT...` (the flag even for 1: our client
/// asks for its newest version without it).
fn scenario_argv(client: Argv, agent: Argv, protocol_version: u32) -> Argv {
    let mut argv = client;
    argv.push("--protocol-version".into());
    argv.push(protocol_version.to_string());
    argv.push("--prompt".into());
    argv.push(PROMPT.into());
    argv.push("--".into());
    argv.extend(agent);
    argv
}

/// The command line of a scenario whose client is a Rust SDK example:
/// `CLIENT --command 'AGENT...' PROMPT`.
fn rs_scenario_argv(client: &Path, agent: &[String]) -> Argv {
    vec![path_arg(client), "--command".into(), command_string(agent), PROMPT.into()]
}

/// `argv` as one string that `shell_words::split` (the SDK's `AcpAgent::from_str`) splits back:
/// words with anything but `[A-Za-z0-9_./:@%+,=-]` in single quotes.
fn command_string(argv: &[String]) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_./:@%+,=-".contains(c);
    argv.iter()
        .map(|word| {
            if !word.is_empty() && word.chars().all(safe) {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
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
    run_judged(scenario.name(), prepare(env, scenario), |run| evaluate(run, Output::of(scenario), scenario.expect))
}

/// Runs a prepared scenario command (within [`TIMEOUT`]) and judges how it ran: its `PASS`,
/// `FAIL` (with the command and the ends of its output) or `SKIP` line.
fn run_judged(
    name: String,
    prepared: Result<Command, Unavailable>,
    judge: impl FnOnce(&Finished) -> Result<String, String>,
) -> ScenarioResult {
    let (verdict, line) = match prepared {
        Err(Unavailable::Skip(why)) => (Verdict::Skip, format!("SKIP {name} ({why})")),
        Err(Unavailable::Fail(why)) => (Verdict::Fail, format!("FAIL {name}: {}", indent_rest(&why))),
        Ok(mut command) => {
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

// ------------------------------------------------------------------------------------------
// Network scenarios

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

/// A command with the drivers' environment, run from the repository: Node trusts the run's CA
/// (`NODE_EXTRA_CA_CERTS`, read by Node at start for `https`, `fetch` and `ws`) when there is one.
fn peer_command(env: &Env, argv: &[String]) -> Command {
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).current_dir(&env.root);
    if let Some(ts) = &env.ts {
        command.env("ACP_INTEROP_NODE_DIR", &ts.node_dir);
    }
    if let Some(pki) = &env.tls {
        command.env("NODE_EXTRA_CA_CERTS", &pki.ca);
    }
    command
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

/// The end of a text, each line indented under a `stderr:` heading.
fn indented_tail(text: &str) -> String {
    if text.trim().is_empty() {
        return "      (empty)".into();
    }
    tail(text, TAIL_LINES).lines().map(|line| format!("      {line}")).collect::<Vec<_>>().join("\n")
}

/// How a client reports the turn it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// The drivers' contract: updates as JSON lines, then `{"stopReason": ...}`
    /// ([`parse_client_output`]).
    Contract,
    /// `yolo_one_shot_client` ([`parse_yolo_output`]).
    YoloOneShot,
    /// `v2_one_shot_client` ([`parse_v2_one_shot_output`]).
    V2OneShot,
}

impl Output {
    fn of(scenario: Scenario) -> Self {
        match (scenario.client, scenario.protocol_version) {
            (Peer::Rs, 1) => Output::YoloOneShot,
            (Peer::Rs, _) => Output::V2OneShot,
            _ => Output::Contract,
        }
    }

    fn parse(self, stdout: &str, stderr: &str) -> Result<Turn, String> {
        match self {
            Output::Contract => parse_client_output(stdout).map(|transcript| transcript.turn()),
            Output::YoloOneShot => parse_yolo_output(stdout, stderr),
            Output::V2OneShot => parse_v2_one_shot_output(stdout, stderr),
        }
    }
}

/// Checks a finished client run against what the scenario expects (for [`Expect::EndTurn`]: exit
/// 0, readable output, `end_turn`, the prompt echoed). Returns the summary for the PASS line.
fn evaluate(run: &Finished, output: Output, expect: Expect) -> Result<String, String> {
    if run.timed_out {
        return Err(format!("timed out after {} s (killed)", TIMEOUT.as_secs()));
    }
    let status = run.status.ok_or_else(|| "client exit status unknown".to_string())?;
    match expect {
        Expect::EndTurn if status.success() => check_turn(&output.parse(&run.stdout, &run.stderr)?, PROMPT),
        Expect::Cancelled if status.success() => check_cancelled(&output.parse(&run.stdout, &run.stderr)?, run.elapsed),
        Expect::EndTurn | Expect::Cancelled => {
            match run.stderr.lines().rev().map(str::trim).find(|line| !line.is_empty()) {
                Some(line) => Err(format!("client exited with {status}: {line}")),
                None => Err(format!("client exited with {status}")),
            }
        }
        Expect::Rejected { method, code } => check_rejected(status.success(), &run.stdout, &run.stderr, method, code),
    }
}

/// The judgement on a client's account of the turn, separate from process handling for unit tests.
fn check_turn(turn: &Turn, prompt: &str) -> Result<String, String> {
    let stop = turn.stop_reason.as_deref().unwrap_or("null");
    if stop != "end_turn" {
        return Err(format!("stopReason {stop}, expected end_turn"));
    }
    if !turn.agent_text.contains(prompt) {
        return Err(format!("the agent's text {:?} does not contain the prompt {prompt:?}", turn.agent_text));
    }
    Ok(match turn.updates {
        Some(n) => format!("{n} update{}, stopReason {stop}", if n == 1 { "" } else { "s" }),
        None => format!("stopReason {stop}"),
    })
}

/// The judgement on a cancelled turn: `cancelled`, and sooner than the uncancelled `slow` wait.
fn check_cancelled(turn: &Turn, elapsed: Duration) -> Result<String, String> {
    let stop = turn.stop_reason.as_deref().unwrap_or("null");
    if stop != "cancelled" {
        return Err(format!(
            "stopReason {stop}, expected cancelled ({} ms after the prompt)",
            CANCEL_AFTER.as_millis()
        ));
    }
    if elapsed >= CANCELLED_WITHIN {
        return Err(format!(
            "the cancelled turn took {:.1} s, expected under {} s (session/cancel did not cut `slow` short)",
            elapsed.as_secs_f64(),
            CANCELLED_WITHIN.as_secs()
        ));
    }
    Ok(match turn.updates {
        Some(n) => format!("{n} update{}, stopReason cancelled", if n == 1 { "" } else { "s" }),
        None => "stopReason cancelled".into(),
    })
}

/// The judgement on a client run that must fail on `method` with error `code`: not exit 0,
/// nothing on stdout (no update, no stop reason), and a stderr line with the code that names no
/// other method (our client's error names none; should it name one, it must be `method`).
fn check_rejected(succeeded: bool, stdout: &str, stderr: &str, method: &str, code: i64) -> Result<String, String> {
    if succeeded {
        return Err(format!("client exited 0, expected it to fail on {method} with {code}"));
    }
    if !stdout.trim().is_empty() {
        return Err(format!("client printed on stdout, expected nothing before {method} failed with {code}"));
    }
    let code_text = code.to_string();
    let Some(line) = stderr.lines().map(str::trim).find(|line| line.contains(&code_text)) else {
        return Err(format!("stderr reports no error {code} (expected for {method})"));
    };
    let is_method = |word: &&str| *word == "initialize" || *word == "authenticate" || word.starts_with("session/");
    let words = line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '/'));
    if let Some(other) = words.filter(is_method).find(|word| *word != method) {
        return Err(format!("the error {code} is {other}'s, expected {method}'s: {line}"));
    }
    Ok(format!("{method} answered {code} as expected: {line}"))
}

// ------------------------------------------------------------------------------------------
// Formatting

/// The indented details of a failure: command, and the tails of stdout and stderr.
fn details(described: &str, run: &Finished) -> String {
    let mut out = format!("    command: {described}");
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        if text.trim().is_empty() {
            out.push_str(&format!("\n    {name}: (empty)"));
        } else {
            out.push_str(&format!("\n    {name}:"));
            for line in tail(text, TAIL_LINES).lines() {
                out.push_str(&format!("\n      {line}"));
            }
        }
    }
    out
}

/// Indents every line after the first, for multi-line messages inside a result line.
fn indent_rest(text: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, line)| if i == 0 { line.to_string() } else { format!("    {line}") })
        .collect::<Vec<_>>()
        .join("\n")
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

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
