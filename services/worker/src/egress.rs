//! The egress proxy: what a sandbox reaches on the internet. Each connection arrives from
//! sandboxd's relay tagged with its tenant-agent; it may pass only if the agent has egress
//! enabled, and only to public addresses: the name is resolved here and every private,
//! loopback, link-local, shared, reserved or metadata address is refused, so DNS cannot point
//! a sandbox at the cluster or the cloud's metadata service. HTTPS goes through `CONNECT`;
//! plain HTTP is forwarded one request per connection, so every request is checked.
//!
//! What one sandbox can do with it is bounded: only the ports of `sandbox.egress_ports` (web
//! by default: no mail relaying from a tenant's code), at most `sandbox.egress_max_connections`
//! open at once, a request head within 10 seconds, and a connection closed after
//! `sandbox.egress_idle_seconds` with no byte either way.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use hermes_config::SandboxConfig;

use hermes_net_policy::{Cidr, is_public};
use hermes_sandbox::{EgressConnection, EgressHandler, SandboxKey};
use hermes_store::Store;

use crate::held::Held;
use crate::sandbox_secrets::SandboxSecrets;

const MAX_HEAD: usize = 16 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
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
    ports: Vec<u16>,
    idle: Duration,
    settings: Mutex<HashMap<SandboxKey, (Instant, bool)>>,
    /// Connections each sandbox holds open now.
    open: Held<SandboxKey>,
    /// Team secrets bound to agents: swapped in on connections to their hosts.
    secrets: Option<Arc<SandboxSecrets>>,
}

impl EgressProxy {
    pub fn new(store: Store, cfg: &SandboxConfig, secrets: Option<Arc<SandboxSecrets>>) -> Self {
        let allow = cfg
            .egress_allow_cidrs
            .iter()
            .filter_map(|c| {
                let parsed = Cidr::parse(c);
                if parsed.is_none() {
                    tracing::warn!(cidr = %c, "ignoring an unparsable sandbox.egress_allow_cidrs entry");
                }
                parsed
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                store,
                allow,
                ports: cfg.egress_ports.clone(),
                idle: Duration::from_secs(cfg.egress_idle_seconds.max(1)),
                settings: Mutex::default(),
                open: Held::new(cfg.egress_max_connections),
                secrets,
            }),
        }
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
        let enabled = self.store.agents().agent(key.tenant, key.agent).await.is_ok_and(|a| a.egress);
        if let Ok(mut settings) = self.settings.lock() {
            settings.insert(key, (Instant::now(), enabled));
        }
        enabled
    }

    /// The secrets `key` may send to `host`, with what intercepting takes; `None` when there
    /// are none (the tunnel is relayed untouched).
    async fn interception(
        &self,
        key: SandboxKey,
        host: &str,
    ) -> Option<(Vec<hermes_secret_egress::Secret>, Arc<hermes_secret_egress::Authority>, Arc<SandboxSecrets>)> {
        let sandbox_secrets = self.secrets.clone()?;
        let secrets = sandbox_secrets.for_host(key, host).await;
        if secrets.is_empty() {
            return None;
        }
        let authority = sandbox_secrets.authority().await?;
        Some((secrets, authority, sandbox_secrets))
    }

    fn allowed(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.allow.iter().any(|c| c.contains(ip))
    }

    async fn handle(self: &Arc<Self>, key: SandboxKey, mut client: EgressConnection) -> std::io::Result<()> {
        let Some(_slot) = self.open.take(key) else {
            metrics::counter!("hermes_egress_refused_total").increment(1);
            return reply(&mut client, 429, "this sandbox has too many connections open").await;
        };
        let (head, body) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
            Ok(Ok(Some(read))) => read,
            Ok(Ok(None)) => return Ok(()),
            Ok(Err(HeadError::TooLarge)) => return reply(&mut client, 431, "request head too large").await,
            Ok(Err(HeadError::Io(e))) => return Err(e),
            Err(_) => return reply(&mut client, 408, "the request head did not arrive in time").await,
        };
        let request = match parse(&head) {
            Ok(r) => r,
            Err(why) => return reply(&mut client, 400, why).await,
        };
        let (host, port) = match &request {
            Request::Connect { host, port } | Request::Http { host, port, .. } => (host.clone(), *port),
        };
        if !self.ports.contains(&port) {
            metrics::counter!("hermes_egress_refused_total").increment(1);
            let why = format!("port {port} is not open to sandboxes (open: {:?}; sandbox.egress_ports)", self.ports);
            return reply(&mut client, 403, &why).await;
        }
        if !self.enabled(key).await {
            return reply(&mut client, 403, "internet access is disabled for this agent").await;
        }
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
            Request::Connect { .. } => {
                client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await?;
                // A host one of the sandbox's secrets may go to: its placeholders are swapped there.
                if body.is_empty()
                    && let Some((secrets, authority, onward)) = self.interception(key, &host).await
                {
                    metrics::counter!("hermes_egress_intercepted_total").increment(1);
                    let tls = (authority.as_ref(), onward.upstream());
                    return intercept_until_idle(client, upstream, (&host, secrets), tls, self.idle).await;
                }
            }
            Request::Http { head, .. } => upstream.write_all(head.as_bytes()).await?,
        }
        upstream.write_all(&body).await?;
        metrics::counter!("hermes_egress_connections_total").increment(1);
        relay_until_idle(client, upstream, self.idle).await
    }
}

