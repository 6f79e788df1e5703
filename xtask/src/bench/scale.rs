//! The scale curves of `cargo xtask bench` (`--scale` alone): how cost grows with the number of
//! connections (HTTP, WebSocket) and of sessions on one stdio connection, ours against the
//! TypeScript `AcpServer` and the official Rust `AcpHttpServer` (the servers of [`super::net`]).
//!
//! For each server, transport and size N, a fresh server is started and `scale-load` (the one
//! load generator of `bench/scale-load`, the same raw ACP v1 requests for every server):
//! - `idle`: opens N connections (`initialize`, `session/new`; over HTTP both SSE streams held),
//!   then the server's `VmRSS` (`/proc/PID/status`) minus its `VmRSS` before, divided by N, is
//!   the memory per idle connection (with its session);
//! - `active`, on another fresh server (so that the idle phase's freed heap, reused, does not
//!   hide what the busy phase costs): N connections, each doing prompt turns one after another
//!   for a fixed time: turns per second in all, the 99th percentile of a turn's latency, and the
//!   memory per active connection: the server's peak `VmRSS` from the opening of the connections
//!   to the end of the turns, minus its `VmRSS` before, divided by N (read by `scale-load`).
//!
//! On stdio: one connection to our `echo_agent`, N sessions on it, each doing turns; the memory
//! per active session is the agent's peak growth from after `initialize` to the end of the turns,
//! divided by N. A size that cannot run here (more sockets than `RLIMIT_NOFILE` allows) gets its
//! reason instead of a number.
//!
//! The curves are drawn by [`super::plot`] into `bench/plots/`, and the table, the links to the
//! plots and how each curve grows go into `BENCHMARKS.md` between [`BEGIN`] and [`END`].

use super::net::{Agent, Peers, Transport};
use super::plot::{Plot, Series};
use super::table::{replace_between, sig3, thousands};
use crate::listener::{ws_url, Listener};
use crate::process::{self, describe, run_with_timeout};
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The start of the scale section of `BENCHMARKS.md`.
pub const BEGIN: &str = "<!-- scale:begin -->";
/// Its end.
pub const END: &str = "<!-- scale:end -->";

/// How long one load run may take (opening 10,000 connections to a slow server included).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// Sockets a connection holds at the server: over HTTP the connection's SSE stream, the session's
/// and the POSTs' keep-alive connection; over WebSocket the one socket.
const HTTP_SOCKETS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Ours,
    Ts,
    Official,
}

impl Server {
    pub fn label(self) -> &'static str {
        match self {
            Server::Ours => "ours",
            Server::Ts => "TypeScript AcpServer",
            Server::Official => "official Rust AcpHttpServer",
        }
    }

    /// Its name in a plot's legend (which has 150 pixels).
    pub fn short(self) -> &'static str {
        match self {
            Server::Ours => "ours",
            Server::Ts => "TypeScript",
            Server::Official => "official Rust",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Http,
    Ws,
    /// Sessions on one stdio connection.
    Stdio,
}

impl Link {
    pub fn label(self) -> &'static str {
        match self {
            Link::Http => "http",
            Link::Ws => "ws",
            Link::Stdio => "stdio",
        }
    }

    /// What N counts.
    fn unit(self) -> &'static str {
        match self {
            Link::Stdio => "sessions on one connection",
            _ => "connections",
        }
    }
}

/// The figures of one point; each `Err` says why it is missing.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// KiB of server RSS per idle connection.
    pub kib: Result<f64, String>,
    /// KiB of the server's peak RSS growth per connection (on stdio, per session) doing turns.
    pub active_kib: Result<f64, String>,
    pub turns_per_s: Result<f64, String>,
    pub p99_ms: Result<f64, String>,
}

impl Measure {
    fn failed(why: String) -> Measure {
        Measure { kib: Err(why.clone()), active_kib: Err(why.clone()), turns_per_s: Err(why.clone()), p99_ms: Err(why) }
    }
}

