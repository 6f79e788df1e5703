//! What the two client transports share: how to reach the server ([`ClientOptions`]) and the
//! handle that keeps a transport open ([`TransportHandle`]).

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use std::io;
use std::sync::{Arc, OnceLock};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The TypeScript SDK's default largest message, in bytes (32 MiB).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 32 << 20;

/// How to reach the server, over HTTP or WebSocket.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Headers sent with every request (HTTP) or with the upgrade (WebSocket): `Authorization:
    /// Bearer …`, say. The transport's own (`Acp-Connection-Id`, `Acp-Session-Id`, `Accept`)
    /// replace any of the same name.
    pub headers: Vec<(String, String)>,
    /// The largest message accepted (an SSE event, the `initialize` answer, a WebSocket message),
    /// in bytes; a larger one ends the transport. Default [`DEFAULT_MAX_MESSAGE_SIZE`].
    pub max_message_size: usize,
    /// A PEM file of CA certificates trusted for `https://` and `wss://` besides the webpki
    /// roots (Mozilla's): a private CA's, or a self-signed server certificate (feature `tls`).
    #[cfg(feature = "tls")]
    pub ca_file: Option<std::path::PathBuf>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            headers: Vec::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            #[cfg(feature = "tls")]
            ca_file: None,
        }
    }
}

impl ClientOptions {
    /// These options with one more header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// These options trusting the CA certificates of a PEM file too (feature `tls`).
    #[cfg(feature = "tls")]
    pub fn ca_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }
}

/// A client transport's handle: the server's connection id, and closing. Dropping it closes the
/// transport too (in the background).
pub struct TransportHandle {
    pub(crate) stop: CancellationToken,
    pub(crate) connection_id: Arc<OnceLock<String>>,
    /// Why the transport failed, set (once) before it stops.
    pub(crate) failure: Arc<OnceLock<io::Error>>,
    pub(crate) task: Option<JoinHandle<()>>,
}

impl TransportHandle {
    /// The server's `Acp-Connection-Id`: over HTTP once `initialize` was answered, over WebSocket
    /// from the `101` answer (if the server sent one).
    pub fn connection_id(&self) -> Option<&str> {
        self.connection_id.get().map(String::as_str)
    }

    /// True once the transport stopped (closed, or failed).
    pub fn is_closed(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Why the transport failed, once it did: the network error, the HTTP status that ended it,
    /// or (feature `tls`) the `net::tls::TlsError` of a refused certificate. Over HTTP nothing is
    /// sent before `initialize`, so a server that cannot be reached or trusted shows as
    /// `initialize` failing with [`Error::Closed`](crate::Error::Closed) and the reason here.
    pub fn error(&self) -> Option<&io::Error> {
        self.failure.get()
    }

    /// Ends the transport and waits until it ended: over HTTP the streams stop and the server is
    /// sent `DELETE` (5 s at most); over WebSocket a close frame is sent. The core sees the peer
    /// gone.
    pub async fn close(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TransportHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The caller's headers, checked once here rather than on every request.
pub(crate) fn header_map(headers: &[(String, String)]) -> io::Result<HeaderMap> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let invalid = || io::Error::new(io::ErrorKind::InvalidInput, format!("invalid header {name}: {value:?}"));
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
        let value = HeaderValue::from_str(value).map_err(|_| invalid())?;
        map.append(name, value);
    }
    Ok(map)
}