enum HeadError {
    TooLarge,
    Io(std::io::Error),
}

/// The request head (without its blank line) and whatever body bytes came with it; `None`
/// when the client closed before sending one.
async fn read_head(client: &mut EgressConnection) -> Result<Option<(String, Vec<u8>)>, HeadError> {
    let mut buf = Vec::with_capacity(4096);
    loop {
        let mut chunk = [0u8; 4096];
        let n = client.read(&mut chunk).await.map_err(HeadError::Io)?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            return Ok(Some((head, buf[end + 4..].to_vec())));
        }
        if buf.len() > MAX_HEAD {
            return Err(HeadError::TooLarge);
        }
    }
}

/// Relays both ways until either side closes or nothing moves for `idle`.
async fn relay_until_idle(client: EgressConnection, upstream: TcpStream, idle: Duration) -> std::io::Result<()> {
    let started = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let mut client = Touched { inner: client, last: last.clone(), started };
    let mut upstream = Touched { inner: upstream, last: last.clone(), started };
    let relay = tokio::io::copy_bidirectional(&mut client, &mut upstream);
    until_idle(async { relay.await.map(|_| ()) }, &last, started, idle).await
}

/// Serves an intercepted tunnel (a secret's host) until either side closes or nothing moves
/// for `idle`.
async fn intercept_until_idle(
    client: EgressConnection,
    upstream: TcpStream,
    (host, secrets): (&str, Vec<hermes_secret_egress::Secret>),
    (authority, onward): (&hermes_secret_egress::Authority, &hermes_secret_egress::Upstream),
    idle: Duration,
) -> std::io::Result<()> {
    let started = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let client = Touched { inner: client, last: last.clone(), started };
    let upstream = Touched { inner: upstream, last: last.clone(), started };
    let served = async {
        hermes_secret_egress::intercept(client, upstream, host, secrets, (authority, onward))
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
    };
    until_idle(served, &last, started, idle).await
}

/// Runs `work` until it ends or `last` (milliseconds after `started`) is `idle` old.
async fn until_idle(
    work: impl std::future::Future<Output = std::io::Result<()>>,
    last: &AtomicU64,
    started: Instant,
    idle: Duration,
) -> std::io::Result<()> {
    let relay = work;
    tokio::pin!(relay);
    loop {
        let quiet_for = started.elapsed().saturating_sub(Duration::from_millis(last.load(Ordering::Relaxed)));
        let Some(left) = idle.checked_sub(quiet_for).filter(|left| !left.is_zero()) else {
            metrics::counter!("hermes_egress_idle_closed_total").increment(1);
            return Ok(());
        };
        tokio::select! {
            done = &mut relay => return done,
            () = tokio::time::sleep(left) => {}
        }
    }
}

/// A stream that notes when it last read a byte (milliseconds after `started`).
struct Touched<S> {
    inner: S,
    last: Arc<AtomicU64>,
    started: Instant,
}

impl<S: AsyncRead + Unpin> AsyncRead for Touched<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.last.store(now, Ordering::Relaxed);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Touched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

async fn reply(client: &mut EgressConnection, code: u16, why: &str) -> std::io::Result<()> {
    let reason = match code {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        _ => "Bad Gateway",
    };
    let body = format!("{why}\n");
    // `why` is this file's own ASCII text, safe as a header value.
    let text = format!(
        "HTTP/1.1 {code} {reason}\r\n{}: {why}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        hermes_sandbox::EGRESS_REFUSED_HEADER,
        body.len()
    );
    client.write_all(text.as_bytes()).await
}

impl EgressHandler for EgressProxy {
    fn serve(&self, key: SandboxKey, stream: EgressConnection) -> BoxFuture<'static, ()> {
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

