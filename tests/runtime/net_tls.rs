#![cfg(all(feature = "ws", feature = "tls"))]
//! TLS end to end (feature `tls`): our client and our server over `https://` and `wss://`, in v1
//! and v2, with a CA and certificates made here (rcgen); and the refusals a client must report as
//! what they are: a CA it was not given, a certificate for another name, an expired one.

use acp_rpc::client::ClientConnection;
use acp_rpc::net::server::{Limits, Server, ServerHandle};
use acp_rpc::net::tls::{Identity, TlsError};
use acp_rpc::net::{http, ws, ClientOptions, TransportHandle};
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::{ClientContext, Error};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Every test ends within this, or fails.
const LIMIT: Duration = Duration::from_secs(20);

async fn within<T>(what: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, what).await.expect("the test took too long")
}

use crate::echo::Echo;

struct Client;
impl v1::methods::client::Handler<ClientContext> for Client {}
impl v2::methods::client::Handler<ClientContext> for Client {}

// ---------------------------------------------------------------------------------------------
// Certificates

/// A CA and a server certificate it signed, as PEM files in a directory of their own.
struct Pki {
    _dir: tempfile::TempDir,
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn ca(name: &str) -> (CertificateParams, KeyPair, String) {
    let key = KeyPair::generate().expect("CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let pem = params.self_signed(&key).expect("CA certificate").pem();
    (params, key, pem)
}

/// A CA, and a certificate for `names` it signed; `edit` changes the server certificate's
/// parameters first (its validity, say).
fn pki_with(names: &[&str], edit: impl FnOnce(&mut CertificateParams)) -> Pki {
    // Each CA a name of its own: a CA of the same name would be taken for the issuer, and its
    // signature found bad, rather than the issuer unknown.
    static CAS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CAS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (ca_params, ca_key, ca_pem) = ca(&format!("acp test CA {n}"));
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("server key");
    let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).expect("params");
    params.distinguished_name.push(DnType::CommonName, names[0]);
    edit(&mut params);
    let cert = params.signed_by(&key, &issuer).expect("server certificate");
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write PEM");
        path
    };
    let (ca, cert, key) =
        (write("ca.pem", &ca_pem), write("cert.pem", &cert.pem()), write("key.pem", &key.serialize_pem()));
    Pki { _dir: dir, ca, cert, key }
}

fn issued(names: &[&str]) -> Pki {
    pki_with(names, |_| {})
}

// ---------------------------------------------------------------------------------------------
// Server and client

