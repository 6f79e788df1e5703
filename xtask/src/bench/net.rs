//! The network rows of `cargo xtask bench`: our `client --url` and `echo_agent --listen` against
//! the official TypeScript SDK's `AcpServer` and HTTP / WebSocket client transports
//! (`interop/ts/net-agent.mjs`, `interop/ts/net-client.mjs`), over Streamable HTTP and WebSocket
//! on loopback, ACP v1.
//!
//! Each figure is the difference of two client runs against one agent that keeps listening: a
//! long session minus a short one, so that process start, connecting, `initialize` and
//! `session/new` cancel out. Round trips: `--repeat 1+N --prompt x` minus `--repeat 1` (prompt
//! turns: the request, one update, the response). Notification stream: `--prompt "flood K"` minus
//! `--prompt "flood 0"` (K one-character `agent_message_chunk` updates in one turn). Each time is
//! the median of its runs; the reference pair is measured once per transport and workload, for
//! both of its rows.
//!
//! Rows whose example lacks what they need (`--listen`, `--url`, `--repeat`, the `flood N` word)
//! keep the reference figure and leave ours empty, saying why in the note.
//!
//! The rows ending in `, vs official Rust` put the same figure of ours (our client and agent)
//! against the official Rust SDK's pair: `official-net` from `bench/official-net`, an agent on
//! `agent-client-protocol-http`'s `AcpHttpServer` and a client on its `HttpClient`. When that
//! binary cannot be built or run, those rows keep our figure and say why the reference is empty.
//!
//! Over TLS (`https`, `wss`: the agents given the certificate [`crate::tls`] makes, our client
//! trusting its CA with `--ca-file`, Node with `NODE_EXTRA_CA_CERTS`) the round trips are
//! measured, ours end to end and our agent under the TypeScript client, against the TypeScript
//! pair over TLS (`net-agent.mjs` behind Node's `https` server); `--tls-only` runs just those.

use super::table::{median, Row};
use crate::interop::{install_ts, TsPeer};
use crate::listener::{Listener, NotListening};
use crate::process::{self, describe, run_with_timeout, Finished};
use crate::tls::Pki;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The limit of one client run.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);
/// How long an agent may take to print `listening on URL`.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The features of acp-rpc every program of ours the bench runs is built with, in one build (see
/// [`build_ours`]): `ws` (which includes `http`) and `tls` for the network rows, `unstable` for
/// the proxy of the composition rows, `mcp` for the MCP rows.
pub const FEATURES: [&str; 4] = ["ws", "tls", "unstable", "mcp"];

/// Builds every program of ours the bench runs in one `cargo build --release`: acp-rpc's examples
/// and the `acp` binary, acp-rpc with [`FEATURES`] (and `acp`'s own). One feature set, so acp-rpc
/// and the generated crates are compiled once for all rows (issue 52: a second set for the
/// composition rows compiled both generated crates again, most of a quick run); a later call finds
/// everything fresh. Returns the release directory.
pub fn build_ours(root: &Path) -> Result<PathBuf, String> {
    let features: Vec<String> = FEATURES.iter().map(|f| format!("acp-rpc/{f}")).collect();
    let mut build = process::cargo();
    build
        .args(["build", "--release", "-p", "acp-rpc", "-p", "acp-tool", "--examples", "--bin", "acp", "--features"])
        .arg(features.join(","))
        .current_dir(root);
    eprintln!("bench: building our programs: {}", describe(&build));
    process::stream(&mut build, |_| {})?;
    Ok(target_dir(root).join("release"))
}

/// What the network rows run: the TypeScript drivers and our release examples.
pub struct Peers {
    root: PathBuf,
    ts: TsPeer,
    echo_agent: PathBuf,
    client: PathBuf,
    /// `official-net` (agent and client), or why it could not be built.
    official: Result<PathBuf, String>,
    /// The CA and server certificate of the TLS rows.
    pki: Pki,
}

