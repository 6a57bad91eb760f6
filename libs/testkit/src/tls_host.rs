//! An HTTPS host on a loopback address, with a certificate from a test CA of its own: the
//! stand-in for a secret's real host (issue 39). It echoes the `Authorization` it got, in an
//! `x-echo` header and in its body (as a careless API's error page would), records what each
//! request carried, and answers `/gzip` marked compressed.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};

/// What the host saw of one request: its authorization, its query and its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub authorization: String,
    pub query: String,
    pub body: String,
}

/// A running host.
pub struct TlsEchoHost {
    pub addr: SocketAddr,
    /// The test CA that signed its certificate: trust it to reach the host.
    pub ca_pem: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A fresh test CA and a server configuration with a certificate it made for `name` (a host
/// name or an IP address).
pub fn test_ca_and_server(name: &str) -> anyhow::Result<(String, Arc<rustls::ServerConfig>)> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // Names of their own: a leaf named like its issuer looks self-signed to OpenSSL.
    ca.distinguished_name.push(rcgen::DnType::CommonName, "Hermes test CA");
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(vec![name.to_owned()])?;
    leaf.distinguished_name.push(rcgen::DnType::CommonName, name);
    let leaf = leaf.signed_by(&key, &issuer)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)?;
    Ok((ca_cert.pem(), Arc::new(config)))
}

async fn answer(request: Request<Incoming>, seen: Arc<Mutex<Vec<Seen>>>) -> Response<Full<Bytes>> {
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let authorization = header("authorization");
    let query = request.uri().query().unwrap_or("").to_owned();
    let encoding = if request.uri().path() == "/gzip" { "gzip" } else { "identity" };
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let body = String::from_utf8_lossy(&body).into_owned();
    if let Ok(mut seen) = seen.lock() {
        seen.push(Seen { authorization: authorization.clone(), query, body });
    }
    let mut response = Response::new(Full::new(Bytes::from(format!("bad credentials: {authorization}"))));
    if let Ok(value) = http::HeaderValue::from_str(&authorization) {
        response.headers_mut().insert("x-echo", value);
    }
    response.headers_mut().insert("content-encoding", http::HeaderValue::from_static(encoding));
    response
}

impl TlsEchoHost {
    /// Listens on `ip` (any loopback address) with a certificate for `name`.
    pub async fn start(ip: &str, name: &str) -> anyhow::Result<Self> {
        let (ca_pem, config) = test_ca_and_server(name)?;
        let listener = tokio::net::TcpListener::bind((ip, 0)).await?;
        let addr = listener.local_addr()?;
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (config, log) = (config.clone(), log.clone());
                tokio::spawn(async move {
                    let Ok(tls) = tokio_rustls::TlsAcceptor::from(config).accept(tcp).await else { return };
                    let service = service_fn(move |request| {
                        let log = log.clone();
                        async move { Ok::<_, std::convert::Infallible>(answer(request, log).await) }
                    });
                    let io = TokioIo::new(tls);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        Ok(Self { addr, ca_pem, seen })
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// An HTTP/1.1 client over `io` to `name`, trusting only the CA `ca_pem`: a sandbox's program
/// behind the egress proxy, in tests that drive the proxy directly.
pub async fn client_trusting<S>(
    io: S,
    ca_pem: &str,
    name: &str,
) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut roots = rustls::RootCertStore::empty();
    let ca = <CertificateDer<'static> as rustls::pki_types::pem::PemObject>::from_pem_slice(ca_pem.as_bytes())?;
    roots.add(ca)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tls =
        tokio_rustls::TlsConnector::from(Arc::new(config)).connect(ServerName::try_from(name.to_owned())?, io).await?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(connection);
    Ok(sender)
}
