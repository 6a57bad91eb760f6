//! The Kubernetes backend against a scripted API server: kube's client talks to an in-process
//! fake of the API (pods, PVCs, Secrets, NetworkPolicies), which plays the kubelet by
//! starting a real sandboxd on loopback when a pod is created. So the backend's object
//! handling and the TCP + token path to sandboxd are both exercised without a cluster.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use hermes_sandbox::{SandboxKey, Sandboxes};
use hermes_sandbox_kube::KubeSandboxes;

use crate::harness::{poll_until, sandboxd_bin, unique};
use crate::sandbox::{new_key, run};

/// The fake API's state: objects by (resource, name), the calls it saw, and the "kubelet".
struct Cluster {
    objects: Mutex<HashMap<(String, String), Value>>,
    calls: Mutex<Vec<String>>,
    daemons: Mutex<HashMap<String, Child>>,
    port: u16,
    root: String,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, mut child) in self.daemons.lock().unwrap().drain() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn status(code: u16, reason: &str) -> (u16, Value) {
    (
        code,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code, "message": reason}),
    )
}

impl Cluster {
    /// Starts sandboxd for a created pod, as the kubelet would, with the pod's token (in the
    /// variable the pod names, from its Secret) and PVC.
    fn start_pod(&self, pod: &Value) {
        let objects = self.objects.lock().unwrap();
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        let env = pod["spec"]["containers"][0]["env"].as_array().unwrap();
        let (variable, secret) = env
            .iter()
            .find_map(|e| Some((e["name"].as_str()?, e["valueFrom"]["secretKeyRef"]["name"].as_str()?)))
            .unwrap();
        let pvc = volumes.iter().find_map(|v| v["persistentVolumeClaim"]["claimName"].as_str()).unwrap();
        let token =
            objects[&("secrets".to_owned(), secret.to_owned())]["stringData"]["token"].as_str().unwrap().to_owned();
        drop(objects);
        let workspace = format!("{}/{pvc}", self.root);
        std::fs::create_dir_all(&workspace).unwrap();
        let child = Command::new(sandboxd_bin())
            .args(["--listen", &format!("tcp:127.0.0.1:{}", self.port), "--token-env", variable])
            .env(variable, token)
            .args(["--workspace", &workspace])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.daemons.lock().unwrap().insert(pod["metadata"]["name"].as_str().unwrap().to_owned(), child);
    }

