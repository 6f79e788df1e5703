//! The client's WebSocket transport (`ws://`, and with feature `tls` `wss://`), as the
//! TypeScript SDK's `createWebSocketStream` speaks it: one JSON-RPC message per text frame, both
//! ways, on one socket. A JSON array from the agent is answered with the -32600 batch error and
//! not passed on, a frame that is not JSON with a -32700; binary frames are ignored. The socket
//! closing ends the connection; the connection closing (or
//! [`TransportHandle::close`](super::TransportHandle::close)) sends a close frame.

use futures_util::{SinkExt, StreamExt};
use hyper::Uri;
use std::future::Future;
use std::io;
use std::sync::{Arc, OnceLock};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

use super::link::header_map;
use super::{envelope, ws_config, NotAMessage, BATCH_ERROR, HEADER_CONNECTION_ID, PARSE_ERROR};
use super::{ClientOptions, TransportHandle};
use crate::client::{connect_over, ClientConnection, ClientHandler};
use crate::jsonrpc::Channels;
use crate::Config;

/// Messages buffered each way between the socket and the core.
const QUEUE: usize = 64;

/// Connects to `url` (`ws://host[:port]/path`, or `wss://` with feature `tls`) and runs the
/// handshakes; the socket as [`Channels`] for [`Connection::over`](crate::Connection::over) or
/// [`connect_over`]. A refused certificate is an error whose inner error is a
/// `net::tls::TlsError` (feature `tls`).
pub async fn open(url: &str, options: ClientOptions) -> io::Result<(Channels, TransportHandle)> {
    let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {why}"));
    let uri: Uri = url.parse().map_err(|e| invalid(&format!("not a URL ({e})")))?;
    let tls = match uri.scheme_str() {
        Some("ws") => false,
        Some("wss") if cfg!(feature = "tls") => true,
        Some("wss") => return Err(invalid("wss:// needs acp-rpc's feature `tls`")),
        _ => return Err(invalid("only ws:// and wss:// URLs are supported")),
    };
    let host = uri.host().ok_or_else(|| invalid("no host"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let tcp = TcpStream::connect((host, uri.port_u16().unwrap_or(if tls { 443 } else { 80 }))).await?;
    // Each message is one frame written and flushed at once: Nagle's algorithm would only hold
    // a small frame back until the peer's (delayed) ACK. The server side sets it too.
    tcp.set_nodelay(true)?;
    #[cfg(feature = "tls")]
    if tls {
        let config = super::tls::client_config(options.ca_file.as_deref())?;
        let name = super::tls::server_name_of(host)?;
        let stream =
            tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.map_err(super::tls::handshake_error)?;
        return handshake(url, stream, &options).await;
    }
    handshake(url, tcp, &options).await
}

/// The WebSocket handshake on `stream`, then the task that carries the socket.
async fn handshake<S>(url: &str, stream: S, options: &ClientOptions) -> io::Result<(Channels, TransportHandle)>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {why}"));
    let mut request = url.into_client_request().map_err(|e| invalid(&e.to_string()))?;
    request.headers_mut().extend(header_map(&options.headers)?);
    let config = ws_config(options.max_message_size);
    let (socket, response) = tokio_tungstenite::client_async_with_config(request, stream, Some(config))
        .await
        .map_err(|e| io::Error::new(io::ErrorKind::ConnectionRefused, e))?;
    let connection_id = response.headers().get(HEADER_CONNECTION_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
    let (incoming_tx, incoming) = mpsc::channel(QUEUE);
    let (outgoing, outgoing_rx) = mpsc::channel(QUEUE);
    let stop = CancellationToken::new();
    let failure = Arc::new(OnceLock::new());
    let task = tokio::spawn(run(socket, incoming_tx, outgoing_rx, stop.clone(), failure.clone()));
    let connection_id = Arc::new(connection_id.map(OnceLock::from).unwrap_or_default());
    Ok((Channels { incoming, outgoing }, TransportHandle { connection_id, stop, failure, task: Some(task) }))
}

/// Connects `client` to the agent served at `url`: the connection, its driver (to spawn or
/// await; it ends when the socket closes) and the transport's handle (keep it: dropping it
/// closes the socket).
pub async fn connect<C: ClientHandler>(
    client: C,
    url: &str,
    options: ClientOptions,
    config: Config,
) -> io::Result<(ClientConnection, impl Future<Output = io::Result<()>> + Send, TransportHandle)> {
    let (channels, handle) = open(url, options).await?;
    let (conn, driver) = connect_over(client, channels, config);
    Ok((conn, driver, handle))
}

/// Moves messages between the socket and the core until either side or the handle closes.
async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    mut socket: WebSocketStream<S>,
    incoming: mpsc::Sender<Vec<u8>>,
    mut outgoing: mpsc::Receiver<Vec<u8>>,
    stop: CancellationToken,
    failure: Arc<OnceLock<io::Error>>,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            message = outgoing.recv() => {
                let Some(message) = message else { break };
                let text = String::from_utf8(message).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                if let Err(e) = socket.send(Message::text(text)).await {
                    tracing::warn!("acp ws: cannot send: {e}");
                    let _ = failure.set(io::Error::new(io::ErrorKind::BrokenPipe, format!("cannot send: {e}")));
                    stop.cancel();
                    return;
                }
            }
            frame = socket.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None => break,
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => {
                        tracing::warn!("acp ws: {e}");
                        let _ = failure.set(io::Error::new(io::ErrorKind::ConnectionAborted, e.to_string()));
                        break;
                    }
                };
                let answer = match envelope(text.as_bytes()) {
                    Err(NotAMessage::Batch) => Some(BATCH_ERROR),
                    Err(NotAMessage::Invalid) => Some(PARSE_ERROR),
                    _ => None,
                };
                if let Some(answer) = answer {
                    if socket.send(Message::text(answer)).await.is_err() {
                        break;
                    }
                } else if incoming.send(text.as_bytes().to_vec()).await.is_err() {
                    break;
                }
            }
        }
    }
    stop.cancel();
    // The core learns that the peer is gone before the close handshake, which may wait.
    drop(incoming);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), socket.close(None)).await;
}
