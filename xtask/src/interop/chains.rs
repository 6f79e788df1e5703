//! The chain scenarios of `cargo xtask interop` (`--only chain`): a client drives one prompt turn
//! through a conductor that presents a chain of components as one agent (the wire model: the
//! unstable schemas' `proxy/initialize` and `proxy/successor`).
//!
//! | conductor | what it is |
//! |---|---|
//! | `official-conductor` | `agent-client-protocol-conductor agent COMPONENT...`, the official one: the crates.io crate [`CONDUCTOR_CRATE`] [`CONDUCTOR_VERSION`], fetched through `interop/rust-conductor/` and built with the crate's own `Cargo.lock` into `.cache/interop/conductor/bin/` (`install_conductor`); built with its default features, so it speaks v1 only |
//! | `acp-conduct` | ours, `acp conduct agent COMPONENT...` (`cargo build -p acp-tool`) |
//!
//! Each COMPONENT is one command-line string (split into words as a shell would). The chains:
//! no proxy in front of our `echo_agent`; our `proxy --prefix` [`PREFIX`] example in front of our
//! `echo_agent`, the TypeScript agent (`interop/ts/agent.mjs`) or the Rust SDK's
//! `simple_agent_v2`. The clients are our `client` example and the TypeScript client
//! (`interop/ts/client.mjs`), with the drivers' contract (see [`super`]). A turn passes as in the
//! other scenarios (exit 0, `end_turn`, the prompt in the agent's text), and, behind the proxy,
//! when every text `agent_message_chunk` starts with [`PREFIX`] and the text without the prefixes
//! contains the prompt.
//!
//! The `…, cancelled` scenarios send [`SLOW_PROMPT`] with our client's `--cancel-after` through
//! the proxy: the turn must end `cancelled` within [`super::scenario::CANCELLED_WITHIN`].
//!
//! The teardown scenarios (`…, no process left`) check that our client ends a chain it spawned:
//! the chain's agent is our `echo_agent` behind a launcher that ignores `SIGTERM` and runs on
//! [`LINGER_SECS`] s after the agent exits (`sh -c "trap '' TERM; echo_agent; sleep 30"`, as a
//! launcher that cleans up after an agent, or an agent that saves its state on `SIGTERM`, might),
//! so that only `SIGKILL` of its process group ends it in time; and no process of the chain may
//! be left [`SETTLE`] after the client exited. Every process of a chain scenario carries
//! [`MARK_VAR`] in its environment (set on the client, inherited by the conductor and the
//! components), which is how they are found in `/proc`; what any chain scenario left is killed
//! after it.
//!
//! By hand, after one run:
//!
//! ```text
//! target/debug/examples/client --protocol-version 1 --prompt hi -- \
//!   .cache/interop/conductor/bin/agent-client-protocol-conductor agent \
//!   "target/debug/examples/proxy --prefix '[proxy] '" target/debug/examples/echo_agent
//! ```

use super::install::{copy_crate, crate_dir};
use super::output::{parse_client_output, Transcript};
use super::peers::{agent_argv, client_argv, path_arg, peer_command, Env, Ours, Peer};
use super::production;
use super::report::{command_string, details, indent_rest};
use super::scenario::{check_turn, evaluate, Argv, Expect, Output, ScenarioResult, Unavailable, Verdict};
use super::scenario::{CANCEL_AFTER, PROMPT, SLOW_PROMPT, TIMEOUT};
use crate::process::{self, describe, run_with_timeout, Finished};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The crates.io crate of the official conductor (the official Rust SDK's), built at exactly
/// [`CONDUCTOR_VERSION`].
pub const CONDUCTOR_CRATE: &str = "agent-client-protocol-conductor";
/// Version of [`CONDUCTOR_CRATE`]; `interop/rust-conductor/Cargo.toml` pins the same one, and
/// `interop/rust-conductor/Cargo.lock` the crates fetched with it.
pub const CONDUCTOR_VERSION: &str = "5.0.0";
/// The conductor's binary (the crate's only one).
pub const CONDUCTOR_BIN: &str = "agent-client-protocol-conductor";
/// What our proxy example puts before the text of every `agent_message_chunk` it forwards.
pub const PREFIX: &str = "[proxy] ";
/// The environment variable that marks every process of a chain scenario, with a value of its own.
pub const MARK_VAR: &str = "ACP_INTEROP_CHAIN";
/// How long the teardown scenarios' launcher runs on after the agent exits.
pub const LINGER_SECS: u32 = 30;
/// How long after the client exited a process of its chain may still be seen ending (a signal
/// sent just before the client's exit takes effect asynchronously).
pub const SETTLE: Duration = Duration::from_secs(1);

/// The conductor of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conductor {
    /// `agent-client-protocol-conductor` [`CONDUCTOR_VERSION`].
    Official,
    /// `acp conduct`.
    Ours,
}

