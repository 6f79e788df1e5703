//! The floor of the network rows (issue 52): `net-floor` from `bench/net-floor` moves the bytes
//! of a prompt turn (the request, one update, the response) and of a notification stream over the
//! same transport with the crates our runtime uses (hyper for Streamable HTTP: POSTs answered
//! `202` and an SSE stream; tokio-tungstenite for WebSocket; rustls on ring under both for
//! `https` and `wss`), with no ACP: nothing parsed, no session, no handler. Two processes, a
//! server and a client, as our rows' agent and client.
//!
//! Each row puts our figure of a network row ([`super::net`], measured before in the same run)
//! against its floor: `transport floor: net round trips over http` is ours as a fraction of the
//! floor (1.0: nothing above moving the bytes). The same bytes over plain TCP, one line per
//! message, are in each row's note: what HTTP or WebSocket itself costs.

use super::net::{Peers, Sizes};
use super::table::{sig3, Row};
use crate::process::{self, capture, describe};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `net-floor` in release, in the `bench/` workspace (as `official-net`): no generated
/// crate in it.
pub fn build(root: &Path) -> Result<PathBuf, String> {
    let mut build = process::cargo();
    build
        .args(["build", "--release", "--manifest-path", "bench/Cargo.toml", "--target-dir", "bench/target"])
        .args(["-p", "acp-bench-net-floor"])
        .current_dir(root);
    eprintln!("bench: building the network floor: {}", describe(&build));
    process::stream(&mut build, |_| {})?;
    Ok(root.join("bench/target/release").join(format!("net-floor{}", std::env::consts::EXE_SUFFIX)))
}

/// One floor measurement: turns/s and updates/s.
#[derive(Debug, Clone, Copy)]
struct Floor {
    turns: f64,
    updates: f64,
}

/// `net-floor bench` over `transport` (`tcp`, `http`, `ws`), under TLS when `tls`.
fn measure(binary: &Path, peers: &Peers, transport: &str, tls: bool, sizes: Sizes) -> Result<Floor, String> {
    let mut command = Command::new(binary);
    command.args(["bench", "--transport", transport]);
    command.args(["--turns", &sizes.turns.to_string(), "--updates", &sizes.updates.to_string()]);
    command.args(["--runs", &sizes.runs.to_string()]);
    if tls {
        let pki = peers.pki();
        command.arg("--cert").arg(&pki.cert).arg("--key").arg(&pki.key).arg("--ca").arg(&pki.ca);
    }
    eprintln!("bench: {}", describe(&command));
    let out = capture(&mut command)?;
    let json: Value = serde_json::from_str(out.trim()).map_err(|e| format!("net-floor printed {out:?}: {e}"))?;
    let number = |key: &str| json.get(key).and_then(Value::as_f64).ok_or_else(|| format!("net-floor printed no {key}"));
    Ok(Floor { turns: number("turns_per_s")?, updates: number("updates_per_s")? })
}

/// The floor rows of the network rows in `ours` (those of its transports that were measured).
/// A floor that cannot be measured gives rows without a reference that say why.
pub fn rows(root: &Path, peers: &Peers, ours: &[Row], quick: bool) -> Result<Vec<Row>, String> {
    let binary = build(root)?;
    let sizes = Sizes::new(quick);
    let tcp = measure(&binary, peers, "tcp", false, sizes);
    let tcp_tls = measure(&binary, peers, "tcp", true, sizes);
    let mut rows = Vec::new();
    for (label, transport, tls) in
        [("http", "http", false), ("ws", "ws", false), ("https", "http", true), ("wss", "ws", true)]
    {
        let workloads = [("round trips", true), ("notification stream", false)];
        let theirs: Vec<(&str, bool, &Row)> = workloads
            .iter()
            .filter_map(|&(what, turns)| {
                let name = format!("net {what} over {label}");
                ours.iter().find(|row| row.name == name).map(|row| (what, turns, row))
            })
            .collect();
        if theirs.is_empty() {
            continue;
        }
        let floor = measure(&binary, peers, transport, tls, sizes);
        let bare = if tls { &tcp_tls } else { &tcp };
        for (what, turns, our) in theirs {
            let pick = |f: &Floor| if turns { f.turns } else { f.updates };
            let (reference, why) = match &floor {
                Ok(f) => (Some(pick(f)), String::new()),
                Err(e) => (None, format!("; no floor: {e}")),
            };
            let tcp_note = match bare {
                Ok(f) => format!(
                    "; the same bytes over TCP{}, one line per message: {} {}",
                    if tls { " + TLS" } else { "" },
                    sig3(pick(f)),
                    our.unit
                ),
                Err(_) => String::new(),
            };
            let workload = if turns {
                format!("{} prompt turns of `x` one after another (request, one update, response)", sizes.turns)
            } else {
                format!("one turn of {} one-character updates", sizes.updates)
            };
            rows.push(Row {
                name: format!("transport floor: net {what} over {label}"),
                unit: our.unit.clone(),
                ours: our.ours,
                reference,
                ratio: our.ours.zip(reference).map(|(o, f)| o / f),
                note: format!(
                    "ours = the row `net {what} over {label}` above; reference = the floor: `net-floor` (bench/net-floor) moving the same bytes over {} with no ACP (no JSON parsed, no session), {workload}, median of {} run(s); ratio = ours as a fraction of it{tcp_note}{why}",
                    describe_transport(transport, tls),
                    sizes.runs
                ),
            });
        }
    }
    Ok(rows)
}

fn describe_transport(transport: &str, tls: bool) -> String {
    let base = match transport {
        "http" => {
            "Streamable HTTP (hyper 1: POSTs answered 202, the messages on one SSE stream, up to 64 events a write)"
        }
        _ => "WebSocket (tokio-tungstenite 0.28, one text frame per message)",
    };
    if tls {
        format!("{base} under TLS (rustls on ring)")
    } else {
        base.to_string()
    }
}