/// Installs the TypeScript SDK (or reuses `.cache/interop/node`) and builds our examples in
/// release with the network features, and unless `tls_only` the official Rust pair (the TLS rows
/// have none).
pub fn prepare(root: &Path, tls_only: bool) -> Result<Peers, String> {
    let ts = install_ts(&root.join(".cache").join("interop"))?;
    let examples = build_ours(root)?.join("examples");
    let example = |name: &str| examples.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let official = if tls_only { Err("not built for the TLS rows".into()) } else { build_official(root) };
    let pki = crate::tls::make(&root.join(".cache").join("bench").join("tls"))?;
    let (echo_agent, client) = (example("echo_agent"), example("client"));
    Ok(Peers { root: root.to_path_buf(), ts, echo_agent, client, official, pki })
}

impl Peers {
    /// The CA and server certificate of the TLS rows.
    pub(super) fn pki(&self) -> &Pki {
        &self.pki
    }
}

/// Builds `official-net` in release, in the `bench/` workspace and its target directory (as the
/// benchmark binary is), alone: neither generated crate is compiled for it.
fn build_official(root: &Path) -> Result<PathBuf, String> {
    let mut build = process::cargo();
    build
        .args(["build", "--release", "--manifest-path", "bench/Cargo.toml", "--target-dir", "bench/target"])
        .args(["-p", "acp-bench-official-net"])
        .current_dir(root);
    eprintln!("bench: building the official Rust network peers: {}", describe(&build));
    match process::stream(&mut build, |_| {}) {
        Ok(_) => Ok(root.join("bench/target/release").join(format!("official-net{}", std::env::consts::EXE_SUFFIX))),
        Err(why) => {
            eprintln!("bench: the `vs official Rust` rows will have no reference: {why}");
            Err(format!("bench/official-net did not build: {}", last_line(&why)))
        }
    }
}

pub(super) fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| if dir.is_absolute() { dir } else { root.join(dir) })
        .unwrap_or_else(|| root.join("target"))
}

/// Sizes of the measurements.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sizes {
    /// Extra prompt turns of the long round-trip session.
    pub(super) turns: usize,
    /// Updates of the long notification stream.
    pub(super) updates: usize,
    /// Runs of each client command.
    pub(super) runs: usize,
}

impl Sizes {
    /// A run's time is read when its exit is noticed, which `run_with_timeout` polls for every
    /// 20 ms (`acp_process`'s `POLL`): the long run has to be well above that. At 15,000 turns/s
    /// (our WebSocket pair, issue 39) 200 turns took 13 ms, less than one poll, and the quick
    /// round-trip rows came out empty or at random.
    pub(super) fn new(quick: bool) -> Sizes {
        if quick {
            Sizes { turns: 1_000, updates: 20_000, runs: 1 }
        } else {
            Sizes { turns: 5_000, updates: 50_000, runs: 3 }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transport {
    Http,
    Ws,
    Https,
    Wss,
}

impl Transport {
    fn label(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Ws => "ws",
            Transport::Https => "https",
            Transport::Wss => "wss",
        }
    }

    fn url(self, listener: &Listener) -> String {
        match self {
            Transport::Http | Transport::Https => listener.url.clone(),
            Transport::Ws | Transport::Wss => listener.ws_url(),
        }
    }

    fn is_tls(self) -> bool {
        matches!(self, Transport::Https | Transport::Wss)
    }

    /// What is measured: over TLS the round trips (what the handshake and record layer cost a
    /// turn); the stream's figure would say the same about the encryption as over the plain ones.
    fn workloads(self) -> &'static [Workload] {
        if self.is_tls() {
            &[Workload::RoundTrips]
        } else {
            &[Workload::RoundTrips, Workload::Stream]
        }
    }
}

/// Which client program a measurement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Ts,
    Ours,
    /// `official-net client`.
    Official,
}

