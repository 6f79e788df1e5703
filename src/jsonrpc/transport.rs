//! What a connection reads the peer's messages from and writes its own to: a byte pipe framed as
//! lines (stdio, a child process), or channels of whole messages (the end of a network transport,
//! where HTTP bodies, SSE events and WebSocket frames already delimit them). The rest of the
//! connection sees only [`Frame`]s in and batches of messages out.

use super::framing::{scan_prefix, write_frames, Frame, FrameReader};
use std::future::Future;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::mpsc;

use super::config::Config;

/// Bytes read from a pipe at a time (fewer reads for long messages than the default 8 KiB).
const READ_BUFFER: usize = 64 << 10;

/// A way to reach the peer, split into the side we read and the side we write.
pub trait Transport: Send + 'static {
    /// Where the peer's messages come from.
    type Source: Source;
    /// Where ours go.
    type Sink: Sink;
    /// The two sides; `config` gives the largest message accepted.
    fn split(self, config: &Config) -> (Self::Source, Self::Sink);
}

/// Where the peer's messages come from, one frame at a time.
pub trait Source: Send + 'static {
    /// The next frame; `None` once the peer closed its side.
    fn next_frame(&mut self) -> impl Future<Output = std::io::Result<Option<Frame>>> + Send;
}

/// Where our messages go (JSON texts without newlines).
pub trait Sink: Send + 'static {
    /// Writes `messages` in order; an error closes the connection.
    fn send_all(&mut self, messages: Vec<Vec<u8>>) -> impl Future<Output = std::io::Result<()>> + Send;
}

/// A byte pipe carrying newline-delimited JSON: stdin/stdout, a child's pipes, a socket.
pub struct Pipe<R, W> {
    /// The peer's side, read.
    pub reader: R,
    /// Ours, written.
    pub writer: W,
}

impl<R, W> Transport for Pipe<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Source = FrameReader<BufReader<R>>;
    type Sink = PipeWriter<W>;

    fn split(self, config: &Config) -> (Self::Source, Self::Sink) {
        let frames = FrameReader::new(BufReader::with_capacity(READ_BUFFER, self.reader), config.max_message_size);
        (frames, PipeWriter { writer: self.writer, batch: Vec::new() })
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> Source for FrameReader<BufReader<R>> {
    fn next_frame(&mut self) -> impl Future<Output = std::io::Result<Option<Frame>>> + Send {
        self.next()
    }
}

/// The written side of a [`Pipe`]: messages with their newlines, several per write.
pub struct PipeWriter<W> {
    writer: W,
    batch: Vec<u8>,
}

impl<W: AsyncWrite + Unpin + Send + 'static> Sink for PipeWriter<W> {
    async fn send_all(&mut self, messages: Vec<Vec<u8>>) -> std::io::Result<()> {
        write_frames(&mut self.writer, messages, &mut self.batch).await
    }
}

/// Channels of whole messages, one JSON text each (whitespace, newlines included, is allowed):
/// what a network transport hands the connection. The sending side of `outgoing` being bounded
/// is the back-pressure: the connection's writer waits while the transport holds as much as it
/// allows.
pub struct Channels {
    /// The peer's messages; the peer is gone when every sender is dropped.
    pub incoming: mpsc::Receiver<Vec<u8>>,
    /// Ours; the connection closes when the receiver is dropped.
    pub outgoing: mpsc::Sender<Vec<u8>>,
}

impl Transport for Channels {
    type Source = ChannelSource;
    type Sink = mpsc::Sender<Vec<u8>>;

    fn split(self, config: &Config) -> (Self::Source, Self::Sink) {
        (ChannelSource { incoming: self.incoming, max: config.max_message_size }, self.outgoing)
    }
}

/// The read side of [`Channels`], holding messages to the connection's size limit.
pub struct ChannelSource {
    incoming: mpsc::Receiver<Vec<u8>>,
    max: usize,
}

impl Source for ChannelSource {
    async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let Some(message) = self.incoming.recv().await else { return Ok(None) };
            if let Some(frame) = message_frame(message, self.max) {
                return Ok(Some(frame));
            }
        }
    }
}

/// A whole message (a WebSocket frame's text, say) as the frame the connection reads: too long
/// for `max`, or a line; `None` for a blank one, which as on a pipe is no message.
pub(crate) fn message_frame(message: Vec<u8>, max: usize) -> Option<Frame> {
    if message.len() > max {
        return Some(Frame::TooLong { prefix: scan_prefix(&message), len: message.len() });
    }
    (!message.iter().all(u8::is_ascii_whitespace)).then_some(Frame::Line(message))
}

impl Sink for mpsc::Sender<Vec<u8>> {
    async fn send_all(&mut self, messages: Vec<Vec<u8>>) -> std::io::Result<()> {
        for message in messages {
            self.send(message)
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the transport is closed"))?;
        }
        Ok(())
    }
}