impl Conductor {
    fn label(self) -> &'static str {
        match self {
            Conductor::Official => "official-conductor",
            Conductor::Ours => "acp-conduct",
        }
    }
}

/// What a chain scenario checks besides the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The turn only.
    Turn,
    /// The turn, with the agent behind a launcher that ignores `SIGTERM` and outlives it by
    /// [`LINGER_SECS`] s (`sh -c "trap '' TERM; AGENT; sleep 30"`), and no process of the chain
    /// left [`SETTLE`] after the client exited.
    NoProcessLeft,
    /// A cancelled turn instead ([`Expect::Cancelled`]): [`SLOW_PROMPT`] and `session/cancel`
    /// [`CANCEL_AFTER`] later (our client only: `interop/ts/client.mjs` has no `--cancel-after`).
    Cancelled,
}

/// A client, a conductor, optionally our proxy, and an agent, at one protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    pub client: Peer,
    pub conductor: Conductor,
    /// Our `proxy --prefix` [`PREFIX`] in front of the agent.
    pub proxy: bool,
    pub agent: Peer,
    pub protocol_version: u32,
    pub check: Check,
}

impl Chain {
    const fn new(client: Peer, conductor: Conductor, proxy: bool, agent: Peer, protocol_version: u32) -> Self {
        Chain { client, conductor, proxy, agent, protocol_version, check: Check::Turn }
    }

    const fn checking(self, check: Check) -> Self {
        Chain { check, ..self }
    }

    /// `chain: ts-client -> official-conductor -> our-proxy -> ts-agent v1`: what `--only`
    /// filters on and result lines start with.
    pub fn name(&self) -> String {
        let proxy = if self.proxy { " -> our-proxy" } else { "" };
        let check = match self.check {
            Check::Turn => "",
            Check::NoProcessLeft => ", no process left",
            Check::Cancelled => ", cancelled",
        };
        format!(
            "chain: {}-client -> {}{proxy} -> {}-agent v{}{check}",
            self.client.label(),
            self.conductor.label(),
            self.agent.label(),
            self.protocol_version
        )
    }
}

/// Every chain scenario, in the order they run.
pub const CHAINS: &[Chain] = &[
    // The official conductor with no proxy, in front of our agent.
    Chain::new(Peer::Ours, Conductor::Official, false, Peer::Ours, 1),
    Chain::new(Peer::Ts, Conductor::Official, false, Peer::Ours, 1),
    // Our proxy inside the official conductor's chain.
    Chain::new(Peer::Ours, Conductor::Official, true, Peer::Ours, 1),
    Chain::new(Peer::Ts, Conductor::Official, true, Peer::Ours, 1),
    Chain::new(Peer::Ours, Conductor::Official, true, Peer::Ts, 1),
    Chain::new(Peer::Ts, Conductor::Official, true, Peer::Ts, 1),
    // Our conductor and our proxy in front of the official agents (the Rust SDK's example agent
    // speaks v2 only: its v1 one answers only `initialize`).
    Chain::new(Peer::Ours, Conductor::Ours, true, Peer::Rs, 2),
    Chain::new(Peer::Ts, Conductor::Ours, true, Peer::Rs, 2),
    Chain::new(Peer::Ours, Conductor::Ours, true, Peer::Ts, 1),
    Chain::new(Peer::Ts, Conductor::Ours, true, Peer::Ts, 1),
    Chain::new(Peer::Ours, Conductor::Ours, true, Peer::Ts, 2),
    Chain::new(Peer::Ours, Conductor::Ours, true, Peer::Ours, 2),
    Chain::new(Peer::Ts, Conductor::Ours, true, Peer::Ts, 2),
    // session/cancel across the proxy, and the cancelled prompt's answer back.
    Chain::new(Peer::Ours, Conductor::Official, true, Peer::Ours, 1).checking(Check::Cancelled),
    Chain::new(Peer::Ours, Conductor::Ours, true, Peer::Ours, 2).checking(Check::Cancelled),
    // Our client ends the chain it spawned, whichever conductor runs it.
    Chain::new(Peer::Ours, Conductor::Official, false, Peer::Ours, 1).checking(Check::NoProcessLeft),
    Chain::new(Peer::Ours, Conductor::Official, true, Peer::Ours, 1).checking(Check::NoProcessLeft),
    Chain::new(Peer::Ours, Conductor::Ours, true, Peer::Ours, 1).checking(Check::NoProcessLeft),
];

