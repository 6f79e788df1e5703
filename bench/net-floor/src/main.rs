//! `net-floor`: the floor of the network rows of `cargo xtask bench`. The bytes of an ACP prompt
//! turn (the request, one update, the response) and of a notification stream, moved over plain
//! TCP (one line per message), Streamable HTTP (hyper: POSTs and an SSE stream) or WebSocket
//! (tokio-tungstenite), optionally under TLS (rustls on ring), by the crates acp-rpc builds on,
//! with no JSON-RPC, no decoding and no session: what a transport costs before any protocol.
//!
//! ```text
//! net-floor serve --transport tcp|http|ws [--cert PEM --key PEM]
//! net-floor bench --transport tcp|http|ws [--cert PEM --key PEM --ca PEM] --turns N --updates K --runs R
//! ```
//!
//! `bench` starts `serve` as a child process (two processes, as our client and agent are), warms
//! up, then times N turns one after another and one turn of K updates, R times each, and prints
//! one JSON line: the medians as turns/s and updates/s.

mod client;
mod server;
mod wire;

use server::Transport;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;
use wire::Tls;

struct Args {
    command: String,
    transport: Transport,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    ca: Option<PathBuf>,
    turns: usize,
    updates: usize,
    runs: usize,
}

fn parse() -> Result<Args, String> {
    let mut words = std::env::args().skip(1);
    let command = words.next().ok_or("usage: net-floor serve|bench --transport tcp|http|ws …")?;
    let mut args = Args {
        command,
        transport: Transport::Tcp,
        cert: None,
        key: None,
        ca: None,
        turns: 1_000,
        updates: 10_000,
        runs: 1,
    };
    while let Some(flag) = words.next() {
        let value = words.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<usize>().map_err(|e| format!("{flag} {value}: {e}"));
        match flag.as_str() {
            "--transport" => {
                args.transport = Transport::parse(&value).ok_or_else(|| format!("unknown transport {value}"))?
            }
            "--cert" => args.cert = Some(value.into()),
            "--key" => args.key = Some(value.into()),
            "--ca" => args.ca = Some(value.into()),
            "--turns" => args.turns = number()?,
            "--updates" => args.updates = number()?,
            "--runs" => args.runs = number()?.max(1),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(args)
}

fn main() {
    let result = parse().and_then(|args| match args.command.as_str() {
        "serve" => serve(&args),
        "bench" => bench(&args),
        other => Err(format!("unknown command {other}")),
    });
    if let Err(e) = result {
        eprintln!("net-floor: {e}");
        std::process::exit(1);
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())
}

fn serve(args: &Args) -> Result<(), String> {
    let tls = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => Tls::server(cert, key).map_err(|e| e.to_string())?,
        _ => Tls::None,
    };
    runtime()?.block_on(server::serve(args.transport, tls)).map_err(|e| e.to_string())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn bench(args: &Args) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let transport = match args.transport {
        Transport::Tcp => "tcp",
        Transport::Http => "http",
        Transport::Ws => "ws",
    };
    let mut serve = Command::new(exe);
    serve.args(["serve", "--transport", transport]).stdout(Stdio::piped());
    let tls = match (&args.cert, &args.key, &args.ca) {
        (Some(cert), Some(key), Some(ca)) => {
            serve.arg("--cert").arg(cert).arg("--key").arg(key);
            Tls::client(ca).map_err(|e| e.to_string())?
        }
        _ => Tls::None,
    };
    let mut child = serve.spawn().map_err(|e| format!("cannot start the server: {e}"))?;
    let mut first = String::new();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    BufReader::new(stdout).read_line(&mut first).map_err(|e| e.to_string())?;
    let result = first
        .trim()
        .strip_prefix("listening on ")
        .map(str::to_string)
        .ok_or_else(|| format!("the server printed {first:?}"))
        .and_then(|addr| runtime()?.block_on(measure(args, &addr, &tls)));
    let _ = child.kill();
    let _ = child.wait();
    let (turns, updates) = result?;
    println!(
        "{{\"transport\":\"{transport}\",\"tls\":{},\"turns\":{},\"turns_per_s\":{turns},\"updates\":{},\"updates_per_s\":{updates}}}",
        !matches!(tls, Tls::None),
        args.turns,
        args.updates
    );
    Ok(())
}

/// The medians of `runs` timings: turns/s of `turns` prompt turns, updates/s of one turn of
/// `updates` updates.
async fn measure(args: &Args, addr: &str, tls: &Tls) -> Result<(f64, f64), String> {
    let mut client = client::Client::connect(args.transport, addr, tls).await.map_err(|e| e.to_string())?;
    let error = |e: std::io::Error| e.to_string();
    for _ in 0..100 {
        client.prompt().await.map_err(error)?;
    }
    client.flood(100).await.map_err(error)?;
    let (mut turns, mut updates) = (Vec::new(), Vec::new());
    for _ in 0..args.runs {
        let start = Instant::now();
        for _ in 0..args.turns {
            client.prompt().await.map_err(error)?;
        }
        turns.push(args.turns as f64 / start.elapsed().as_secs_f64());
        let start = Instant::now();
        client.flood(args.updates).await.map_err(error)?;
        updates.push(args.updates as f64 / start.elapsed().as_secs_f64());
    }
    Ok((median(turns), median(updates)))
}