    /// A proxy that lets loopback through (as an operator's allowed range) with these limits,
    /// for a sandbox whose agent has internet access.
    fn proxy(ports: Vec<u16>, max_connections: usize, idle_seconds: u64) -> (Arc<Inner>, SandboxKey) {
        let cfg = SandboxConfig {
            egress_allow_cidrs: vec!["127.0.0.0/8".into()],
            egress_ports: ports,
            egress_max_connections: max_connections,
            egress_idle_seconds: idle_seconds,
            ..SandboxConfig::default()
        };
        let store = Store::connect_lazy("postgres://nobody@127.0.0.1:1/none", Duration::from_millis(100)).unwrap();
        let inner = EgressProxy::new(store, &cfg, None).inner;
        #[expect(clippy::disallowed_methods, reason = "test fixture")]
        let key = SandboxKey::shared(
            hermes_core::TenantId::from_authenticated(uuid::Uuid::now_v7()),
            hermes_core::AgentId::new(),
        );
        inner.settings.lock().unwrap().insert(key, (Instant::now(), true));
        (inner, key)
    }

    /// Opens a tunnel through the proxy to `port` and returns the client's end and the status
    /// line the proxy answered with.
    async fn tunnel(inner: &Arc<Inner>, key: SandboxKey, host: &str, port: u16) -> (tokio::io::DuplexStream, String) {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let inner = inner.clone();
        hermes_telemetry::tasks::spawn(
            "worker_egress_connection",
            async move { inner.handle(key, Box::new(server)).await },
        );
        client
            .write_all(format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = Vec::new();
        while !answer.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            if client.read(&mut byte).await.unwrap() == 0 {
                break;
            }
            answer.push(byte[0]);
        }
        let status = String::from_utf8_lossy(&answer).lines().next().unwrap_or_default().to_owned();
        (client, status)
    }

    /// A server on loopback that takes connections and never says anything.
    async fn silent_server() -> (u16, tokio::sync::mpsc::UnboundedReceiver<TcpStream>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        hermes_telemetry::tasks::spawn("worker_egress_listener", async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = tx.send(stream);
            }
        });
        (port, rx)
    }

    #[tokio::test]
    async fn a_port_that_is_not_open_is_refused_before_the_name_is_looked_up() {
        let (inner, key) = proxy(vec![80, 443], 8, 60);
        let (_, status) = tunnel(&inner, key, "mail.example.invalid", 25).await;
        assert!(status.starts_with("HTTP/1.1 403"), "{status}");
        let (_, status) = tunnel(&inner, key, "mail.example.invalid", 443).await;
        assert!(status.starts_with("HTTP/1.1 502"), "an open port goes on to the lookup: {status}");
    }

    #[tokio::test]
    async fn a_sandbox_holds_at_most_its_share_of_connections() {
        let (port, mut accepted) = silent_server().await;
        let (inner, key) = proxy(vec![port], 2, 60);
        let (_first, status) = tunnel(&inner, key, "127.0.0.1", port).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        let (second, status) = tunnel(&inner, key, "127.0.0.1", port).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        let (_, status) = tunnel(&inner, key, "127.0.0.1", port).await;
        assert!(status.starts_with("HTTP/1.1 429"), "the third while two are open: {status}");
        let (other, other_key) = proxy(vec![port], 2, 60);
        let (_, status) = tunnel(&other, other_key, "127.0.0.1", port).await;
        assert!(status.starts_with("HTTP/1.1 200"), "another sandbox has its own share: {status}");

        // The second connection ends (both sides hang up): its place is free again.
        let (_first_upstream, second_upstream) = (accepted.recv().await.unwrap(), accepted.recv().await.unwrap());
        drop((second, second_upstream));
        let freed = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let (_client, status) = tunnel(&inner, key, "127.0.0.1", port).await;
                if status.starts_with("HTTP/1.1 200") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(freed.is_ok(), "a closed connection gives its place back");
    }

    #[tokio::test]
    async fn a_connection_with_nothing_moving_is_closed_after_the_idle_time() {
        let (port, mut accepted) = silent_server().await;
        let (inner, key) = proxy(vec![port], 8, 1);
        let (mut client, status) = tunnel(&inner, key, "127.0.0.1", port).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        let mut upstream = accepted.recv().await.unwrap();
        // Bytes keep it open...
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(400)).await;
            client.write_all(b"ping").await.unwrap();
            let mut got = [0u8; 4];
            upstream.read_exact(&mut got).await.unwrap();
        }
        // ...silence closes both ends.
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut rest)).await;
        assert!(matches!(closed, Ok(Ok(0))), "the client's end is closed: {closed:?}");
        let closed = tokio::time::timeout(Duration::from_secs(10), upstream.read_to_end(&mut rest)).await;
        assert!(matches!(closed, Ok(Ok(0))), "the host's end is closed: {closed:?}");
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