/// The names of this module's scenarios, in the order [`run`] runs them.
pub(super) fn names() -> Vec<String> {
    CHAINS.iter().map(Chain::name).collect()
}

/// Runs the scenarios named in `selected` (a subset of [`names`]), one result each: builds the
/// official conductor (or reuses it) and `acp` when a selected scenario needs them.
pub(super) fn run(env: &Env, cache: &Path, selected: &[String]) -> Vec<ScenarioResult> {
    let chains: Vec<Chain> = CHAINS.iter().copied().filter(|chain| selected.contains(&chain.name())).collect();
    let uses = |conductor: Conductor| chains.iter().any(|chain| chain.conductor == conductor);
    let conductors = Conductors {
        official: uses(Conductor::Official).then(|| {
            let target = env.rs.as_ref().map(|rs| rs.target.clone());
            install_conductor(&env.root, cache, target.as_deref())
        }),
        ours: uses(Conductor::Ours).then(|| production::build_acp(&env.root)),
    };
    chains.into_iter().enumerate().map(|(index, chain)| run_chain(env, &conductors, chain, index)).collect()
}

// ------------------------------------------------------------------------------------------
// The official conductor

/// Fetches the official conductor's crate with `cargo metadata --locked` on
/// `interop/rust-conductor/` (which depends on it, pinned, and has a lockfile), copies its source
/// into `.cache/interop/conductor/` and builds its binary there with the crate's shipped
/// lockfile, then copies the binary to `.cache/interop/conductor/bin/`. A marker names what was
/// built, so a second run reuses it. `target` is where to build: the Rust SDK examples' target
/// dir when given (the conductor's lockfile has every crate of the SDK's at the same version, so
/// their shared dependencies are built once), else `.cache/interop/conductor/target`.
pub(crate) fn install_conductor(root: &Path, cache: &Path, target: Option<&Path>) -> Result<PathBuf, String> {
    install_conductor_as(root, cache, target, false)
}

/// The same in release, into `cache/conductor-release/` with a target directory of its own: what
/// `cargo xtask bench` compares our (release) conductor with.
pub(crate) fn install_conductor_release(root: &Path, cache: &Path) -> Result<PathBuf, String> {
    install_conductor_as(root, cache, None, true)
}

