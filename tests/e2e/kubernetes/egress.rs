//! Egress from Kubernetes sandboxes (issue 39): sandboxd's proxy port in the pod hands each
//! connection to the worker over `Egress` calls on a connection of the tunnel's own; what a
//! program can make the worker hold is bounded, and a program that stops reading stalls only
//! its own connection.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use hermes_sandbox::{SandboxKey, Sandboxes};

use super::fake_api::{backend, cluster};
use crate::sandbox::{new_key, run};

/// The worker's egress proxy as these tests need it: answers every request with the sandbox
/// it came from and the request line it got.
struct Answering;

impl hermes_sandbox::EgressHandler for Answering {
    fn serve(&self, key: SandboxKey, mut stream: hermes_sandbox::EgressConnection) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let mut head = Vec::new();
            while !head.ends_with(b"\r\n\r\n") {
                let mut byte = [0u8; 1];
                if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                    return;
                }
                head.push(byte[0]);
            }
            let line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_owned();
            // A download its program may stop reading.
            let body = match line.contains("/big ") {
                true => "x".repeat(64 * 1024 * 1024),
                false => format!("{} {} {line}\n", key.tenant, key.agent),
            };
            let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            let _ = stream.write_all(reply.as_bytes()).await;
            let _ = stream.shutdown().await;
        })
    }
}

/// Every sandbox gets this spec: one placeholder and the egress CA, as for an agent with a
/// bound secret.
struct WithSecret(hermes_sandbox::SandboxSpec);

impl hermes_sandbox::SpecSource for WithSecret {
    fn spec(&self, _: SandboxKey) -> BoxFuture<'static, hermes_sandbox::SandboxSpec> {
        let spec = self.0.clone();
        Box::pin(async move { spec })
    }
}

/// Issue 39 on Kubernetes: a pod cannot reach its worker, and its NetworkPolicy lets nothing
/// out, yet its programs' proxy (sandboxd's port on the pod's loopback) hands each connection
/// to the worker's egress proxy over the worker's own connection to the daemon, tagged with
/// the sandbox it came from; the pod carries its agent's placeholders and trusts the egress CA.
#[tokio::test]
async fn a_pods_programs_reach_the_workers_egress_proxy_through_sandboxd_and_nothing_else() {
    let cluster = cluster();
    let sandboxes = backend(&cluster, |_| {});
    sandboxes.set_egress(Arc::new(Answering));
    let ca = "-----BEGIN CERTIFICATE-----\nTHE-EGRESS-CA\n-----END CERTIFICATE-----\n";
    let spec = hermes_sandbox::SandboxSpec {
        env: [("GITHUB_TOKEN".to_owned(), "hermes_placeholder_0123".to_owned())].into(),
        trust: Some(hermes_sandbox::Trust { pem: ca.into(), spki_sha256: "cGlu".into() }),
        ..Default::default()
    };
    sandboxes.set_specs(Arc::new(WithSecret(spec)));
    let key = new_key();
    let out = run(&sandboxes, key, "curl -sS http://example.invalid/a?b=1", 30).await;
    let from = format!("{} {}", key.tenant, key.agent);
    assert_eq!(out.output, format!("{from} GET http://example.invalid/a?b=1 HTTP/1.1\n"), "{out:?}");

    // More connections at once than the calls a worker keeps waiting.
    let many = "for i in $(seq 12); do curl -sS http://example.invalid/$i & done; wait";
    let out = run(&sandboxes, key, many, 60).await;
    assert_eq!(out.output.lines().filter(|l| l.starts_with(&from)).count(), 12, "{out:?}");

    // The agent's placeholder and trust; sandboxd keeps the trust's variables to itself.
    let env = run(&sandboxes, key, "env", 20).await.output;
    assert!(env.contains("GITHUB_TOKEN=hermes_placeholder_0123"), "{env}");
    assert!(!env.contains("HERMES_SANDBOX_TRUST"), "{env}");
    let bundle = env.lines().find_map(|l| l.strip_prefix("SSL_CERT_FILE=")).unwrap().to_owned();
    let trusted = run(&sandboxes, key, &format!("cat {bundle}"), 20).await.output;
    assert!(trusted.ends_with(ca), "{trusted}");
    let names = sandboxes.names(key);
    let policy = cluster.object("networkpolicies", &names.pod).unwrap();
    assert_eq!(policy["spec"]["egress"], json!([]), "nothing leaves the pod but through sandboxd");
}

/// A program that keeps its connections open after the answer (and never sends again) does
/// not keep the worker's side: the sandbox's share of connections is free for the next.
#[tokio::test]
async fn a_program_holding_answered_connections_open_does_not_use_up_the_sandboxs_share() {
    let cluster = cluster();
    let sandboxes = backend(&cluster, |c| c.egress_max_connections = 2);
    sandboxes.set_egress(Arc::new(Answering));
    let key = new_key();
    let program = "python3 -c '\
import os, socket, subprocess, urllib.parse
proxy = urllib.parse.urlsplit(os.environ[\"HTTP_PROXY\"])
held = []
for i in range(6):
    s = socket.create_connection((proxy.hostname, proxy.port))
    s.sendall(b\"GET http://example.invalid/held HTTP/1.1\\r\\nHost: example.invalid\\r\\n\\r\\n\")
    print(s.recv(64).split(b\" \")[1].decode())
    held.append(s)
print(subprocess.run([\"curl\", \"-sS\", \"-m\", \"10\", \"http://example.invalid/after\"], capture_output=True, text=True).stdout)
'";
    let out = run(&sandboxes, key, program, 60).await;
    let lines: Vec<&str> = out.output.lines().collect();
    assert_eq!(lines[..6], ["200"; 6], "{out:?}");
    assert!(lines.get(6).is_some_and(|l| l.ends_with("GET http://example.invalid/after HTTP/1.1")), "{out:?}");
}

/// A program that stops reading a download stalls its own connection only: the sandbox's tools
/// (their own connection to sandboxd) go on.
#[tokio::test]
async fn a_program_that_stops_reading_does_not_stall_the_sandboxs_tools() {
    let cluster = cluster();
    let sandboxes = backend(&cluster, |_| {});
    sandboxes.set_egress(Arc::new(Answering));
    let key = new_key();
    // A background process: it outlives the request that starts it.
    let grpc = sandboxes.open(key).await.unwrap().grpc();
    let start = hermes_sandbox::proto::StartProcessRequest {
        command: "curl -sS http://example.invalid/big | sleep 60".into(),
        owner: "a-session".into(),
        ..Default::default()
    };
    grpc.clone().start_process(start).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    for _ in 0..3 {
        let alive = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            run(&sandboxes, key, "head -c 4000000 /dev/zero | wc -c", 10),
        );
        assert_eq!(alive.await.expect("the tools are not stalled").output, "4000000\n");
    }
}