struct Running {
    port: u16,
    handle: ServerHandle,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve(pki: &Pki) -> Running {
    serve_with(pki, Limits::default()).await
}

async fn serve_with(pki: &Pki, limits: Limits) -> Running {
    let identity = Identity::from_pem_files(&pki.cert, &pki.key).expect("identity");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = Server::new(Arc::new(Echo), Version::ALL).limits(limits).tls(identity);
    let handle = server.handle();
    let served = tokio::spawn(server.serve(listener));
    Running { port, handle, served }
}

impl Running {
    async fn stop(self) {
        self.handle.shutdown().await;
        self.served.await.expect("the server task").expect("served");
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Transport {
    Https,
    Wss,
}

/// Our client on `url`, its driver spawned.
async fn connect(
    transport: Transport,
    url: &str,
    options: ClientOptions,
) -> std::io::Result<(ClientConnection, TransportHandle)> {
    Ok(match transport {
        Transport::Https => {
            let (conn, driver, handle) = http::connect(Client, url, options, Default::default())?;
            tokio::spawn(driver);
            (conn, handle)
        }
        Transport::Wss => {
            let (conn, driver, handle) = ws::connect(Client, url, options, Default::default()).await?;
            tokio::spawn(driver);
            (conn, handle)
        }
    })
}

/// One turn in `version`: the text sent comes back as the agent's chunk, the turn ends.
async fn turn(conn: &ClientConnection, version: u16, text: &str) {
    if version == 1 {
        conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.expect("initialize v1");
        let mut session = conn.new_session_v1(v1::NewSessionRequest::new("/tmp".into(), vec![])).await.expect("new v1");
        let mut turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new(text.into()))]).await;
        let mut echoed = Vec::new();
        while let Some(update) = turn.next().await {
            if let v1::SessionUpdate::AgentMessageChunk(chunk) = update {
                if let v1::ContentBlock::Text(t) = &chunk.content {
                    echoed.push(t.text.clone());
                }
            }
        }
        assert_eq!(echoed, [text]);
        assert_eq!(turn.outcome().await.expect("the v1 turn ends").stop_reason, v1::StopReason::EndTurn);
    } else {
        let info = v2::Implementation::new("c".into(), "0".into());
        conn.initialize_v2(v2::InitializeRequest::new(v2::ProtocolVersion(2), info)).await.expect("initialize v2");
        let mut session =
            conn.new_session_v2(v2::NewSessionRequest::new(v2::AbsolutePath("/tmp".into()))).await.expect("new v2");
        let mut turn = session.prompt(vec![v2::ContentBlock::from(v2::TextContent::new(text.into()))]).await;
        let mut echoed = Vec::new();
        while let Some(update) = turn.next().await {
            if let v2::SessionUpdate::AgentMessageChunk(chunk) = update {
                if let v2::ContentBlock::Text(t) = &chunk.content {
                    echoed.push(t.text.clone());
                }
            }
        }
        assert_eq!(echoed, [text]);
        let end = turn.outcome().await.expect("the v2 turn ends");
        assert_eq!(end.idle.stop_reason, v2::IdleStateUpdateStopReason::EndTurn);
    }
}

