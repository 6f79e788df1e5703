//! The client's WebSocket transport (`ws://`, and with feature `tls` `wss://`), as the
//! TypeScript SDK's `createWebSocketStream` speaks it: one JSON-RPC message per text frame, both
//! ways, on one socket. A JSON array from the agent is answered with the -32600 batch error and
//! not passed on, a frame that is not JSON with a -32700; binary frames are ignored. The socket
//! closing ends the connection; the connection closing (or
//! [`TransportHandle::close`](super::TransportHandle::close)) sends a close frame.

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use hyper::Uri;
use std::future::Future;
use std::io;
use std::sync::{Arc, OnceLock};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Mutex};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::link::header_map;
use super::{envelope, ws_config, NotAMessage, BATCH_ERROR, HEADER_CONNECTION_ID, PARSE_ERROR};
use super::{ClientOptions, TransportHandle};
use crate::client::{connect_over, ClientConnection, ClientHandler};
use crate::jsonrpc::framing::Frame;
use crate::jsonrpc::{self, message_frame, Channels, Transport};
use crate::Config;

/// Messages buffered each way between the socket and the core.
const QUEUE: usize = 64;

/// Connects to `url` (`ws://host[:port]/path`, or `wss://` with feature `tls`) and runs the
/// handshakes; the socket as [`Channels`] for [`Connection::over`](crate::Connection::over) or
/// [`connect_over`]. A refused certificate is an error whose inner error is a
/// `net::tls::TlsError` (feature `tls`).
pub async fn open(url: &str, options: ClientOptions) -> io::Result<(Channels, TransportHandle)> {
    let (socket, connection_id) = dial(url, options).await?;
    let (incoming_tx, incoming) = mpsc::channel(QUEUE);
    let (outgoing, outgoing_rx) = mpsc::channel(QUEUE);
    let stop = CancellationToken::new();
    let failure = Arc::new(OnceLock::new());
    let task = tokio::spawn(run(socket, incoming_tx, outgoing_rx, stop.clone(), failure.clone()));
    let connection_id = Arc::new(connection_id.map(OnceLock::from).unwrap_or_default());
    Ok((Channels { incoming, outgoing }, TransportHandle { connection_id, stop, failure, task: Some(task) }))
}

/// The byte stream under a socket: TCP, or TLS over it.
trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// An open WebSocket to the agent.
type Socket = WebSocketStream<Box<dyn Io>>;

/// Connects and runs the handshakes: the socket and the server's `Acp-Connection-Id`.
async fn dial(url: &str, options: ClientOptions) -> io::Result<(Socket, Option<String>)> {
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
        return handshake(url, Box::new(stream), &options).await;
    }
    handshake(url, Box::new(tcp), &options).await
}

/// The WebSocket handshake on `stream`.
async fn handshake(url: &str, stream: Box<dyn Io>, options: &ClientOptions) -> io::Result<(Socket, Option<String>)> {
    let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {why}"));
    let mut request = url.into_client_request().map_err(|e| invalid(&e.to_string()))?;
    request.headers_mut().extend(header_map(&options.headers)?);
    let config = ws_config(options.max_message_size);
    let (socket, response) = tokio_tungstenite::client_async_with_config(request, stream, Some(config))
        .await
        .map_err(|e| io::Error::new(io::ErrorKind::ConnectionRefused, e))?;
    let connection_id = response.headers().get(HEADER_CONNECTION_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
    Ok((socket, connection_id))
}

/// Connects `client` to the agent served at `url`: the connection, its driver (to spawn or
/// await; it ends when the socket closes) and the transport's handle (keep it: dropping it
/// closes the socket).
///
/// ```no_run
/// use acp_rpc::types::v1;
/// use acp_rpc::{ClientContext, Config};
///
/// struct Client;
/// impl v1::methods::client::Handler<ClientContext> for Client {}
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let url = "ws://127.0.0.1:8080";
/// let (conn, driver, _transport) =
///     acp_rpc::net::ws::connect(acp_rpc::V1(Client), url, Default::default(), Config::default()).await?;
/// tokio::spawn(driver);
/// conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await?;
/// # Ok(()) }
/// ```
pub async fn connect<C: ClientHandler>(
    client: C,
    url: &str,
    options: ClientOptions,
    config: Config,
) -> io::Result<(ClientConnection, impl Future<Output = io::Result<()>> + Send, TransportHandle)> {
    let (socket, connection_id) = dial(url, options).await?;
    let (sink, stream) = socket.split();
    let sink = Arc::new(Mutex::new(sink));
    let stop = CancellationToken::new();
    let failure = Arc::new(OnceLock::new());
    // The close frame, once the handle, the connection or the peer ends the socket.
    let closer = tokio::spawn({
        let (sink, stop) = (sink.clone(), stop.clone());
        async move {
            stop.cancelled().await;
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async { sink.lock().await.close().await })
                .await;
        }
    });
    let source = Source { stream, sink: sink.clone(), stop: stop.clone(), failure: failure.clone(), max: 0 };
    let transport =
        Direct { source, sink: Sink { sink, failure: failure.clone(), _closes: stop.clone().drop_guard() } };
    let (conn, driver) = connect_over(client, transport, config);
    let connection_id = Arc::new(connection_id.map(OnceLock::from).unwrap_or_default());
    Ok((conn, driver, TransportHandle { connection_id, stop, failure, task: Some(closer) }))
}

