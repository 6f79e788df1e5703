//! `cargo xtask interop`: interop scenarios against the official ACP peers.
//!
//! The peers are installed by the project itself into `.cache/interop/` (gitignored):
//!
//! | path | what |
//! |---|---|
//! | `.cache/interop/node/` | npm project with `@agentclientprotocol/sdk` [`TS_SDK_VERSION`] (and its `zod` peer dependency, pinned) |
//! | `.cache/interop/venv/` | Python venv with `agent-client-protocol` [`PY_SDK_VERSION`] from PyPI |
//! | `.cache/interop/sdist/` | that package's source distribution, unpacked, for `examples/echo_agent.py` |
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
//! Scenarios that need the project's own examples (`echo_agent`, `client`) report `SKIP`
//! while those are not built; [`skipped`] counts them so that CI can refuse a SKIP once the
//! examples exist.

use crate::process::{self, describe, run_with_timeout, tail, Finished, TAIL_LINES};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The npm package of the official TypeScript SDK, installed at exactly [`TS_SDK_VERSION`].
pub const TS_SDK_PACKAGE: &str = "@agentclientprotocol/sdk";
/// Version of [`TS_SDK_PACKAGE`].
pub const TS_SDK_VERSION: &str = "2.4.0";
/// The SDK's peer dependency `zod` (`^3.25.76 || ^4.0.0`), pinned so that runs are repeatable.
pub const ZOD_VERSION: &str = "4.6.7";
/// The PyPI distribution of the official Python SDK, installed at exactly [`PY_SDK_VERSION`].
pub const PY_SDK_PACKAGE: &str = "agent-client-protocol";
/// Version of [`PY_SDK_PACKAGE`].
pub const PY_SDK_VERSION: &str = "0.12.1";

/// Wall-clock limit of one scenario; the client and everything it spawned are killed then.
pub const TIMEOUT: Duration = Duration::from_secs(60);
/// The prompt every scenario sends; `perm` makes the echo agents ask for permission first.
pub const PROMPT: &str = "hello perm world";

/// One side of a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Our drivers on the TypeScript SDK (`interop/ts/*.mjs`).
    Ts,
    /// The Python SDK: our `interop/py/client.py`, the sdist's `examples/echo_agent.py`.
    Py,
    /// The project's own examples (`client`, `echo_agent`).
    Ours,
}

impl Peer {
    fn label(self) -> &'static str {
        match self {
            Peer::Ts => "ts",
            Peer::Py => "py",
            Peer::Ours => "our",
        }
    }
}

/// A client driving an agent through one prompt turn at one protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    pub client: Peer,
    pub agent: Peer,
    pub protocol_version: u32,
}

impl Scenario {
    const fn new(client: Peer, agent: Peer, protocol_version: u32) -> Self {
        Scenario { client, agent, protocol_version }
    }

    /// `ts-client -> our-agent v1`: what `only` filters on and result lines start with.
    pub fn name(&self) -> String {
        format!("{}-client -> {}-agent v{}", self.client.label(), self.agent.label(), self.protocol_version)
    }

    fn uses(&self, peer: Peer) -> bool {
        self.client == peer || self.agent == peer
    }
}

/// Every scenario, in the order they run. The Python SDK speaks v1 only; the TypeScript SDK
/// also speaks the v2 draft (its `experimental/v2` entrypoint and `agentProtocolRouter`).
pub const SCENARIOS: &[Scenario] = &[
    // Sanity: the drivers against each other, no Rust involved.
    Scenario::new(Peer::Ts, Peer::Ts, 1),
    Scenario::new(Peer::Ts, Peer::Ts, 2),
    Scenario::new(Peer::Py, Peer::Py, 1),
    Scenario::new(Peer::Ts, Peer::Py, 1),
    Scenario::new(Peer::Py, Peer::Ts, 1),
    // The official peers against our examples.
    Scenario::new(Peer::Ts, Peer::Ours, 1),
    Scenario::new(Peer::Ts, Peer::Ours, 2),
    Scenario::new(Peer::Py, Peer::Ours, 1),
    Scenario::new(Peer::Ours, Peer::Ts, 1),
    Scenario::new(Peer::Ours, Peer::Ts, 2),
    Scenario::new(Peer::Ours, Peer::Py, 1),
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
    let selected: Vec<Scenario> =
        SCENARIOS.iter().copied().filter(|s| only.is_none_or(|needle| s.name().contains(needle))).collect();
    if selected.is_empty() {
        let names: Vec<String> = SCENARIOS.iter().map(Scenario::name).collect();
        return Err(format!(
            "no interop scenario matches {:?}; scenarios: {}",
            only.unwrap_or_default(),
            names.join(", ")
        ));
    }

    let cache = root.join(".cache").join("interop");
    let ts = if selected.iter().any(|s| s.uses(Peer::Ts)) { Some(install_ts(&cache)?) } else { None };
    let py = if selected.iter().any(|s| s.uses(Peer::Py)) { Some(install_py(&cache)?) } else { None };
    let ours = if selected.iter().any(|s| s.uses(Peer::Ours)) { Some(build_examples(root)) } else { None };
    let env = Env { root: root.to_path_buf(), ts, py, ours };

    let mut report = Report::default();
    for scenario in selected {
        let result = run_scenario(&env, scenario);
        eprintln!("interop: {}", first_line(&result.line));
        report.results.push(result);
    }
    Ok(report)
}

