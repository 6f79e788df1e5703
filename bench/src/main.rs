//! `acp-bench`: the benchmark rows of `cargo xtask bench`, ours against the official crates in the
//! same process and run. Prints one JSON object per row; `cargo xtask bench` makes the table.
//!
//! - `acp-bench rows [--quick]`: every row except codegen and build (those are `cargo xtask`'s);
//! - `acp-bench notify-agent ours|official COUNT`: the agent process of the notification row;
//! - `acp-bench relay K`: a process of the composition rows' relay floor;
//! - `acp-bench large ours|official BYTES`: one large message, in a fresh process so that its
//!   peak memory is its own;
//! - `acp-bench profile-decode ours|official V SECS`, `decode-times ours|official V N` and
//!   `encode-times ours|official V N`: the decode and encode rows' work alone, to run under `perf`
//!   (for SECS seconds) or `valgrind --tool=callgrind` (N passes over the corpus), and
//!   `scan-times V N` the scan floor's;
//! - `acp-bench breakdown V`: each message of the corpus, our decode time against the scan
//!   floor's and its share of a pass, worst first; `acp-bench one ours|official|floor V INDEX N`:
//!   one of them decoded (or scanned) N times, for callgrind;
//! - `acp-bench sizes`: the sizes of the decoded `session/update` values, ours and the official;
//! - `acp-bench latency-dist ours|official`: the latency row's distribution, in percentiles.

mod codec;
mod corpus;
mod floor;
mod official;
mod ours;
mod probe;
mod state;

use clap::{Parser, Subcommand};
use codec::Lib;
use serde_json::json;
use std::time::{Duration, Instant};

/// The benchmark rows of `cargo xtask bench` (see the module docs). WHICH is `ours`, or the
/// official crates for anything else (`one` also takes `floor`).
#[derive(Parser)]
#[command(name = "acp-bench")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Every row except codegen and build (those are `cargo xtask`'s).
    Rows {
        /// Fewer repetitions.
        #[arg(long)]
        quick: bool,
        /// Only the rows whose name contains TEXT.
        #[arg(long, value_name = "TEXT", default_value = "")]
        only: String,
    },
    /// The agent process of the notification row.
    NotifyAgent { which: String, count: usize },
    /// The child of the notification floor: COUNT notification lines to stdout, no protocol.
    NotifyFloor { count: usize },
    /// One process of the composition rows' relay floor: K relays below this one, then the end.
    Relay { k: usize },
    /// The decode row's work for SECS seconds, to run under `perf record`.
    ProfileDecode { which: String, version: u16, secs: u64 },
    /// The decode row's work, N passes, for `valgrind --tool=callgrind`.
    DecodeTimes { which: String, version: u16, times: usize },
    /// Each message of the corpus: our decode time against the scan floor's, worst first.
    Breakdown { version: u16 },
    /// One message of the corpus decoded (or scanned, `floor`) N times, for callgrind.
    One { which: String, version: u16, index: usize, times: usize },
    /// The sizes of the decoded `session/update` values, ours and the official.
    Sizes,
    /// The scan floor's work, N passes, for callgrind.
    ScanTimes { version: u16, times: usize },
    /// The encode row's work, N passes, for callgrind.
    EncodeTimes { which: String, version: u16, times: usize },
    /// The latency row's distribution, in percentiles.
    LatencyDist { which: String },
    /// One large message, in a fresh process so that its peak memory is its own.
    Large { which: String, size: usize },
}

fn main() {
    match Args::parse().command {
        Command::Rows { quick, only } => rows(quick, &only),
        Command::NotifyFloor { count } => floor::notify_child(count),
        Command::Relay { k } => floor::relay(&std::env::current_exe().expect("own path"), k),
        Command::NotifyAgent { which, count } => match which.as_str() {
            "ours" => ours::notify_agent(count),
            _ => official::notify_agent(count),
        },
        Command::ProfileDecode { which, version, secs } => probe::profile_decode(&which, version, secs),
        Command::DecodeTimes { which, version, times } => probe::decode_times(&which, version, times),
        Command::Breakdown { version } => probe::breakdown(version),
        Command::One { which, version, index, times } => probe::one(&which, version, index, times),
        Command::Sizes => probe::sizes(),
        Command::ScanTimes { version, times } => probe::scan_times(version, times),
        Command::EncodeTimes { which, version, times } => probe::encode_times(&which, version, times),
        Command::LatencyDist { which } => probe::latency_dist(&which),
        Command::Large { which, size } => {
            let (elapsed, baseline) = match which.as_str() {
                "ours" => ours::large_message(size),
                _ => official::large_message(size),
            };
            println!(
                "{}",
                json!({ "secs": elapsed.as_secs_f64(), "peak_kib": peak_rss_kib(), "baseline_kib": baseline })
            );
        }
    }
}

