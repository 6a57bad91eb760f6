//! The proxy's own TLS to a secret's real host: the system's trusted roots (plus any the
//! operator adds, such as a company CA), full verification of the host's certificate and name.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::SetupError;

/// How the proxy connects onward.
#[derive(Clone)]
pub struct Upstream {
    connector: TlsConnector,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").finish_non_exhaustive()
    }
}

impl Upstream {
    /// Trusting the system's roots (when `system`) and the PEM certificates `extra`.
    pub fn new(system: bool, extra: &[String]) -> Result<Self, SetupError> {
        let mut roots = RootCertStore::empty();
        if system {
            let found = rustls_native_certs::load_native_certs();
            if found.certs.is_empty() {
                return Err(SetupError(format!("no trusted roots on this system: {:?}", found.errors)));
            }
            roots.add_parsable_certificates(found.certs);
        }
        for pem in extra {
            for cert in <CertificateDer<'static> as rustls::pki_types::pem::PemObject>::pem_slice_iter(pem.as_bytes()) {
                let cert = cert.map_err(|e| SetupError(format!("a trusted certificate: {e}")))?;
                roots.add(cert).map_err(|e| SetupError(format!("a trusted certificate: {e}")))?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| SetupError(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self { connector: TlsConnector::from(Arc::new(config)) })
    }

    /// TLS over `tcp` to `host`, its certificate verified.
    pub async fn connect<S>(&self, host: &str, tcp: S) -> std::io::Result<TlsStream<S>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        self.connector.connect(name, tcp).await
    }
}
