//! The egress proxy: what a sandbox reaches on the internet. Each connection arrives from
//! sandboxd's relay tagged with its tenant-agent; it may pass only if the agent has egress
//! enabled, and only to public addresses: the name is resolved here and every private,
//! loopback, link-local, shared, reserved or metadata address is refused, so DNS cannot point
//! a sandbox at the cluster or the cloud's metadata service. HTTPS goes through `CONNECT`;
//! plain HTTP is forwarded one request per connection, so every request is checked.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

use hermes_sandbox::{EgressHandler, SandboxKey};
use hermes_store::Store;

const MAX_HEAD: usize = 16 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an agent's egress setting is trusted before it is read again.
const SETTING_TTL: Duration = Duration::from_secs(10);

/// An address range written `a.b.c.d/n` or `x::y/n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cidr {
    base: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Option<Self> {
        let (addr, prefix) = s.split_once('/').unwrap_or((s, ""));
        let base: IpAddr = addr.trim().parse().ok()?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        let prefix = if prefix.is_empty() { max } else { prefix.trim().parse().ok().filter(|p| *p <= max)? };
        Some(Self { base, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let bits = |ip: IpAddr| match ip {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32u32),
            IpAddr::V6(v6) => (u128::from(v6), 128u32),
        };
        let ((base, width), (addr, addr_width)) = (bits(self.base), bits(ip));
        if width != addr_width {
            return false;
        }
        let shift = width - u32::from(self.prefix);
        shift >= width || (base >> shift) == (addr >> shift)
    }
}

/// Whether `ip` is on the public internet.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    let never = |s: &str| Cidr::parse(s).is_some_and(|c| c.contains(ip));
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_unspecified()
                || v4.is_multicast()
                || ["0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4"]
                    .into_iter()
                    .any(never))
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public(IpAddr::V4(v4)),
            None => {
                !(v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    // unique local, link-local, documentation, NAT64 (it can wrap a private v4)
                    || ["fc00::/7", "fe80::/10", "2001:db8::/32", "64:ff9b::/96"].into_iter().any(never))
            }
        },
    }
}

/// What the client asked for.
#[derive(Debug, PartialEq)]
pub(crate) enum Request {
    Connect {
        host: String,
        port: u16,
    },
    /// A plain HTTP request; `head` is rewritten to origin form with `Connection: close`.
    Http {
        host: String,
        port: u16,
        head: String,
    },
}

/// Parses a proxy request head (without the blank line).
pub(crate) fn parse(head: &str) -> Result<Request, &'static str> {
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if v.starts_with("HTTP/1.") => (m, t, v),
        _ => return Err("malformed request line"),
    };
    let split_host = |authority: &str, default: u16| -> Option<(String, u16)> {
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => match p.parse() {
                Ok(port) => (h, port),
                Err(_) => (authority, default),
            },
            _ => (authority, default),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        (!host.is_empty()).then(|| (host.to_owned(), port))
    };
    if method == "CONNECT" {
        let (host, port) = split_host(target, 443).ok_or("CONNECT needs host:port")?;
        return Ok(Request::Connect { host, port });
    }
    let rest = target.strip_prefix("http://").ok_or("only http:// URLs and CONNECT are proxied")?;
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
    let (host, port) = split_host(authority, 80).ok_or("the URL has no host")?;
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if !matches!(name.as_str(), "connection" | "proxy-connection" | "keep-alive" | "proxy-authorization") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request::Http { host, port, head: out })
}

#[derive(Clone)]
pub(crate) struct EgressProxy {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    /// Ranges an operator allows although they are not public (an internal package mirror).
    allow: Vec<Cidr>,
    settings: Mutex<HashMap<SandboxKey, (Instant, bool)>>,
}

impl EgressProxy {
    pub fn new(store: Store, allow: &[String]) -> Self {
        let allow = allow
            .iter()
            .filter_map(|c| {
                let parsed = Cidr::parse(c);
                if parsed.is_none() {
                    tracing::warn!(cidr = %c, "ignoring an unparsable sandbox.egress_allow_cidrs entry");
                }
                parsed
            })
            .collect();
        Self { inner: Arc::new(Inner { store, allow, settings: Mutex::default() }) }
    }
}

impl Inner {
    async fn enabled(&self, key: SandboxKey) -> bool {
        let cached = self.settings.lock().ok().and_then(|s| s.get(&key).copied());
        if let Some((at, enabled)) = cached
            && at.elapsed() < SETTING_TTL
        {
            return enabled;
        }
        let enabled = self.store.agent(key.tenant, key.agent).await.is_ok_and(|a| a.egress);
        if let Ok(mut settings) = self.settings.lock() {
            settings.insert(key, (Instant::now(), enabled));
        }
        enabled
    }

