//! HTTP requests to addresses tenants choose (outbound event endpoints): public addresses
//! only, unless the operator allows private ones, checked on the URL and again on every
//! connection after DNS resolution (so a name cannot point inside the cluster), with no
//! redirects followed.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Resolves names to public addresses only (a reqwest resolver: every address a name
/// resolves to is checked, on every connection).
pub struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.filter(|a| crate::is_public(a.ip())).collect();
            if addrs.is_empty() {
                return Err(format!("{host} has no public address").into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The HTTP client of the sender: no redirects, short timeouts, public addresses only.
pub fn client(allow_private: bool) -> Result<reqwest::Client, reqwest::Error> {
    let builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(10))
        .user_agent(concat!("Hermes-Cloud-Webhooks/", env!("CARGO_PKG_VERSION")));
    if allow_private { builder.build() } else { builder.dns_resolver(PublicOnly).build() }
}

/// Why `url` cannot be an endpoint (`None`: it can). Names are checked when connecting.
pub fn refuse_url(url: &str, allow_private: bool) -> Option<String> {
    let Ok(parsed) = reqwest::Url::parse(url) else { return Some(format!("`{url}` is not a URL")) };
    if !matches!(parsed.scheme(), "https" | "http") {
        return Some("endpoints are http:// or https:// URLs".into());
    }
    let host = parsed.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(ip) if !allow_private && !crate::is_public(ip) => Some(format!("{ip} is not a public address")),
        Err(_) if host.is_empty() => Some("the URL has no host".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::refuse_url;

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
}