fn install_conductor_as(root: &Path, cache: &Path, target: Option<&Path>, release: bool) -> Result<PathBuf, String> {
    let dir = cache.join(if release { "conductor-release" } else { "conductor" });
    let exe = format!("{CONDUCTOR_BIN}{}", std::env::consts::EXE_SUFFIX);
    let bin = dir.join("bin").join(&exe);
    let marker = dir.join(".installed");
    let profile = if release { " --release" } else { "" };
    let stamp = format!("{CONDUCTOR_CRATE}@{CONDUCTOR_VERSION} --bin {CONDUCTOR_BIN}{profile}\n");
    if fs::read_to_string(&marker).ok().as_deref() == Some(stamp.as_str()) && bin.is_file() {
        return Ok(bin);
    }

    let started = Instant::now();
    eprintln!("interop: building {CONDUCTOR_CRATE} {CONDUCTOR_VERSION} in {}", dir.display());
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let _ = fs::remove_file(&marker);
    let mut metadata = process::cargo();
    metadata
        .args(["metadata", "--locked", "--format-version", "1", "--manifest-path"])
        .arg(root.join("interop").join("rust-conductor").join("Cargo.toml"));
    let fetched = crate_dir(&process::capture(&mut metadata)?, CONDUCTOR_CRATE, CONDUCTOR_VERSION)?;
    let manifest = copy_crate(&fetched, &dir.join(format!("{CONDUCTOR_CRATE}-{CONDUCTOR_VERSION}")))?;

    // No debug info, as for the SDK's examples, and no incremental state (built once): 33 s here
    // on 2 cores after those examples (46 s of CPU; 78 s of CPU in a target dir of its own).
    let target = target.map_or_else(|| dir.join("target"), Path::to_path_buf);
    let mut build = process::cargo();
    build
        .args(["build", "--quiet", "--locked", "--config", "profile.dev.debug=0"])
        .args(["--config", "profile.dev.incremental=false", "--bin", CONDUCTOR_BIN])
        .args(release.then_some("--release"))
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target);
    process::capture(&mut build)?;
    let built = target.join(if release { "release" } else { "debug" }).join(&exe);
    if !built.is_file() {
        return Err(format!("the build of {CONDUCTOR_CRATE} left no {}", built.display()));
    }
    let bin_dir = dir.join("bin");
    fs::create_dir_all(&bin_dir).map_err(|e| format!("cannot create {}: {e}", bin_dir.display()))?;
    fs::copy(&built, &bin).map_err(|e| format!("cannot copy {} to {}: {e}", built.display(), bin.display()))?;
    fs::write(&marker, stamp).map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    eprintln!("interop: built {CONDUCTOR_CRATE} {CONDUCTOR_VERSION} in {:.1} s", started.elapsed().as_secs_f64());
    Ok(bin)
}

// ------------------------------------------------------------------------------------------
// Running

/// The conductors the selected scenarios need, each built (or found) once.
struct Conductors {
    official: Option<Result<PathBuf, String>>,
    ours: Option<Result<PathBuf, String>>,
}

fn run_chain(env: &Env, conductors: &Conductors, chain: Chain, index: usize) -> ScenarioResult {
    let name = chain.name();
    let (verdict, line) = match chain_scenario(env, conductors, chain, index) {
        Ok(summary) => (Verdict::Pass, format!("PASS {name} ({summary})")),
        Err(Unavailable::Skip(why)) => (Verdict::Skip, format!("SKIP {name} ({why})")),
        Err(Unavailable::Fail(why)) => (Verdict::Fail, format!("FAIL {name}: {}", indent_rest(&why))),
    };
    ScenarioResult { name, verdict, line }
}

fn chain_scenario(env: &Env, conductors: &Conductors, chain: Chain, index: usize) -> Result<String, Unavailable> {
    if chain.check == Check::NoProcessLeft && !Path::new("/proc/self/environ").is_file() {
        return Err(Unavailable::Skip("no /proc to look for the chain's processes in".into()));
    }
    let conductor = conductor_argv(env, conductors, chain)?;
    let argv = match chain.check {
        Check::Cancelled => cancelling_argv(env, chain, conductor)?,
        Check::Turn | Check::NoProcessLeft => client_argv(env, chain.client, conductor, chain.protocol_version)?,
    };
    let mark = format!("{}-{index}-{}", std::process::id(), nanos());
    let mut client = peer_command(env, &argv);
    client.env(MARK_VAR, &mark);
    let described = describe(&client);
    let run = run_with_timeout(&mut client, TIMEOUT)
        .map_err(|why| Unavailable::Fail(format!("cannot run `{described}`: {why}")))?;
    let left = left_running(&mark, SETTLE);
    end(&left);

    let elapsed = run.elapsed.as_secs_f64();
    let failed = |why: String| {
        let (first, rest) = why.split_once('\n').map_or((why.as_str(), String::new()), |(a, b)| (a, format!("\n{b}")));
        Unavailable::Fail(format!("{first} ({elapsed:.1} s){rest}\n{}", details(&described, &run)))
    };
    let mut summary = match chain.check {
        Check::Cancelled => evaluate(&run, Output::Contract, Expect::Cancelled),
        Check::Turn | Check::NoProcessLeft => judge(&run, chain.proxy.then_some(PREFIX)),
    }
    .map_err(failed)?;
    match chain.check {
        Check::NoProcessLeft if !left.is_empty() => {
            return Err(failed(format!(
                "{} process(es) of the chain still ran {:.1} s after the client exited (killed now)\n{}",
                left.len(),
                SETTLE.as_secs_f64(),
                listed(&left)
            )))
        }
        Check::NoProcessLeft => summary.push_str(", no process left"),
        Check::Turn | Check::Cancelled if !left.is_empty() => {
            summary.push_str(&format!(", {} leftover process(es) killed", left.len()))
        }
        Check::Turn | Check::Cancelled => {}
    }
    Ok(format!("{summary}, {elapsed:.1} s"))
}