    fn stop_pod(&self, name: &str) {
        if let Some(mut child) = self.daemons.lock().unwrap().remove(name) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn handle(&self, method: &str, path: &str, query: &str, body: &[u8]) -> (u16, Value) {
        self.calls.lock().unwrap().push(format!("{method} {path}"));
        // /api/v1/namespaces/{ns}/{resource}[/{name}] or /apis/{group}/{version}/namespaces/...
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let at = parts.iter().position(|p| *p == "namespaces").unwrap();
        let resource = parts[at + 2].to_owned();
        let name = parts.get(at + 3).map(|s| (*s).to_owned());
        match (method, name) {
            ("POST", None) => {
                let mut object: Value = serde_json::from_slice(body).unwrap();
                let name = object["metadata"]["name"].as_str().unwrap().to_owned();
                let key = (resource.clone(), name);
                if self.objects.lock().unwrap().contains_key(&key) {
                    return status(409, "AlreadyExists");
                }
                if resource == "pods" {
                    object["status"] = json!({"phase": "Running", "podIP": "127.0.0.1"});
                }
                if resource == "secrets" {
                    // The API server turns stringData into base64 data.
                    let token = object["stringData"]["token"].as_str().unwrap().to_owned();
                    object["data"] = json!({"token": base64(&token)});
                }
                self.objects.lock().unwrap().insert(key, object.clone());
                if resource == "pods" {
                    self.start_pod(&object);
                }
                (201, object)
            }
            // Server-side apply: create or replace (the backend applies whole NetworkPolicies).
            ("PATCH", Some(name)) => {
                assert!(query.contains("fieldManager="), "server-side apply names its field manager");
                let object: Value = serde_json::from_slice(body).unwrap();
                self.objects.lock().unwrap().insert((resource, name), object.clone());
                (200, object)
            }
            ("GET", Some(name)) => match self.objects.lock().unwrap().get(&(resource, name)) {
                Some(object) => (200, object.clone()),
                None => status(404, "NotFound"),
            },
            ("GET", None) => {
                let selector = query.split('&').find_map(|kv| kv.strip_prefix("labelSelector=")).map(percent_decoded);
                let items: Vec<Value> = self
                    .objects
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|((r, _), _)| *r == resource)
                    .map(|(_, o)| o.clone())
                    .filter(|o| {
                        selector.as_deref().is_none_or(|sel| {
                            let (k, v) = sel.split_once('=').unwrap();
                            o["metadata"]["labels"][k] == v
                        })
                    })
                    .collect();
                (200, json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": items}))
            }
            ("DELETE", Some(name)) => match self.objects.lock().unwrap().remove(&(resource.clone(), name.clone())) {
                Some(object) => {
                    if resource == "pods" {
                        self.stop_pod(&name);
                    }
                    (200, object)
                }
                None => status(404, "NotFound"),
            },
            _ => status(405, "MethodNotAllowed"),
        }
    }

    fn object(&self, resource: &str, name: &str) -> Option<Value> {
        self.objects.lock().unwrap().get(&(resource.to_owned(), name.to_owned())).cloned()
    }

    fn posts(&self) -> usize {
        self.calls.lock().unwrap().iter().filter(|c| c.starts_with("POST")).count()
    }
}

fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn base64(s: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = s.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A backend on the fake cluster.
fn backend(cluster: &Arc<Cluster>, tweak: impl FnOnce(&mut hermes_config::SandboxConfig)) -> KubeSandboxes {
    let port = cluster.port;
    let cluster = cluster.clone();
    let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let cluster = cluster.clone();
        async move {
            let method = req.method().to_string();
            let path = req.uri().path().to_owned();
            let query = req.uri().query().unwrap_or_default().to_owned();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let (code, value) = cluster.handle(&method, &path, &query, &body);
            let response = http::Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(value.to_string())))
                .unwrap();
            Ok::<_, Infallible>(response)
        }
    });
    let client = kube::Client::new(service, "sandboxes");
    let mut cfg = hermes_config::SandboxConfig::default();
    cfg.kubernetes.port = port;
    cfg.kubernetes.name_prefix = "hermes".into();
    cfg.kubernetes.start_timeout_seconds = 20;
    tweak(&mut cfg);
    KubeSandboxes::with_client(client, &cfg)
}

fn cluster() -> Arc<Cluster> {
    Arc::new(Cluster {
        objects: Mutex::default(),
        calls: Mutex::default(),
        daemons: Mutex::default(),
        port: free_port(),
        root: format!("/tmp/htest-kube/{}", unique("k")),
    })
}

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

    // Without the token the daemon refuses.
    let address =
        hermes_sandbox::Address::Tcp { url: format!("http://127.0.0.1:{}", cluster.port), token: "wrong".into() };
    let stranger = hermes_sandbox::SandboxClient::connect(&address).await.unwrap();
    assert!(stranger.status().await.is_err(), "a wrong token is refused");

    // Another worker attaches to the running pod without creating anything.
    let posts = cluster.posts();
    let other = backend(&cluster, |_| {});
    assert_eq!(run(&other, key, "echo attached", 20).await.output, "attached\n");
    assert_eq!(cluster.posts(), posts, "nothing created twice");
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

/// An agent's egress setting, switchable by the test.
struct Toggle(std::sync::atomic::AtomicBool);

impl hermes_sandbox::EgressHandler for Toggle {
    fn serve(&self, _: SandboxKey, _: tokio::net::UnixStream) -> futures_util::future::BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    fn enabled(&self, _: SandboxKey) -> futures_util::future::BoxFuture<'static, bool> {
        let on = self.0.load(std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move { on })
    }
}

