//! What the mock agent received, recorded from the bytes its connection reads (before any
//! decoding, so that malformed or unexpected messages are kept as well): the client's requests,
//! notifications and answers, in order, for in-process tests to assert on.

use serde_json::Value;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// The messages the mock agent received, shared with the test that made the agent
/// ([`MockAgent::received`](super::MockAgent::received)). Cheap to clone; all clones see the same
/// record.
#[derive(Debug, Clone, Default)]
pub struct Received {
    inner: Arc<Mutex<Log>>,
}

#[derive(Debug, Default)]
struct Log {
    messages: Vec<Value>,
    skipped: Vec<String>,
}

impl Received {
    fn log(&self) -> MutexGuard<'_, Log> {
        crate::sync::lock(&self.inner)
    }

    /// Every message, in the order received (a line that is not JSON as a JSON string).
    pub fn messages(&self) -> Vec<Value> {
        self.log().messages.clone()
    }

    /// The requests' and notifications' methods, in order.
    pub fn methods(&self) -> Vec<String> {
        self.log().messages.iter().filter_map(|m| m.get("method")?.as_str().map(str::to_owned)).collect()
    }

    /// The requests (messages with a `method` and an `id`).
    pub fn requests(&self) -> Vec<Value> {
        self.filter(|m| m.get("method").is_some() && m.get("id").is_some())
    }

    /// The notifications (messages with a `method` and no `id`).
    pub fn notifications(&self) -> Vec<Value> {
        self.filter(|m| m.get("method").is_some() && m.get("id").is_none())
    }

    /// The client's answers to the agent's requests (messages with `result` or `error`).
    pub fn answers(&self) -> Vec<Value> {
        self.filter(|m| m.get("method").is_none() && (m.get("result").is_some() || m.get("error").is_some()))
    }

    /// The `params` of each request or notification of `method`, in order.
    pub fn params_of(&self, method: &str) -> Vec<Value> {
        self.filter(|m| m.get("method").and_then(Value::as_str) == Some(method))
            .into_iter()
            .map(|mut m| m.get_mut("params").map(Value::take).unwrap_or(Value::Null))
            .collect()
    }

    /// The scripted steps that were not run, and why (v2 has no `fs/*` or `terminal/*` methods).
    pub fn skipped(&self) -> Vec<String> {
        self.log().skipped.clone()
    }

    fn filter(&self, keep: impl Fn(&Value) -> bool) -> Vec<Value> {
        self.log().messages.iter().filter(|m| keep(m)).cloned().collect()
    }

    pub(super) fn skip(&self, why: String) {
        self.log().skipped.push(why);
    }

    fn line(&self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let message =
            serde_json::from_slice(line).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(line).into_owned()));
        self.log().messages.push(message);
    }
}

/// A reader that records each line it reads into a [`Received`].
pub(super) struct Tap<R> {
    inner: R,
    received: Received,
    partial: Vec<u8>,
}

impl<R> Tap<R> {
    pub(super) fn new(inner: R, received: Received) -> Self {
        Tap { inner, received, partial: Vec::new() }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Tap<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let new = &buf.filled()[before..];
            let this = &mut *self;
            if new.is_empty() && !this.partial.is_empty() {
                // End of input: the last line had no newline.
                let rest = std::mem::take(&mut this.partial);
                this.received.line(&rest);
            }
            for byte in new {
                if *byte == b'\n' {
                    let line = std::mem::take(&mut this.partial);
                    this.received.line(&line);
                } else {
                    this.partial.push(*byte);
                }
            }
        }
        polled
    }
}
