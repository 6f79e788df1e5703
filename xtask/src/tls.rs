//! Certificates for the TLS interop scenarios and benchmark rows, made fresh by each run: a CA
//! and a server certificate it signed for `localhost` and `127.0.0.1`, as PEM files (rcgen).
//! Our clients trust the CA with `--ca-file`, Node with `NODE_EXTRA_CA_CERTS`.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use std::fs;
use std::path::{Path, PathBuf};

/// The PEM files of one run.
#[derive(Debug, Clone)]
pub struct Pki {
    /// The CA's certificate: what clients trust.
    pub ca: PathBuf,
    /// The server's certificate (signed by the CA).
    pub cert: PathBuf,
    /// The server's private key (PKCS#8).
    pub key: PathBuf,
}

/// The names the server certificate is for: the listeners bind `127.0.0.1` and print it.
pub const NAMES: [&str; 2] = ["localhost", "127.0.0.1"];

/// Makes a CA and a server certificate into `dir` (`ca.pem`, `cert.pem`, `key.pem`).
pub fn make(dir: &Path) -> Result<Pki, String> {
    let failed = |what: &str, e: rcgen::Error| format!("cannot make the test {what}: {e}");
    let ca_key = KeyPair::generate().map_err(|e| failed("CA key", e))?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(|e| failed("CA", e))?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "acp-rpc interop CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_pem = ca.self_signed(&ca_key).map_err(|e| failed("CA certificate", e))?.pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().map_err(|e| failed("server key", e))?;
    let mut server = CertificateParams::new(NAMES.map(String::from).to_vec()).map_err(|e| failed("server", e))?;
    server.distinguished_name.push(DnType::CommonName, NAMES[0]);
    let cert_pem = server.signed_by(&key, &issuer).map_err(|e| failed("server certificate", e))?.pem();
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok::<_, String>(path)
    };
    Ok(Pki {
        ca: write("ca.pem", &ca_pem)?,
        cert: write("cert.pem", &cert_pem)?,
        key: write("key.pem", &key.serialize_pem())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_ca_and_a_certificate_it_signed() {
        let dir = tempfile::tempdir().unwrap();
        let pki = make(dir.path()).unwrap();
        let ca = fs::read_to_string(&pki.ca).unwrap();
        let cert = fs::read_to_string(&pki.cert).unwrap();
        assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----") && cert != ca);
        assert!(fs::read_to_string(&pki.key).unwrap().contains("PRIVATE KEY"));
    }
}
