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
