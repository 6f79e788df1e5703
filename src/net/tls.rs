//! TLS for both transports (feature `tls`): the client's configuration (Mozilla's roots from
//! `webpki-roots`, plus the CAs of a PEM file), the server's [`Identity`] (a PEM certificate
//! chain and key), and [`TlsError`], what a failed handshake says to the caller.
//!
//! rustls with the ring provider, named explicitly rather than taken from the process default,
//! so that another crate enabling rustls' `aws-lc-rs` cannot make the choice ambiguous.
//!
//! Why `webpki-roots` and not the platform's store: the same roots on every machine, in every
//! container (no `ca-certificates` package needed), and no platform code to build; the official
//! Rust `agent-client-protocol-http` client (reqwest's `rustls-tls`) verifies against the same.
//! A private CA is added with [`ClientOptions::ca_file`](super::ClientOptions::ca_file).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{CertificateError, ClientConfig, RootCertStore, ServerConfig};
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// Why a TLS handshake failed, as the client saw it. It is the inner error of the
/// [`io::Error`] that `connect` (WebSocket) or [`TransportHandle::error`](super::TransportHandle::error)
/// (HTTP) returns; [`TlsError::of`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsError {
    /// The server's certificate does not chain to a trusted root: signed by a private CA that
    /// was not given, or self-signed.
    UnknownIssuer,
    /// The certificate is not for the host the URL names.
    NameMismatch {
        /// The host of the URL.
        expected: String,
        /// The names the certificate is for.
        presented: Vec<String>,
    },
    /// The certificate expired.
    Expired,
    /// The certificate is not valid yet.
    NotYetValid,
    /// Anything else the handshake failed on (rustls' message): an alert from the server, a
    /// protocol version or cipher in common with none, a certificate that does not decode, a
    /// server that does not speak TLS.
    Other(String),
}

impl TlsError {
    /// The TLS error an I/O error carries (as its inner error, or somewhere in its sources).
    pub fn of(error: &io::Error) -> Option<&TlsError> {
        causes(error).find_map(|e| e.downcast_ref::<TlsError>())
    }
}

/// An error and its causes. `io::Error::source` skips the error an `io::Error` wraps (it is
/// that error's source), so the wrapped error is taken from `get_ref` instead.
fn causes<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(error), |e| match e.downcast_ref::<io::Error>().and_then(io::Error::get_ref) {
        Some(inner) => Some(inner as _),
        None => e.source(),
    })
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::UnknownIssuer => write!(
                f,
                "TLS: the server's certificate is not signed by a trusted CA (a private CA: pass its PEM \
                 file with ClientOptions::ca_file)"
            ),
            TlsError::NameMismatch { expected, presented } => write!(
                f,
                "TLS: the server's certificate is not valid for {expected} (it is for {})",
                if presented.is_empty() { "no name".to_string() } else { presented.join(", ") }
            ),
            TlsError::Expired => write!(f, "TLS: the server's certificate has expired"),
            TlsError::NotYetValid => write!(f, "TLS: the server's certificate is not valid yet"),
            TlsError::Other(why) => write!(f, "TLS: {why}"),
        }
    }
}

impl std::error::Error for TlsError {}

