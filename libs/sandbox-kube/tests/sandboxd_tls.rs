//! The worker to a Kubernetes sandbox's daemon crosses the pod network: with
//! `sandbox.kubernetes.tls` (the default) it is TLS to a real sandboxd presenting the sandbox's
//! own certificate, which the worker pins. Someone on that network sees neither the token nor
//! the work, and a listener that answers in plaintext, or with any other certificate, gets
//! nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]
#![allow(clippy::disallowed_methods, reason = "test code starts its tasks freely; the rule is for the service's own")]

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use hermes_core::{AgentId, TenantId};
use hermes_sandbox::{Address, ExecRequest, PinnedCert, SandboxClient, SandboxKey};
use hermes_sandbox_kube::manifests_of;
use hermes_sandbox_kube::tls::{self, SandboxTls};
use hermes_sandboxd::{Config, Daemon, TlsIdentity, serve_tcp};
use serde_json::Value;

const POD: &str = "hermes-sbx-0123456789abcdef";
const TOKEN: &str = "a-sandbox-token-nobody-else-may-see";
const SECRET: &str = "sk-team-key-for-an-mcp-server";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A real sandboxd on loopback, presenting `tls` (plaintext without), until the test ends.
fn sandboxd(tls: Option<&SandboxTls>) -> (u16, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    let port = free_port();
    let daemon = Daemon::new(Config::for_workspace(workspace.path().to_owned()));
    let identity = tls.map(|t| TlsIdentity { cert_pem: t.cert_pem.clone(), key_pem: t.key_pem.clone() });
    let addr = ([127, 0, 0, 1], port).into();
    tokio::spawn(serve_tcp(daemon, addr, TOKEN.into(), identity, std::future::pending()));
    (port, workspace)
}

/// The worker's address of sandbox `POD`, whose certificate is `pinned`.
fn pinned(port: u16, pinned: &SandboxTls) -> Address {
    pinned_for(port, pinned, POD)
}

fn pinned_for(port: u16, pinned: &SandboxTls, pod: &str) -> Address {
    let pinned = PinnedCert { pem: pinned.cert_pem.clone(), name: pod.into() };
    Address::Tcp { url: format!("https://127.0.0.1:{port}"), token: TOKEN.into(), tls: Some(pinned) }
}

async fn connect(address: &Address) -> hermes_sandbox::Result<SandboxClient> {
    SandboxClient::connect_within(address, Duration::from_secs(3)).await
}

/// Echoes `text`, with `$SECRET` (as an MCP server's environment would carry a team's key).
async fn echo(client: &SandboxClient, text: &str) -> String {
    let request = ExecRequest {
        command: format!("echo {text}"),
        workdir: None,
        timeout: Duration::from_secs(10),
        env: BTreeMap::from([("SECRET".to_owned(), SECRET.to_owned())]),
    };
    client.exec(request, &mut |_| {}).await.unwrap().output
}

#[tokio::test]
async fn the_worker_reaches_sandboxd_over_tls_with_the_sandboxs_own_certificate() {
    let cert = SandboxTls::generate(POD).unwrap();
    let (port, _workspace) = sandboxd(Some(&cert));
    let client = connect(&pinned(port, &cert)).await.unwrap();
    assert_eq!(echo(&client, "over-tls").await, "over-tls\n");
}

#[tokio::test]
async fn a_sandboxd_that_answers_in_plaintext_is_refused() {
    let cert = SandboxTls::generate(POD).unwrap();
    let (port, _workspace) = sandboxd(None);
    // The same daemon is reachable in plaintext: only the worker's TLS setting refuses it.
    let plaintext = Address::Tcp { url: format!("http://127.0.0.1:{port}"), token: TOKEN.into(), tls: None };
    connect(&plaintext).await.expect("the plaintext daemon is up");

    let refused = SandboxClient::connect(&pinned(port, &cert)).await.err().expect("a plaintext daemon is refused");
    assert!(matches!(refused, hermes_sandbox::SandboxError::Unavailable(_)), "{refused:?}");
    // A pinned certificate never goes with an http address (tonic would speak plaintext there).
    let Address::Tcp { tls, .. } = pinned(port, &cert) else { unreachable!() };
    let downgraded = Address::Tcp { url: format!("http://127.0.0.1:{port}"), token: TOKEN.into(), tls };
    assert!(SandboxClient::connect(&downgraded).await.is_err(), "an http address with TLS on is refused");
}