/// The conductor's command line with the chain's components, each one command-line string.
fn conductor_argv(env: &Env, conductors: &Conductors, chain: Chain) -> Result<Argv, Unavailable> {
    let mut components = Vec::new();
    if chain.proxy {
        let proxy = match env.ours.as_ref().expect("examples built") {
            Ours::Built { proxy: Some(path), .. } => path,
            Ours::Built { .. } => return Err(Unavailable::Skip("the proxy example is not built".into())),
            Ours::BuildFailed(message) => return Err(Unavailable::Fail(message.clone())),
        };
        components.push(command_string(&[path_arg(proxy), "--prefix".into(), PREFIX.into()]));
    }
    let agent = agent_argv(env, chain.agent, chain.protocol_version)?;
    components.push(match chain.check {
        Check::Turn | Check::Cancelled => command_string(&agent),
        Check::NoProcessLeft => command_string(&lingering(&agent)),
    });
    let (built, mut argv) = match chain.conductor {
        Conductor::Official => (&conductors.official, vec![]),
        Conductor::Ours => (&conductors.ours, vec!["conduct".to_string()]),
    };
    let program = match built.as_ref().expect("conductor built for the selected scenarios") {
        Ok(path) => path_arg(path),
        Err(why) => return Err(Unavailable::Fail(why.clone())),
    };
    argv.insert(0, program);
    argv.push("agent".into());
    argv.extend(components);
    Ok(argv)
}

/// Our client's command line for a cancelled turn:
/// `client --protocol-version N --prompt SLOW_PROMPT --cancel-after MS -- CONDUCTOR...`.
fn cancelling_argv(env: &Env, chain: Chain, conductor: Argv) -> Result<Argv, Unavailable> {
    let client = match (chain.client, env.ours.as_ref().expect("examples built")) {
        (Peer::Ours, Ours::Built { client: Some(path), .. }) => path,
        (Peer::Ours, Ours::Built { .. }) => return Err(Unavailable::Skip("examples not built".into())),
        (Peer::Ours, Ours::BuildFailed(message)) => return Err(Unavailable::Fail(message.clone())),
        (other, _) => return Err(Unavailable::Fail(format!("no cancelling client for {}", other.label()))),
    };
    let mut argv = vec![path_arg(client), "--protocol-version".into(), chain.protocol_version.to_string()];
    argv.extend(["--prompt".into(), SLOW_PROMPT.into(), "--cancel-after".into(), CANCEL_AFTER.as_millis().to_string()]);
    argv.push("--".into());
    argv.extend(conductor);
    Ok(argv)
}

/// `agent` behind a launcher that ignores `SIGTERM` (the shell, and so what it starts) and runs on
/// [`LINGER_SECS`] s after the agent exits: `sh -c "trap '' TERM; AGENT; sleep 30"`.
fn lingering(agent: &[String]) -> Argv {
    let script = format!("trap '' TERM; {}; sleep {LINGER_SECS}", command_string(agent));
    vec!["sh".into(), "-c".into(), script]
}

