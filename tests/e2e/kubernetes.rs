//! The Kubernetes backend against a scripted API server: kube's client talks to an in-process
//! fake of the API (pods, PVCs, Secrets, NetworkPolicies), which plays the kubelet by
//! starting a real sandboxd on loopback when a pod is created. So the backend's object
//! handling and the TCP (TLS by default) + token path to sandboxd are both exercised without a
//! cluster.

mod egress;
pub(crate) mod fake_api;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use hermes_sandbox::{SandboxKey, Sandboxes};

use crate::harness::{poll_until, unique};
use crate::sandbox::{new_key, run};
use fake_api::{Cluster, backend, cluster};

#[tokio::test]
async fn a_sandbox_is_a_hardened_pod_with_a_pvc_reached_over_tcp_with_its_token() {
    let cluster = cluster();
    let sandboxes = backend(&cluster, |c| c.kubernetes.runtime_class = "gvisor".into());
    let key: SandboxKey = new_key();
    let out = run(&sandboxes, key, "echo hello > /dev/null; echo from-the-pod", 20).await;
    assert_eq!(out.output, "from-the-pod\n");

    let names = sandboxes.names(key);
    let pod = cluster.object("pods", &names.pod).unwrap();
    let spec = &pod["spec"];
    assert_eq!(spec["runtimeClassName"], "gvisor");
    assert_eq!(spec["automountServiceAccountToken"], false);
    assert_eq!(spec["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(spec["securityContext"]["fsGroup"], 1000);
    let container = &spec["containers"][0];
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    // sandboxd is root with only what starting and stopping programs as uid 1000 takes.
    assert_eq!(security["runAsUser"], 0);
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(security["capabilities"]["add"], json!(["SETUID", "SETGID", "KILL"]));
    let command: Vec<&str> = container["command"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(command.windows(2).any(|w| w == ["--run-as", "1000:1000"]), "{command:?}");
    assert!(
        spec["volumes"].as_array().unwrap().iter().all(|v| v["secret"].is_null()),
        "the token is no file the sandbox's group could read"
    );
    assert_eq!(container["resources"]["limits"]["memory"], "1024Mi");
    assert_eq!(container["resources"]["limits"]["cpu"], "1000m");
    assert!(container["command"].as_array().unwrap().iter().any(|a| a == "--token-env"));
    let pvc = cluster.object("persistentvolumeclaims", &names.pvc).unwrap();
    assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "5Gi");
    let policy = cluster.object("networkpolicies", &names.pod).unwrap();
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(policy["spec"]["egress"], json!([]), "no way out");
    assert_eq!(
        policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"],
        "worker"
    );
    assert!(policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"].is_null(), "workers beside the sandboxes");
    assert_eq!(pod["metadata"]["labels"]["hermes.io/tenant"], key.tenant.to_string());

    // sandboxd serves TLS with the sandbox's own key; the worker pins its certificate.
    assert!(command.windows(2).any(|w| w == ["--tls-cert-env", "HERMES_SANDBOX_TLS_CERT"]), "{command:?}");
    let tls = cluster.object("secrets", &format!("{}-tls", names.pod)).expect("the sandbox's TLS Secret");
    assert_eq!(tls["type"], "kubernetes.io/tls");
    let pinned = hermes_sandbox::PinnedCert {
        pem: tls["stringData"]["tls.crt"].as_str().unwrap().to_owned(),
        name: names.pod.clone(),
    };
    // Programs in the sandbox see neither the key nor the token sandboxd was given.
    let env = run(&sandboxes, key, "env", 20).await.output;
    assert!(!env.contains("PRIVATE KEY") && !env.contains("HERMES_SANDBOX_T"), "{env}");

    // Without the token the daemon refuses.
    let address = hermes_sandbox::Address::Tcp {
        url: format!("https://127.0.0.1:{}", cluster.port),
        token: "wrong".into(),
        tls: Some(pinned),
    };
    let stranger = hermes_sandbox::SandboxClient::connect(&address).await.unwrap();
    assert!(stranger.status().await.is_err(), "a wrong token is refused");

    // Another worker attaches to the running pod without creating anything.
    let posts = cluster.posts();
    let other = backend(&cluster, |_| {});
    assert_eq!(run(&other, key, "echo attached", 20).await.output, "attached\n");
    assert_eq!(cluster.posts(), posts, "nothing created twice");
}

/// The review's L11 test: with `sandbox.kubernetes.tls` on (the default) the worker refuses a
/// sandboxd that answers in plaintext, whatever its pod asked of it, so the token, commands,
/// files and MCP servers' secrets never cross the pod network in the clear.
#[tokio::test]
async fn with_tls_on_the_worker_refuses_a_sandboxd_that_answers_in_plaintext() {
    let cluster = cluster();
    cluster.plaintext.store(true, Ordering::SeqCst);
    let sandboxes = backend(&cluster, |c| c.kubernetes.start_timeout_seconds = 3);
    let key = new_key();
    let refused = sandboxes.open(key).await.err().expect("a plaintext sandboxd is refused");
    assert!(matches!(refused, hermes_sandbox::SandboxError::Unavailable(_)), "{refused}");

    // The daemon is up, and answers anyone speaking plaintext: only the worker's TLS refuses it.
    let names = sandboxes.names(key);
    let secret = cluster.object("secrets", &names.secret).unwrap();
    let token = secret["stringData"]["token"].as_str().unwrap().to_owned();
    let url = format!("http://127.0.0.1:{}", cluster.port);
    let plaintext = hermes_sandbox::Address::Tcp { url, token, tls: None };
    let client = hermes_sandbox::SandboxClient::connect_within(&plaintext, std::time::Duration::from_secs(5)).await;
    assert!(client.unwrap().status().await.is_ok(), "the plaintext daemon answers");
}

/// A pod started before `sandbox.kubernetes.tls` was on serves plaintext, which the worker now
/// refuses: it replaces the pod with one that serves TLS, and the workspace stays.
#[tokio::test]
async fn a_pod_started_without_tls_is_replaced_when_tls_is_turned_on() {
    let cluster = cluster();
    let before = backend(&cluster, |c| c.kubernetes.tls = false);
    let key = new_key();
    run(&before, key, "echo kept > k", 20).await;
    let names = before.names(key);
    assert!(cluster.object("secrets", &format!("{}-tls", names.pod)).is_none(), "no TLS material without TLS");

    let after = backend(&cluster, |_| {});
    assert_eq!(run(&after, key, "cat k", 20).await.output, "kept\n");
    assert!(cluster.calls.lock().unwrap().iter().any(|c| c.starts_with("DELETE") && c.ends_with(&names.pod)));
    let pod = cluster.object("pods", &names.pod).unwrap();
    let command = pod["spec"]["containers"][0]["command"].as_array().unwrap().clone();
    assert!(command.iter().any(|a| a == "--tls-cert-env"), "{command:?}");
}

/// Pods of releases before the egress tunnel went out through their NetworkPolicy, which is
/// now closed: a worker replaces such a pod (on the same volume) rather than leave it cut off.
#[tokio::test]
async fn a_pod_from_before_the_egress_tunnel_is_replaced() {
    let cluster = cluster();
    let before = backend(&cluster, |_| {});
    let key = new_key();
    run(&before, key, "echo kept > k", 20).await;
    let names = before.names(key);
    {
        let mut objects = cluster.objects.lock().unwrap();
        let pod = objects.get_mut(&("pods".to_owned(), names.pod.clone())).unwrap();
        let command = pod["spec"]["containers"][0]["command"].as_array_mut().unwrap();
        command.retain(|a| a != "--egress-tunnel");
    }
    let after = backend(&cluster, |_| {});
    assert_eq!(run(&after, key, "cat k", 20).await.output, "kept\n");
    assert!(cluster.calls.lock().unwrap().iter().any(|c| c.starts_with("DELETE") && c.ends_with(&names.pod)));
    let pod = cluster.object("pods", &names.pod).unwrap();
    assert!(pod["spec"]["containers"][0]["command"].as_array().unwrap().iter().any(|a| a == "--egress-tunnel"));
}

#[tokio::test]
async fn an_idle_pod_is_deleted_and_recreated_with_its_workspace_and_a_failed_one_is_replaced() {
    let cluster = cluster();
    let sandboxes = backend(&cluster, |c| c.idle_seconds = 0);
    let key = new_key();
    run(&sandboxes, key, "echo kept > /workspace/k 2>/dev/null || echo kept > k", 20).await;
    // Idle once its daemon has counted the command as ended: ask until the pod is reaped.
    let reaped = poll_until(async || Some(sandboxes.reap_idle().await.unwrap()).filter(|n| *n > 0)).await;
    assert_eq!(reaped.unwrap_or_default(), 1);
    let names = sandboxes.names(key);
    assert!(cluster.object("pods", &names.pod).is_none(), "the pod is gone");
    assert!(cluster.object("persistentvolumeclaims", &names.pvc).is_some(), "the workspace stays");
    assert!(cluster.object("secrets", &names.secret).is_some());

    let out = run(&sandboxes, key, "cat k", 20).await;
    assert_eq!(out.output, "kept\n", "recreated with its workspace");

    // A pod that failed is replaced on the next use.
    cluster.stop_pod(&names.pod);
    if let Some(pod) = cluster.objects.lock().unwrap().get_mut(&("pods".to_owned(), names.pod.clone())) {
        pod["status"] = json!({"phase": "Failed"});
    }
    sandboxes.invalidate(key);
    assert_eq!(run(&sandboxes, key, "cat k", 20).await.output, "kept\n");
    assert!(cluster.calls.lock().unwrap().iter().any(|c| c.starts_with("DELETE") && c.ends_with(&names.pod)));

    // The chart's Role for the worker allows exactly what this lifecycle asked of the API
    // server: nothing missing (it would fail in a cluster), nothing extra (least privilege).
    let seen = verbs_seen(&cluster);
    let granted = chart_role_rules();
    assert_eq!(granted, seen, "helm/hermes-cloud/templates/sandbox-rbac.yaml against the calls seen");
}

/// (resource, verb) of every request the fake API server answered.
fn verbs_seen(cluster: &Cluster) -> std::collections::BTreeSet<(String, String)> {
    cluster
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|call| {
            let (method, path) = call.split_once(' ').unwrap();
            let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            let at = parts.iter().position(|p| *p == "namespaces").unwrap();
            let named = parts.len() > at + 3;
            let verb = match (method, named) {
                ("POST", _) => "create",
                ("GET", true) => "get",
                ("GET", false) => "list",
                ("PATCH", _) => "patch",
                ("DELETE", _) => "delete",
                (m, _) => panic!("unexpected method {m}"),
            };
            (parts[at + 2].to_owned(), verb.to_owned())
        })
        .collect()
}

/// (resource, verb) the chart's sandbox Role grants, read from its template (its rules are
/// plain YAML there: `resources: [..]` then `verbs: [..]`).
fn chart_role_rules() -> std::collections::BTreeSet<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../helm/hermes-cloud/templates/sandbox-rbac.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let list = |line: &str| -> Vec<String> {
        let inner = line.split_once('[').unwrap().1.trim_end().trim_end_matches(']');
        inner.split(',').map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect()
    };
    let mut rules = std::collections::BTreeSet::new();
    let mut resources = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("resources:") {
            resources = list(line);
        } else if line.starts_with("verbs:") {
            for resource in &resources {
                rules.extend(list(line).into_iter().map(|verb| (resource.clone(), verb)));
            }
        }
    }
    rules
}

