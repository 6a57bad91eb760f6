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

use hermes_net_policy::{Cidr, is_public};
use hermes_sandbox::{EgressHandler, SandboxKey};
use hermes_store::Store;

const MAX_HEAD: usize = 16 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an agent's egress setting is trusted before it is read again.
const SETTING_TTL: Duration = Duration::from_secs(10);

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

    fn enabled(&self, key: SandboxKey) -> BoxFuture<'static, bool> {
        let inner = self.inner.clone();
        Box::pin(async move { inner.enabled(key).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
