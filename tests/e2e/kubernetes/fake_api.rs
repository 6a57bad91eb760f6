//! The fake Kubernetes API the backend is tested against: kube's client over an in-process
//! service that keeps the objects, records the calls and plays the kubelet by starting a real
//! sandboxd for each pod created.

use std::collections::HashMap;
use std::convert::Infallible;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use hermes_sandbox_kube::KubeSandboxes;

use crate::harness::{sandboxd_bin, unique};

/// The fake API's state: objects by (resource, name), the calls it saw, and the "kubelet".
pub(crate) struct Cluster {
    pub(super) objects: Mutex<HashMap<(String, String), Value>>,
    pub(super) calls: Mutex<Vec<String>>,
    pub(super) daemons: Mutex<HashMap<String, Child>>,
    pub(super) port: u16,
    pub(super) root: String,
    /// The "kubelet" starts sandboxd without the pod's TLS flags (an impostor, or an image
    /// that ignores them): it answers in plaintext.
    pub(super) plaintext: AtomicBool,
    /// Pods created so far: each gets its own loopback address (127.0.0.1, .2, ...), so
    /// several can run at once on the one port.
    pub(super) pods: std::sync::atomic::AtomicU8,
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
    /// Starts sandboxd for a created pod, as the kubelet would, with the pod's variables (those
    /// filled from its Secrets too: its token, its TLS certificate and key), its token, TLS,
    /// egress and trust flags, and its PVC. Pods share the host's loopback: each one's proxy
    /// port is a free port on its own address, and its trust directory one of its own.
    fn start_pod(&self, pod: &Value) {
        let name = pod["metadata"]["name"].as_str().unwrap();
        let ip = pod["status"]["podIP"].as_str().unwrap();
        let proxy = format!("{ip}:{}", free_port());
        let trust_dir = format!("{}/{name}-ipc", self.root);
        std::fs::create_dir_all(&trust_dir).unwrap();
        let in_pod =
            |value: &str| value.replace("127.0.0.1:3128", &proxy).replace(hermes_sandbox::spec::TRUST_DIR, &trust_dir);
        let objects = self.objects.lock().unwrap();
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        let container = &pod["spec"]["containers"][0];
        let env: Vec<(String, String)> = container["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| {
                if let Some(value) = e["value"].as_str() {
                    return Some((e["name"].as_str()?.to_owned(), in_pod(value)));
                }
                let source = &e["valueFrom"]["secretKeyRef"];
                let secret = &objects[&("secrets".to_owned(), source["name"].as_str()?.to_owned())];
                Some((
                    e["name"].as_str()?.to_owned(),
                    secret["stringData"][source["key"].as_str()?].as_str()?.to_owned(),
                ))
            })
            .collect();
        drop(objects);
        let command: Vec<&str> = container["command"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let flags: Vec<String> = ["--token-env", "--tls-cert-env", "--tls-key-env", "--trust-dir"]
            .iter()
            .filter(|flag| !(flag.starts_with("--tls") && self.plaintext.load(Ordering::SeqCst)))
            .filter_map(|flag| {
                Some([flag.to_string(), in_pod(command.get(command.iter().position(|a| a == flag)? + 1)?)])
            })
            .flatten()
            .collect();
        let tunnel = command.contains(&"--egress-tunnel").then_some(["--egress-tunnel", "--egress-listen", &proxy]);
        let pvc = volumes.iter().find_map(|v| v["persistentVolumeClaim"]["claimName"].as_str()).unwrap();
        let workspace = format!("{}/{pvc}", self.root);
        std::fs::create_dir_all(&workspace).unwrap();
        let child = Command::new(sandboxd_bin())
            .args(["--listen", &format!("tcp:{ip}:{}", self.port)])
            .args(flags)
            .args(tunnel.into_iter().flatten())
            .envs(env)
            .args(["--workspace", &workspace])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.daemons.lock().unwrap().insert(name.to_owned(), child);
    }

    pub(super) fn stop_pod(&self, name: &str) {
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
                    let n = self.pods.fetch_add(1, Ordering::SeqCst) % 250 + 1;
                    object["status"] = json!({"phase": "Running", "podIP": format!("127.0.0.{n}")});
                }
                if resource == "secrets" {
                    // The API server turns stringData into base64 data.
                    let data: serde_json::Map<String, Value> = object["stringData"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| (k.clone(), json!(base64(v.as_str().unwrap()))))
                        .collect();
                    object["data"] = Value::Object(data);
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

    pub(super) fn object(&self, resource: &str, name: &str) -> Option<Value> {
        self.objects.lock().unwrap().get(&(resource.to_owned(), name.to_owned())).cloned()
    }

    pub(super) fn posts(&self) -> usize {
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
pub(crate) fn backend(cluster: &Arc<Cluster>, tweak: impl FnOnce(&mut hermes_config::SandboxConfig)) -> KubeSandboxes {
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

pub(crate) fn cluster() -> Arc<Cluster> {
    Arc::new(Cluster {
        objects: Mutex::default(),
        calls: Mutex::default(),
        daemons: Mutex::default(),
        port: free_port(),
        root: format!("/tmp/htest-kube/{}", unique("k")),
        plaintext: AtomicBool::new(false),
        pods: std::sync::atomic::AtomicU8::new(0),
    })
}