/// The [`TlsError`] behind a failed connection, as an I/O error (`InvalidData`) that says
/// what went wrong; `None` when rustls had no part in it.
pub(crate) fn classify(error: &(dyn std::error::Error + 'static)) -> Option<io::Error> {
    let rustls = causes(error).find_map(|e| e.downcast_ref::<rustls::Error>())?;
    Some(io::Error::new(io::ErrorKind::InvalidData, of_rustls(rustls)))
}

/// An I/O error of a handshake as the caller should see it: the [`TlsError`] when rustls failed.
pub(crate) fn handshake_error(error: io::Error) -> io::Error {
    match classify(&error) {
        Some(tls) => tls,
        None => error,
    }
}

fn of_rustls(error: &rustls::Error) -> TlsError {
    let rustls::Error::InvalidCertificate(certificate) = error else { return TlsError::Other(error.to_string()) };
    match certificate {
        CertificateError::UnknownIssuer => TlsError::UnknownIssuer,
        CertificateError::NotValidForNameContext { expected, presented } => {
            TlsError::NameMismatch { expected: server_name(expected), presented: presented.clone() }
        }
        CertificateError::NotValidForName => TlsError::NameMismatch { expected: String::new(), presented: Vec::new() },
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => TlsError::Expired,
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => TlsError::NotYetValid,
        _ => TlsError::Other(error.to_string()),
    }
}

fn server_name(name: &ServerName<'_>) -> String {
    match name {
        ServerName::DnsName(dns) => dns.as_ref().to_string(),
        ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        _ => format!("{name:?}"),
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client's configuration: the webpki roots, and the certificates of `ca_file` when given.
/// Without a file the one configuration is built once and shared.
pub(crate) fn client_config(ca_file: Option<&Path>) -> io::Result<Arc<ClientConfig>> {
    static DEFAULT: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    let Some(path) = ca_file else {
        if let Some(config) = DEFAULT.get() {
            return Ok(config.clone());
        }
        let config = Arc::new(build_client_config(Vec::new())?);
        return Ok(DEFAULT.get_or_init(|| config).clone());
    };
    Ok(Arc::new(build_client_config(read_certificates(path)?)?))
}

/// A configuration without ALPN, which hyper's connector sets (and insists on setting) itself.
pub(crate) fn build_client_config(extra: Vec<CertificateDer<'static>>) -> io::Result<ClientConfig> {
    let mut roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    for certificate in extra {
        roots.add(certificate).map_err(|e| invalid(format!("a CA certificate is not usable: {e}")))?;
    }
    Ok(ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The certificates of a PEM file; none is an error.
fn read_certificates(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    let bytes = std::fs::read(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    certificates(&bytes).map_err(|e| invalid(format!("{}: {e}", path.display())))
}

fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates: Vec<_> =
        CertificateDer::pem_slice_iter(pem).collect::<Result<_, _>>().map_err(|e| format!("not PEM: {e}"))?;
    if certificates.is_empty() {
        return Err("no certificate (-----BEGIN CERTIFICATE-----) in it".into());
    }
    Ok(certificates)
}

/// The name the server's certificate must be for: the URL's host (a DNS name or an IP address,
/// brackets of IPv6 removed).
pub(crate) fn server_name_of(host: &str) -> io::Result<ServerName<'static>> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("{host} is not a TLS server name")))
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// What a TLS server presents: its certificate chain and private key, for
/// [`Server::tls`](super::server::Server::tls).
#[derive(Clone)]
pub struct Identity {
    pub(crate) config: Arc<ServerConfig>,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity").finish_non_exhaustive()
    }
}

impl Identity {
    /// From PEM files: the certificate chain (the server's certificate first, then any
    /// intermediates) and the private key (PKCS#8, PKCS#1 or SEC1).
    pub fn from_pem_files(cert_chain: impl AsRef<Path>, key: impl AsRef<Path>) -> io::Result<Identity> {
        let read =
            |path: &Path| std::fs::read(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())));
        let (cert_path, key_path) = (cert_chain.as_ref(), key.as_ref());
        let chain = certificates(&read(cert_path)?).map_err(|e| invalid(format!("{}: {e}", cert_path.display())))?;
        let key = private_key(&read(key_path)?).map_err(|e| invalid(format!("{}: {e}", key_path.display())))?;
        Identity::from_der(chain, key)
    }

    /// From PEM text: the certificate chain and the private key.
    pub fn from_pem(cert_chain: &[u8], key: &[u8]) -> io::Result<Identity> {
        let chain = certificates(cert_chain).map_err(|e| invalid(format!("the certificate chain: {e}")))?;
        let key = private_key(key).map_err(|e| invalid(format!("the private key: {e}")))?;
        Identity::from_der(chain, key)
    }

    fn from_der(chain: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>) -> io::Result<Identity> {
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| invalid(format!("the certificate and key do not make a TLS identity: {e}")))?;
        // HTTP/1.1 only (WebSocket upgrades included), as the server speaks.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Identity { config: Arc::new(config) })
    }
}

fn private_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => "no private key (-----BEGIN PRIVATE KEY-----) in it".into(),
        e => format!("not a PEM private key: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_pem_is_an_error_that_names_the_part() {
        let e = Identity::from_pem(b"nothing here", b"").unwrap_err();
        assert!(e.to_string().contains("the certificate chain: no certificate"), "{e}");
        assert!(certificates(b"").is_err());
    }

    #[test]
    fn rustls_errors_become_tls_errors_found_through_io_errors() {
        let unknown = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let wrapped = io::Error::other(io::Error::new(io::ErrorKind::InvalidData, unknown));
        let tls = handshake_error(io::Error::new(io::ErrorKind::InvalidData, wrapped));
        assert_eq!(TlsError::of(&tls), Some(&TlsError::UnknownIssuer));
        assert!(tls.to_string().contains("not signed by a trusted CA"), "{tls}");
        let plain = handshake_error(io::Error::other("refused"));
        assert_eq!(TlsError::of(&plain), None);
        let expired = of_rustls(&rustls::Error::InvalidCertificate(CertificateError::Expired));
        assert_eq!(expired, TlsError::Expired);
    }
}
