//! The stand-in agent's side of one client connection: the lines the client writes to its agent
//! (relayed over a Unix socket by `acp conform-stand-in`), and the stand-in's messages back. Every
//! line either way is checked (schema and rules, [`Checker`]) and kept in a transcript.

use crate::check::{Checker, Role, Status};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Longest line read from a client; the rest of a longer one is dropped (and reported).
const MAX_LINE: u64 = 16 << 20;

/// One line from the client.
#[derive(Debug)]
pub enum Event {
    /// A JSON-RPC message (checked; JSON that is no message comes as [`Event::Junk`]).
    Message(Value),
    /// A line that is not a JSON object (the checker has judged it).
    Junk,
    /// The client closed its side: it exited, or closed its agent's stdin.
    Closed,
    /// Nothing before the deadline.
    Timeout,
}

/// The conversation with one client.
pub struct Conn {
    lines: mpsc::Receiver<Vec<u8>>,
    writer: Option<OwnedWriteHalf>,
    /// Schema and rules, fed every line in order.
    pub checker: Checker,
    /// One `{"from", "message"}` (or `{"from", "line"}`) record per line.
    pub transcript: Vec<Value>,
    count: usize,
    next_id: u64,
    closed: bool,
    /// The client's messages that re-encode differently: their line and first difference.
    pub lossy: Vec<(usize, String)>,
}

impl Conn {
    pub fn new(stream: UnixStream) -> Conn {
        let (read, writer) = stream.into_split();
        let (tx, lines) = mpsc::channel(1024);
        tokio::spawn(read_lines(read, tx));
        Conn {
            lines,
            writer: Some(writer),
            checker: Checker::new(None),
            transcript: Vec::new(),
            count: 0,
            next_id: 0,
            closed: false,
            lossy: Vec::new(),
        }
    }

    /// The line number the next message gets.
    pub fn line(&self) -> usize {
        self.count + 1
    }

    /// The next line from the client before `deadline`, checked and recorded.
    pub async fn next(&mut self, deadline: Instant) -> Event {
        if self.closed {
            return Event::Closed;
        }
        let bytes = match tokio::time::timeout_at(deadline, self.lines.recv()).await {
            Err(_) => return Event::Timeout,
            Ok(None) => {
                self.closed = true;
                return Event::Closed;
            }
            Ok(Some(bytes)) => bytes,
        };
        self.count += 1;
        let line = self.count;
        if bytes.len() as u64 >= MAX_LINE {
            // Not judged: a line this long may be a valid message the kit does not read.
            self.transcript.push(json!({ "from": "client", "line": format!("(a line over {MAX_LINE} bytes)") }));
            return Event::Junk;
        }
        let report = self.checker.check_message(line, Some(Role::Client), &bytes);
        if let Some(difference) = report.first_difference().filter(|_| report.status == Status::Lossy) {
            self.lossy.push((line, difference));
        }
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(message) if message.is_object() => {
                self.transcript.push(json!({ "from": "client", "message": message }));
                Event::Message(message)
            }
            _ => {
                self.transcript.push(json!({ "from": "client", "line": String::from_utf8_lossy(&bytes) }));
                Event::Junk
            }
        }
    }

    /// Sends a message (checked and recorded first).
    pub async fn send(&mut self, message: Value) {
        self.count += 1;
        self.checker.check_value(self.count, Some(Role::Agent), message.clone());
        let mut bytes = message.to_string().into_bytes();
        self.transcript.push(json!({ "from": "agent", "message": message }));
        bytes.push(b'\n');
        if let Some(writer) = &mut self.writer {
            // A client that stopped reading is seen as one that stops answering.
            if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                self.writer = None;
            }
        }
    }

    /// Sends a request; its id.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = Value::from(format!("conform-{}", self.next_id));
        self.next_id += 1;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })).await;
        id
    }

    /// How many requests the stand-in sent.
    pub fn requests(&self) -> usize {
        usize::try_from(self.next_id).unwrap_or(usize::MAX)
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params })).await;
    }

    /// Answers the client's request `id`.
    pub async fn respond(&mut self, id: Value, answer: Result<Value, (i64, String)>) {
        let message = match answer {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err((code, text)) => json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": text } }),
        };
        self.send(message).await;
    }

    /// Closes the stand-in's side: the client sees its agent's stdout end.
    pub async fn close(&mut self) {
        if let Some(mut writer) = self.writer.take() {
            let _ = writer.shutdown().await;
        }
    }
}

/// Reads the client's lines (without their `\n`); a line longer than [`MAX_LINE`] is cut there.
async fn read_lines(read: tokio::net::unix::OwnedReadHalf, lines: mpsc::Sender<Vec<u8>>) {
    let mut reader = BufReader::new(read);
    loop {
        let mut line = Vec::new();
        match (&mut reader).take(MAX_LINE).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        } else if line.len() as u64 >= MAX_LINE {
            // Skip the rest of the over-long line, a bounded piece at a time.
            loop {
                let mut rest = Vec::new();
                match (&mut reader).take(MAX_LINE).read_until(b'\n', &mut rest).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) if rest.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        if lines.send(line).await.is_err() {
            return;
        }
    }
}