/// Starts measuring the peak resident set from now (Linux: `5` to `/proc/self/clear_refs` resets
/// VmHWM to the current VmRSS); the current resident set, in KiB, the baseline of the peak.
pub fn reset_peak() -> u64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// This process's peak resident set (VmHWM), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Median time per call of each of `fs`, measured side by side: each is warmed up and
/// calibrated, then their sample batches alternate (`a, b, c, a, b, c, …`), so that the order of
/// measurement, heap growth and the machine's moods fall on all of them alike.
fn medians_per_call<const N: usize>(budget: Duration, samples: usize, fs: [&mut dyn FnMut(); N]) -> [Duration; N] {
    let mut fs = fs;
    // Calibrate (which also warms up): how many calls fill one sample.
    let batches: Vec<u32> = fs
        .iter_mut()
        .map(|f| {
            let start = Instant::now();
            let mut calls = 0u32;
            while start.elapsed() < budget / (samples as u32 * 4) || calls == 0 {
                f();
                calls += 1;
            }
            let per = start.elapsed() / calls;
            ((budget.as_secs_f64() / samples as f64) / per.as_secs_f64().max(1e-9)).ceil().max(1.0) as u32
        })
        .collect();
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(samples); N];
    for _ in 0..samples {
        for (k, f) in fs.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..batches[k] {
                f();
            }
            times[k].push(t.elapsed() / batches[k]);
        }
    }
    std::array::from_fn(|k| {
        times[k].sort();
        times[k][samples / 2]
    })
}

fn row(name: &str, unit: &str, ours: f64, reference: Option<f64>, ratio: Option<f64>, note: &str) {
    println!(
        "{}",
        json!({ "name": name, "unit": unit, "ours": ours, "reference": reference, "ratio": ratio, "note": note })
    );
}

/// The `x-state` reducer: a turn's updates applied, against decoding them; then per-update cost
/// with 10x longer messages (appends must stay linear).
fn state_rows(budget: Duration, samples: usize) {
    let short = state::turn(1_000);
    let long = state::turn(10_000);
    let (short_updates, long_updates) = (state::decoded(&short), state::decoded(&long));
    let [apply, decode, apply_long] = medians_per_call(
        budget,
        samples,
        [
            &mut || {
                std::hint::black_box(state::apply_all(&short_updates));
            },
            &mut || {
                std::hint::black_box(state::decode_all(&short));
            },
            &mut || {
                std::hint::black_box(state::apply_all(&long_updates));
            },
        ],
    );
    let n = short.len() as f64;
    row(
        "state apply v2, a turn of 1,000 chunks",
        "updates/s",
        n / apply.as_secs_f64(),
        Some(n / decode.as_secs_f64()),
        Some(decode.as_secs_f64() / apply.as_secs_f64()),
        &format!(
            "{} updates applied to acp_types::v2::state::SessionState; reference = decoding the same updates (no \
             reference implementation keeps v2 state); ratio > 1: applying costs less than decoding",
            short.len()
        ),
    );
    let per = |d: Duration, count: usize| d.as_secs_f64() / count as f64;
    row(
        "state apply v2, per update with 10x longer messages",
        "ns/update",
        per(apply_long, long.len()) * 1e9,
        Some(per(apply, short.len()) * 1e9),
        Some(per(apply, short.len()) / per(apply_long, long.len())),
        "10,000 chunks of one message against 1,000: a ratio near 1 is linear appending (0.1 would be quadratic)",
    );
}

fn rows(quick: bool, only: &str) {
    let budget = if quick { Duration::from_millis(400) } else { Duration::from_secs(3) };
    let samples = if quick { 5 } else { 15 };
    let exe = std::env::current_exe().expect("own path");
    if ["decode", "encode", "scan"].iter().any(|n| n.contains(only)) {
        for version in [1u16, 2] {
            codec_rows(version, budget, samples);
        }
    }
    if "state apply".contains(only) {
        state_rows(budget, samples);
    }
    if "round trips".contains(only) {
        round_trip_rows(if quick { 4_000 } else { 40_000 });
    }
    if "latency".contains(only) {
        latency_rows(if quick { 5_000 } else { 20_000 });
    }
    rows_after_latency(quick, only, &exe);
}

