//! HTTP requests Hermes makes on someone else's behalf (chat platforms, model providers, event
//! endpoints): public addresses only, checked on every connection after DNS resolution (so a
//! name cannot point inside the cluster) and on every redirect hop; proxies from the
//! environment are ignored (a proxy would resolve names where we cannot check them); bodies are
//! read with a byte cap. The operator may trust named hosts that live on private addresses (an
//! in-cluster model server, a self-hosted Bot API), on every port or on the ports listed:
//! [`Policy`].

use std::sync::Arc;
use std::time::Duration;

use crate::connecting::{PortCheck, Resolver};
pub use crate::policy::Policy;

/// Redirect hops a client follows (each re-checked).
const MAX_REDIRECTS: usize = 5;

/// A client builder held to `policy`: names resolve to public (or trusted) addresses, a name
/// trusted on some ports reaches its private addresses on those ports only, each redirect hop
/// passes [`Policy::refuse`] (at most five), no proxy from the environment. The caller adds
/// its timeouts and user agent.
pub fn builder(policy: Arc<Policy>) -> reqwest::ClientBuilder {
    let hops = policy.clone();
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        match hops.refuse(attempt.url()) {
            Some(why) => attempt.error(format!("a redirect to a refused address: {why}")),
            None => attempt.follow(),
        }
    });
    reqwest::Client::builder()
        .no_proxy()
        .dns_resolver(Resolver(policy.clone()))
        .connector_layer(PortCheck(policy))
        .redirect(redirects)
}

/// A client for chat platforms' and model providers' APIs under `policy`, with a connect and a
/// total timeout (a request may set a shorter one).
pub fn client_for(policy: Arc<Policy>, connect: Duration, total: Duration) -> Result<reqwest::Client, reqwest::Error> {
    builder(policy)
        .connect_timeout(connect)
        .timeout(total)
        .user_agent(concat!("hermes-cloud/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// The HTTP client of the event sender: no redirects, short timeouts, public addresses only
/// (any address when the operator allows private endpoints).
pub fn client(allow_private: bool) -> Result<reqwest::Client, reqwest::Error> {
    let builder =
        if allow_private { reqwest::Client::builder().no_proxy() } else { builder(Arc::new(Policy::default())) };
    builder
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(10))
        .user_agent(concat!("Hermes-Cloud-Webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Why `url` cannot be an endpoint (`None`: it can). Names are checked when connecting.
pub fn refuse_url(url: &str, allow_private: bool) -> Option<String> {
    let Ok(parsed) = reqwest::Url::parse(url) else { return Some(format!("`{url}` is not a URL")) };
    if !matches!(parsed.scheme(), "https" | "http") {
        return Some("endpoints are http:// or https:// URLs".into());
    }
    if allow_private {
        return parsed.host_str().filter(|h| !h.is_empty()).is_none().then(|| "the URL has no host".into());
    }
    Policy::default().refuse(&parsed)
}

/// A body that did not come whole.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("the body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the body could not be read: {0}")]
    Transport(#[from] reqwest::Error),
}

/// Reads `resp`'s body, at most `max` bytes: a longer one is refused as soon as it passes the
/// cap (a hostile server cannot make us buffer more), whatever `Content-Length` claims.
pub async fn read_capped(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>, ReadError> {
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(ReadError::TooLarge(max));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > max {
            return Err(ReadError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "test servers start their tasks freely; the rule is for the service's own"
)]
mod tests {
    use super::{Policy, refuse_url};

    #[test]
    fn endpoints_must_be_public_http_urls() {
        assert_eq!(refuse_url("https://hooks.example.com/hermes", false), None);
        assert_eq!(refuse_url("http://93.184.216.34/x", false), None);
        for bad in ["http://127.0.0.1:9/x", "http://10.1.2.3/", "http://169.254.169.254/latest", "http://[::1]/"] {
            assert!(refuse_url(bad, false).is_some_and(|w| w.contains("not a public address")), "{bad}");
        }
        assert_eq!(refuse_url("http://127.0.0.1:9/x", true), None);
        assert!(refuse_url("ftp://example.com/", false).is_some());
        assert!(refuse_url("not a url", false).is_some());
    }

    /// A loopback server answering every request with `body`; counts the requests it read.
    async fn serve(body: &'static str) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    let mut request = [0u8; 1024];
                    if sock.read(&mut request).await.unwrap_or(0) == 0 {
                        return;
                    }
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let head =
                        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
                    let _ = sock.write_all(format!("{head}{body}").as_bytes()).await;
                });
            }
        });
        (port, requests)
    }

    #[tokio::test]
    async fn a_name_trusted_on_a_port_reaches_its_private_address_on_that_port_only() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (model_port, _) = serve("the model server").await;
        let (other_port, other_requests) = serve("the admin console").await;
        let policy = std::sync::Arc::new(Policy::trusting([format!("localhost:{model_port}")]));
        let client = super::builder(policy).build().unwrap();

        let resp = client.get(format!("http://localhost:{model_port}/v1/models")).send().await.unwrap();
        assert_eq!(resp.text().await.unwrap(), "the model server");

        let err = client.get(format!("http://localhost:{other_port}/")).send().await.unwrap_err();
        let why = format!("{:?}", err);
        assert!(why.contains(&format!("trusted on other ports than {other_port}")), "{why}");
        assert_eq!(other_requests.load(std::sync::atomic::Ordering::SeqCst), 0, "no request reached the other port");

        // Listed bare, the name is trusted on every port.
        let anywhere = super::builder(std::sync::Arc::new(Policy::trusting(["localhost"]))).build().unwrap();
        let resp = anywhere.get(format!("http://localhost:{other_port}/")).send().await.unwrap();
        assert_eq!(resp.text().await.unwrap(), "the admin console");
    }

    #[tokio::test]
    async fn a_name_that_resolves_inside_is_refused_and_a_body_over_the_cap_is_cut() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // `localhost` resolves to loopback: refused unless trusted.
        let strict = super::builder(std::sync::Arc::new(Policy::default())).build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut request = [0u8; 1024];
                let _ = sock.read(&mut request).await;
                let body = "x".repeat(10_000);
                let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
                let _ = sock.write_all(format!("{head}{body}").as_bytes()).await;
            }
        });
        let url = format!("http://localhost:{port}/");
        assert!(strict.get(&url).send().await.is_err(), "localhost is not public");
        let trusting = super::builder(std::sync::Arc::new(Policy::trusting(["localhost"]))).build().unwrap();
        let resp = trusting.get(&url).send().await.unwrap();
        assert!(matches!(super::read_capped(resp, 1_000).await, Err(super::ReadError::TooLarge(1_000))));
        let resp = trusting.get(&url).send().await.unwrap();
        assert_eq!(super::read_capped(resp, 20_000).await.unwrap().len(), 10_000);
    }
}