#[tokio::test]
async fn a_sandboxd_presenting_another_certificate_is_refused_even_for_the_same_name() {
    let cert = SandboxTls::generate(POD).unwrap();
    // An impostor who knows the pod's name but not its key, and another sandbox's daemon.
    let impostor = SandboxTls::generate(POD).unwrap();
    let other_pod = "hermes-sbx-fedcba9876543210";
    let other_sandbox = SandboxTls::generate(other_pod).unwrap();
    for (presented, its_pod) in [(impostor, POD), (other_sandbox, other_pod)] {
        let (port, _workspace) = sandboxd(Some(&presented));
        connect(&pinned_for(port, &presented, its_pod)).await.expect("the daemon is up and serves its own certificate");
        let refused = SandboxClient::connect(&pinned(port, &cert)).await.err().expect("another certificate is refused");
        let message = refused.to_string();
        assert!(message.contains("certificate") || message.contains("Certificate"), "{message}");
    }
}

/// Relays 127.0.0.1:<returned port> to `to`, copying every byte both ways into the returned log
/// (what someone watching the pod network gets).
async fn eavesdropper(to: u16) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(("127.0.0.1", to)).await else { continue };
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            tokio::spawn(copy(client_read, server_write, log.clone()));
            tokio::spawn(copy(server_read, client_write, log.clone()));
        }
    });
    (port, seen)
}

async fn copy(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    log: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 || to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        log.lock().unwrap().extend_from_slice(&buf[..n]);
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The calls' frames (their headers carry the token, HPACK-coded), the commands, their
/// environment and their output.
fn readable(seen: &[u8]) -> bool {
    contains(seen, "PRI * HTTP/2.0") || contains(seen, "the-work-itself") || contains(seen, SECRET)
}

#[tokio::test]
async fn someone_on_the_pod_network_reads_neither_the_calls_nor_the_work_nor_its_secrets() {
    let cert = SandboxTls::generate(POD).unwrap();
    let (port, _workspace) = sandboxd(Some(&cert));
    let (watched, seen) = eavesdropper(port).await;
    let client = connect(&pinned(watched, &cert)).await.unwrap();
    assert_eq!(echo(&client, "the-work-itself").await, "the-work-itself\n");
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the traffic went through the eavesdropper");
    assert!(!readable(&seen), "nothing of the calls is on the wire in the clear");

    // Without TLS (the transport before `sandbox.kubernetes.tls`) the same watcher reads both.
    let (plain_port, _plain_workspace) = sandboxd(None);
    let (watched, seen) = eavesdropper(plain_port).await;
    let plaintext = Address::Tcp { url: format!("http://127.0.0.1:{watched}"), token: TOKEN.into(), tls: None };
    echo(&connect(&plaintext).await.unwrap(), "the-work-itself").await;
    let seen = seen.lock().unwrap().clone();
    assert!(
        contains(&seen, "PRI * HTTP/2.0") && contains(&seen, "the-work-itself") && contains(&seen, SECRET),
        "the watcher reads plaintext"
    );
}

#[test]
fn the_pod_serves_tls_with_its_own_key_given_as_variables_from_its_own_secret() {
    #[expect(clippy::disallowed_methods, reason = "a test tenant, not from a request")]
    let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
    let key = SandboxKey::shared(tenant, AgentId::new());
    let mut cfg = hermes_config::SandboxConfig::default();
    assert!(cfg.kubernetes.tls, "TLS is the default under Kubernetes");
    for on in [true, false] {
        cfg.kubernetes.tls = on;
        let manifests = manifests_of(&cfg, key, &Default::default());
        let pod = manifests.iter().find(|m| m["kind"] == "Pod").unwrap();
        let secret_name = format!("{}-tls", pod["metadata"]["name"].as_str().unwrap());
        let container = &pod["spec"]["containers"][0];
        let command: Vec<&str> = container["command"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let flags = command.windows(2).any(|w| w == ["--tls-cert-env", tls::CERT_ENV])
            && command.windows(2).any(|w| w == ["--tls-key-env", tls::KEY_ENV]);
        assert_eq!(flags, on, "{command:?}");
        let from_secret = |variable: &str| {
            container["env"].as_array().unwrap().iter().find(|e| e["name"] == variable).map(|e| {
                let source = &e["valueFrom"]["secretKeyRef"];
                (source["name"].as_str().unwrap().to_owned(), source["key"].as_str().unwrap().to_owned())
            })
        };
        let secret = manifests.iter().find(|m| m["metadata"]["name"] == secret_name.as_str());
        if on {
            assert_eq!(from_secret(tls::CERT_ENV), Some((secret_name.clone(), "tls.crt".into())));
            assert_eq!(from_secret(tls::KEY_ENV), Some((secret_name.clone(), "tls.key".into())));
            let secret = secret.expect("the sandbox's TLS Secret");
            assert_eq!(secret["type"], "kubernetes.io/tls");
            assert!(secret["stringData"]["tls.crt"].is_string() && secret["stringData"]["tls.key"].is_string());
        } else {
            assert_eq!(from_secret(tls::CERT_ENV), None);
            assert!(secret.is_none());
        }
        // A file in a Secret volume would be readable by the sandbox's group (fsGroup).
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        assert!(volumes.iter().all(|v| v["secret"].is_null()), "{volumes:?}");
    }
}