/// What a row compares: the pair measured as ours and the reference pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pairing {
    /// Our client and agent against the TypeScript pair.
    Ours,
    /// The TypeScript client in front of our agent, against the TypeScript pair.
    TsClient,
    /// Our client and agent against the official Rust pair.
    OfficialRust,
}

impl Pairing {
    fn suffix(self) -> &'static str {
        match self {
            Pairing::Ours => "",
            Pairing::TsClient => ", TS client",
            Pairing::OfficialRust => ", vs official Rust",
        }
    }

    fn ours(self) -> &'static str {
        match self {
            Pairing::Ours | Pairing::OfficialRust => "our client -> our echo_agent --listen",
            Pairing::TsClient => "net-client.mjs -> our echo_agent --listen",
        }
    }

    fn reference(self) -> &'static str {
        match self {
            Pairing::Ours | Pairing::TsClient => "net-client.mjs -> net-agent.mjs (@agentclientprotocol/sdk AcpServer)",
            Pairing::OfficialRust => {
                "official-net client -> official-net agent (agent-client-protocol-http HttpClient -> AcpHttpServer)"
            }
        }
    }
}

/// The rows: for each transport, round trips and the notification stream, ours end to end and
/// our agent under the TypeScript client, each against the TypeScript pair; then ours end to
/// end against the official Rust pair (the same figure of ours, not measured again). Over TLS,
/// the round trips without the official pair; with `tls_only`, only those.
pub fn rows(peers: &Peers, quick: bool, tls_only: bool) -> Result<Vec<Row>, String> {
    let sizes = Sizes::new(quick);
    let mut rows = Vec::new();
    for transport in [Transport::Http, Transport::Ws, Transport::Https, Transport::Wss] {
        if tls_only && !transport.is_tls() {
            continue;
        }
        let ts_agent = peers.start(Agent::Ts, transport)?;
        let ours_agent = peers.start(Agent::Ours, transport);
        let official_agent = if transport.is_tls() {
            Err("the official pair is not run over TLS".into())
        } else {
            peers.start_official()
        };
        let reference_url = transport.url(&ts_agent);
        let ours_url = ours_agent.as_ref().map(|listener| transport.url(listener));
        let official_url = official_agent.as_ref().map(|listener| transport.url(listener));
        let t = transport.label();
        for &workload in transport.workloads() {
            let name = |pairing: Pairing| format!("{} over {t}{}", workload.label(), pairing.suffix());
            eprintln!("bench: {} over {t}, reference", workload.label());
            let reference = peers.measure(Client::Ts, &reference_url, workload, sizes)?;
            let ours_with = |client: Client| match &ours_url {
                Ok(url) => peers.measure(client, url, workload, sizes),
                Err(why) => Err(why.to_string()),
            };
            eprintln!("bench: {}", name(Pairing::Ours));
            let ours = ours_with(Client::Ours);
            eprintln!("bench: {}", name(Pairing::TsClient));
            let ts_client = ours_with(Client::Ts);
            if transport.is_tls() {
                rows.push(row(name(Pairing::Ours), workload, Pairing::Ours, sizes, ours, Ok(reference)));
                rows.push(row(name(Pairing::TsClient), workload, Pairing::TsClient, sizes, ts_client, Ok(reference)));
                continue;
            }
            eprintln!("bench: {}", name(Pairing::OfficialRust));
            let official = match &official_url {
                Ok(url) => peers.measure(Client::Official, url, workload, sizes),
                Err(why) => Err(why.to_string()),
            };
            rows.push(row(name(Pairing::Ours), workload, Pairing::Ours, sizes, ours.clone(), Ok(reference)));
            rows.push(row(name(Pairing::TsClient), workload, Pairing::TsClient, sizes, ts_client, Ok(reference)));
            rows.push(row(name(Pairing::OfficialRust), workload, Pairing::OfficialRust, sizes, ours, official));
        }
    }
    Ok(rows)
}

