//! The client's Streamable HTTP transport (`http://`, and with feature `tls` `https://`), as the
//! TypeScript SDK's `createHttpStream` speaks it: our messages are POSTed one at a time, in
//! order; the agent's come on SSE streams, the connection's and one per session.
//!
//! - `posts`: the POSTs (`initialize` first, then each message with its connection and session
//!   ids) and the closing `DELETE`;
//! - `streams`: the SSE `GET`s and the routing of what they bring;
//! - `sse`: the event parser; `routes`: which session each message belongs to;
//!   `exchange`: what the tasks share and the plumbing of one request.
//!
//! A POST answered with an HTTP error fails only its request (a JSON-RPC error, code -32603,
//! `data: {status, body}`, the body cut at 8 KiB); 401, 403, 404, 410, a network error, or a
//! failed POST of a notification or response end the transport, and so the connection: its
//! pending calls fail with [`Error::Closed`](crate::Error::Closed). A session stream that ends
//! fails that session's requests in flight; the next message of the session reopens it.

mod exchange;
mod posts;
mod routes;
mod sse;
mod streams;

use hyper::Uri;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::link::header_map;
use super::{ClientOptions, TransportHandle};
use crate::client::{connect_over, ClientConnection, ClientHandler};
use crate::jsonrpc::Channels;
use crate::Config;
use exchange::Shared;

/// Messages buffered each way between the core and the transport's tasks.
const QUEUE: usize = 64;

/// Opens the transport to `url` (`http://host[:port]/path`, or `https://` with feature `tls`)
/// as [`Channels`] for [`Connection::over`](crate::Connection::over) or [`connect_over`].
/// Nothing is sent before the core writes `initialize`, so a server that cannot be reached (or,
/// over TLS, trusted) fails `initialize` with [`Error::Closed`](crate::Error::Closed), the
/// reason in [`TransportHandle::error`]. Needs a tokio runtime (its tasks are spawned).
pub fn open(url: &str, options: ClientOptions) -> io::Result<(Channels, TransportHandle)> {
    let uri = parse_url(url)?;
    let headers = header_map(&options.headers)?;
    let http = http_client(&uri, &options)?;
    let (incoming_tx, incoming) = mpsc::channel(QUEUE);
    let (outgoing, outgoing_rx) = mpsc::channel(QUEUE);
    let stop = CancellationToken::new();
    let connection_id = Arc::new(OnceLock::new());
    let failure = Arc::new(OnceLock::new());
    let shared = Arc::new(Shared {
        http,
        uri,
        headers,
        max: options.max_message_size,
        incoming: incoming_tx,
        stop: stop.clone(),
        connection_id: connection_id.clone(),
        failure: failure.clone(),
        routes: Mutex::default(),
    });
    let task = tokio::spawn(posts::run(shared, outgoing_rx));
    Ok((Channels { incoming, outgoing }, TransportHandle { stop, connection_id, failure, task: Some(task) }))
}

/// Connects `client` to the agent served at `url`: the connection, its driver (to spawn or
/// await; it ends when the transport does) and the transport's handle (keep it: dropping it
/// closes the connection).
///
/// ```no_run
/// use acp_rpc::types::v1;
/// use acp_rpc::{ClientContext, Config};
///
/// struct Client;
/// impl v1::methods::client::Handler<ClientContext> for Client {}
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let url = "http://127.0.0.1:8080";
/// let (conn, driver, _transport) =
///     acp_rpc::net::http::connect(acp_rpc::V1(Client), url, Default::default(), Config::default())?;
/// tokio::spawn(driver);
/// conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await?;
/// # Ok(()) }
/// ```
pub fn connect<C: ClientHandler>(
    client: C,
    url: &str,
    options: ClientOptions,
    config: Config,
) -> io::Result<(ClientConnection, impl Future<Output = io::Result<()>> + Send, TransportHandle)> {
    let (channels, handle) = open(url, options)?;
    let (conn, driver) = connect_over(client, channels, config);
    Ok((conn, driver, handle))
}

/// The HTTP client: plain, or with feature `tls` also TLS, trusting the webpki roots and the
/// options' CA file (read now, so that a bad file fails `open`).
#[cfg(feature = "tls")]
fn http_client(uri: &Uri, options: &ClientOptions) -> io::Result<exchange::HttpClient> {
    let ca_file = options.ca_file.as_deref().filter(|_| uri.scheme_str() == Some("https"));
    let config = Arc::unwrap_or_clone(crate::net::tls::client_config(ca_file)?);
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(HyperClient::builder(TokioExecutor::new()).build(connector))
}

#[cfg(not(feature = "tls"))]
fn http_client(_: &Uri, _: &ClientOptions) -> io::Result<exchange::HttpClient> {
    Ok(HyperClient::builder(TokioExecutor::new()).build_http())
}

fn parse_url(url: &str) -> io::Result<Uri> {
    let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {why}"));
    let uri: Uri = url.parse().map_err(|e| invalid(&format!("not a URL ({e})")))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") if cfg!(feature = "tls") => {}
        Some("https") => return Err(invalid("https:// needs acp-rpc's feature `tls`")),
        _ => return Err(invalid("only http:// and https:// URLs are supported")),
    }
    if uri.authority().is_none() {
        return Err(invalid("no host"));
    }
    Ok(uri)
}