fn url(transport: Transport, host: &str, port: u16) -> String {
    match transport {
        Transport::Https => format!("https://{host}:{port}/"),
        Transport::Wss => format!("wss://{host}:{port}/"),
    }
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_over_https_and_wss_in_v1_and_v2() {
    let pki = issued(&["localhost", "127.0.0.1"]);
    let server = serve(&pki).await;
    for transport in [Transport::Https, Transport::Wss] {
        for version in [1, 2] {
            // By name and by IP address: the certificate names both.
            for host in ["localhost", "127.0.0.1"] {
                let url = url(transport, host, server.port);
                let options = ClientOptions::default().ca_file(&pki.ca);
                let (conn, handle) = within(connect(transport, &url, options)).await.expect("connect");
                within(turn(&conn, version, &format!("{transport:?} v{version} {host}"))).await;
                assert!(handle.error().is_none(), "{:?}", handle.error());
                within(handle.close()).await;
            }
        }
    }
    within(server.stop()).await;
}

/// What a client got for a server it must refuse: the error of `ws::connect`, or over HTTP the
/// error of `initialize` and the transport's.
async fn refused(transport: Transport, url: &str, options: ClientOptions) -> std::io::Error {
    match transport {
        Transport::Wss => match within(connect(transport, url, options)).await {
            Err(e) => e,
            Ok(_) => panic!("{url}: the WebSocket connected"),
        },
        Transport::Https => {
            let (conn, handle) = connect(transport, url, options).await.expect("http::connect sends nothing");
            let answer = within(conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1)))).await;
            assert_eq!(answer.err(), Some(Error::Closed), "{url}: initialize fails, nothing reached the protocol");
            assert!(handle.is_closed());
            let Some(error) = handle.error() else { panic!("{url}: no transport error") };
            std::io::Error::new(
                error.kind(),
                TlsError::of(error).cloned().unwrap_or(TlsError::Other(error.to_string())),
            )
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_not_given_is_an_unknown_issuer() {
    let pki = issued(&["localhost"]);
    let other = issued(&["localhost"]);
    let server = serve(&pki).await;
    for transport in [Transport::Https, Transport::Wss] {
        let url = url(transport, "localhost", server.port);
        // The webpki roots alone, then another private CA: neither signed the server's certificate.
        for options in [ClientOptions::default(), ClientOptions::default().ca_file(&other.ca)] {
            let error = refused(transport, &url, options).await;
            assert_eq!(TlsError::of(&error), Some(&TlsError::UnknownIssuer), "{transport:?}: {error}");
            assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
            assert!(error.to_string().contains("not signed by a trusted CA"), "{error}");
        }
    }
    within(server.stop()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_name_is_a_name_mismatch() {
    let pki = issued(&["agent.example"]);
    let server = serve(&pki).await;
    for transport in [Transport::Https, Transport::Wss] {
        let url = url(transport, "localhost", server.port);
        let error = refused(transport, &url, ClientOptions::default().ca_file(&pki.ca)).await;
        match TlsError::of(&error) {
            Some(TlsError::NameMismatch { expected: host, presented }) => {
                assert_eq!(host, "localhost");
                assert!(presented.iter().any(|name| name.contains("agent.example")), "{presented:?}");
            }
            other => panic!("{transport:?}: {other:?}, expected a name mismatch ({error})"),
        }
        assert!(error.to_string().contains("not valid for localhost"), "{error}");
    }
    within(server.stop()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_certificate_is_expired() {
    let pki = pki_with(&["localhost"], |params| {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    });
    let server = serve(&pki).await;
    for transport in [Transport::Https, Transport::Wss] {
        let url = url(transport, "localhost", server.port);
        let error = refused(transport, &url, ClientOptions::default().ca_file(&pki.ca)).await;
        assert_eq!(TlsError::of(&error), Some(&TlsError::Expired), "{transport:?}: {error}");
        assert!(error.to_string().contains("expired"), "{error}");
    }
    within(server.stop()).await;
}

#[tokio::test]
async fn plain_clients_get_nothing_from_a_tls_server_and_bad_files_are_named() {
    let pki = issued(&["localhost"]);
    let server = serve(&pki).await;
    // A plain HTTP client on the TLS port: the handshake fails on its side, the server keeps
    // serving.
    let url = format!("http://127.0.0.1:{}/", server.port);
    let (conn, handle) = connect(Transport::Https, &url, ClientOptions::default()).await.expect("connect");
    let answer = within(conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1)))).await;
    assert_eq!(answer.err(), Some(Error::Closed));
    assert!(handle.error().is_some());
    // A CA file that is not one fails before anything is sent.
    let bad = ClientOptions::default().ca_file(&pki.key);
    let url = format!("wss://localhost:{}/", server.port);
    let error = ws::connect(Client, &url, bad.clone(), Default::default()).await.err().expect("a key is no CA");
    assert!(error.to_string().contains("no certificate"), "{error}");
    let error = http::connect(Client, &url.replace("wss", "https"), bad, Default::default()).err().expect("no CA");
    assert!(error.to_string().contains("key.pem"), "{error}");
    let error = Identity::from_pem_files(&pki.cert, &pki.cert).expect_err("a certificate is no key");
    assert!(error.to_string().contains("no private key"), "{error}");
    within(server.stop()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_handshake_is_dropped_and_shutdown_ends_tls_connections() {
    use tokio::io::AsyncReadExt;
    let pki = issued(&["localhost"]);
    let limits = Limits { header_read_timeout: Duration::from_millis(300), ..Limits::default() };
    let server = serve_with(&pki, limits).await;
    // A client that opens the TCP connection and never says hello: dropped (end of stream, or
    // reset) once the header timeout passes.
    let mut silent = tokio::net::TcpStream::connect(("127.0.0.1", server.port)).await.expect("tcp");
    let mut byte = [0u8; 1];
    let read = within(silent.read(&mut byte)).await;
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    // Meanwhile, and after it, a turn over TLS; then shutdown with the WebSocket open ends it.
    let url = url(Transport::Wss, "localhost", server.port);
    let (conn, handle) =
        within(connect(Transport::Wss, &url, ClientOptions::default().ca_file(&pki.ca))).await.expect("connect");
    within(turn(&conn, 1, "before shutdown")).await;
    within(server.stop()).await;
    let mut waited = 0;
    while !handle.is_closed() && waited < 200 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(handle.is_closed(), "the server's shutdown closed the socket");
}
