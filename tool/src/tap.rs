//! `acp tap`: a transparent proxy between a client (our stdin/stdout) and the agent it spawns.
//! Bytes are forwarded as they arrive, before any checking; complete lines are then checked and
//! logged. Between a conductor and a proxy the checker unwraps `proxy/successor` envelopes (see
//! `check`), so the proxy's traffic with its successor is checked too.

use crate::check::{Checker, ExtSchemas, Role, Status};
use acp_types::Version;
use serde_json::Value;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::mpsc;

/// What the log keeps of an over-long line: what the runtime keeps to find its id.
const KEPT_PREFIX: usize = acp_rpc::jsonrpc::PREFIX;

struct Tap {
    checker: Checker,
    count: usize,
    /// Lines longer than this are forwarded but neither checked nor logged whole (the runtime's
    /// default maximum message size).
    max_line: usize,
}

/// The transcript, written by the pumps themselves before they forward a line's last byte: the
/// client may kill the tap as soon as it has its answer, and the log must already hold it.
type Log = Arc<Mutex<Records>>;

/// Where the transcript's records go: the `--log` file, and for `--html` memory (the page is
/// drawn when the session ends).
#[derive(Default)]
struct Records {
    file: Option<BufWriter<File>>,
    kept: Option<Vec<u8>>,
}

fn log_line(log: &Log, from: Role, line: &[u8], truncated: Option<usize>) {
    if line.iter().all(u8::is_ascii_whitespace) && truncated.is_none() {
        return;
    }
    let mut guard = log.lock().unwrap_or_else(|p| p.into_inner());
    if guard.file.is_none() && guard.kept.is_none() {
        return;
    }
    let record = record(from, line, truncated);
    if let Some(log) = guard.file.as_mut() {
        if writeln!(log, "{record}").and_then(|_| log.flush()).is_err() {
            eprintln!("acp tap: cannot write the log");
        }
    }
    if let Some(kept) = guard.kept.as_mut() {
        kept.extend_from_slice(record.as_bytes());
        kept.push(b'\n');
    }
}

impl Tap {
    /// Checks one complete line from `from`, logs it and reports problems on stderr.
    fn observe(&mut self, from: Role, line: &[u8], truncated: Option<usize>) {
        if line.iter().all(u8::is_ascii_whitespace) && truncated.is_none() {
            return;
        }
        self.count += 1;
        let report = match truncated {
            None => self.checker.check_message(self.count, Some(from), line),
            Some(len) => self.checker.over_long(self.count, Some(from), len, self.max_line),
        };
        let problem = report.status == Status::Error
            || report.status == Status::Lossy
            || report.status == Status::Unmatched
            || !report.warnings.is_empty()
            || !report.violations.is_empty();
        if problem {
            eprintln!("acp tap: {}", report.to_string().trim_start());
        }
    }
}

/// A transcript record: the message as received when it is JSON, else the line as a string.
fn record(from: Role, line: &[u8], truncated: Option<usize>) -> String {
    let time = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let text = std::str::from_utf8(line).ok().map(|t| t.trim_end_matches('\r'));
    let valid = text.filter(|t| truncated.is_none() && serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok());
    match valid {
        // The message is embedded as received, byte for byte.
        Some(text) => format!("{{\"from\":\"{from}\",\"time\":{time:.6},\"message\":{text}}}"),
        None => {
            let shown = Value::String(String::from_utf8_lossy(line).into_owned());
            match truncated {
                Some(len) => format!("{{\"from\":\"{from}\",\"time\":{time:.6},\"line\":{shown},\"truncated\":{len}}}"),
                None => format!("{{\"from\":\"{from}\",\"time\":{time:.6},\"line\":{shown}}}"),
            }
        }
    }
}

/// One complete line (or the unterminated tail at end of stream), in the order seen.
struct Line {
    from: Role,
    bytes: Vec<u8>,
    /// Length of an over-long line, of which only a prefix is kept.
    truncated: Option<usize>,
}

