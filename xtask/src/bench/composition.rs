//! The composition rows of `cargo xtask bench`: prompt turns through a conductor that runs 0, 1
//! or 2 proxies (our `examples/proxy --prefix`) in front of our `echo_agent`, under our conductor
//! (`acp conduct agent`, release) and under the official one (`agent-client-protocol-conductor
//! agent`, the build `cargo xtask interop` makes of the crates.io crate), driven by our `client`
//! example over stdio, ACP v1 (the official conductor speaks v1 only).
//!
//! Each figure is the difference of two client runs, as the network rows do it: `--repeat 1+T`
//! minus `--repeat 1`, so that starting the chain, `initialize` and `session/new` cancel out;
//! each time the median of its runs. Rows: turns/s per chain length (ours against the official
//! conductor), and the cost of one hop (ours with one proxy as a fraction of ours with none).
//! Per-turn latencies (p50/p99) need timings the client does not print: not measured here.

use super::net::build_ours;
use super::table::{median, Row};
use crate::process::{describe, run_with_timeout};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The limit of one client run.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// What the rows run.
struct Programs {
    client: PathBuf,
    proxy: PathBuf,
    echo_agent: PathBuf,
    acp: PathBuf,
    /// The official conductor, or why there is none.
    official: Result<PathBuf, String>,
}

/// Finds our programs in release ([`build_ours`]: the build all rows share) and installs the
/// official conductor in release.
fn prepare(root: &Path) -> Result<Programs, String> {
    let release = build_ours(root)?;
    let exe = |name: &str| format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let examples = release.join("examples");
    // Release, as ours: the interop's build (debug, `.cache/interop/conductor`) made the official
    // conductor's figures those of unoptimised code.
    let official = crate::interop::install_conductor_release(root, &root.join(".cache").join("bench"));
    Ok(Programs {
        client: examples.join(exe("client")),
        proxy: examples.join(exe("proxy")),
        echo_agent: examples.join(exe("echo_agent")),
        acp: release.join(exe("acp")),
        official,
    })
}

/// The rows; `quick` fewer turns and runs.
pub fn rows(root: &Path, quick: bool) -> Result<Vec<Row>, String> {
    let programs = prepare(root)?;
    let (turns, runs) = if quick { (300, 1) } else { (2_000, 3) };
    let mut rows = Vec::new();
    let mut ours_by_hops = Vec::new();
    for proxies in 0..=2usize {
        let ours = turn_time(&programs, &conductor(&programs.acp, &["conduct", "agent"]), proxies, turns, runs)?;
        let official = match &programs.official {
            Ok(bin) => {
                turn_time(&programs, &conductor(bin, &["agent"]), proxies, turns, runs).map_err(|e| e.to_string())
            }
            Err(why) => Err(why.clone()),
        };
        ours_by_hops.push(ours);
        let rate = |secs: f64| turns as f64 / secs;
        let (reference, ratio, why) = match official {
            Ok(official) => (Some(rate(official)), Some(official / ours), String::new()),
            Err(why) => (None, None, format!("; no reference: {why}")),
        };
        rows.push(Row {
            name: format!("composition turns, {proxies} prox{}", if proxies == 1 { "y" } else { "ies" }),
            unit: "turns/s".into(),
            ours: Some(rate(ours)),
            reference,
            ratio,
            note: format!(
                "{turns} prompt turns through the conductor and {proxies} `proxy --prefix` in front of `echo_agent`, our client over stdio; reference = the official conductor {} with the same components{why}",
                crate::interop::CONDUCTOR_VERSION
            ),
        });
    }
    if let [direct, one, ..] = ours_by_hops[..] {
        rows.push(Row {
            name: "composition one hop, ours".into(),
            unit: "turns/s".into(),
            ours: Some(turns as f64 / one),
            reference: Some(turns as f64 / direct),
            ratio: Some(direct / one),
            note: "ours with one proxy against ours with none (the reference here): the ratio is the share of a direct turn's pace a hop leaves, target >= 0.8 (a hop costs at most 20 %)".into(),
        });
    }
    Ok(rows)
}

/// `PROGRAM ARGS…` as the conductor's words before its components.
fn conductor(program: &Path, args: &[&str]) -> Vec<String> {
    std::iter::once(program.display().to_string()).chain(args.iter().map(|a| a.to_string())).collect()
}

/// Seconds for `turns` prompt turns through `conductor` with `proxies` proxies: the median over
/// `runs` of `--repeat 1+turns` minus the median of `--repeat 1`.
fn turn_time(
    programs: &Programs,
    conductor: &[String],
    proxies: usize,
    turns: usize,
    runs: usize,
) -> Result<f64, String> {
    let mut components: Vec<String> = Vec::new();
    for n in 0..proxies {
        components.push(format!("'{}' --prefix p{n}:", programs.proxy.display()));
    }
    components.push(format!("'{}'", programs.echo_agent.display()));
    let time = |repeat: usize| -> Result<f64, String> {
        let mut times = Vec::new();
        for _ in 0..runs {
            let mut client = Command::new(&programs.client);
            client.args(["--protocol-version", "1", "--prompt", "x", "--repeat", &repeat.to_string(), "--"]);
            client.args(conductor).args(&components);
            let run = run_with_timeout(&mut client, RUN_TIMEOUT)?;
            if !run.status.is_some_and(|s| s.success()) {
                return Err(format!("`{}` failed: {}", describe(&client), run.stderr.lines().last().unwrap_or("")));
            }
            times.push(run.elapsed.as_secs_f64());
        }
        median(&times).ok_or_else(|| "no run".to_string())
    };
    let (long, short) = (time(1 + turns)?, time(1)?);
    Ok((long - short).max(1e-9))
}
