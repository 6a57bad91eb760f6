//! An intercepted tunnel end to end on loopback: a sandbox-side HTTPS client trusting only the
//! egress CA, the proxy, and a stand-in for the real host whose certificate comes from a test
//! CA the proxy is told to trust.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::disallowed_methods,
    reason = "test code: a failed unwrap fails it; the stand-in host spawns its connections"
)]

mod support;

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};

use support::{echo_host, host_tls};

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

/// Sends `request` through an intercepted tunnel to the host at `addr`, as a sandbox client that
/// trusts only the egress CA; the answer's status, `x-echo` header, refusal header and body.
async fn through_proxy(
    addr: std::net::SocketAddr,
    trusted: &str,
    secret: Secret,
    request: Request<Full<Bytes>>,
) -> (StatusCode, String, String, String) {
    let authority = Arc::new(Authority::generate().unwrap());
    let upstream = Upstream::new(false, &[trusted.to_owned()]).unwrap();
    let (sandbox_side, proxy_side) = tokio::io::duplex(64 * 1024);
    let onward = tokio::net::TcpStream::connect(addr).await.unwrap();
    let ca = authority.clone();
    tokio::spawn(async move {
        let _ = intercept(proxy_side, onward, HOST, vec![secret], (&ca, &upstream)).await;
    });
    let mut sender = support::sandbox_client(sandbox_side, authority.cert_pem(), HOST).await;
    let response = sender.send_request(request).await.unwrap();
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let (echo, refused, status) = (header("x-echo"), header(REFUSED_HEADER), response.status());
    let body = String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    (status, echo, refused, body)
}

fn get_with(auth: &str) -> Request<Full<Bytes>> {
    Request::get("/user").header("host", HOST).header("authorization", auth).body(Full::default()).unwrap()
}

#[tokio::test]
async fn the_host_gets_the_real_value_and_its_echo_comes_back_as_the_placeholder() {
    let (ca, config) = host_tls(HOST);
    let (addr, seen) = echo_host(config).await;
    let (status, echo, _, body) =
        through_proxy(addr, &ca, secret(Placement::default()), get_with(&format!("Bearer {PH}"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(seen.lock().unwrap()[0].0, format!("Bearer {REAL}"), "the host got the real value");
    assert_eq!(echo, format!("Bearer {PH}"), "an echoed header is redacted");
    assert_eq!(body, format!("bad credentials: Bearer {PH}"), "an echoed body is redacted");
    assert!(!body.contains(REAL) && !echo.contains(REAL));
}

#[tokio::test]
async fn a_host_whose_certificate_fails_verification_gets_nothing() {
    let (_, config) = host_tls(HOST);
    let (other_ca, _) = host_tls(HOST);
    let (addr, seen) = echo_host(config).await;
    let (status, _, refused, _) =
        through_proxy(addr, &other_ca, secret(Placement::default()), get_with(&format!("Bearer {PH}"))).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(refused.contains("failed verification"), "{refused}");
    assert!(seen.lock().unwrap().is_empty(), "no request reached a host the proxy could not verify");
}

#[tokio::test]
async fn a_planted_credential_is_refused_where_the_binding_requires_its_own() {
    let (ca, config) = host_tls(HOST);
    let (addr, seen) = echo_host(config).await;
    let required = Placement { required_header: Some("authorization".into()), ..Placement::default() };
    let (status, _, refused, _) = through_proxy(addr, &ca, secret(required), get_with("Bearer ghp_planted")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(refused.contains("$GITHUB_TOKEN"), "{refused}");
    assert!(seen.lock().unwrap().is_empty(), "the planted credential never left");
}

#[tokio::test]
async fn a_named_body_field_gets_the_value_and_the_rest_of_the_body_keeps_the_placeholder() {
    let (ca, config) = host_tls(HOST);
    let (addr, seen) = echo_host(config).await;
    let named = Placement { body_field: Some("token".into()), ..Placement::default() };
    let body = format!(r#"{{"token":"{PH}","title":"{PH}"}}"#);
    let request = Request::post("/graphql")
        .header("host", HOST)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let (status, _, _, _) = through_proxy(addr, &ca, secret(named), request).await;
    assert_eq!(status, StatusCode::OK);
    let sent: serde_json::Value = serde_json::from_str(&seen.lock().unwrap()[0].1).unwrap();
    assert_eq!((sent["token"].as_str(), sent["title"].as_str()), (Some(REAL), Some(PH)));
}

#[tokio::test]
async fn an_answer_compressed_against_the_proxys_asking_never_reaches_the_sandbox() {
    let (ca, config) = host_tls(HOST);
    let (addr, _) = echo_host(config).await;
    let request = Request::get("/gzip")
        .header("host", HOST)
        .header("authorization", format!("Bearer {PH}"))
        .body(Full::default());
    let (status, echo, refused, body) = through_proxy(addr, &ca, secret(Placement::default()), request.unwrap()).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(refused.contains("cannot be checked"), "{refused}");
    assert!(!echo.contains(REAL) && !body.contains(REAL), "nothing of the answer came through");
}