/// Decode, encode and the scan floor of one version's corpus.
fn codec_rows(version: u16, budget: Duration, samples: usize) {
    let messages = codec::common(version, corpus::turn(version));
    let bytes: usize = messages.iter().map(|m| m.payload.len()).sum();
    let mb = bytes as f64 / 1e6;
    let note = format!("{} messages, {} bytes", messages.len(), bytes);
    let ours_checks = codec::checks(Lib::Ours, version, &messages);
    let official_checks = codec::checks(Lib::Official, version, &messages);
    let [ours, official, floor] = medians_per_call(
        budget,
        samples,
        [
            &mut || {
                codec::decode_all(&ours_checks);
            },
            &mut || {
                codec::decode_all(&official_checks);
            },
            &mut || {
                codec::scan_all(&messages);
            },
        ],
    );
    row(
        &format!("decode v{version}"),
        "MB/s",
        mb / ours.as_secs_f64(),
        Some(mb / official.as_secs_f64()),
        Some(official.as_secs_f64() / ours.as_secs_f64()),
        &format!(
            "{note}; ours with acp_types::support::json::from_str (the runtime's decoder), official with \
             serde_json::from_str"
        ),
    );
    let ours_values = codec::decoded(Lib::Ours, version, &messages);
    let official_values = codec::decoded(Lib::Official, version, &messages);
    let [ours_enc, official_enc] = medians_per_call(
        budget,
        samples,
        [
            &mut || {
                codec::encode_all(&ours_values);
            },
            &mut || {
                codec::encode_all(&official_values);
            },
        ],
    );
    row(
        &format!("encode v{version}"),
        "MB/s",
        mb / ours_enc.as_secs_f64(),
        Some(mb / official_enc.as_secs_f64()),
        Some(official_enc.as_secs_f64() / ours_enc.as_secs_f64()),
        &format!(
            "{note}; ours with acp_types::support::json (the runtime's encoder), official with serde_json::to_vec"
        ),
    );
    // The scan floor: the ratio here is floor time / our time (1.0 would be the floor itself).
    row(
        &format!("scan floor v{version} (IgnoredAny)"),
        "MB/s",
        mb / ours.as_secs_f64(),
        Some(mb / floor.as_secs_f64()),
        Some(floor.as_secs_f64() / ours.as_secs_f64()),
        "reference = serde::de::IgnoredAny on the same bytes; target: ours within 3x (ratio >= 0.33)",
    );
}

/// `n` round trips with 1 and 64 in flight, ours, the official runtime's and the floor's.
fn round_trip_rows(n: usize) {
    for in_flight in [1usize, 64] {
        let (ours, _) = ours::latencies(n, in_flight);
        let (official, _) = official::latencies(n, in_flight);
        row(
            &format!("round trips, {in_flight} in flight"),
            "req/s",
            n as f64 / ours.as_secs_f64(),
            Some(n as f64 / official.as_secs_f64()),
            Some(official.as_secs_f64() / ours.as_secs_f64()),
            &format!("{n} session/set_mode requests over tokio::io::duplex"),
        );
        let floor = floor::round_trips(n, in_flight);
        floor_row(
            &format!("round trips, {in_flight} in flight"),
            "req/s",
            n,
            ours,
            floor,
            "the same lines over tokio::io::duplex, each request line answered by the response line",
        );
    }
}

/// p50 and p99 of `n` requests with 1,000 in flight.
fn latency_rows(n: usize) {
    let (_, mut ours) = ours::latencies(n, 1000);
    let (_, mut official) = official::latencies(n, 1000);
    let pct = |v: &mut Vec<Duration>, p: f64| {
        v.sort();
        v[((v.len() as f64 * p) as usize).min(v.len() - 1)].as_secs_f64() * 1e3
    };
    let (o50, o99, r50, r99) =
        (pct(&mut ours, 0.5), pct(&mut ours, 0.99), pct(&mut official, 0.5), pct(&mut official, 0.99));
    row("latency p50, 1000 in flight", "ms", o50, Some(r50), Some(r50 / o50), &format!("{n} requests"));
    row("latency p99, 1000 in flight", "ms", o99, Some(r99), Some(r99 / o99), &format!("{n} requests"));
}

fn rows_after_latency(quick: bool, only: &str, exe: &std::path::Path) {
    let n = if quick { 20_000 } else { 200_000 };
    if "notification stream".contains(only) {
        notification_row(n, exe);
    }
    if "large message".contains(only) {
        large_rows(quick, exe);
    }
    if "floor: composition one hop".contains(only) {
        relay_row(if quick { 2_000 } else { 10_000 }, exe);
    }
}