// ------------------------------------------------------------------------------------------
// Installation

/// The installed TypeScript SDK.
#[derive(Debug, Clone)]
struct TsPeer {
    /// `.cache/interop/node`, passed to the drivers as `ACP_INTEROP_NODE_DIR`.
    node_dir: PathBuf,
}

/// The installed Python SDK.
#[derive(Debug, Clone)]
struct PyPeer {
    /// The venv's interpreter.
    python: PathBuf,
    /// `examples/echo_agent.py` of the unpacked sdist.
    echo_agent: PathBuf,
}

fn install_ts(cache: &Path) -> Result<TsPeer, String> {
    let node_dir = cache.join("node");
    let marker = node_dir.join(".installed");
    let stamp = format!("{TS_SDK_PACKAGE}@{TS_SDK_VERSION} zod@{ZOD_VERSION}\n");
    let installed = node_dir.join("node_modules").join(TS_SDK_PACKAGE).join("package.json");
    if fs::read_to_string(&marker).ok().as_deref() == Some(stamp.as_str())
        && installed_npm_version(&installed).as_deref() == Some(TS_SDK_VERSION)
    {
        return Ok(TsPeer { node_dir });
    }

    let started = Instant::now();
    eprintln!("interop: installing {TS_SDK_PACKAGE}@{TS_SDK_VERSION} into {}", node_dir.display());
    fs::create_dir_all(&node_dir).map_err(|e| format!("cannot create {}: {e}", node_dir.display()))?;
    let _ = fs::remove_file(&marker);
    let manifest = serde_json::json!({
        "name": "acp-rpc-interop-peers",
        "private": true,
        "description": "Written by `cargo xtask interop`; do not edit.",
        "dependencies": {
            TS_SDK_PACKAGE: TS_SDK_VERSION,
            "zod": ZOD_VERSION,
        },
    });
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())? + "\n";
    let path = node_dir.join("package.json");
    fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut npm = process::npm();
    npm.args(["install", "--no-audit", "--no-fund", "--loglevel=error"]).current_dir(&node_dir);
    process::capture(&mut npm)?;
    match installed_npm_version(&installed) {
        Some(version) if version == TS_SDK_VERSION => {}
        other => {
            return Err(format!(
                "npm install left {TS_SDK_PACKAGE} at {other:?} in {}, expected {TS_SDK_VERSION}",
                installed.display()
            ))
        }
    }
    fs::write(&marker, stamp).map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    eprintln!("interop: installed {TS_SDK_PACKAGE}@{TS_SDK_VERSION} in {:.1} s", started.elapsed().as_secs_f64());
    Ok(TsPeer { node_dir })
}

fn installed_npm_version(package_json: &Path) -> Option<String> {
    let text = fs::read_to_string(package_json).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    value.get("version")?.as_str().map(str::to_string)
}