/// Judges the client's run: as [`evaluate`] does for [`Expect::EndTurn`], and, behind the proxy
/// (`prefix`), every text `agent_message_chunk` starts with the prefix and the text without the
/// prefixes contains the prompt. Returns the summary for the PASS line.
fn judge(run: &Finished, prefix: Option<&str>) -> Result<String, String> {
    let Some(prefix) = prefix else { return evaluate(run, Output::Contract, Expect::EndTurn) };
    if run.timed_out || !run.status.is_some_and(|status| status.success()) {
        // The time-out or the failed exit, reported as the other scenarios do.
        return evaluate(run, Output::Contract, Expect::EndTurn);
    }
    let transcript = parse_client_output(&run.stdout)?;
    let mut turn = transcript.turn();
    turn.agent_text = unprefixed(&transcript, prefix)?;
    Ok(format!("{}, prefix on every text chunk", check_turn(&turn, PROMPT)?))
}

/// The agent's text with `prefix` taken off each text `agent_message_chunk`; an error when a
/// chunk lacks it or there is none.
fn unprefixed(transcript: &Transcript, prefix: &str) -> Result<String, String> {
    let chunks: Vec<&str> = transcript
        .updates
        .iter()
        .filter(|u| u.get("sessionUpdate").and_then(Value::as_str) == Some("agent_message_chunk"))
        .filter_map(|u| u.get("content"))
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    if chunks.is_empty() {
        return Err("the agent sent no text agent_message_chunk".into());
    }
    let mut text = String::new();
    for (n, chunk) in chunks.iter().enumerate() {
        match chunk.strip_prefix(prefix) {
            Some(rest) => text.push_str(rest),
            None => {
                return Err(format!("text chunk {} of {} lacks the prefix {prefix:?}: {chunk:?}", n + 1, chunks.len()))
            }
        }
    }
    Ok(text)
}

// ------------------------------------------------------------------------------------------
// The chain's processes

/// A live process carrying a scenario's mark.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Marked {
    pid: u32,
    /// Its command line, words joined by spaces.
    command: String,
}

/// The processes marked `mark` that are still running after up to `settle` (none once they are
/// gone; those found last otherwise).
fn left_running(mark: &str, settle: Duration) -> Vec<Marked> {
    let deadline = Instant::now() + settle;
    loop {
        let found = marked(mark);
        if found.is_empty() || Instant::now() >= deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The live (not zombie) processes whose environment has [`MARK_VAR`]`=mark`, from `/proc`
/// (empty where there is none).
fn marked(mark: &str) -> Vec<Marked> {
    let entry = format!("{MARK_VAR}={mark}");
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    let mut found: Vec<Marked> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let proc = PathBuf::from(format!("/proc/{pid}"));
            let live = fs::read_to_string(proc.join("stat")).is_ok_and(|stat| !is_zombie(&stat));
            let carries = fs::read(proc.join("environ"))
                .is_ok_and(|environ| environ.split(|byte| *byte == 0).any(|var| var == entry.as_bytes()));
            live && carries
        })
        .map(|pid| Marked { pid, command: command_line(pid) })
        .collect();
    found.sort_by_key(|process| process.pid);
    found
}

/// Whether a `/proc/PID/stat` line is a zombie's (or a dead process's): its state, the first
/// field after the parenthesised command name (which may hold spaces and parentheses), is `Z`
/// or `X`.
fn is_zombie(stat: &str) -> bool {
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    matches!(state, Some("Z" | "X" | "x"))
}

fn command_line(pid: u32) -> String {
    let bytes = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = bytes
        .split(|byte| *byte == 0)
        .filter(|word| !word.is_empty())
        .map(|word| String::from_utf8_lossy(word).into_owned())
        .collect();
    words.join(" ")
}

/// Kills what a scenario left (`SIGKILL`): processes this run started, found by its mark.
fn end(left: &[Marked]) {
    if left.is_empty() {
        return;
    }
    let mut kill = Command::new("kill");
    kill.arg("-KILL").args(left.iter().map(|process| process.pid.to_string()));
    let _ = process::capture(&mut kill);
}

fn listed(left: &[Marked]) -> String {
    left.iter().map(|process| format!("  {} {}", process.pid, process.command)).collect::<Vec<_>>().join("\n")
}