/// One server over one transport, at each size.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    pub link: Link,
    pub server: Server,
    pub points: Vec<(usize, Measure)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Memory per idle connection.
    Memory,
    /// Memory per connection (on stdio, per session) doing turns.
    ActiveMemory,
    Turns,
    P99,
}

impl Metric {
    /// Its name in the tables and plots of `link`.
    fn label(self, link: Link) -> &'static str {
        match (self, link) {
            (Metric::Memory, _) => "KiB per idle connection",
            (Metric::ActiveMemory, Link::Stdio) => "KiB per active session",
            (Metric::ActiveMemory, _) => "KiB per active connection (session)",
            (Metric::Turns, _) => "turns/s",
            (Metric::P99, _) => "p99 ms",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            Metric::Memory => "memory",
            Metric::ActiveMemory => "active-memory",
            Metric::Turns => "turns",
            Metric::P99 => "p99",
        }
    }

    fn of(self, m: &Measure) -> &Result<f64, String> {
        match self {
            Metric::Memory => &m.kib,
            Metric::ActiveMemory => &m.active_kib,
            Metric::Turns => &m.turns_per_s,
            Metric::P99 => &m.p99_ms,
        }
    }

    fn for_link(link: Link) -> &'static [Metric] {
        match link {
            Link::Stdio => &[Metric::ActiveMemory, Metric::Turns, Metric::P99],
            _ => &[Metric::Memory, Metric::ActiveMemory, Metric::Turns, Metric::P99],
        }
    }
}

/// The sizes measured, and seconds of turns per active point.
fn sizes(quick: bool) -> (&'static [usize], &'static [usize], f64) {
    if quick {
        (&[10, 100], &[1, 10], 1.0)
    } else {
        (&[10, 100, 1_000, 10_000], &[1, 10, 100, 1_000], 2.0)
    }
}

