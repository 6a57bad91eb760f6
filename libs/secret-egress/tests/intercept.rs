//! An intercepted tunnel end to end on loopback: a sandbox-side HTTPS client trusting only the
//! egress CA, the proxy, and a stand-in for the real host whose certificate comes from a test
//! CA the proxy is told to trust (`hermes_testkit::tls_host`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code: a failed unwrap fails it")]

use std::sync::Arc;

use bytes::Bytes;
use hermes_testkit::tls_host::{TlsEchoHost, client_trusting};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};

use hermes_secret_egress::{Authority, Placement, REFUSED_HEADER, Secret, Upstream, intercept};

const HOST: &str = "api.github.test";
const REAL: &str = "ghp_the_real_value_1234567890";
const PH: &str = "hermes_placeholder_00112233445566778899aabbccddeeff00112233";

fn secret(placement: Placement) -> Secret {
    Secret {
        name: "GITHUB_TOKEN".into(),
        placeholder: PH.into(),
        value: REAL.into(),
        hosts: vec![HOST.into()],
        placement,
    }
}

/// The answer's status, `x-echo` header, refusal header and body.
struct Answer {
    status: StatusCode,
    echo: String,
    refused: String,
    body: String,
}

/// An intercepted tunnel to `host`, the proxy trusting `trusted`: its egress CA and the
/// sandbox's end.
async fn tunnel(host: &TlsEchoHost, trusted: &str, secret: Secret) -> (Arc<Authority>, tokio::io::DuplexStream) {
    let authority = Arc::new(Authority::generate().unwrap());
    let upstream = Upstream::new(false, &[trusted.to_owned()]).unwrap();
    let (sandbox_side, proxy_side) = tokio::io::duplex(64 * 1024);
    let onward = tokio::net::TcpStream::connect(host.addr).await.unwrap();
    let ca = authority.clone();
    spawn_detached(async move {
        let _ = intercept(proxy_side, onward, HOST, vec![secret], (&ca, &upstream)).await;
    });
    (authority, sandbox_side)
}

/// Sends `request` through an intercepted tunnel to `host`, the proxy trusting `trusted`, as a
/// sandbox client that trusts only the egress CA.
async fn through_proxy(host: &TlsEchoHost, trusted: &str, secret: Secret, request: Request<Full<Bytes>>) -> Answer {
    let (authority, sandbox_side) = tunnel(host, trusted, secret).await;
    let mut sender = client_trusting(sandbox_side, authority.cert_pem(), HOST).await.unwrap();
    let response = sender.send_request(request).await.unwrap();
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let (echo, refused, status) = (header("x-echo"), header(REFUSED_HEADER), response.status());
    let body = String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    Answer { status, echo, refused, body }
}

#[expect(clippy::disallowed_methods, reason = "the proxy's side of a test tunnel; this crate has no telemetry")]
fn spawn_detached(task: impl Future<Output = ()> + Send + 'static) {
    tokio::spawn(task);
}

fn get(path: &str, auth: &str) -> Request<Full<Bytes>> {
    Request::get(path).header("host", HOST).header("authorization", auth).body(Full::default()).unwrap()
}

async fn host() -> TlsEchoHost {
    TlsEchoHost::start("127.0.0.1", HOST).await.unwrap()
}

#[tokio::test]
async fn the_host_gets_the_real_value_and_its_echo_comes_back_as_the_placeholder() {
    let host = host().await;
    let answer =
        through_proxy(&host, &host.ca_pem, secret(Placement::default()), get("/user", &format!("Bearer {PH}"))).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(host.seen()[0].authorization, format!("Bearer {REAL}"), "the host got the real value");
    assert_eq!(answer.echo, format!("Bearer {PH}"), "an echoed header is redacted");
    assert_eq!(answer.body, format!("bad credentials: Bearer {PH}"), "an echoed body is redacted");
}