fn nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_selected_by_chain() {
        let names = names();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert!(names.iter().all(|name| name.starts_with("chain: ")));
        assert!(names.contains(&"chain: our-client -> official-conductor -> our-agent v1".to_string()));
        assert!(names.contains(&"chain: ts-client -> official-conductor -> our-proxy -> ts-agent v1".to_string()));
        assert!(names.contains(&"chain: our-client -> acp-conduct -> our-proxy -> rs-agent v2".to_string()));
        let teardown = "chain: our-client -> official-conductor -> our-proxy -> our-agent v1, no process left";
        assert!(names.contains(&teardown.to_string()));
        let cancelled: Vec<&Chain> = CHAINS.iter().filter(|c| c.check == Check::Cancelled).collect();
        assert!(!cancelled.is_empty() && cancelled.iter().all(|c| c.client == Peer::Ours));
        // The official conductor is built without `unstable_protocol_v2`.
        assert!(CHAINS.iter().filter(|c| c.conductor == Conductor::Official).all(|c| c.protocol_version == 1));
    }

    fn transcript(chunks: &[&str]) -> Transcript {
        let mut out = String::new();
        for chunk in chunks {
            let update =
                serde_json::json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": chunk}});
            out.push_str(&format!("{update}\n"));
        }
        out.push_str("{\"sessionUpdate\":\"plan\",\"entries\":[]}\n{\"stopReason\":\"end_turn\"}\n");
        parse_client_output(&out).unwrap()
    }

    #[test]
    fn every_chunk_carries_the_prefix() {
        let t = transcript(&["[proxy] hello ", "[proxy] perm world"]);
        assert_eq!(unprefixed(&t, PREFIX).unwrap(), "hello perm world");
        let err = unprefixed(&transcript(&["[proxy] hello ", "perm world"]), PREFIX).unwrap_err();
        assert!(err.contains("chunk 2 of 2 lacks the prefix"), "{err}");
        let err = unprefixed(&transcript(&[]), PREFIX).unwrap_err();
        assert!(err.contains("no text agent_message_chunk"), "{err}");
    }

    #[test]
    fn reads_the_process_state() {
        assert!(is_zombie("123 (sh) Z 1 123 123 0"));
        assert!(is_zombie("123 (a) b) (c) Z 1"));
        assert!(!is_zombie("123 (a) Z) S 1 123"));
        assert!(!is_zombie("123 (sleep) S 1 123 123 0"));
        assert!(!is_zombie(""));
    }

    /// A process started with a mark is found by it, and by nothing else, until it is ended.
    #[cfg(target_os = "linux")]
    #[test]
    fn finds_marked_processes() {
        let mark = format!("test-{}-{}", std::process::id(), nanos());
        let mut child = Command::new("sleep").arg("30").env(MARK_VAR, &mark).spawn().unwrap();
        // `spawn` returns once the child is forked; until it has called `execve`, its
        // `/proc/PID/environ` is still the parent's, without the mark. Wait for the exec.
        let exec = std::time::Instant::now();
        let mut found = marked(&mark);
        while found.is_empty() && exec.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(5));
            found = marked(&mark);
        }
        assert_eq!(found, [Marked { pid: child.id(), command: "sleep 30".into() }]);
        assert!(marked(&format!("{mark}-other")).is_empty());
        end(&found);
        child.wait().unwrap();
        assert!(marked(&mark).is_empty());
    }

    /// `interop/rust-conductor/` fetches the version the conductor is built from.
    #[test]
    fn the_fetch_package_pins_the_conductor_version() {
        let dir = crate::project_root().join("interop").join("rust-conductor");
        let manifest: toml::Value = toml::from_str(&fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
        let dependency = &manifest["dependencies"][CONDUCTOR_CRATE]["version"];
        assert_eq!(dependency.as_str(), Some(format!("={CONDUCTOR_VERSION}").as_str()));
        let lock: toml::Value = toml::from_str(&fs::read_to_string(dir.join("Cargo.lock")).unwrap()).unwrap();
        let locked: Vec<&str> = lock["package"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["name"].as_str() == Some(CONDUCTOR_CRATE))
            .filter_map(|p| p["version"].as_str())
            .collect();
        assert_eq!(locked, [CONDUCTOR_VERSION]);
    }
}
