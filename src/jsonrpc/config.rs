//! [`Config`]: the limits and timings of a connection, with their defaults.

use std::time::Duration;

/// Limits and timings of a connection.
#[derive(Debug, Clone)]
pub struct Config {
    /// The longest message accepted, in bytes; a longer one is discarded as it streams in and
    /// answered -32600 when its id could be read. Default 128 MiB.
    pub max_message_size: usize,
    /// How long a cancelled handler may still finish with its own answer before it is dropped
    /// and the request answered -32800. Default 2 s.
    pub cancel_grace: Duration,
    /// Messages queued for writing before senders wait (backpressure when the peer stops
    /// reading). Default 1024.
    pub write_queue: usize,
    /// A warning is logged when this many notifications wait for their handler. Default 10 000.
    pub notification_backlog_warning: usize,
    /// Bytes of notifications waiting for their handler at which reading pauses until the
    /// handlers catch up (the peer's writes then block: backpressure). Reading goes on while one
    /// of our calls awaits its answer, which may be behind what we would stop reading (a handler
    /// awaiting it would deadlock). Default 16 MiB.
    pub notification_queue_pause: usize,
    /// Bytes of notifications waiting at which a peer that keeps sending while one of our calls
    /// is pending (so that reading cannot pause) is given up on: the connection closes, its
    /// pending calls fail with [`Error::Closed`](crate::Error::Closed), and what was queued is
    /// still handled. Default 256 MiB.
    pub notification_queue_limit: usize,
    /// The peer's requests handled at once (answers not yet written included); one more is
    /// answered -32603 at once, so a peer that sends requests but does not read the answers
    /// meets backpressure instead of growing our memory. Default 1024.
    pub max_concurrent_requests: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_message_size: 128 << 20,
            cancel_grace: Duration::from_secs(2),
            write_queue: 1024,
            notification_backlog_warning: 10_000,
            notification_queue_pause: 16 << 20,
            notification_queue_limit: 256 << 20,
            max_concurrent_requests: 1024,
        }
    }
}