#[tokio::test]
async fn internet_access_opens_the_network_policy_to_public_addresses_only_and_follows_the_setting() {
    let cluster = cluster();
    let sandboxes = backend(&cluster, |c| c.egress_allow_cidrs = vec!["10.20.0.0/16".into()]);
    let toggle = Arc::new(Toggle(false.into()));
    sandboxes.set_egress(toggle.clone());
    let key = new_key();
    run(&sandboxes, key, "true", 20).await;
    let names = sandboxes.names(key);
    let egress = || cluster.object("networkpolicies", &names.pod).unwrap()["spec"]["egress"].clone();
    assert_eq!(egress(), json!([]), "no way out by default");

    // The agent opts in: the reaper's pass over live pods opens the policy.
    toggle.0.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(sandboxes.reap_idle().await.unwrap(), 0, "a busy pod stays");
    let rules = egress();
    let dns = &rules[0];
    assert_eq!(dns["to"][0]["podSelector"]["matchLabels"]["k8s-app"], "kube-dns");
    assert_eq!(dns["ports"], json!([{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]));
    let peers = rules[1]["to"].as_array().unwrap();
    assert_eq!(
        rules[1]["ports"],
        json!([{"port": 80, "protocol": "TCP"}, {"port": 443, "protocol": "TCP"}]),
        "web ports only (sandbox.egress_ports)"
    );
    assert_eq!(peers[0]["ipBlock"]["cidr"], "0.0.0.0/0");
    let except_v4: Vec<&str> =
        peers[0]["ipBlock"]["except"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for private in ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "127.0.0.0/8", "100.64.0.0/10"] {
        assert!(except_v4.contains(&private), "{private} refused");
    }
    assert_eq!(peers[1]["ipBlock"]["cidr"], "::/0");
    assert!(peers[1]["ipBlock"]["except"].as_array().unwrap().contains(&json!("fc00::/7")));
    assert_eq!(peers[2]["ipBlock"], json!({"cidr": "10.20.0.0/16"}), "the operator's allowed range");

    // Another worker attaching applies the current setting too; switching off closes it again.
    toggle.0.store(false, std::sync::atomic::Ordering::SeqCst);
    let other = backend(&cluster, |_| {});
    other.set_egress(toggle.clone());
    run(&other, key, "true", 20).await;
    assert_eq!(egress(), json!([]), "closed again");
}

#[test]
fn the_manifests_are_complete_kubernetes_objects() {
    let mut cfg = hermes_config::SandboxConfig::default();
    cfg.kubernetes.storage_class = "fast".into();
    let manifests = hermes_sandbox_kube::manifests_of(&cfg, new_key(), false);
    let kinds: Vec<&str> = manifests.iter().map(|m| m["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Secret", "PersistentVolumeClaim", "Pod", "NetworkPolicy"]);
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
    assert_eq!(manifests[1]["spec"]["storageClassName"], "fast");
    assert_eq!(manifests[3]["apiVersion"], "networking.k8s.io/v1");
}

#[test]
fn the_manifests_validate_against_the_kubernetes_schemas_offline() {
    let mut cfg = hermes_config::SandboxConfig::default();
    cfg.kubernetes.runtime_class = "gvisor".into();
    cfg.kubernetes.storage_class = "fast".into();
    cfg.egress_allow_cidrs = vec!["10.20.0.0/16".into()];
    // Workers in the release's namespace, sandboxes in their own (the chart's layout).
    cfg.kubernetes.worker_namespace = "hermes".into();
    let key = new_key();
    let mut manifests = hermes_sandbox_kube::manifests_of(&cfg, key, false);
    let from = &manifests[3]["spec"]["ingress"][0]["from"][0];
    assert_eq!(from["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"], "hermes");
    assert_eq!(from["podSelector"]["matchLabels"]["app.kubernetes.io/component"], "worker");
    // The policy of an agent with internet access too.
    manifests.extend(hermes_sandbox_kube::manifests_of(&cfg, key, true).pop());
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