/// Copies `input` to `output` as it arrives. Each line is queued for checking *before* its last
/// byte is forwarded, so the queue holds the two directions in causal order (a peer cannot answer
/// a message before it has all of it).
async fn pump(
    mut input: impl AsyncRead + Unpin,
    mut output: impl AsyncWrite + Unpin,
    from: Role,
    lines: mpsc::UnboundedSender<Line>,
    log: Log,
    max_line: usize,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut line = Vec::new();
    let mut dropped = 0usize;
    loop {
        let n = input.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let (piece, complete) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            rest = &rest[piece.len() + usize::from(complete)..];
            if dropped > 0 || line.len() + piece.len() > max_line {
                // Keep a prefix only; count the rest.
                if dropped == 0 {
                    dropped = line.len();
                }
                let room = KEPT_PREFIX.saturating_sub(line.len());
                line.extend_from_slice(&piece[..room.min(piece.len())]);
                line.truncate(KEPT_PREFIX);
                dropped += piece.len();
            } else {
                line.extend_from_slice(piece);
            }
            if complete {
                let bytes = std::mem::take(&mut line);
                let truncated = (dropped > 0).then_some(dropped);
                log_line(&log, from, &bytes, truncated);
                let _ = lines.send(Line { from, bytes, truncated });
                dropped = 0;
            }
        }
        output.write_all(&buf[..n]).await?;
        output.flush().await?;
    }
    if !line.is_empty() {
        // The stream closed mid-message: check what there is (it is not a complete line).
        let truncated = (dropped > 0).then_some(dropped);
        log_line(&log, from, &line, truncated);
        let _ = lines.send(Line { from, bytes: line, truncated });
    }
    output.shutdown().await.ok();
    Ok(())
}

/// `acp tap [--log FILE] [--html OUT.html] -- AGENT…`.
pub fn run(
    log: Option<PathBuf>,
    html: Option<PathBuf>,
    version: Option<Version>,
    ext: Option<Arc<ExtSchemas>>,
    agent: Vec<String>,
) -> ExitCode {
    let kept = html.as_ref().map(|_| Vec::new());
    let log = match log.map(File::create).transpose() {
        Ok(file) => Arc::new(Mutex::new(Records { file: file.map(BufWriter::new), kept })),
        Err(e) => {
            eprintln!("acp tap: cannot create the log: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("acp tap: {e}");
            return ExitCode::from(2);
        }
    };
    let max_line = acp_rpc::Config::default().max_message_size;
    let mut checker = Checker::new(version);
    if let Some(ext) = &ext {
        checker = checker.with_ext(ext.clone());
    }
    let mut tap = Tap { checker, count: 0, max_line };
    let code = runtime.block_on(async move {
        let (mut child, agent_in, agent_out) = match start(&agent) {
            Ok(started) => started,
            Err(code) => return code,
        };
        let (lines, mut queue) = mpsc::unbounded_channel::<Line>();
        let checking = tokio::task::spawn_blocking(move || {
            while let Some(line) = queue.blocking_recv() {
                tap.observe(line.from, &line.bytes, line.truncated);
            }
            for violation in tap.checker.finish() {
                eprintln!("acp tap: end  {violation}");
            }
        });
        let to_agent =
            tokio::spawn(pump(tokio::io::stdin(), agent_in, Role::Client, lines.clone(), log.clone(), max_line));
        let from_agent = pump(agent_out, tokio::io::stdout(), Role::Agent, lines, log.clone(), max_line).await;
        if from_agent.is_err() {
            // The client stopped reading: close the agent's stdin, give it a moment, then stop it.
            to_agent.abort();
            if tokio::time::timeout(Duration::from_secs(5), child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
        }
        let status = child.wait().await;
        // The client's pump may still hold a sender (its read may never end): check what is queued.
        to_agent.abort();
        let _ = to_agent.await;
        let _ = checking.await;
        if let Some(html) = &html {
            let kept = log.lock().unwrap_or_else(|p| p.into_inner()).kept.take().unwrap_or_default();
            write_page(html, kept, version, ext.as_ref());
        }
        match status {
            Ok(status) => exit_code(status),
            Err(e) => {
                eprintln!("acp tap: {e}");
                2
            }
        }
    });
    // Our stdin reader may sit in a blocking read that nothing will end: leave without waiting.
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

/// Starts the agent with piped stdin and stdout (its stderr passes through); on failure, the exit
/// code and a message on stderr.
fn start(agent: &[String]) -> Result<(tokio::process::Child, ChildStdin, ChildStdout), i32> {
    let Some((program, args)) = agent.split_first() else {
        eprintln!("acp tap: no agent command");
        return Err(2);
    };
    let spawned = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = spawned.map_err(|e| {
        eprintln!("acp tap: cannot start {program}: {e}");
        127
    })?;
    let (Some(agent_in), Some(agent_out)) = (child.stdin.take(), child.stdout.take()) else {
        eprintln!("acp tap: the agent's pipes are missing");
        return Err(2);
    };
    Ok((child, agent_in, agent_out))
}

/// `--html`: the recorded lines as an `acp view` page.
fn write_page(html: &Path, kept: Vec<u8>, version: Option<Version>, ext: Option<&Arc<ExtSchemas>>) {
    let page = crate::view::html(&[("acp tap".to_string(), kept)], version, ext);
    if let Err(e) = crate::view::write(html, &page) {
        eprintln!("acp tap: cannot write {}: {e}", html.display());
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    status.code().unwrap_or(1)
}