fn row(
    name: String,
    workload: Workload,
    pairing: Pairing,
    sizes: Sizes,
    ours: Result<f64, String>,
    reference: Result<f64, String>,
) -> Row {
    let what = match workload {
        Workload::RoundTrips => format!("{} prompt turns of `x` in one session", sizes.turns),
        Workload::Stream => format!("{} session/update chunks in one turn (`flood N`)", sizes.updates),
    };
    let mut note = format!(
        "ACP v1 on loopback, {what}, long run minus short run (start, connect, initialize excluded), \
         median of {} run(s) each; ours: {}; reference: {}",
        sizes.runs,
        pairing.ours(),
        pairing.reference()
    );
    let ours = match ours {
        Ok(value) => Some(value),
        Err(why) => {
            note.push_str(&format!("; ours not measured: {why}"));
            None
        }
    };
    let reference = match reference {
        Ok(value) => Some(value),
        Err(why) => {
            note.push_str(&format!("; reference not measured: {why}"));
            None
        }
    };
    Row {
        name,
        unit: workload.unit().into(),
        ours,
        reference,
        ratio: ours.zip(reference).map(|(ours, reference)| ours / reference),
        note,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    RoundTrips,
    Stream,
}

impl Workload {
    fn label(self) -> &'static str {
        match self {
            Workload::RoundTrips => "net round trips",
            Workload::Stream => "net notification stream",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Workload::RoundTrips => "turns/s",
            Workload::Stream => "msg/s",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Agent {
    Ts,
    Ours,
}

impl Peers {
    /// Our `echo_agent` example (the stdio scale curve runs it).
    pub(super) fn echo_agent(&self) -> &Path {
        &self.echo_agent
    }

    /// A command run from the repository; Node finds the SDK and trusts the TLS rows' CA.
    fn command(&self, argv: &[String]) -> Command {
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .current_dir(&self.root)
            .env("ACP_INTEROP_NODE_DIR", &self.ts.node_dir)
            .env("NODE_EXTRA_CA_CERTS", &self.pki.ca);
        command
    }

    fn ts_script(&self, name: &str) -> String {
        self.root.join("interop").join("ts").join(name).to_string_lossy().into_owned()
    }

    /// Starts an agent on `127.0.0.1:0`. Ours not listening because it has no `--listen` yet
    /// is an `Err` with the reason (its rows stay empty); for the reference it is an error of the
    /// whole run (the outer `Err`).
    pub(super) fn start(&self, agent: Agent, transport: Transport) -> Result<Listener, String> {
        self.start_with(agent, transport, &[])
    }

    /// [`Peers::start`] with more arguments for the agent (e.g. our `--max-connections N`).
    pub(super) fn start_with(&self, agent: Agent, transport: Transport, extra: &[String]) -> Result<Listener, String> {
        let mut argv = match agent {
            Agent::Ts => vec!["node".to_string(), self.ts_script("net-agent.mjs")],
            Agent::Ours => vec![self.echo_agent.to_string_lossy().into_owned()],
        };
        argv.extend(["--listen".into(), "127.0.0.1:0".into()]);
        argv.extend(extra.iter().cloned());
        if transport.is_tls() {
            let (cert, key) = (self.pki.cert.to_string_lossy(), self.pki.key.to_string_lossy());
            argv.extend(["--tls-cert".into(), cert.into_owned(), "--tls-key".into(), key.into_owned()]);
        }
        let mut command = self.command(&argv);
        Listener::start(&mut command, LISTEN_TIMEOUT).map_err(|e| match e {
            NotListening::Exited { status, .. } if agent == Agent::Ours && status.success() => {
                "echo_agent has no --listen yet (it served stdio and ended)".to_string()
            }
            NotListening::Exited { status, stderr } => {
                format!("`{}` exited with {status} before listening: {}", describe(&command), last_line(&stderr))
            }
            NotListening::TimedOut { stderr } => {
                format!("`{}` printed no `listening on URL`: {}", describe(&command), last_line(&stderr))
            }
            NotListening::Spawn(why) => why,
        })
    }

    /// Starts `official-net agent` on `127.0.0.1:0`; an `Err` (the `vs official Rust` rows
    /// lose their reference) when it was not built or does not come to listen.
    pub(super) fn start_official(&self) -> Result<Listener, String> {
        let exe = self.official.as_ref().map_err(Clone::clone)?;
        let mut command = Command::new(exe);
        command.args(["agent", "--listen", "127.0.0.1:0"]).current_dir(&self.root);
        Listener::start(&mut command, LISTEN_TIMEOUT).map_err(|e| match e {
            NotListening::Exited { status, stderr } => {
                format!("`{}` exited with {status} before listening: {}", describe(&command), last_line(&stderr))
            }
            NotListening::TimedOut { stderr } => {
                format!("`{}` printed no `listening on URL`: {}", describe(&command), last_line(&stderr))
            }
            NotListening::Spawn(why) => why,
        })
    }

    /// The rate of `workload` for `client` against the agent at `url`: per second, from the
    /// medians of the short and the long runs.
    fn measure(&self, client: Client, url: &str, workload: Workload, sizes: Sizes) -> Result<f64, String> {
        let (short, long, count) = match workload {
            Workload::RoundTrips => (
                vec!["--repeat".into(), "1".into(), "--prompt".into(), "x".into()],
                vec!["--repeat".into(), (1 + sizes.turns).to_string(), "--prompt".into(), "x".into()],
                sizes.turns,
            ),
            Workload::Stream => (
                vec!["--prompt".into(), "flood 0".into()],
                vec!["--prompt".into(), format!("flood {}", sizes.updates)],
                sizes.updates,
            ),
        };
        let mut short_times = Vec::new();
        let mut long_times = Vec::new();
        for _ in 0..sizes.runs {
            short_times.push(self.run_client(client, url, &short, 0)?);
            let min_lines = if workload == Workload::Stream { count } else { 0 };
            long_times.push(self.run_client(client, url, &long, min_lines)?);
        }
        let (short, long) = (median(&short_times).unwrap_or(0.0), median(&long_times).unwrap_or(0.0));
        if long <= short {
            return Err(format!("the long run ({long:.3} s) was not slower than the short one ({short:.3} s)"));
        }
        Ok(count as f64 / (long - short))
    }

    /// One client run, timed: its wall time in seconds, when it exited 0 with
    /// `{"stopReason":"end_turn"}` last and at least `min_lines` lines of updates before it.
    fn run_client(&self, client: Client, url: &str, args: &[String], min_lines: usize) -> Result<f64, String> {
        let mut argv = match client {
            Client::Ts => vec!["node".to_string(), self.ts_script("net-client.mjs")],
            Client::Ours => vec![self.client.to_string_lossy().into_owned()],
            Client::Official => {
                let exe = self.official.as_ref().map_err(Clone::clone)?;
                vec![exe.to_string_lossy().into_owned(), "client".into()]
            }
        };
        argv.extend(["--url".into(), url.into()]);
        if client == Client::Ours {
            // The rows are ACP v1, as the reference pairs speak it; our client would agree on v2
            // with our agent, whose turns carry four updates (the echo, `running`, the chunk,
            // `idle`) instead of v1's one.
            argv.extend(["--protocol-version".into(), "1".into()]);
        }
        if client == Client::Ours && (url.starts_with("https://") || url.starts_with("wss://")) {
            argv.extend(["--ca-file".into(), self.pki.ca.to_string_lossy().into_owned()]);
        }
        argv.extend(args.iter().cloned());
        let mut command = self.command(&argv);
        let run = run_with_timeout(&mut command, RUN_TIMEOUT)
            .map_err(|why| format!("cannot run `{}`: {why}", describe(&command)))?;
        judge(&run, client, min_lines).map_err(|why| format!("`{}`: {why}", describe(&command)))?;
        Ok(run.elapsed.as_secs_f64())
    }
}

/// Whether a timed client run counts, as [`Peers::run_client`] says.
fn judge(run: &Finished, client: Client, min_lines: usize) -> Result<(), String> {
    if run.timed_out {
        return Err(format!("timed out after {} s", RUN_TIMEOUT.as_secs()));
    }
    let status = run.status.ok_or("exit status unknown")?;
    if client == Client::Ours && status.code() == Some(2) {
        return Err(format!("client rejected its arguments (no --url or --repeat yet?): {}", last_line(&run.stderr)));
    }
    if !status.success() {
        return Err(format!("exited with {status}: {}", last_line(&run.stderr)));
    }
    let lines: Vec<&str> = run.stdout.lines().filter(|line| !line.trim().is_empty()).collect();
    let Some((last, updates)) = lines.split_last() else { return Err("printed nothing".into()) };
    let stop: serde_json::Value = serde_json::from_str(last).map_err(|e| format!("last line is not JSON ({e})"))?;
    if stop.get("stopReason").and_then(serde_json::Value::as_str) != Some("end_turn") {
        return Err(format!("the turn did not end with end_turn: {last}"));
    }
    if updates.len() < min_lines {
        return Err(format!(
            "{} updates, expected at least {min_lines} (does echo_agent stream `flood N`?)",
            updates.len()
        ));
    }
    Ok(())
}

fn last_line(text: &str) -> &str {
    text.lines().rev().map(str::trim).find(|line| !line.is_empty()).unwrap_or("(no output)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn finished(code: i32, stdout: &str) -> Finished {
        use std::os::unix::process::ExitStatusExt;
        Finished {
            status: Some(std::process::ExitStatus::from_raw(code << 8)),
            timed_out: false,
            stdout: stdout.into(),
            stderr: "client: unexpected argument --url\n".into(),
            elapsed: Duration::from_millis(10),
        }
    }

    #[cfg(unix)]
    #[test]
    fn judges_client_runs() {
        let ok = "{\"sessionUpdate\":\"agent_message_chunk\"}\n{\"stopReason\":\"end_turn\"}\n";
        assert!(judge(&finished(0, ok), Client::Ours, 1).is_ok());
        assert!(judge(&finished(0, ok), Client::Ours, 2).unwrap_err().contains("flood N"));
        assert!(judge(&finished(2, ""), Client::Ours, 0).unwrap_err().contains("no --url"));
        assert!(judge(&finished(1, ""), Client::Ts, 0).unwrap_err().contains("unexpected argument --url"));
        let cancelled = "{\"stopReason\":\"cancelled\"}\n";
        assert!(judge(&finished(0, cancelled), Client::Ts, 0).unwrap_err().contains("end_turn"));
    }

    #[test]
    fn rows_keep_the_reference_when_ours_is_missing() {
        let sizes = Sizes::new(true);
        let r = row(
            "net round trips over ws".into(),
            Workload::RoundTrips,
            Pairing::Ours,
            sizes,
            Err("x".into()),
            Ok(400.0),
        );
        assert_eq!((r.ours, r.reference, r.ratio), (None, Some(400.0), None));
        assert!(r.note.ends_with("ours not measured: x"), "{}", r.note);
        let r = row("n".into(), Workload::Stream, Pairing::TsClient, sizes, Ok(800.0), Ok(400.0));
        assert_eq!(r.ratio, Some(2.0));
        assert_eq!(r.unit, "msg/s");
    }

    #[test]
    fn official_rows_keep_ours_when_the_reference_is_missing() {
        let r = row(
            "net round trips over http, vs official Rust".into(),
            Workload::RoundTrips,
            Pairing::OfficialRust,
            Sizes::new(true),
            Ok(900.0),
            Err("bench/official-net did not build: x".into()),
        );
        assert_eq!((r.ours, r.reference, r.ratio), (Some(900.0), None, None));
        assert!(r.note.contains("AcpHttpServer"), "{}", r.note);
        assert!(r.note.ends_with("reference not measured: bench/official-net did not build: x"), "{}", r.note);
    }
}
