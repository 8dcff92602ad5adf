//! TLS for the HTTP and gRPC listeners (rustls with the ring provider), and
//! optionally client certificates checked against a CA (mTLS). The
//! handshake runs inside the listeners' accept loop under the header
//! timeout ([`crate::transport::connections`]), so a client that stalls it is
//! disconnected like one that stalls its request head. The metrics
//! listener stays plain HTTP (scrapers inside the cluster).
//!
//! | flag | what |
//! |---|---|
//! | `--tls-cert FILE` | PEM certificate chain, leaf first |
//! | `--tls-key FILE` | PEM private key (PKCS#8, PKCS#1 or SEC1) |
//! | `--tls-client-ca FILE` | PEM CA certificates; clients must present a certificate they signed |
//!
//! HTTP offers ALPN `h2` and `http/1.1`; gRPC offers `h2`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use crate::error::{ServeError, ServeResult};

/// Where the server's certificate, key and (for mTLS) client CA are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// PEM CA certificates that client certificates must chain to.
    pub client_ca: Option<PathBuf>,
    /// The metrics port speaks TLS too (same certificate and client CA).
    pub metrics: bool,
}

/// The rustls configurations of the two listeners.
#[derive(Debug, Clone)]
pub struct TlsConfigs {
    /// HTTP: ALPN `h2`, `http/1.1`.
    pub http: Arc<ServerConfig>,
    /// gRPC: ALPN `h2`.
    pub grpc: Arc<ServerConfig>,
    /// Metrics (where [`TlsFiles::metrics`] asks for it): as HTTP's.
    pub metrics: Option<Arc<ServerConfig>>,
}

fn bad(path: &Path, what: &str, e: impl std::fmt::Display) -> ServeError {
    ServeError::invalid(format!("TLS {what} {}: {e}", path.display()))
}

fn certificates(path: &Path, what: &str) -> ServeResult<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| bad(path, what, e))?.collect::<Result<Vec<_>, _>>();
    let certs = certs.map_err(|e| bad(path, what, e))?;
    if certs.is_empty() {
        return Err(bad(path, what, "no PEM certificate in the file"));
    }
    Ok(certs)
}

impl TlsFiles {
    /// Reads and checks the files (a key that does not match the
    /// certificate is refused here, at start, not at the first handshake).
    pub fn load(&self) -> ServeResult<TlsConfigs> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certs = certificates(&self.cert, "certificate")?;
        let key = PrivateKeyDer::from_pem_file(&self.key).map_err(|e| bad(&self.key, "private key", e))?;
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ServeError::invalid(format!("TLS: {e}")))?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                for c in certificates(ca, "client CA")? {
                    roots.add(c).map_err(|e| bad(ca, "client CA", e))?;
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build().map_err(|e| bad(ca, "client CA", e))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let config = builder.with_single_cert(certs, key).map_err(|e| bad(&self.key, "certificate and key", e))?;
        let with_alpn = |protocols: &[&[u8]]| {
            let mut c = config.clone();
            c.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
            Arc::new(c)
        };
        let http = with_alpn(&[b"h2", b"http/1.1"]);
        Ok(TlsConfigs { metrics: self.metrics.then(|| http.clone()), http, grpc: with_alpn(&[b"h2"]) })
    }
}
