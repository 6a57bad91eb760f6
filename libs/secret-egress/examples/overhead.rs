//! What interception costs, on loopback: the latency a request gains through an intercepted
//! tunnel (TLS ended and begun again, headers rewritten, the answer scanned) against the same
//! client talking TLS to the host directly, and the memory each open intercepted tunnel holds.
//!
//! `cargo run --release -p hermes-secret-egress --example overhead [requests] [tunnels]`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::disallowed_methods,
    clippy::print_stdout,
    reason = "a measurement run that prints its figures: a failure stops it loudly; the stand-in host spawns its connections"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};

use hermes_secret_egress::{Authority, Placement, Secret, Upstream, intercept};
use hermes_testkit::tls_host::{TlsEchoHost, client_trusting};

const HOST: &str = "api.github.test";
const PH: &str = "hermes_placeholder_00112233445566778899aabbccddeeff00112233";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

async fn timed(sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>, n: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let request = Request::get("/user")
            .header("host", HOST)
            .header("authorization", format!("Bearer {PH}"))
            .body(Full::default())
            .expect("a request");
        let started = Instant::now();
        sender.ready().await.expect("the connection takes another request");
        let response = sender.send_request(request).await.expect("an answer");
        let _ = response.into_body().collect().await.expect("a body");
        times.push(started.elapsed());
    }
    times.sort();
    times
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("VmRSS: 0 kB");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0)
}

struct Proxy {
    authority: Arc<Authority>,
    upstream: Arc<Upstream>,
    secret: Secret,
    addr: std::net::SocketAddr,
}

impl Proxy {
    /// A sandbox-side client through a new intercepted tunnel.
    async fn client(&self) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
        let (sandbox_side, proxy_side) = tokio::io::duplex(64 * 1024);
        let onward = tokio::net::TcpStream::connect(self.addr).await.expect("the host");
        let (authority, upstream, secret) = (self.authority.clone(), self.upstream.clone(), self.secret.clone());
        tokio::spawn(async move {
            let _ = intercept(proxy_side, onward, HOST, vec![secret], (&authority, &upstream)).await;
        });
        client_trusting(sandbox_side, self.authority.cert_pem(), HOST).await.expect("a client")
    }
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let requests: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let tunnels: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let host = TlsEchoHost::start("127.0.0.1", HOST).await.expect("the stand-in host");
    let (ca, addr) = (host.ca_pem.clone(), host.addr);
    let secret = Secret {
        name: "GITHUB_TOKEN".into(),
        placeholder: PH.into(),
        value: "ghp_the_real_value_1234567890".into(),
        hosts: vec![HOST.into()],
        placement: Placement::default(),
    };
    let proxy = Proxy {
        authority: Arc::new(Authority::generate().expect("a CA")),
        upstream: Arc::new(Upstream::new(false, std::slice::from_ref(&ca)).expect("trust")),
        secret,
        addr,
    };

    let direct = tokio::net::TcpStream::connect(addr).await.expect("host");
    let mut direct = client_trusting(direct, &ca, HOST).await.expect("a client");
    let mut through = proxy.client().await;
    // Warm both (first handshakes, the leaf certificate), then alternate rounds.
    let _ = (timed(&mut direct, 50).await, timed(&mut through, 50).await);
    let (mut d, mut t) = (Vec::new(), Vec::new());
    for _ in 0..4 {
        d.extend(timed(&mut direct, requests / 4).await);
        t.extend(timed(&mut through, requests / 4).await);
    }
    d.sort();
    t.sort();
    let us = |x: Duration| x.as_secs_f64() * 1e6;
    println!("requests: {} each way, keep-alive, loopback", d.len());
    println!("direct TLS:   p50 {:>7.1} us  p99 {:>7.1} us", us(percentile(&d, 0.5)), us(percentile(&d, 0.99)));
    println!("intercepted:  p50 {:>7.1} us  p99 {:>7.1} us", us(percentile(&t, 0.5)), us(percentile(&t, 0.99)));
    println!(
        "added:        p50 {:>7.1} us  p99 {:>7.1} us",
        us(percentile(&t, 0.5)) - us(percentile(&d, 0.5)),
        us(percentile(&t, 0.99)) - us(percentile(&d, 0.99))
    );

    // Memory: open tunnels, one request each, all kept open.
    let before = rss_kib();
    let mut open = Vec::with_capacity(tunnels);
    for _ in 0..tunnels {
        let mut client = proxy.client().await;
        let _ = timed(&mut client, 1).await;
        open.push(client);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = rss_kib();
    println!(
        "memory: {tunnels} open intercepted tunnels (all four TLS ends: client, proxy's two, host) hold {} KiB, {:.1} KiB each",
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 / tunnels as f64
    );
}
