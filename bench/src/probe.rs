//! The subcommands that are not rows: a row's work alone, a fixed amount of it for
//! `valgrind --tool=callgrind` or a time for `perf record`, and breakdowns read by hand.

use crate::codec::{self, Lib};
use crate::{corpus, official, ours};
use std::time::{Duration, Instant};

/// ours, or the official crates for anything else.
fn lib(which: &str) -> Lib {
    if which == "ours" {
        Lib::Ours
    } else {
        Lib::Official
    }
}

/// A loop to run under `perf record`: decode the turn corpus for `secs` seconds.
pub fn profile_decode(which: &str, version: u16, secs: u64) {
    let messages = codec::common(version, corpus::turn(version));
    let checks = codec::checks(lib(which), version, &messages);
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        codec::decode_all(&checks);
    }
}

/// A fixed amount of decoding, for `valgrind --tool=callgrind` (instruction counts).
pub fn decode_times(which: &str, version: u16, times: usize) {
    let messages = codec::common(version, corpus::turn(version));
    let checks = codec::checks(lib(which), version, &messages);
    for _ in 0..times {
        codec::decode_all(&checks);
    }
}

/// Per message: our decode time against the scan floor's, and its share of a pass.
pub fn breakdown(version: u16) {
    let messages = codec::common(version, corpus::turn(version));
    let checks = codec::checks(Lib::Ours, version, &messages);
    let time = |f: &dyn Fn()| {
        let start = Instant::now();
        for _ in 0..2000 {
            f();
        }
        start.elapsed().as_nanos() as f64 / 2000.0
    };
    let mut rows: Vec<(String, usize, f64, f64)> = Vec::new();
    for (m, (check, text)) in messages.iter().zip(&checks) {
        let ours = time(&|| {
            std::hint::black_box(check(std::hint::black_box(text)));
        });
        let floor = time(&|| {
            std::hint::black_box(
                serde_json::from_str::<serde::de::IgnoredAny>(std::hint::black_box(&m.payload)).is_ok(),
            );
        });
        let kind = serde_json::from_str::<serde_json::Value>(&m.payload)
            .ok()
            .and_then(|v| v["update"]["sessionUpdate"].as_str().map(str::to_string))
            .unwrap_or_default();
        rows.push((format!("{} {kind}", m.type_name), m.payload.len(), ours, floor));
    }
    let total: f64 = rows.iter().map(|r| r.2).sum();
    let floor_total: f64 = rows.iter().map(|r| r.3).sum();
    println!("total ours {total:.0} ns, floor {floor_total:.0} ns, ratio {:.3}", floor_total / total);
    rows.sort_by(|a, b| b.2.total_cmp(&a.2));
    for (name, len, ours, floor) in rows {
        println!("{:5.1}% {:6.0} ns {:5} B ratio {:.3} {name}", 100.0 * ours / total, ours, len, floor / ours);
    }
}

/// One message of the corpus decoded N times (ours|official|floor), for callgrind.
pub fn one(which: &str, version: u16, index: usize, times: usize) {
    let messages = codec::common(version, corpus::turn(version));
    let m = &messages[index];
    eprintln!("{} {}", m.type_name, m.payload);
    let lib = if which == "official" { Lib::Official } else { Lib::Ours };
    let check = codec::checker(lib, version, &m.type_name).expect("a type of the turn");
    for _ in 0..times {
        if which == "floor" {
            std::hint::black_box(
                serde_json::from_str::<serde::de::IgnoredAny>(std::hint::black_box(&m.payload)).is_ok(),
            );
        } else {
            std::hint::black_box(check(std::hint::black_box(&m.payload)));
        }
    }
}

/// The sizes of the values a `session/update` is decoded into (each is moved out through every
/// layer of `Result` on its way out of serde), ours then the official.
pub fn sizes() {
    macro_rules! sizes {
        ($($t:ty),*) => {$( println!("{:5} {}", std::mem::size_of::<$t>(), stringify!($t)); )*};
    }
    use acp_types::v1 as ours;
    use agent_client_protocol_schema::v1 as official;
    sizes!(ours::SessionNotification, ours::SessionUpdate, ours::ContentChunk, ours::ContentBlock, ours::ToolCall);
    sizes!(
        official::SessionNotification,
        official::SessionUpdate,
        official::ContentChunk,
        official::ContentBlock,
        official::ToolCall
    );
}

/// The scan floor's work (`IgnoredAny`), a fixed amount of it, for callgrind.
pub fn scan_times(version: u16, times: usize) {
    let messages = codec::common(version, corpus::turn(version));
    for _ in 0..times {
        codec::scan_all(&messages);
    }
}

/// The encode row's work, a fixed amount of it, for `valgrind --tool=callgrind`.
pub fn encode_times(which: &str, version: u16, times: usize) {
    let values = codec::decoded(lib(which), version, &codec::common(version, corpus::turn(version)));
    for _ in 0..times {
        codec::encode_all(&values);
    }
}

/// The latency row's distribution, whole and by round (each of the 1,000 callers makes 20 calls;
/// round k is every caller's k-th), to tell a start-up burst from a steady tail.
pub fn latency_dist(which: &str) {
    let (_, all) = if which == "ours" { ours::latencies(20_000, 1000) } else { official::latencies(20_000, 1000) };
    let line = |what: &str, mut v: Vec<Duration>| {
        v.sort();
        let at = |p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)].as_secs_f64() * 1e3;
        let (p50, p90, p99, p999, max) = (at(0.5), at(0.9), at(0.99), at(0.999), at(1.0));
        println!("{what:>9}: p50 {p50:6.2}  p90 {p90:6.2}  p99 {p99:6.2}  p99.9 {p999:6.2}  max {max:6.2} ms");
    };
    for round in [0, 1, 2, 10, 19] {
        line(&format!("round {round}"), all.iter().skip(round).step_by(20).copied().collect());
    }
    line("all", all);
}