/// The socket as the connection's transport for [`connect`]: the connection's reader takes the
/// frames off the socket and its writer puts them on, with no task or queue between (which
/// [`open`]'s [`Channels`] need). A turn over WebSocket crossed tasks seven times in our client
/// through the queues; the bench's round trips are bound by those hops, not by instructions.
struct Direct {
    source: Source,
    sink: Sink,
}

/// The written half of the socket, shared by the writer and the reader's own answers.
type SharedSink = Arc<Mutex<SplitSink<Socket, Message>>>;

impl Transport for Direct {
    type Source = Source;
    type Sink = Sink;

    fn split(self, config: &Config) -> (Source, Sink) {
        (Source { max: config.max_message_size, ..self.source }, self.sink)
    }
}

/// The read half: the agent's messages; a batch or a frame that is not JSON answered here.
struct Source {
    stream: SplitStream<Socket>,
    sink: SharedSink,
    stop: CancellationToken,
    failure: Arc<OnceLock<io::Error>>,
    /// The connection's largest message.
    max: usize,
}

impl jsonrpc::Source for Source {
    async fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        loop {
            let frame = tokio::select! {
                _ = self.stop.cancelled() => return Ok(None),
                frame = self.stream.next() => frame,
            };
            let text = match read(frame, &self.failure) {
                Read::Text(text) => text,
                Read::Skip => continue,
                Read::End => break,
            };
            match answer_of(text.as_bytes()) {
                Some(answer) => {
                    if self.sink.lock().await.send(Message::text(answer)).await.is_err() {
                        break;
                    }
                }
                None => {
                    if let Some(frame) = message_frame(text.as_bytes().to_vec(), self.max) {
                        return Ok(Some(frame));
                    }
                }
            }
        }
        // The core learns that the peer is gone now; the close handshake follows.
        self.stop.cancel();
        Ok(None)
    }
}

/// The written half: the connection's messages, one text frame each, flushed once a batch.
/// Dropped when the connection ends, which closes the socket.
struct Sink {
    sink: SharedSink,
    failure: Arc<OnceLock<io::Error>>,
    _closes: DropGuard,
}

impl jsonrpc::Sink for Sink {
    async fn send_all(&mut self, messages: Vec<Vec<u8>>) -> io::Result<()> {
        let mut sink = self.sink.lock().await;
        let mut sent = Ok(());
        for message in messages {
            sent = sink.feed(Message::text(text_of(message))).await;
            if sent.is_err() {
                break;
            }
        }
        if sent.is_ok() {
            sent = sink.flush().await;
        }
        sent.map_err(|e| {
            tracing::warn!("acp ws: cannot send: {e}");
            let error = io::Error::new(io::ErrorKind::BrokenPipe, format!("cannot send: {e}"));
            let _ = self.failure.set(io::Error::new(error.kind(), error.to_string()));
            error
        })
    }
}

/// What a frame read from the socket means to the transport.
enum Read {
    /// A message's text.
    Text(Utf8Bytes),
    /// Nothing to pass on (binary, ping, pong).
    Skip,
    /// The socket closed, or failed (the error kept in `failure`).
    End,
}

fn read(frame: Option<Result<Message, WsError>>, failure: &OnceLock<io::Error>) -> Read {
    match frame {
        Some(Ok(Message::Text(text))) => Read::Text(text),
        Some(Ok(Message::Close(_))) | None => Read::End,
        Some(Ok(_)) => Read::Skip,
        Some(Err(e)) => {
            tracing::warn!("acp ws: {e}");
            let _ = failure.set(io::Error::new(io::ErrorKind::ConnectionAborted, e.to_string()));
            Read::End
        }
    }
}

/// What the transport answers itself to a frame from the agent: a batch, or no JSON message.
fn answer_of(text: &[u8]) -> Option<&'static str> {
    match envelope(text) {
        Err(NotAMessage::Batch) => Some(BATCH_ERROR),
        Err(NotAMessage::Invalid) => Some(PARSE_ERROR),
        _ => None,
    }
}

/// A message as a text frame's text (the core writes UTF-8; anything else is replaced).
fn text_of(message: Vec<u8>) -> String {
    String::from_utf8(message).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Moves messages between the socket and the core until either side or the handle closes.
async fn run(
    mut socket: Socket,
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
                if let Err(e) = socket.send(Message::text(text_of(message))).await {
                    tracing::warn!("acp ws: cannot send: {e}");
                    let _ = failure.set(io::Error::new(io::ErrorKind::BrokenPipe, format!("cannot send: {e}")));
                    stop.cancel();
                    return;
                }
            }
            frame = socket.next() => {
                let text = match read(frame, &failure) {
                    Read::Text(text) => text,
                    Read::Skip => continue,
                    Read::End => break,
                };
                if let Some(answer) = answer_of(text.as_bytes()) {
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
