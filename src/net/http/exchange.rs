//! What every task of one HTTP transport shares: the HTTP client, the URL and headers, the
//! connection id, the channel into the connection core, the stop signal; and the plumbing of one
//! request (building it, reading a body to a limit, error answers fed to the core).

use acp_types::support::rpc::RpcError;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::routes::Routes;

/// `Acp-Connection-Id`, as hyper spells header names.
pub(super) const CONNECTION_ID: HeaderName = HeaderName::from_static("acp-connection-id");
/// `Acp-Session-Id`.
pub(super) const SESSION_ID: HeaderName = HeaderName::from_static("acp-session-id");

/// With feature `tls`, hyper's rustls connector in front of the plain one: `https://` over TLS,
/// `http://` passed through.
#[cfg(feature = "tls")]
pub(super) type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "tls"))]
pub(super) type Connector = HttpConnector;

pub(super) type HttpClient = Client<Connector, Full<Bytes>>;

/// The state of one transport, held by its tasks (never by the user's handle: the channel into
/// the core closes when the last task ends).
pub(super) struct Shared {
    pub http: HttpClient,
    pub uri: Uri,
    /// The caller's headers, sent with every request.
    pub headers: HeaderMap,
    /// The largest message (SSE event, `initialize` body) accepted.
    pub max: usize,
    /// The peer's messages, to the core.
    pub incoming: mpsc::Sender<Vec<u8>>,
    /// Cancelled when the transport is done: closed by the user or the core, or failed.
    pub stop: CancellationToken,
    pub connection_id: Arc<OnceLock<String>>,
    /// Why the transport failed (the handle's [`error`](crate::net::TransportHandle::error)).
    pub failure: Arc<OnceLock<io::Error>>,
    pub routes: Mutex<Routes>,
}

impl Shared {
    pub fn routes(&self) -> MutexGuard<'_, Routes> {
        crate::sync::lock(&self.routes)
    }

    /// Ends the transport for `error`: kept for the handle (the first failure only), then the
    /// tasks stop.
    pub fn fail(&self, error: io::Error) {
        tracing::warn!("acp http: {error}");
        let _ = self.failure.set(error);
        self.stop.cancel();
    }

    /// Sends a request to the URL with the caller's headers, then `headers` (which win).
    pub async fn send(
        &self,
        method: Method,
        headers: &[(HeaderName, &str)],
        body: Vec<u8>,
    ) -> io::Result<Response<Incoming>> {
        let mut request = Request::builder()
            .method(method)
            .uri(self.uri.clone())
            .body(Full::new(Bytes::from(body)))
            .map_err(io::Error::other)?;
        let map = request.headers_mut();
        map.extend(self.headers.clone());
        for (name, value) in headers {
            let value = HeaderValue::from_str(value)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("{name} cannot be sent: {value:?}")))?;
            map.insert(name.clone(), value);
        }
        if !map.contains_key(CONTENT_TYPE) && *request.method() == Method::POST {
            request.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(crate::net::JSON));
        }
        self.http.request(request).await.map_err(network_error)
    }

    /// Hands a message to the core; false once the core is gone.
    pub async fn deliver(&self, message: Vec<u8>) -> bool {
        self.incoming.send(message).await.is_ok()
    }

    /// Fails our request `id` (its JSON text) with -32603 carrying `message` and `data`.
    pub async fn fail_request(&self, id: &str, message: &str, data: Option<serde_json::Value>) {
        let id: serde_json::Value = serde_json::from_str(id).unwrap_or(serde_json::Value::Null);
        let mut error = serde_json::json!({ "code": RpcError::INTERNAL_ERROR, "message": message });
        if let Some(data) = data {
            error["data"] = data;
        }
        let answer = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error });
        self.deliver(answer.to_string().into_bytes()).await;
    }
}

/// A request that got no response: a refused TLS handshake as its [`TlsError`](crate::net::tls::TlsError),
/// anything else as hyper said it.
fn network_error(error: hyper_util::client::legacy::Error) -> io::Error {
    #[cfg(feature = "tls")]
    if let Some(tls) = crate::net::tls::classify(&error) {
        return tls;
    }
    let message = match std::error::Error::source(&error) {
        Some(cause) => format!("{error}: {cause}"),
        None => error.to_string(),
    };
    io::Error::new(io::ErrorKind::ConnectionAborted, message)
}

/// The id's JSON text in one spelling, so that `1` and ` 1` or `"a"` and `"\u0061"` match.
pub(super) fn id_key(id: &str) -> String {
    serde_json::from_str::<serde_json::Value>(id).map(|v| v.to_string()).unwrap_or_else(|_| id.to_string())
}

/// A body, read to at most `limit` bytes: an error past that, or with `truncate` the first
/// `limit` bytes (the rest is not read).
pub(super) async fn read_body(mut body: Incoming, limit: usize, truncate: bool) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| io::Error::new(io::ErrorKind::ConnectionAborted, e))?;
        let Ok(data) = frame.into_data() else { continue };
        if bytes.len() + data.len() > limit {
            if truncate {
                bytes.extend_from_slice(&data[..limit - bytes.len()]);
                return Ok(bytes);
            }
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a response body is larger than {limit} bytes"),
            ));
        }
        bytes.extend_from_slice(&data);
    }
    Ok(bytes)
}

/// Text of a body cut at a byte limit: a character split by the cut is dropped.
pub(super) fn body_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(e) if e.error_len().is_none() => String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// The error of a response that is not 2xx: `what: 500 Internal Server Error: body`.
pub(super) fn status_error(what: &str, status: hyper::StatusCode, body: &str) -> String {
    let reason = status.canonical_reason().unwrap_or("");
    if body.is_empty() {
        format!("{what}: {} {reason}", status.as_u16())
    } else {
        format!("{what}: {} {reason}: {body}", status.as_u16())
    }
}
