//! The floor of the transport rows: the same bytes moved over the same transport by the same
//! crates (tokio), with no protocol at all. No JSON is parsed, no id is matched, no handler runs:
//! a request line is answered by the response line, a notification line is counted. What ours
//! costs above this is what the protocol layer costs; the rows print ours as a fraction of it.

use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The request line of the round-trip rows (a `session/set_mode` request, as ours sends it) and
/// the answer line (`{}` result), each with its newline.
fn lines() -> (Vec<u8>, Vec<u8>) {
    let request = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "session/set_mode", "params": crate::corpus::set_mode_params()
    });
    let mut request = serde_json::to_vec(&request).expect("JSON");
    request.push(b'\n');
    (request, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n".to_vec())
}

/// `n` round trips over `tokio::io::duplex` with `in_flight` outstanding at a time: the client
/// keeps a window of `in_flight` request lines written, the server answers each line it reads
/// with the answer line, the client counts the answers. The time of all `n`.
pub fn round_trips(n: usize, in_flight: usize) -> Duration {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let (request, answer) = lines();
        tokio::spawn(async move {
            let (read, mut write) = tokio::io::split(server_io);
            let mut read = BufReader::new(read);
            let mut line = Vec::new();
            loop {
                line.clear();
                match read.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if write.write_all(&answer).await.is_err() {
                    break;
                }
            }
        });
        let (read, mut write) = tokio::io::split(client_io);
        let mut read = BufReader::new(read);
        // One task, as a floor should be: `in_flight` requests first, then one more for each answer
        // read (the window stays far below the pipe's buffer, so the writes never wait on reads).
        let start = Instant::now();
        let mut sent = 0;
        while sent < in_flight.max(1).min(n) {
            write.write_all(&request).await.expect("written");
            sent += 1;
        }
        let mut line = Vec::new();
        for _ in 0..n {
            line.clear();
            read.read_until(b'\n', &mut line).await.expect("an answer");
            if sent < n {
                write.write_all(&request).await.expect("written");
                sent += 1;
            }
        }
        start.elapsed()
    })
}

/// The child of the notification floor: `count` copies of the notification line (the same
/// `session/update` chunk as the notification rows) to stdout, then exit.
pub fn notify_child(count: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let update = serde_json::json!({
            "jsonrpc": "2.0", "method": "session/update", "params": crate::corpus::chunk_params(64)
        });
        let mut line = serde_json::to_vec(&update).expect("JSON");
        line.push(b'\n');
        let mut out = tokio::io::BufWriter::new(tokio::io::stdout());
        for _ in 0..count {
            out.write_all(&line).await.expect("written");
        }
        out.flush().await.expect("flushed");
    });
}

/// The notification floor: spawns `exe notify-floor COUNT` and counts its lines; the time from
/// the spawn to the last line, spawn included as in the notification rows.
pub fn notifications(exe: &std::path::Path, count: usize) -> Duration {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let start = Instant::now();
        let mut child = tokio::process::Command::new(exe)
            .args(["notify-floor", &count.to_string()])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let mut read = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = Vec::new();
        for _ in 0..count {
            line.clear();
            read.read_until(b'\n', &mut line).await.expect("a line");
        }
        let elapsed = start.elapsed();
        let _ = child.wait().await;
        elapsed
    })
}

/// The three lines of a prompt turn of `x` (the request, one `session/update`, the answer), each
/// with its newline.
fn turn_lines() -> [Vec<u8>; 3] {
    let line = |value: serde_json::Value| {
        let mut line = serde_json::to_vec(&value).expect("JSON");
        line.push(b'\n');
        line
    };
    [
        line(serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "session/prompt",
            "params": { "sessionId": "sess-1", "prompt": [{ "type": "text", "text": "x" }] }
        })),
        line(
            serde_json::json!({ "jsonrpc": "2.0", "method": "session/update", "params": crate::corpus::chunk_params(1) }),
        ),
        line(serde_json::json!({ "jsonrpc": "2.0", "id": 1, "result": { "stopReason": "end_turn" } })),
    ]
}

/// `acp-bench relay K`: one process of the relay floor. With K > 0 it starts `relay K-1` and
/// passes each line from its stdin to the child's and each line from the child's stdout to its
/// own, writing each as it comes (as a conductor or proxy forwards a message); with K = 0 it is
/// the end of the chain and answers each line with a turn's update and answer lines.
pub fn relay(exe: &std::path::Path, k: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let mut stdin = BufReader::new(tokio::io::stdin());
        let mut stdout = tokio::io::stdout();
        if k == 0 {
            let [_, update, answer] = turn_lines();
            let mut line = Vec::new();
            while stdin.read_until(b'\n', &mut line).await.is_ok_and(|n| n > 0) {
                line.clear();
                for l in [&update, &answer] {
                    if stdout.write_all(l).await.is_err() || stdout.flush().await.is_err() {
                        return;
                    }
                }
            }
            return;
        }
        let mut child = tokio::process::Command::new(exe)
            .args(["relay", &(k - 1).to_string()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let (mut to_child, from_child) = (child.stdin.take().expect("stdin"), child.stdout.take().expect("stdout"));
        let down = async move {
            let mut line = Vec::new();
            while stdin.read_until(b'\n', &mut line).await.is_ok_and(|n| n > 0) {
                if to_child.write_all(&line).await.is_err() || to_child.flush().await.is_err() {
                    break;
                }
                line.clear();
            }
        };
        let up = async move {
            let mut from_child = BufReader::new(from_child);
            let mut line = Vec::new();
            while from_child.read_until(b'\n', &mut line).await.is_ok_and(|n| n > 0) {
                if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                    break;
                }
                line.clear();
            }
        };
        tokio::select! { _ = tokio::spawn(down) => {}, _ = tokio::spawn(up) => {} }
    });
}

/// The relay floor of the composition rows: `turns` prompt turns through a chain of `relays`
/// processes that pass lines on and parse nothing, the end answering each request line with the
/// update and answer lines. A direct turn through a conductor crosses one relay (the conductor);
/// with one proxy, three (conductor, proxy, conductor); with two, five. The chain's start and
/// one warm-up turn are not timed.
pub fn relay_turns(exe: &std::path::Path, relays: usize, turns: usize) -> Duration {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let mut child = tokio::process::Command::new(exe)
            .args(["relay", &relays.to_string()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let mut write = child.stdin.take().expect("stdin");
        let mut read = BufReader::new(child.stdout.take().expect("stdout"));
        let [request, _, _] = turn_lines();
        let mut line = Vec::new();
        let mut start = Instant::now();
        // Turn 0 warms the chain up; the clock starts after it.
        for turn in 0..=turns {
            if turn == 1 {
                start = Instant::now();
            }
            write.write_all(&request).await.expect("written");
            write.flush().await.expect("flushed");
            for _ in 0..2 {
                line.clear();
                read.read_until(b'\n', &mut line).await.expect("a line");
            }
        }
        start.elapsed()
    })
}