/// Runs the curves, writes the plots into `bench/plots/` and, when `write`, the section of
/// `BENCHMARKS.md`; returns the section's text (printed by the caller).
pub fn run(root: &Path, peers: &Peers, quick: bool, write: bool, command: &str) -> Result<String, String> {
    let load = build_load(root)?;
    let (sizes, stdio_sizes, seconds) = sizes(quick);
    let limit = nofile_limit();
    let mut curves = Vec::new();
    for link in [Link::Http, Link::Ws] {
        for server in [Server::Ours, Server::Ts, Server::Official] {
            let mut points = Vec::new();
            for &n in sizes {
                eprintln!("bench: scale: {} over {}, {n} connections", server.label(), link.label());
                let sockets = if link == Link::Http { HTTP_SOCKETS * n } else { n };
                let measure = match limit {
                    Some(limit) if sockets + 64 > limit => Measure::failed(format!(
                        "needs {} sockets in the server and in the load generator, RLIMIT_NOFILE here is {}",
                        thousands(sockets as u64),
                        thousands(limit as u64)
                    )),
                    _ => measure_net(peers, &load, server, link, n, sockets, seconds),
                };
                points.push((n, measure));
            }
            curves.push(Curve { link, server, points });
        }
    }
    let mut points = Vec::new();
    for &n in stdio_sizes {
        eprintln!("bench: scale: ours over stdio, {n} sessions");
        points.push((n, measure_stdio(&load, peers.echo_agent(), n, seconds)));
    }
    curves.push(Curve { link: Link::Stdio, server: Server::Ours, points });

    let dir = root.join("bench").join("plots");
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (name, plot) in plots(&curves) {
        let path = dir.join(&name);
        fs::write(&path, plot.svg()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let section = render_section(&curves, command, seconds);
    if write {
        let path = root.join("BENCHMARKS.md");
        let existing = fs::read_to_string(&path).unwrap_or_default();
        let text = replace_between(&existing, BEGIN, END, &section)?;
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("bench: scale: wrote {} and {}", path.display(), dir.display());
    } else {
        eprintln!("bench: scale: wrote {} (BENCHMARKS.md left as it is; add --write)", dir.display());
    }
    Ok(section)
}

/// Builds `scale-load` in the `bench/` workspace.
fn build_load(root: &Path) -> Result<PathBuf, String> {
    let mut build = process::cargo();
    build
        .args(["build", "--release", "--manifest-path", "bench/Cargo.toml", "--target-dir", "bench/target"])
        .args(["-p", "acp-bench-scale-load"])
        .current_dir(root);
    eprintln!("bench: building the load generator: {}", describe(&build));
    process::stream(&mut build, |_| {})?;
    Ok(root.join("bench/target/release").join(format!("scale-load{}", std::env::consts::EXE_SUFFIX)))
}

/// The soft limit of open files, from `/proc/self/limits` (inherited by the servers).
fn nofile_limit() -> Option<usize> {
    let text = fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// `VmRSS` of `pid` in KiB.
fn rss_kib(pid: u32) -> Result<f64, String> {
    let text = fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| format!("cannot read VmRSS: {e}"))?;
    parse_vmrss(&text).ok_or_else(|| "no VmRSS in /proc/PID/status".into())
}

fn parse_vmrss(status: &str) -> Option<f64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Starts `server` for `sockets` TCP connections at once: ours is told so (its default,
/// `Limits::max_tcp_connections`, is 1,024), the references have no such limit.
fn start(peers: &Peers, server: Server, sockets: usize) -> Result<(Listener, String), String> {
    match server {
        Server::Ours => {
            let max = ["--max-connections".to_string(), (sockets + 64).to_string()];
            peers.start_with(Agent::Ours, Transport::Http, &max).map(|l| (l.url.clone(), l))
        }
        Server::Ts => peers.start(Agent::Ts, Transport::Http).map(|l| (l.url.clone(), l)),
        // `AcpHttpServer` serves ACP on `/acp` (`ServerOptions::default`, agent-client-protocol-http 5.0.0).
        Server::Official => peers.start_official().map(|l| (format!("{}/acp", l.url), l)),
    }
    .map(|(url, listener)| (listener, url))
}

fn measure_net(
    peers: &Peers,
    load: &Path,
    server: Server,
    link: Link,
    n: usize,
    sockets: usize,
    seconds: f64,
) -> Measure {
    let (listener, url) = match start(peers, server, sockets) {
        Ok(started) => started,
        Err(why) => return Measure::failed(why),
    };
    let url = if link == Link::Ws { ws_url(&url) } else { url };
    let kib = idle(load, &url, listener.pid(), n);
    drop(listener);
    let (listener, url) = match start(peers, server, sockets) {
        Ok(started) => started,
        Err(why) => return Measure { kib, ..Measure::failed(why) },
    };
    let url = if link == Link::Ws { ws_url(&url) } else { url };
    let mut command = Command::new(load);
    command.args(["active", &url, &n.to_string(), &seconds.to_string(), &listener.pid().to_string()]);
    let measure = busy(&mut command, n, kib);
    drop(listener);
    measure
}

/// Opens `n` idle connections and reads the server's memory growth per connection.
fn idle(load: &Path, url: &str, pid: u32, n: usize) -> Result<f64, String> {
    let before = rss_kib(pid)?;
    let mut command = Command::new(load);
    command.args(["idle", url, &n.to_string()]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| format!("cannot run {}: {e}", describe(&command)))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(RUN_TIMEOUT);
    // The server settles (the last frames answered, buffers returned) before it is read.
    std::thread::sleep(Duration::from_millis(300));
    let after = rss_kib(pid);
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    let line = line.map_err(|_| format!("{} connections not open within {} s", n, RUN_TIMEOUT.as_secs()))?;
    let opened: usize =
        line.trim().strip_prefix("ready ").and_then(|k| k.parse().ok()).ok_or("scale-load printed no `ready`")?;
    if opened < n {
        return Err(format!("only {opened} of {n} connections opened"));
    }
    Ok((after? - before) / n as f64)
}

/// Runs an `active` or `stdio` load (`n` connections or sessions) into a [`Measure`], `kib` the
/// idle figure measured before.
fn busy(command: &mut Command, n: usize, kib: Result<f64, String>) -> Measure {
    match active(command, n) {
        Ok(stats) => Measure {
            kib,
            active_kib: stats
                .memory_kib
                .map(|total| total / n as f64)
                .ok_or_else(|| "scale-load could not read the server's memory".to_string()),
            turns_per_s: Ok(stats.turns as f64 / stats.seconds),
            p99_ms: Ok(stats.p99_ms),
        },
        Err(why) => Measure { kib, ..Measure::failed(why) },
    }
}

/// Runs an `active` or `stdio` load and reads its `turns T seconds S p99_ms P opened O errors E
/// [memory_kib M]`.
fn active(command: &mut Command, n: usize) -> Result<Stats, String> {
    let run = run_with_timeout(command, RUN_TIMEOUT).map_err(|why| format!("cannot run scale-load: {why}"))?;
    if run.timed_out {
        return Err(format!("did not end within {} s", RUN_TIMEOUT.as_secs()));
    }
    let stats = parse_stats(&run.stdout).ok_or_else(|| format!("scale-load: {}", run.stderr.trim()))?;
    if stats.opened < n || stats.errors > 0 || stats.turns == 0 {
        return Err(format!(
            "{} of {n} opened, {} errors, {} turns: {}",
            stats.opened,
            stats.errors,
            stats.turns,
            run.stderr.lines().last().unwrap_or("")
        ));
    }
    Ok(stats)
}

fn measure_stdio(load: &Path, agent: &Path, n: usize, seconds: f64) -> Measure {
    let mut command = Command::new(load);
    command.args(["stdio", &n.to_string(), &seconds.to_string(), "--"]).arg(agent);
    busy(&mut command, n, Err("not measured on stdio".into()))
}

#[derive(Debug, PartialEq)]
struct Stats {
    turns: usize,
    seconds: f64,
    p99_ms: f64,
    opened: usize,
    errors: usize,
    /// KiB of the server's (agent's) peak RSS growth over the run, in all.
    memory_kib: Option<f64>,
}

fn parse_stats(stdout: &str) -> Option<Stats> {
    let words: Vec<&str> = stdout.lines().last()?.split_whitespace().collect();
    let get = |key: &str| words.windows(2).find(|w| w[0] == key).map(|w| w[1]);
    Some(Stats {
        turns: get("turns")?.parse().ok()?,
        seconds: get("seconds")?.parse().ok()?,
        p99_ms: get("p99_ms")?.parse().ok()?,
        opened: get("opened")?.parse().ok()?,
        errors: get("errors")?.parse().ok()?,
        memory_kib: get("memory_kib").and_then(|kib| kib.parse().ok()),
    })
}

/// The plots: per transport, one per metric with a line per server; their file names.
pub fn plots(curves: &[Curve]) -> Vec<(String, Plot)> {
    let mut out = Vec::new();
    for link in [Link::Http, Link::Ws, Link::Stdio] {
        let of_link: Vec<&Curve> = curves.iter().filter(|c| c.link == link).collect();
        if of_link.is_empty() {
            continue;
        }
        for &metric in Metric::for_link(link) {
            let series = of_link
                .iter()
                .map(|c| Series {
                    name: c.server.short().into(),
                    points: c
                        .points
                        .iter()
                        .filter_map(|(n, m)| metric.of(m).as_ref().ok().map(|v| (*n as f64, *v)))
                        .collect(),
                })
                .collect();
            let plot = Plot {
                title: format!("{} over {}", metric.label(link), link.label()),
                x_label: format!("{} (log scale)", link.unit()),
                y_label: metric.label(link).into(),
                series,
            };
            out.push((format!("scale-{}-{}.svg", link.label(), metric.slug()), plot));
        }
    }
    out
}

fn figure(v: f64) -> String {
    if v >= 100.0 {
        thousands(v.round() as u64)
    } else {
        sig3(v)
    }
}

/// How a curve grows: the exponent `b` of `value ∝ N^b` between its first and last measured
/// points, and a sentence on it.
pub fn growth(curve: &Curve, metric: Metric) -> Option<String> {
    let measured: Vec<(usize, f64)> =
        curve.points.iter().filter_map(|(n, m)| metric.of(m).as_ref().ok().map(|v| (*n, *v))).collect();
    // Memory per connection from the last two sizes: at the first ones the server's fixed
    // start-up allocations, spread over few connections, dominate.
    let memory = matches!(metric, Metric::Memory | Metric::ActiveMemory);
    let first = if memory && measured.len() > 2 { &measured[measured.len() - 2] } else { measured.first()? };
    let (&(n0, v0), &(n1, v1)) = (first, measured.last()?);
    if n1 <= n0 || v0 <= 0.0 || v1 <= 0.0 {
        return None;
    }
    let b = (v1 / v0).ln() / (n1 as f64 / n0 as f64).ln();
    let range = format!("{} from {} to {}", metric.label(curve.link), figure(v0), figure(v1),);
    let span = format!("{} to {} {}", thousands(n0 as u64), thousands(n1 as u64), curve.link.unit());
    let what = match metric {
        Metric::Memory => format!(
            "{range} ({span}): {}",
            memory_growth(b, "connection", "its socket buffers, session state and task")
        ),
        Metric::ActiveMemory if curve.link == Link::Stdio => format!(
            "{range} ({span}): {}",
            memory_growth(b, "session", "its state, its turn's task and the messages in flight")
        ),
        Metric::ActiveMemory => format!(
            "{range} ({span}): {}",
            memory_growth(b, "connection", "the idle cost plus its turn's task, buffers and messages in flight")
        ),
        Metric::Turns => {
            let shape = if b > 0.15 {
                "throughput still rises with concurrency (the server was not saturated at the smallest size)"
            } else if b > -0.15 {
                "throughput is flat: the server is saturated on the 2 cores, each connection gets 1/N of it"
            } else {
                "throughput falls as connections are added: per-connection overhead (scheduling, syscalls, memory) eats into the work"
            };
            format!("{range} ({span}, N^{b:.2}): {shape}")
        }
        Metric::P99 => {
            let shape = if b < 0.85 {
                "latency grows less than linearly (the server was not yet saturated)"
            } else if b < 1.15 {
                "latency grows linearly: with throughput saturated each turn waits behind the other N-1 (Little's law)"
            } else {
                "latency grows worse than linearly: throughput falls as N rises, on top of the queueing"
            };
            format!("{range} ({span}, N^{b:.2}): {shape}")
        }
    };
    Some(format!("{} over {}, {what}.", curve.server.label(), curve.link.label()))
}

/// What the exponent `b` of memory per `unit` says of the total (`cost`: what a fixed cost per
/// unit is made of).
fn memory_growth(b: f64, unit: &str, cost: &str) -> String {
    if b.abs() < 0.15 {
        format!("total memory grows linearly (a fixed cost per {unit}: {cost})")
    } else if b < 0.0 {
        format!("total memory grows less than linearly (fixed buffers and pools amortised over more {unit}s)")
    } else {
        format!("total memory grows worse than linearly (per-{unit} cost rising with the count)")
    }
}

/// The section: per transport a table (rows: server and metric; columns: sizes), the missing
/// cells' reasons as numbered notes, the plots, and how each curve grows.
pub fn render_section(curves: &[Curve], command: &str, seconds: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### Scale curves\n");
    let _ = writeln!(
        out,
        "`{command}`: a fresh server per point; `bench/scale-load` (one load generator for all servers, raw ACP v1) opens \
         N connections with a session each; memory per idle connection is the server's VmRSS growth divided by N with \
         the connections idle. Then, on another fresh server, N connections each do prompt turns one after another for \
         {seconds} s: turns/s in all, the p99 turn latency, and memory per active connection: the server's peak VmRSS \
         (VmHWM, reset when the load starts) over the opening and the turns, minus its VmRSS before, divided by N. \
         On stdio, N sessions on one connection to our `echo_agent` (ours alone: the bench has no official stdio agent \
         program, its runtime rows run the official pair in-process), memory per active session measured the same way \
         on the agent from after `initialize`.\n"
    );
    let mut notes: Vec<String> = Vec::new();
    for link in [Link::Http, Link::Ws, Link::Stdio] {
        let of_link: Vec<&Curve> = curves.iter().filter(|c| c.link == link).collect();
        let Some(first) = of_link.first() else { continue };
        let sizes: Vec<usize> = first.points.iter().map(|(n, _)| *n).collect();
        let _ = write!(out, "| {} ({}) |", link.label(), link.unit());
        for n in &sizes {
            let _ = write!(out, " {} |", thousands(*n as u64));
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "|---|{}", "---:|".repeat(sizes.len()));
        for &metric in Metric::for_link(link) {
            for curve in &of_link {
                let _ = write!(out, "| {}, {} |", curve.server.label(), metric.label(link));
                for (_, measure) in &curve.points {
                    match metric.of(measure) {
                        Ok(v) => {
                            let _ = write!(out, " {} |", figure(*v));
                        }
                        Err(why) => {
                            let index = match notes.iter().position(|n| n == why) {
                                Some(i) => i,
                                None => {
                                    notes.push(why.clone());
                                    notes.len() - 1
                                }
                            };
                            let _ = write!(out, " n/a [{}] |", index + 1);
                        }
                    }
                }
                let _ = writeln!(out);
            }
        }
        let _ = writeln!(out);
    }
    if !notes.is_empty() {
        for (i, note) in notes.iter().enumerate() {
            let _ = writeln!(out, "[{}] {}  ", i + 1, note.replace('|', "\\|"));
        }
        let _ = writeln!(out);
    }
    for (name, plot) in plots(curves) {
        let _ = writeln!(out, "![{}](bench/plots/{name})", plot.title);
    }
    let _ = writeln!(out);
    for curve in curves {
        for &metric in Metric::for_link(curve.link) {
            if let Some(sentence) = growth(curve, metric) {
                let _ = writeln!(out, "- {sentence}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point whose memory per active connection is twice the idle one.
    fn measure(kib: f64, turns: f64, p99: f64) -> Measure {
        Measure { kib: Ok(kib), active_kib: Ok(2.0 * kib), turns_per_s: Ok(turns), p99_ms: Ok(p99) }
    }

    fn curves() -> Vec<Curve> {
        vec![
            Curve {
                link: Link::Ws,
                server: Server::Ours,
                points: vec![(10, measure(30.0, 20_000.0, 1.0)), (1_000, measure(31.0, 20_000.0, 100.0))],
            },
            Curve {
                link: Link::Ws,
                server: Server::Ts,
                points: vec![(10, measure(90.0, 5_000.0, 4.0)), (1_000, Measure::failed("too | many".into()))],
            },
            Curve {
                link: Link::Stdio,
                server: Server::Ours,
                points: vec![
                    (1, Measure { kib: Err("not measured on stdio".into()), ..measure(0.0, 9_000.0, 0.2) }),
                    (10, Measure { active_kib: Ok(4.0), ..measure(0.0, 9_000.0, 2.0) }),
                    (100, Measure { active_kib: Ok(16.0), ..measure(0.0, 9_000.0, 20.0) }),
                ],
            },
        ]
    }

    #[test]
    fn the_table_has_a_row_per_server_and_metric_and_notes_for_missing_cells() {
        let text = render_section(&curves(), "cargo xtask bench --scale", 2.0);
        assert!(text.contains("| ws (connections) | 10 | 1,000 |\n|---|---:|---:|\n"), "{text}");
        assert!(text.contains("| ours, turns/s | 20,000 | 20,000 |"), "{text}");
        assert!(text.contains("| TypeScript AcpServer, KiB per idle connection | 90.0 | n/a [1] |"), "{text}");
        assert!(text.contains("| TypeScript AcpServer, p99 ms | 4.00 | n/a [1] |"), "{text}");
        assert!(text.contains("| ours, KiB per active connection (session) | 60.0 | 62.0 |"), "{text}");
        assert!(
            text.contains("| TypeScript AcpServer, KiB per active connection (session) | 180 | n/a [1] |"),
            "{text}"
        );
        assert!(text.contains("| stdio (sessions on one connection) | 1 | 10 | 100 |"), "{text}");
        assert!(text.contains("| ours, KiB per active session | 0 | 4.00 | 16.0 |"), "{text}");
        assert!(!text.contains("not measured on stdio"), "stdio has no idle row: {text}");
        assert!(
            text.contains("![KiB per active session over stdio](bench/plots/scale-stdio-active-memory.svg)"),
            "{text}"
        );
        assert!(text.contains("[1] too \\| many"), "{text}");
        assert!(!text.contains("[2]"), "one note for one reason: {text}");
        assert!(text.contains("![turns/s over ws](bench/plots/scale-ws-turns.svg)"), "{text}");
        assert!(!text.contains("http ("), "no http curves, no http table: {text}");
    }

    #[test]
    fn growth_names_the_shape_of_a_curve() {
        let curves = curves();
        let p99 = growth(&curves[0], Metric::P99).unwrap();
        assert!(p99.contains("N^1.00") && p99.contains("linearly"), "{p99}");
        let turns = growth(&curves[0], Metric::Turns).unwrap();
        assert!(turns.contains("flat"), "{turns}");
        let memory = growth(&curves[0], Metric::Memory).unwrap();
        assert!(memory.contains("grows linearly"), "{memory}");
        let active = growth(&curves[0], Metric::ActiveMemory).unwrap();
        assert!(active.contains("KiB per active connection (session) from 60.0 to 62.0"), "{active}");
        assert!(active.contains("grows linearly (a fixed cost per connection"), "{active}");
        let stdio = growth(&curves[2], Metric::ActiveMemory).unwrap();
        assert!(
            stdio.contains("KiB per active session from 4.00 to 16.0 (10 to 100 sessions"),
            "from the last two: {stdio}"
        );
        assert!(stdio.contains("worse than linearly (per-session cost"), "{stdio}");
        assert_eq!(growth(&curves[1], Metric::Turns), None, "one measured point is no curve");
    }

    #[test]
    fn plots_come_per_transport_and_metric_without_missing_points() {
        let plots = plots(&curves());
        let names: Vec<&str> = plots.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "scale-ws-memory.svg",
                "scale-ws-active-memory.svg",
                "scale-ws-turns.svg",
                "scale-ws-p99.svg",
                "scale-stdio-active-memory.svg",
                "scale-stdio-turns.svg",
                "scale-stdio-p99.svg"
            ]
        );
        assert_eq!(plots[2].1.series[1].points, vec![(10.0, 5_000.0)]);
        assert_eq!(plots[1].1.series[1].points, vec![(10.0, 180.0)]);
    }

    #[test]
    fn load_output_and_proc_status_are_read() {
        let stats = parse_stats("turns 120 seconds 2.000 p99_ms 1.5 opened 10 errors 0\n").unwrap();
        assert_eq!(stats, Stats { turns: 120, seconds: 2.0, p99_ms: 1.5, opened: 10, errors: 0, memory_kib: None });
        let stats = parse_stats("turns 1 seconds 1 p99_ms 1 opened 1 errors 0 memory_kib 2048\n").unwrap();
        assert_eq!(stats.memory_kib, Some(2048.0));
        assert_eq!(parse_stats("turns x"), None);
        assert_eq!(parse_vmrss("Name:\tx\nVmRSS:\t    7792 kB\n"), Some(7792.0));
        assert_eq!(parse_vmrss("Name:\tx\n"), None);
    }
}