#[tokio::test]
async fn a_host_whose_certificate_fails_verification_gets_nothing() {
    let host = host().await;
    let other = TlsEchoHost::start("127.0.0.1", HOST).await.unwrap();
    let answer = through_proxy(&host, &other.ca_pem, secret(Placement::default()), get("/user", PH)).await;
    assert_eq!(answer.status, StatusCode::BAD_GATEWAY);
    assert!(answer.refused.contains("failed verification"), "{}", answer.refused);
    assert!(host.seen().is_empty(), "no request reached a host the proxy could not verify");
}

#[tokio::test]
async fn a_planted_credential_is_refused_where_the_binding_requires_its_own() {
    let host = host().await;
    let required = Placement { required_header: Some("authorization".into()), ..Placement::default() };
    let answer = through_proxy(&host, &host.ca_pem, secret(required), get("/user", "Bearer ghp_planted")).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(answer.refused.contains("$GITHUB_TOKEN"), "{}", answer.refused);
    assert!(host.seen().is_empty(), "the planted credential never left");
}

#[tokio::test]
async fn a_named_body_field_gets_the_value_and_the_rest_of_the_body_keeps_the_placeholder() {
    let host = host().await;
    let named = Placement { body_field: Some("token".into()), ..Placement::default() };
    let body = format!(r#"{{"token":"{PH}","title":"{PH}"}}"#);
    let request = Request::post("/graphql")
        .header("host", HOST)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    assert_eq!(through_proxy(&host, &host.ca_pem, secret(named), request).await.status, StatusCode::OK);
    let sent: serde_json::Value = serde_json::from_str(&host.seen()[0].body).unwrap();
    assert_eq!((sent["token"].as_str(), sent["title"].as_str()), (Some(REAL), Some(PH)));
}

#[tokio::test]
async fn an_answer_compressed_against_the_proxys_asking_never_reaches_the_sandbox() {
    let host = host().await;
    let answer =
        through_proxy(&host, &host.ca_pem, secret(Placement::default()), get("/gzip", &format!("Bearer {PH}"))).await;
    assert_eq!(answer.status, StatusCode::BAD_GATEWAY);
    assert!(answer.refused.contains("cannot be checked"), "{}", answer.refused);
    assert!(!answer.echo.contains(REAL) && !answer.body.contains(REAL), "nothing of the answer came through");
}

/// A client that offers HTTP/2 (curl, browsers) gets it: the host, reached over HTTP/1.1,
/// still gets the real value, and the answer comes back redacted over HTTP/2.
#[tokio::test]
async fn an_http2_client_is_served_over_http2_with_the_same_swap() {
    let host = host().await;
    let (authority, sandbox_side) = tunnel(&host, &host.ca_pem, secret(Placement::default())).await;

    let mut roots = rustls::RootCertStore::empty();
    let pem = authority.cert_pem();
    let der = <rustls::pki_types::CertificateDer<'static> as rustls::pki_types::pem::PemObject>::from_pem_slice(
        pem.as_bytes(),
    )
    .unwrap();
    roots.add(der).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let name = rustls::pki_types::ServerName::try_from(HOST).unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, sandbox_side).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(b"h2".as_slice()), "the proxy offers HTTP/2");
    let io = hyper_util::rt::TokioIo::new(tls);
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io).await.unwrap();
    spawn_detached(async move {
        let _ = connection.await;
    });
    let request = Request::get(format!("https://{HOST}/user"))
        .header("authorization", format!("Bearer {PH}"))
        .body(Full::<Bytes>::default())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!((response.status(), response.version()), (StatusCode::OK, http::Version::HTTP_2));
    assert_eq!(response.headers()["x-echo"], format!("Bearer {PH}").as_str(), "an echoed header is redacted");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, format!("bad credentials: Bearer {PH}").as_bytes(), "an echoed body is redacted");
    assert_eq!(host.seen()[0].authorization, format!("Bearer {REAL}"), "the host got the real value over HTTP/1.1");
}
