//! The peers' command lines: our examples (built here), the SDKs' drivers and examples, and the
//! environment every driver runs in.

use super::install::{PyPeer, RsPeer, TsPeer};
use super::report::command_string;
use super::scenario::{Argv, Unavailable, PROMPT};
use crate::process;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

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
    pub(super) fn label(self) -> &'static str {
        match self {
            Peer::Ts => "ts",
            Peer::Py => "py",
            Peer::Ours => "our",
            Peer::Rs => "rs",
        }
    }
}

/// The features our examples are built with: the network transports (`ws`, as the benchmarks')
/// and MCP over ACP (`mcp`: the client's `--mcp-echo`, the echo agent's `mcp`), over TLS too
/// (`tls`: the client's `--ca-file`, the echo agent's `--tls-cert` and `--tls-key`).
pub const EXAMPLE_FEATURES: &str = "ws,mcp,tls";

/// The project's examples, built by `cargo build --examples`.
#[derive(Debug, Clone)]
pub(super) enum Ours {
    Built { echo_agent: Option<PathBuf>, client: Option<PathBuf>, proxy: Option<PathBuf> },
    BuildFailed(String),
}

pub(super) fn build_examples(root: &Path) -> Ours {
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
pub(super) fn target_debug(root: &Path) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| if dir.is_absolute() { dir } else { root.join(dir) })
        .unwrap_or_else(|| root.join("target"));
    target.join("debug")
}

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

pub(super) struct Env {
    pub(super) root: PathBuf,
    pub(super) ts: Option<TsPeer>,
    pub(super) py: Option<PyPeer>,
    pub(super) rs: Option<RsPeer>,
    pub(super) ours: Option<Ours>,
    /// The run's CA and server certificate, when a TLS scenario runs.
    pub(super) tls: Option<crate::tls::Pki>,
}

pub(super) fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

pub(super) fn agent_argv(env: &Env, agent: Peer, protocol_version: u32) -> Result<Argv, Unavailable> {
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
pub(super) fn client_argv(env: &Env, client: Peer, agent: Argv, protocol_version: u32) -> Result<Argv, Unavailable> {
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
pub(super) fn scenario_argv(client: Argv, agent: Argv, protocol_version: u32) -> Argv {
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
pub(super) fn rs_scenario_argv(client: &Path, agent: &[String]) -> Argv {
    vec![path_arg(client), "--command".into(), command_string(agent), PROMPT.into()]
}

/// A command with the drivers' environment, run from the repository: Node trusts the run's CA
/// (`NODE_EXTRA_CA_CERTS`, read by Node at start for `https`, `fetch` and `ws`) when there is one.
pub(super) fn peer_command(env: &Env, argv: &[String]) -> Command {
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