    fn allowed(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.allow.iter().any(|c| c.contains(ip))
    }

    async fn handle(&self, key: SandboxKey, mut client: UnixStream) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(4096);
        let head_end = loop {
            let mut chunk = [0u8; 4096];
            let n = client.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            if buf.len() > MAX_HEAD {
                return reply(&mut client, 431, "request head too large").await;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let body = buf[head_end + 4..].to_vec();
        let request = match parse(&head) {
            Ok(r) => r,
            Err(why) => return reply(&mut client, 400, why).await,
        };
        if !self.enabled(key).await {
            return reply(&mut client, 403, "internet access is disabled for this agent").await;
        }
        let (host, port) = match &request {
            Request::Connect { host, port } | Request::Http { host, port, .. } => (host.clone(), *port),
        };
        let resolved: Vec<SocketAddr> = match tokio::net::lookup_host((host.as_str(), port)).await {
            Ok(addrs) => addrs.collect(),
            Err(_) => return reply(&mut client, 502, "cannot resolve the host").await,
        };
        let targets: Vec<SocketAddr> = resolved.iter().copied().filter(|a| self.allowed(a.ip())).collect();
        if targets.is_empty() {
            tracing::info!(tenant.id = %key.tenant, agent.id = %key.agent, %host, "egress to a non-public address refused");
            metrics::counter!("hermes_egress_refused_total").increment(1);
            return reply(&mut client, 403, "private, loopback, link-local and metadata addresses are not reachable")
                .await;
        }
        let mut upstream = None;
        for target in targets {
            if let Ok(Ok(stream)) = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(target)).await {
                upstream = Some(stream);
                break;
            }
        }
        let Some(mut upstream) = upstream else { return reply(&mut client, 502, "cannot connect to the host").await };
        match request {
            Request::Connect { .. } => client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await?,
            Request::Http { head, .. } => upstream.write_all(head.as_bytes()).await?,
        }
        upstream.write_all(&body).await?;
        metrics::counter!("hermes_egress_connections_total").increment(1);
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await.map(|_| ())
    }
}

async fn reply(client: &mut UnixStream, code: u16, why: &str) -> std::io::Result<()> {
    let reason = match code {
        400 => "Bad Request",
        403 => "Forbidden",
        431 => "Request Header Fields Too Large",
        _ => "Bad Gateway",
    };
    let body = format!("{why}\n");
    let text = format!("HTTP/1.1 {code} {reason}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    client.write_all(text.as_bytes()).await
}

impl EgressHandler for EgressProxy {
    fn serve(&self, key: SandboxKey, stream: UnixStream) -> BoxFuture<'static, ()> {
        let inner = self.inner.clone();
        Box::pin(async move {
            if let Err(e) = inner.handle(key, stream).await {
                tracing::debug!(error = %e, "egress connection ended");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_pass() {
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "169.254.169.254",
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "224.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn ranges_parse_and_match() {
        let c = Cidr::parse("10.20.0.0/16").unwrap();
        assert!(c.contains("10.20.3.4".parse().unwrap()));
        assert!(!c.contains("10.21.0.1".parse().unwrap()));
        assert!(Cidr::parse("192.168.1.7").unwrap().contains("192.168.1.7".parse().unwrap()));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains("8.8.8.8".parse().unwrap()));
        assert!(Cidr::parse("10.0.0.0/33").is_none());
        assert!(!c.contains("::1".parse().unwrap()));
    }

    #[test]
    fn requests_parse_to_a_checked_destination() {
        assert_eq!(
            parse("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443"),
            Ok(Request::Connect { host: "example.com".into(), port: 443 })
        );
        assert_eq!(parse("CONNECT [::1]:8443 HTTP/1.1"), Ok(Request::Connect { host: "::1".into(), port: 8443 }));
        let Ok(Request::Http { host, port, head }) =
            parse("GET http://example.com:8080/a?b=1 HTTP/1.1\r\nHost: example.com\r\nProxy-Connection: keep-alive")
        else {
            panic!("not parsed")
        };
        assert_eq!((host.as_str(), port), ("example.com", 8080));
        assert_eq!(head, "GET /a?b=1 HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n");
        assert!(parse("GET https://example.com/ HTTP/1.1").is_err(), "https goes through CONNECT");
        assert!(parse("nonsense").is_err());
    }
}
