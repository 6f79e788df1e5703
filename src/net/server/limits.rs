//! The server's limits in one place, with the TypeScript SDK's defaults where it has them.

use std::time::Duration;

/// What one server allows its clients. The defaults follow the TypeScript SDK 2.4.0 `AcpServer`
/// (`maxBufferedBytes`, `maxOutputStallMs`, `maxBufferedSessionStreams`, `maxIdLength`, and the
/// Node adapter's `maxRequestBodyBytes`); the others are this server's own.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The largest POST body and WebSocket message, in bytes (`413` past it; the body is
    /// counted as it streams in, never held beyond this). Also the agent connection's
    /// `max_message_size`. Default 16 MiB.
    pub max_message_size: usize,
    /// Bytes of the agent's output queued on one connection's SSE streams for clients to read.
    /// At this many the server stops taking the agent's output (its sends wait) and POSTed
    /// requests wait for room. Default 64 MiB.
    pub max_buffered_bytes: usize,
    /// How long a connection may be over `max_buffered_bytes` with no client reading any of it
    /// before it is closed. Default 60 s.
    pub max_output_stall: Duration,
    /// Session streams holding messages with no receiver attached; one more closes the
    /// connection. Default 1024.
    pub max_buffered_session_streams: usize,
    /// The longest request id or session id accepted (characters); longer is answered `400`.
    /// Default 1024.
    pub max_id_length: usize,
    /// A connection with no stream attached and no POST for this long is closed. Default 10 min.
    pub idle_timeout: Duration,
    /// How long a client may take to send a request's headers before its TCP connection is
    /// dropped (slow-loris). Default 10 s.
    pub header_read_timeout: Duration,
    /// TCP connections served at once, an upgraded WebSocket's counted until its session ends;
    /// more are closed as soon as they are accepted. Default 1024.
    pub max_tcp_connections: usize,
    /// Messages from the agent waiting to be routed before its sends wait. Default 16.
    pub agent_output_queue: usize,
    /// How often a quiet SSE stream gets a keep-alive comment (`:`). Default 15 s.
    pub keep_alive: Duration,
    /// How long [`ServerHandle::shutdown`](super::ServerHandle::shutdown) waits for connections
    /// to end. Default 5 s.
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_size: 16 << 20,
            max_buffered_bytes: 64 << 20,
            max_output_stall: Duration::from_secs(60),
            max_buffered_session_streams: 1024,
            max_id_length: 1024,
            idle_timeout: Duration::from_secs(600),
            header_read_timeout: Duration::from_secs(10),
            max_tcp_connections: 1024,
            agent_output_queue: 16,
            keep_alive: Duration::from_secs(15),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}
