//! The composition rows of `cargo xtask bench`: prompt turns through a conductor that runs 0, 1
//! or 2 proxies (our `examples/proxy --prefix`) in front of our `echo_agent`, under our conductor
//! (`acp conduct agent`, release) and under the official one (`agent-client-protocol-conductor
//! agent`, the build `cargo xtask interop` makes of the crates.io crate), driven by our `client`
//! example over stdio, ACP v1 (the official conductor speaks v1 only).
//!
//! Each figure is the difference of two client runs, as the network rows do it: `--repeat 1+T`
//! minus `--repeat 1`, so that starting the chain, `initialize` and `session/new` cancel out;
//! each time the median of its runs. Rows per chain length, ours against the official conductor:
//! - turns/s;
//! - the p99 of a turn's time (the client's `--turn-times`: prompt sent to outcome, every turn
//!   of the long runs), the p50 in the note;
//! - the notification flood: one turn of `flood N` (N `session/update`s, then the answer)
//!   minus one turn of `x`;
//! - memory: the sum of the peak resident sets (`VmHWM`) of the conductor and every component
//!   during the flood ([`treemem`]);
//!
//! and the cost of one hop (ours with one proxy as a fraction of ours with none).

use super::net::build_ours;
use super::table::{median, sig3, Row};
use super::treemem;
use crate::process::{describe, run_with_timeout};
use std::fs;
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

/// The sizes of one run of the rows.
#[derive(Clone, Copy)]
struct Sizes {
    turns: usize,
    flood: usize,
    runs: usize,
}

/// What one chain measured under one conductor.
struct Measured {
    /// Seconds for `turns` turns.
    turns: f64,
    /// Each turn's time of the long runs, microseconds, sorted.
    turn_times: Vec<f64>,
    /// Seconds for `flood` updates.
    flood: f64,
    /// The chain's peak resident memory (KiB) and how many processes it was.
    memory: (u64, usize),
}

/// The rows; `quick` fewer turns and runs.
pub fn rows(root: &Path, quick: bool) -> Result<Vec<Row>, String> {
    let programs = prepare(root)?;
    let sizes = if quick {
        Sizes { turns: 300, flood: 5_000, runs: 1 }
    } else {
        Sizes { turns: 2_000, flood: 50_000, runs: 3 }
    };
    let scratch = root.join(".cache").join("bench").join("composition");
    fs::create_dir_all(&scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let mut rows = Vec::new();
    let mut ours_by_hops = Vec::new();
    for proxies in 0..=2usize {
        eprintln!("bench: composition, {proxies} proxies: ours");
        let chain = Chain { programs: &programs, proxies, scratch: &scratch };
        let ours = chain.measure(&conductor(&programs.acp, &["conduct", "agent"]), sizes)?;
        eprintln!("bench: composition, {proxies} proxies: the official conductor");
        let official = match &programs.official {
            Ok(bin) => chain.measure(&conductor(bin, &["agent"]), sizes),
            Err(why) => Err(why.clone()),
        };
        rows.extend(chain_rows(proxies, sizes, &ours, official));
        ours_by_hops.push(ours.turns);
    }
    if let [direct, one, ..] = ours_by_hops[..] {
        let turns = sizes.turns as f64;
        rows.push(Row {
            name: "composition one hop, ours".into(),
            unit: "turns/s".into(),
            ours: Some(turns / one),
            reference: Some(turns / direct),
            ratio: Some(direct / one),
            note: "ours with one proxy against ours with none (the reference here): the ratio is the share of a direct turn's pace a hop leaves, target >= 0.8 (a hop costs at most 20 %)".into(),
        });
    }
    Ok(rows)
}

/// The four rows of one chain length: turns/s, p99, flood, memory.
fn chain_rows(proxies: usize, sizes: Sizes, ours: &Measured, official: Result<Measured, String>) -> Vec<Row> {
    let chain = format!("{proxies} prox{}", if proxies == 1 { "y" } else { "ies" });
    let what = format!(
        "through the conductor and {proxies} `proxy --prefix` in front of `echo_agent`, our client over stdio, v1; reference = the official conductor {} with the same components",
        crate::interop::CONDUCTOR_VERSION
    );
    let (official, why) = match official {
        Ok(official) => (Some(official), String::new()),
        Err(why) => (None, format!("; no reference: {why}")),
    };
    // A figure of each side; the ratio says how much better ours is either way.
    let row = |name: &str, unit: &str, figure: &dyn Fn(&Measured) -> f64, higher_is_better: bool, note: String| {
        let (ours, reference) = (figure(ours), official.as_ref().map(figure));
        let ratio = reference.map(|r| if higher_is_better { ours / r } else { r / ours });
        let name = format!("composition {name}, {chain}");
        Row { name, unit: unit.into(), ours: Some(ours), reference, ratio, note: format!("{note}{why}") }
    };
    let percentiles = |m: &Measured| {
        format!("p50 {} µs, p99 {} µs", sig3(percentile(&m.turn_times, 0.5)), sig3(percentile(&m.turn_times, 0.99)))
    };
    let official_percentiles = official.as_ref().map_or_else(|| "none".to_string(), percentiles);
    let (turns, flood) = (sizes.turns as f64, sizes.flood as f64);
    vec![
        row("turns", "turns/s", &|m: &Measured| turns / m.turns, true, format!(
            "{} prompt turns {what}; ours {}, reference {official_percentiles}",
            sizes.turns,
            percentiles(ours)
        )),
        row("latency p99", "µs", &|m: &Measured| percentile(&m.turn_times, 0.99), false, format!(
            "the 99th percentile of a prompt turn's time (prompt sent to outcome, each of the {} turns of the long runs) {what}; ours {}, reference {official_percentiles}",
            sizes.turns * sizes.runs,
            percentiles(ours)
        )),
        row("notification flood", "msg/s", &|m: &Measured| flood / m.flood, true, format!(
            "{} session/update chunks in one turn (`flood N`) minus one turn of `x`, {what}",
            sizes.flood
        )),
        row("memory", "MiB", &|m: &Measured| m.memory.0 as f64 / 1024.0, false, format!(
            "the sum of the peak resident sets (VmHWM) of the conductor and its components during a flood run (ours {} processes, reference {}), {what}",
            ours.memory.1,
            official.as_ref().map_or(0, |o| o.memory.1),
        )),
    ]
}

/// The `q` quantile of sorted `values` (nearest rank); NaN when empty.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// `PROGRAM ARGS…` as the conductor's words before its components.
fn conductor(program: &Path, args: &[&str]) -> Vec<String> {
    std::iter::once(program.display().to_string()).chain(args.iter().map(|a| a.to_string())).collect()
}

/// One chain length: its components, run under a conductor.
struct Chain<'a> {
    programs: &'a Programs,
    proxies: usize,
    scratch: &'a Path,
}