#[test]
fn the_manifests_are_complete_kubernetes_objects() {
    let mut cfg = hermes_config::SandboxConfig::default();
    cfg.kubernetes.storage_class = "fast".into();
    let manifests = hermes_sandbox_kube::manifests_of(&cfg, new_key(), &Default::default());
    let kinds: Vec<&str> = manifests.iter().map(|m| m["kind"].as_str().unwrap()).collect();
    // The token's Secret, then the TLS key and certificate's.
    assert_eq!(kinds, ["Secret", "Secret", "PersistentVolumeClaim", "Pod", "NetworkPolicy"]);
    for m in &manifests {
        assert!(m["apiVersion"].is_string() && m["metadata"]["name"].is_string(), "{m}");
        let name = m["metadata"]["name"].as_str().unwrap();
        assert!(
            name.len() <= 63 && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{name}"
        );
        for (k, v) in m["metadata"]["labels"].as_object().unwrap() {
            assert!(v.as_str().unwrap().len() <= 63, "label {k} too long");
        }
    }
    assert_eq!(manifests[2]["spec"]["storageClassName"], "fast");
    assert_eq!(manifests[4]["apiVersion"], "networking.k8s.io/v1");
}

#[test]
fn the_manifests_validate_against_the_kubernetes_schemas_offline() {
    let mut cfg = hermes_config::SandboxConfig::default();
    cfg.kubernetes.runtime_class = "gvisor".into();
    cfg.kubernetes.storage_class = "fast".into();
    // Workers in the release's namespace, sandboxes in their own (the chart's layout).
    cfg.kubernetes.worker_namespace = "hermes".into();
    let key = new_key();
    let with_secret = hermes_sandbox::SandboxSpec {
        env: [("GITHUB_TOKEN".to_owned(), "hermes_placeholder_0123".to_owned())].into(),
        trust: Some(hermes_sandbox::Trust { pem: "<certificate>".into(), spki_sha256: "<pin>".into() }),
        ..Default::default()
    };
    let manifests = hermes_sandbox_kube::manifests_of(&cfg, key, &with_secret);
    let from = &manifests[4]["spec"]["ingress"][0]["from"][0];
    assert_eq!(from["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"], "hermes");
    assert_eq!(from["podSelector"]["matchLabels"]["app.kubernetes.io/component"], "worker");
    let dir = format!("/tmp/htest-kube/{}", unique("m"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for (i, manifest) in manifests.iter().enumerate() {
        let path = format!("{dir}/{i}.json");
        std::fs::write(&path, serde_json::to_vec_pretty(manifest).unwrap()).unwrap();
        files.push(path);
    }
    // kubernetes-validate carries the official schemas; deploy/dev/test.sh installs it.
    let out = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--strict", "--kubernetes-version", "1.33.0"])
        .args(&files)
        .output()
        .expect("kubernetes-validate is installed (deploy/dev/test.sh installs it)");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{report}");
    assert_eq!(report.matches("INFO").count(), files.len(), "every manifest was checked: {report}");
}

/// Per-person workspaces on Kubernetes (issue 38): two people of one agent get two pods, each
/// with its own volume, token, TLS key and network policy (ingress from workers only, so one
/// sandbox cannot reach the other's daemon); a file one writes is not in the other's workspace,
/// and neither daemon takes the other's token.
#[tokio::test]
async fn two_people_of_one_agent_get_separate_pods_volumes_tokens_and_policies() {
    let cluster = cluster();
    let sandboxes = backend(&cluster, |_| {});
    let shared = new_key();
    let session = hermes_core::SessionId::new();
    let person = |who: &str| {
        let workspace = hermes_core::Workspace::for_turn(hermes_core::WorkspaceScope::Person, who, session);
        SandboxKey { workspace, ..shared }
    };
    let (alice, bob) = (person("telegram:c:user:1"), person("telegram:c:user:2"));
    run(&sandboxes, alice, "echo a-secret > alice.txt", 20).await;
    let seen = run(&sandboxes, bob, "ls -a; cat alice.txt 2>&1 || true", 20).await.output;
    assert!(!seen.contains("a-secret"), "{seen}");
    assert!(seen.contains("No such file"), "{seen}");

    let (a, b) = (sandboxes.names(alice), sandboxes.names(bob));
    assert_ne!(a, sandboxes.names(shared), "not the agent's shared pod");
    assert!(a.pod != b.pod && a.pvc != b.pvc && a.secret != b.secret, "{a:?} {b:?}");
    for (kind, name) in [("pods", &a.pod), ("persistentvolumeclaims", &a.pvc), ("secrets", &a.secret)] {
        let object = cluster.object(kind, name).unwrap_or_else(|| panic!("{kind} {name}"));
        let label = object["metadata"]["labels"]["hermes.io/workspace"].as_str().unwrap().to_owned();
        assert_eq!(label, alice.workspace.label(), "{kind} {name}");
        assert_ne!(label, bob.workspace.label());
    }
    let pod = cluster.object("pods", &b.pod).unwrap();
    let claims: Vec<&str> = pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["persistentVolumeClaim"]["claimName"].as_str())
        .collect();
    assert_eq!(claims, [b.pvc.as_str()], "Bob's pod mounts his volume only");
    let policy = cluster.object("networkpolicies", &b.pod).unwrap();
    assert_eq!(policy["spec"]["podSelector"]["matchLabels"]["hermes.io/sandbox"], b.pod, "his pod only");
    assert_eq!(
        policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"], "worker",
        "no other sandbox may reach his daemon"
    );

    // Alice's token opens nothing of Bob's.
    let token = |name: &str| {
        let secret = cluster.object("secrets", name).unwrap();
        secret["stringData"]["token"].as_str().map(str::to_owned).unwrap_or_else(|| secret["data"]["token"].to_string())
    };
    assert_ne!(token(&a.secret), token(&b.secret));
    let tls = cluster.object("secrets", &format!("{}-tls", b.pod)).unwrap();
    let pinned = hermes_sandbox::PinnedCert {
        pem: tls["stringData"]["tls.crt"].as_str().unwrap().to_owned(),
        name: b.pod.clone(),
    };
    let address = hermes_sandbox::Address::Tcp {
        url: format!("https://{}:{}", pod["status"]["podIP"].as_str().unwrap(), cluster.port),
        token: token(&a.secret),
        tls: Some(pinned),
    };
    let with_alices_token = hermes_sandbox::SandboxClient::connect(&address).await.unwrap();
    assert!(with_alices_token.status().await.is_err(), "Bob's daemon refuses Alice's token");

    // The reaper reads the workspace back from the labels and keeps both live pods.
    assert_eq!(sandboxes.reap_idle().await.unwrap(), 0);
}