fn install_py(cache: &Path) -> Result<PyPeer, String> {
    let venv = cache.join("venv");
    let python = venv_python(&venv);
    let requirement = format!("{PY_SDK_PACKAGE}=={PY_SDK_VERSION}");

    let marker = venv.join(".installed");
    let stamp = format!("{requirement}\n");
    if !(python.is_file() && fs::read_to_string(&marker).ok().as_deref() == Some(stamp.as_str())) {
        let started = Instant::now();
        eprintln!("interop: installing {requirement} into {}", venv.display());
        let _ = fs::remove_file(&marker);
        if !python.is_file() {
            fs::create_dir_all(cache).map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
            let mut create = process::python3();
            create.arg("-m").arg("venv").arg(&venv);
            process::capture(&mut create)?;
        }
        let mut pip = Command::new(&python);
        pip.args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet", &requirement]);
        process::capture(&mut pip)?;
        fs::write(&marker, stamp).map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
        eprintln!("interop: installed {requirement} in {:.1} s", started.elapsed().as_secs_f64());
    }

    // The wheel has no examples; the source distribution ships examples/echo_agent.py.
    let sdist = cache.join("sdist");
    let stem = format!("{}-{PY_SDK_VERSION}", PY_SDK_PACKAGE.replace('-', "_"));
    let unpacked = sdist.join(&stem);
    let echo_agent = unpacked.join("examples").join("echo_agent.py");
    if !echo_agent.is_file() {
        let started = Instant::now();
        eprintln!("interop: fetching the {requirement} source distribution into {}", sdist.display());
        let mut download = Command::new(&python);
        download
            .args([
                "-m",
                "pip",
                "download",
                "--disable-pip-version-check",
                "--quiet",
                "--no-binary",
                ":all:",
                "--no-deps",
                &requirement,
                "-d",
            ])
            .arg(&sdist);
        process::capture(&mut download)?;
        let archive = sdist.join(format!("{stem}.tar.gz"));
        if !archive.is_file() {
            return Err(format!("pip download did not leave {} (found: {})", archive.display(), list_dir(&sdist)));
        }
        let mut unpack = Command::new(&python);
        unpack.arg("-c").arg(UNPACK_PY).arg(&archive).arg(&sdist);
        process::capture(&mut unpack)?;
        if !echo_agent.is_file() {
            return Err(format!(
                "the {requirement} sdist has no {} (unpacked: {})",
                echo_agent.display(),
                list_dir(&unpacked)
            ));
        }
        eprintln!("interop: unpacked the sdist in {:.1} s", started.elapsed().as_secs_f64());
    }
    Ok(PyPeer { python, echo_agent })
}

/// Unpacks `argv[1]` (a .tar.gz) into `argv[2]`, refusing members outside it where the
/// interpreter supports extraction filters.
const UNPACK_PY: &str = r#"import sys, tarfile
with tarfile.open(sys.argv[1]) as archive:
    if hasattr(tarfile, "data_filter"):
        archive.extractall(sys.argv[2], filter="data")
    else:
        archive.extractall(sys.argv[2])
"#;

fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

fn list_dir(dir: &Path) -> String {
    match fs::read_dir(dir) {
        Ok(entries) => {
            let mut names: Vec<String> =
                entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
            names.sort();
            names.join(", ")
        }
        Err(e) => format!("cannot list {}: {e}", dir.display()),
    }
}

// ------------------------------------------------------------------------------------------
// Our examples

/// The project's examples, built by `cargo build --examples`.
#[derive(Debug, Clone)]
enum Ours {
    Built { echo_agent: Option<PathBuf>, client: Option<PathBuf> },
    BuildFailed(String),
}

fn build_examples(root: &Path) -> Ours {
    let started = Instant::now();
    let mut build = process::cargo();
    build.args(["build", "--examples", "--quiet"]).current_dir(root);
    if let Err(message) = process::capture(&mut build) {
        return Ours::BuildFailed(message);
    }
    eprintln!("interop: cargo build --examples in {:.1} s", started.elapsed().as_secs_f64());
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| if dir.is_absolute() { dir } else { root.join(dir) })
        .unwrap_or_else(|| root.join("target"));
    let examples = target.join("debug").join("examples");
    let find = |name: &str| {
        let path = examples.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        path.is_file().then_some(path)
    };
    Ours::Built { echo_agent: find("echo_agent"), client: find("client") }
}

// ------------------------------------------------------------------------------------------
// Scenarios

struct Env {
    root: PathBuf,
    ts: Option<TsPeer>,
    py: Option<PyPeer>,
    ours: Option<Ours>,
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

fn agent_argv(env: &Env, agent: Peer) -> Result<Argv, Unavailable> {
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
    }
}

fn client_argv(env: &Env, client: Peer) -> Result<Argv, Unavailable> {
    match client {
        Peer::Ts => Ok(vec!["node".into(), path_arg(&env.root.join("interop").join("ts").join("client.mjs"))]),
        Peer::Py => {
            let py = env.py.as_ref().expect("python peer installed");
            Ok(vec![path_arg(&py.python), path_arg(&env.root.join("interop").join("py").join("client.py"))])
        }
        Peer::Ours => match env.ours.as_ref().expect("examples built") {
            Ours::Built { client: Some(path), .. } => Ok(vec![path_arg(path)]),
            Ours::Built { .. } => Err(Unavailable::Skip("examples not built".into())),
            Ours::BuildFailed(message) => Err(Unavailable::Fail(message.clone())),
        },
    }
}