impl Chain<'_> {
    /// The conductor's components: `proxies` proxies, then the agent.
    fn components(&self) -> Vec<String> {
        let mut components: Vec<String> = Vec::new();
        for n in 0..self.proxies {
            components.push(format!("'{}' --prefix p{n}:", self.programs.proxy.display()));
        }
        components.push(format!("'{}'", self.programs.echo_agent.display()));
        components
    }

    /// Every figure of this chain under `conductor`.
    fn measure(&self, conductor: &[String], sizes: Sizes) -> Result<Measured, String> {
        let times = self.scratch.join(format!("turn-times-{}", self.proxies));
        let mut turn_times = Vec::new();
        let long = median_of_runs(sizes.runs, || {
            let run = self.client(conductor, "x", 1 + sizes.turns, Some(&times))?;
            turn_times.extend(read_turn_times(&times)?.into_iter().skip(1));
            Ok(run)
        })?;
        let short = median_of_runs(sizes.runs, || self.client(conductor, "x", 1, None))?;
        turn_times.sort_by(f64::total_cmp);
        let flood_prompt = format!("flood {}", sizes.flood);
        let flooded = median_of_runs(sizes.runs, || self.client(conductor, &flood_prompt, 1, None))?;
        // Memory in a run of its own: reading /proc every few milliseconds costs CPU the timed
        // runs should not share.
        let sampler = treemem::Sampler::start();
        let sampled = self.client(conductor, &flood_prompt, 1, None);
        let memory = sampler.finish();
        sampled?;
        Ok(Measured { turns: (long - short).max(1e-9), turn_times, flood: (flooded - short).max(1e-9), memory })
    }

    /// One client run through the chain: `repeat` turns of `prompt`; seconds.
    fn client(&self, conductor: &[String], prompt: &str, repeat: usize, times: Option<&Path>) -> Result<f64, String> {
        let mut client = Command::new(&self.programs.client);
        client.args(["--protocol-version", "1", "--prompt", prompt, "--repeat", &repeat.to_string()]);
        if let Some(times) = times {
            client.arg("--turn-times").arg(times);
        }
        client.arg("--").args(conductor).args(self.components());
        let run = run_with_timeout(&mut client, RUN_TIMEOUT)?;
        if !run.status.is_some_and(|s| s.success()) {
            return Err(format!("`{}` failed: {}", describe(&client), run.stderr.lines().last().unwrap_or("")));
        }
        Ok(run.elapsed.as_secs_f64())
    }
}

/// The client's `--turn-times` file: microseconds, one turn per line.
fn read_turn_times(path: &Path) -> Result<Vec<f64>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text.lines().map(|l| l.trim().parse::<f64>().map_err(|e| format!("{}: {l:?}: {e}", path.display()))).collect()
}

/// The median of `runs` runs of `run`, in seconds.
fn median_of_runs(runs: usize, mut run: impl FnMut() -> Result<f64, String>) -> Result<f64, String> {
    let times = (0..runs).map(|_| run()).collect::<Result<Vec<_>, _>>()?;
    median(&times).ok_or_else(|| "no run".to_string())
}
