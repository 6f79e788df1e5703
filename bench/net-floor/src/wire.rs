//! What the floor moves and over what: the bytes of one ACP v1 prompt turn as our `client` and
//! `echo_agent` send them (the request, one `session/update`, the response), never parsed, and
//! the sockets (plain TCP, or TLS with rustls on ring, as acp-rpc's `tls` feature).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The client's message of a turn: a `session/prompt` of `x`.
pub const REQUEST: &[u8] =
    br#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s0","prompt":[{"type":"text","text":"x"}]}}"#;
/// The agent's update of a turn: one `agent_message_chunk` of `x`.
pub const UPDATE: &[u8] = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s0","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#;
/// The agent's answer that ends a turn.
pub const RESPONSE: &[u8] = br#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#;
/// What starts the client's message of a stream turn, followed by the number of updates: the
/// server sends that many updates, then the answer. (The one thing the server reads: the floor's
/// stand-in for the `flood N` prompt.)
pub const FLOOD: &[u8] = b"FLOOD ";

/// The number of updates a message asks for: `Some(n)` for `FLOOD n`, `None` for a turn.
pub fn flood_count(message: &[u8]) -> Option<usize> {
    let rest = message.strip_prefix(FLOOD)?;
    std::str::from_utf8(rest).ok()?.trim().parse().ok()
}

/// A stream turn's message.
pub fn flood_message(updates: usize) -> Vec<u8> {
    let mut message = FLOOD.to_vec();
    message.extend_from_slice(updates.to_string().as_bytes());
    message
}

/// TLS, when the floor runs under it: the server's acceptor or the client's connector.
#[derive(Clone)]
pub enum Tls {
    None,
    Server(tokio_rustls::TlsAcceptor),
    Client(tokio_rustls::TlsConnector),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

impl Tls {
    /// The server's side from a PEM certificate chain and key.
    pub fn server(cert: &Path, key: &Path) -> io::Result<Tls> {
        let chain =
            CertificateDer::pem_file_iter(cert).map_err(invalid)?.collect::<Result<Vec<_>, _>>().map_err(invalid)?;
        let key = PrivateKeyDer::from_pem_file(key).map_err(invalid)?;
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(invalid)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(invalid)?;
        Ok(Tls::Server(tokio_rustls::TlsAcceptor::from(Arc::new(config))))
    }

    /// The client's side trusting the PEM CA file.
    pub fn client(ca: &Path) -> io::Result<Tls> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(ca).map_err(invalid)? {
            roots.add(cert.map_err(invalid)?).map_err(invalid)?;
        }
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(invalid)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Tls::Client(tokio_rustls::TlsConnector::from(Arc::new(config))))
    }

    /// A connected or accepted socket, with TLS on it when there is any (the handshake done).
    pub async fn wrap(&self, tcp: TcpStream) -> io::Result<Socket> {
        tcp.set_nodelay(true)?;
        Ok(match self {
            Tls::None => Socket::Plain(tcp),
            Tls::Server(acceptor) => Socket::Tls(Box::new(acceptor.accept(tcp).await?.into())),
            Tls::Client(connector) => {
                let name = ServerName::try_from("127.0.0.1").map_err(invalid)?;
                Socket::Tls(Box::new(connector.connect(name, tcp).await?.into()))
            }
        })
    }
}

/// A TCP socket, plain or under TLS.
pub enum Socket {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::TlsStream<TcpStream>>),
}

impl AsyncRead for Socket {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Socket::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_flush(cx),
            Socket::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