/// The full command line of a scenario:
/// `CLIENT [--protocol-version N] --prompt PROMPT -- AGENT...` (the flag only when N ≠ 1).
fn scenario_argv(client: Argv, agent: Argv, protocol_version: u32) -> Argv {
    let mut argv = client;
    if protocol_version != 1 {
        argv.push("--protocol-version".into());
        argv.push(protocol_version.to_string());
    }
    argv.push("--prompt".into());
    argv.push(PROMPT.into());
    argv.push("--".into());
    argv.extend(agent);
    argv
}

fn prepare(env: &Env, scenario: Scenario) -> Result<Command, Unavailable> {
    let client = client_argv(env, scenario.client)?;
    let agent = agent_argv(env, scenario.agent)?;
    let argv = scenario_argv(client, agent, scenario.protocol_version);
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).current_dir(&env.root);
    if let Some(ts) = &env.ts {
        command.env("ACP_INTEROP_NODE_DIR", &ts.node_dir);
    }
    Ok(command)
}

fn run_scenario(env: &Env, scenario: Scenario) -> ScenarioResult {
    let name = scenario.name();
    let (verdict, line) = match prepare(env, scenario) {
        Err(Unavailable::Skip(why)) => (Verdict::Skip, format!("SKIP {name} ({why})")),
        Err(Unavailable::Fail(why)) => (Verdict::Fail, format!("FAIL {name}: {}", indent_rest(&why))),
        Ok(mut command) => {
            let described = describe(&command);
            match run_with_timeout(&mut command, TIMEOUT) {
                Err(why) => (Verdict::Fail, format!("FAIL {name}: cannot run `{described}`: {why}")),
                Ok(run) => match evaluate(&run) {
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

/// Checks a finished client run: exit 0, parsable output, `end_turn`, the prompt echoed.
/// Returns the summary for the PASS line.
fn evaluate(run: &Finished) -> Result<String, String> {
    if run.timed_out {
        return Err(format!("timed out after {} s (killed)", TIMEOUT.as_secs()));
    }
    match run.status {
        Some(status) if status.success() => {}
        Some(status) => return Err(format!("client exited with {status}")),
        None => return Err("client exit status unknown".into()),
    }
    let transcript = parse_client_output(&run.stdout)?;
    check_transcript(&transcript, PROMPT)
}

/// The judgement on a parsed transcript, separate from process handling for unit tests.
fn check_transcript(transcript: &Transcript, prompt: &str) -> Result<String, String> {
    let stop = transcript.stop_reason.as_deref().unwrap_or("null");
    if stop != "end_turn" {
        return Err(format!("stopReason {stop}, expected end_turn"));
    }
    let text = transcript.agent_text();
    if !text.contains(prompt) {
        return Err(format!("the agent_message_chunk texts {text:?} do not contain the prompt {prompt:?}"));
    }
    Ok(format!(
        "{} update{}, stopReason {stop}",
        transcript.updates.len(),
        if transcript.updates.len() == 1 { "" } else { "s" }
    ))
}

/// What a client driver printed: the updates, then the final stop reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    /// Each `session/update` notification's `params.update`, in order.
    pub updates: Vec<Value>,
    /// The last line's `stopReason` (`None` when it was `null`).
    pub stop_reason: Option<String>,
}

impl Transcript {
    /// The concatenated text of the `agent_message_chunk` updates with text content.
    pub fn agent_text(&self) -> String {
        self.updates
            .iter()
            .filter(|u| u.get("sessionUpdate").and_then(Value::as_str) == Some("agent_message_chunk"))
            .filter_map(|u| u.get("content"))
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect()
    }
}

/// Parses a client driver's stdout: JSON objects, one per non-blank line; every line but the
/// last is an update (an object with a string `sessionUpdate`), the last is
/// `{"stopReason": ...}`.
pub fn parse_client_output(stdout: &str) -> Result<Transcript, String> {
    let lines: Vec<(usize, &str)> =
        stdout.lines().enumerate().map(|(i, line)| (i + 1, line.trim())).filter(|(_, line)| !line.is_empty()).collect();
    let Some((&(last_no, last), updates)) = lines.split_last() else {
        return Err("the client printed nothing (expected a final {\"stopReason\": ...} line)".into());
    };
    let parse = |no: usize, line: &str| -> Result<serde_json::Map<String, Value>, String> {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => Err(format!("stdout line {no} is not a JSON object: {other}")),
            Err(e) => Err(format!("stdout line {no} is not JSON ({e}): {line}")),
        }
    };
    let last_map = parse(last_no, last)?;
    let stop_reason = match last_map.get("stopReason") {
        Some(Value::String(reason)) => Some(reason.clone()),
        Some(Value::Null) => None,
        Some(other) => return Err(format!("stopReason is not a string: {other}")),
        None => return Err(format!("the last stdout line (line {last_no}) has no stopReason: {last}")),
    };
    let mut parsed = Vec::with_capacity(updates.len());
    for &(no, line) in updates {
        let map = parse(no, line)?;
        if map.contains_key("stopReason") && !map.contains_key("sessionUpdate") {
            return Err(format!("stdout line {no} is a stopReason line but not the last"));
        }
        match map.get("sessionUpdate") {
            Some(Value::String(_)) => parsed.push(Value::Object(map)),
            _ => return Err(format!("stdout line {no} is not a session update (no string sessionUpdate): {line}")),
        }
    }
    Ok(Transcript { updates: parsed, stop_reason })
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
    fn parses_updates_then_stop_reason() {
        let out = concat!(
            "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hello \"}}\n",
            "\n",
            "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"t\"}\n",
            "{\"content\":{\"type\":\"text\",\"text\":\"perm world\"},\"sessionUpdate\":\"agent_message_chunk\"}\n",
            "{\"stopReason\": \"end_turn\"}\n",
        );
        let t = parse_client_output(out).unwrap();
        assert_eq!(t.updates.len(), 3);
        assert_eq!(t.stop_reason.as_deref(), Some("end_turn"));
        assert_eq!(t.agent_text(), "hello perm world");
        assert_eq!(check_transcript(&t, PROMPT).unwrap(), "3 updates, stopReason end_turn");
    }

    #[test]
    fn only_a_stop_reason() {
        let t = parse_client_output("{\"stopReason\":\"cancelled\"}").unwrap();
        assert!(t.updates.is_empty());
        assert_eq!(t.stop_reason.as_deref(), Some("cancelled"));
        let err = check_transcript(&t, PROMPT).unwrap_err();
        assert!(err.contains("stopReason cancelled"), "{err}");
        let t = parse_client_output("{\"stopReason\":null}").unwrap();
        assert_eq!(t.stop_reason, None);
        assert!(check_transcript(&t, PROMPT).unwrap_err().contains("null"));
    }

    #[test]
    fn rejects_bad_output() {
        let cases = [
            ("", "printed nothing"),
            ("  \n\n", "printed nothing"),
            ("{\"sessionUpdate\":\"plan\"}\n", "no stopReason"),
            ("not json\n{\"stopReason\":\"end_turn\"}\n", "line 1 is not JSON"),
            ("[1]\n{\"stopReason\":\"end_turn\"}\n", "not a JSON object"),
            ("{\"stopReason\":\"end_turn\"}\n{\"stopReason\":\"end_turn\"}\n", "not the last"),
            ("{\"update\":1}\n{\"stopReason\":\"end_turn\"}\n", "not a session update"),
            ("{\"stopReason\":3}\n", "not a string"),
            ("{\"stopReason\":\"end_turn\"}\ntrailing\n", "line 2 is not JSON"),
        ];
        for (out, expected) in cases {
            let err = parse_client_output(out).unwrap_err();
            assert!(err.contains(expected), "{out:?}: {err}");
        }
    }

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
        let err = check_transcript(&t, PROMPT).unwrap_err();
        assert!(err.contains("do not contain the prompt"), "{err}");
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
        assert_eq!(names.iter().filter(|n| n.contains("our-")).count(), 6);
        assert_eq!(names.iter().filter(|n| !n.contains("our-")).count(), 5);
    }

    #[test]
    fn unknown_filter_is_an_error_before_installing() {
        let err = run(Path::new("/nonexistent"), Some("no-such-scenario")).unwrap_err();
        assert!(err.contains("no interop scenario matches"), "{err}");
    }

    #[test]
    fn command_lines() {
        let argv = scenario_argv(vec!["node".into(), "client.mjs".into()], vec!["agent".into()], 1);
        assert_eq!(argv, ["node", "client.mjs", "--prompt", PROMPT, "--", "agent"]);
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
        assert!(evaluate(&run).unwrap_err().contains("timed out"));
    }

    #[cfg(unix)]
    #[test]
    fn exit_status_and_stderr_are_reported() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo '{\"stopReason\":\"end_turn\"}'; echo oops >&2; exit 3"]);
        let run = run_with_timeout(&mut command, TIMEOUT).unwrap();
        assert!(!run.timed_out);
        assert_eq!(run.stderr.trim(), "oops");
        assert!(evaluate(&run).unwrap_err().contains("exited with"));
        assert!(details("sh -c …", &run).contains("      oops"));
    }
}
