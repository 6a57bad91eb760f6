//! What the intercept tests and the overhead example share: a stand-in for a secret's host
//! behind a test CA, and a sandbox-side client that trusts only the egress CA.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};

/// A test CA and a certificate it made for `host`: (CA PEM, server config).
pub fn host_tls(host: &str) -> (String, Arc<rustls::ServerConfig>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec![host.to_owned()]).unwrap().signed_by(&key, &issuer).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())))
        .unwrap();
    (ca_cert.pem(), Arc::new(config))
}

/// What the host saw of one request: its authorization header and its body.
pub type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// The stand-in host: it echoes the authorization it got, in a header and in its body.
pub async fn echo_host(config: Arc<rustls::ServerConfig>) -> (std::net::SocketAddr, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (config, log) = (config.clone(), log.clone());
            tokio::spawn(async move {
                let Ok(tls) = tokio_rustls::TlsAcceptor::from(config).accept(tcp).await else { return };
                let service = service_fn(move |request: Request<Incoming>| {
                    let log = log.clone();
                    async move {
                        let auth = request.headers().get("authorization").map(|v| v.to_str().unwrap().to_owned());
                        let auth = auth.unwrap_or_default();
                        // `/gzip`: an answer compressed although the proxy asked for none.
                        let encoding = if request.uri().path() == "/gzip" { "gzip" } else { "identity" };
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        log.lock().unwrap().push((auth.clone(), String::from_utf8_lossy(&body).into_owned()));
                        let echo = format!("bad credentials: {auth}");
                        let response = Response::builder()
                            .header("x-echo", &auth)
                            .header("content-encoding", encoding)
                            .body(Full::new(Bytes::from(echo)));
                        Ok::<_, std::convert::Infallible>(response.unwrap())
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
            });
        }
    });
    (addr, seen)
}

/// A sandbox-side HTTP/1.1 client over `io`, trusting only the CA `ca_pem`, to `host`.
pub async fn sandbox_client<S>(io: S, ca_pem: &str, host: &str) -> hyper::client::conn::http1::SendRequest<Full<Bytes>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut roots = rustls::RootCertStore::empty();
    let ca = <CertificateDer<'static> as rustls::pki_types::pem::PemObject>::from_pem_slice(ca_pem.as_bytes());
    roots.add(ca.unwrap()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from(host.to_owned()).unwrap(), io)
        .await
        .expect("the sandbox trusts the certificate");
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
    tokio::spawn(connection);
    sender
}
