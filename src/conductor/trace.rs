//! The chain transcript (`--trace FILE`): every message of every link, one JSON record per line,
//! `{"from": "client"|"agent", "link": K, "message": …}`, written in the order the conductor reads
//! and writes them, each line written out at once (one unbuffered write per record), so a trace
//! is whole up to the moment the conductor stopped. Link 0 is editor <-> conductor, link K >= 1
//! conductor <-> component K-1; `from` names the sender on that link (on link 0 the editor is the
//! client; on the others the conductor is, and the component is the agent). `acp check` reads it.
//!
//! Also where a link is cut from our side: [`Link`] wraps any transport, records what passes, and
//! ends the reading side when its `stop` token fires (the connection then closes as if the peer
//! had closed, answering what it still can).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::framing::Frame;
use crate::jsonrpc::{Config, Sink, Source, Transport};
use crate::sync::lock;

/// Where the records go, shared by every link of a chain.
#[derive(Clone)]
pub(super) struct Trace {
    out: Arc<Mutex<TraceFile>>,
}

struct TraceFile {
    file: File,
    /// A write failed once (logged then, not again).
    failed: bool,
}

/// Which way a message passed the conductor on its link.
#[derive(Clone, Copy)]
enum Way {
    Read,
    Written,
}

impl Trace {
    /// Creates (or truncates) the file.
    pub(super) fn create(path: &Path) -> std::io::Result<Trace> {
        let file = File::create(path)?;
        Ok(Trace { out: Arc::new(Mutex::new(TraceFile { file, failed: false })) })
    }

    fn record(&self, link: usize, way: Way, message: &[u8]) {
        let from = match (link == 0, way) {
            (true, Way::Read) | (false, Way::Written) => "client",
            (true, Way::Written) | (false, Way::Read) => "agent",
        };
        let mut line = format!(r#"{{"from":"{from}","link":{link},"message":"#).into_bytes();
        if serde_json::from_slice::<serde::de::IgnoredAny>(message).is_ok() {
            // Raw, as on the wire. A line break in valid JSON is whitespace between tokens
            // (strings cannot hold one unescaped): a space keeps the record on one line.
            line.extend(message.iter().map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b }));
        } else {
            // Not JSON (a peer's garbage line): recorded as a string, which `acp check` reports.
            let text = String::from_utf8_lossy(message);
            line.extend_from_slice(serde_json::to_string(&text).unwrap_or_default().as_bytes());
        }
        line.extend_from_slice(b"}\n");
        let mut out = lock(&self.out);
        if let Err(e) = out.file.write_all(&line) {
            if !out.failed {
                out.failed = true;
                tracing::warn!("acp conductor: cannot write the trace: {e}");
            }
        }
    }
}

/// One link of the chain: a transport, its number in the trace, and the token that ends its
/// reading side from our side.
pub(super) struct Link<T> {
    pub(super) transport: T,
    pub(super) link: usize,
    pub(super) trace: Option<Trace>,
    pub(super) stop: CancellationToken,
}

/// The reading side of a [`Link`].
pub(super) struct LinkSource<S> {
    inner: S,
    link: usize,
    trace: Option<Trace>,
    stop: CancellationToken,
}

/// The writing side of a [`Link`].
pub(super) struct LinkSink<S> {
    inner: S,
    link: usize,
    trace: Option<Trace>,
}

impl<T: Transport> Transport for Link<T> {
    type Source = LinkSource<T::Source>;
    type Sink = LinkSink<T::Sink>;

    fn split(self, config: &Config) -> (Self::Source, Self::Sink) {
        let (source, sink) = self.transport.split(config);
        let source = LinkSource { inner: source, link: self.link, trace: self.trace.clone(), stop: self.stop };
        (source, LinkSink { inner: sink, link: self.link, trace: self.trace })
    }
}

impl<S: Source> Source for LinkSource<S> {
    async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        let frame = tokio::select! {
            biased;
            _ = self.stop.cancelled() => return Ok(None),
            frame = self.inner.next_frame() => frame?,
        };
        if let (Some(trace), Some(Frame::Line(line))) = (&self.trace, &frame) {
            trace.record(self.link, Way::Read, line);
        }
        Ok(frame)
    }
}

impl<S: Sink> Sink for LinkSink<S> {
    async fn send_all(&mut self, messages: Vec<Vec<u8>>) -> std::io::Result<()> {
        if let Some(trace) = &self.trace {
            for message in &messages {
                trace.record(self.link, Way::Written, message);
            }
        }
        self.inner.send_all(messages).await
    }
}