/// The floor of the composition rows' one hop: prompt turns through chains of processes that only
/// pass lines on (`floor::relay_turns`), one relay (a direct turn's conductor) against three (the
/// conductor crossed twice and a proxy): the share of a direct turn's pace a hop leaves when the
/// processes do nothing but move the lines.
fn relay_row(turns: usize, exe: &std::path::Path) {
    let [one, three, five] = [1, 3, 5].map(|relays| floor::relay_turns(exe, relays, turns));
    let rate = |d: Duration| turns as f64 / d.as_secs_f64();
    row(
        "floor: composition one hop (line relays)",
        "turns/s",
        rate(three),
        Some(rate(one)),
        Some(one.as_secs_f64() / three.as_secs_f64()),
        &format!(
            "{turns} turns (request line in, update and answer lines out) through 3 processes that relay lines without \
             parsing them, against 1 (reference); 5 relays (two hops): {:.0} turns/s; the ratio bounds the \
             composition one-hop row from above",
            rate(five)
        ),
    );
}

fn notification_row(n: usize, exe: &std::path::Path) {
    let ours = ours::notify_client(exe, n);
    let official = official::notify_client(exe, n);
    row(
        "notification stream (2 processes, OS pipe)",
        "msg/s",
        n as f64 / ours.as_secs_f64(),
        Some(n as f64 / official.as_secs_f64()),
        Some(official.as_secs_f64() / ours.as_secs_f64()),
        &format!("{n} session/update chunks agent -> client, spawn included"),
    );
    let floor = floor::notifications(exe, n);
    floor_row(
        "notification stream (2 processes, OS pipe)",
        "msg/s",
        n,
        ours,
        floor,
        "the same lines from a child's stdout, counted, spawn included",
    );
}

/// A floor row: ours (`n` in `ours`) against the same bytes moved by the same transport with no
/// protocol (`n` in `floor`); the ratio is ours as a fraction of the floor (1.0: no cost above it).
fn floor_row(what: &str, unit: &str, n: usize, ours: Duration, floor: Duration, how: &str) {
    row(
        &format!("transport floor: {what}"),
        unit,
        n as f64 / ours.as_secs_f64(),
        Some(n as f64 / floor.as_secs_f64()),
        Some(floor.as_secs_f64() / ours.as_secs_f64()),
        &format!("reference = the floor: {how} (no JSON-RPC, no decoding); ratio = ours as a fraction of it"),
    );
}

fn large_rows(quick: bool, exe: &std::path::Path) {
    for (label, size) in [("1 MiB", 1usize << 20), ("64 MiB", 64usize << 20)] {
        let runs = if quick || size > (1 << 20) { 1 } else { 5 };
        let measure = |which: &str| {
            let mut best: Option<(f64, u64, u64)> = None;
            for _ in 0..runs {
                let out = std::process::Command::new(exe)
                    .args(["large", which, &size.to_string()])
                    .output()
                    .expect("large runs");
                let v: serde_json::Value = serde_json::from_slice(&out.stdout)
                    .unwrap_or_else(|e| panic!("large {which}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
                let secs = v["secs"].as_f64().unwrap_or(f64::NAN);
                let peak = v["peak_kib"].as_u64().unwrap_or(0);
                let base = v["baseline_kib"].as_u64().unwrap_or(0);
                if best.is_none_or(|b| secs < b.0) {
                    best = Some((secs, peak, base));
                }
            }
            best.expect("one run")
        };
        let (os, op, ob) = measure("ours");
        let (rs, rp, rb) = measure("official");
        let mb = size as f64 / 1e6;
        row(
            &format!("large message {label}: throughput"),
            "MB/s",
            mb / os,
            Some(mb / rs),
            Some(rs / os),
            "framing + decode of one session/update, pipe to handler",
        );
        let mib = |kib: u64| kib as f64 / 1024.0;
        row(
            &format!("large message {label}: peak memory"),
            "MiB",
            mib(op.saturating_sub(ob)),
            Some(mib(rp.saturating_sub(rb))),
            Some(mib(rp.saturating_sub(rb)) / mib(op.saturating_sub(ob)).max(1e-9)),
            &format!(
                "VmHWM growth from the message on (connection set up, initialized and warmed up with one 64 KiB session/update before, so that the code of the path is paged in); message = {:.1} MiB, target ours <= 2x message",
                mib(size as u64 / 1024)
            ),
        );
    }
}
