//! Kubernetes sandboxes: one pod per tenant-agent in a configured namespace, its workspace a
//! PVC that outlives the pod, hardened like the Docker container (non-root, read-only root,
//! all capabilities dropped, no privilege escalation, seccomp RuntimeDefault, resource
//! limits, an optional RuntimeClass such as gVisor or Kata), and a NetworkPolicy that admits
//! only the workers. sandboxd listens on the pod's port and checks a per-sandbox token kept
//! in a Secret; the worker connects to the pod's IP, over TLS with the sandbox's own pinned
//! certificate (`sandbox.kubernetes.tls`, see `tls`).
//!
//! Objects are created on first use; an idle pod is deleted (PVC and Secret stay); a pod that
//! failed is replaced. Any worker can attach to a running pod.
//!
//! Egress: the pod's NetworkPolicy lets nothing out. Its programs' proxy is sandboxd's port
//! on the pod's loopback, and each connection there is handed to a worker over `Egress` calls
//! the worker keeps waiting on its connection to the daemon (`hermes_sandbox::egress_tunnel`),
//! so the same egress proxy as Docker's decides: the agent's opt-in, public addresses only,
//! and bound secrets swapped in at their hosts.

pub mod manifests;
mod names;
#[cfg(test)]
mod pod_tests;
mod tenant_removal;
pub mod tls;

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use rand::Rng;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Mutex;

use hermes_config::SandboxConfig;
use hermes_sandbox::{
    Address, EgressHandler, PinnedCert, Result, SandboxClient, SandboxError, SandboxKey, SandboxSpec, Sandboxes,
};

use manifests::{LABEL_OWNER, Names};

/// Sandboxes in one namespace of one cluster.
#[derive(Clone)]
pub struct KubeSandboxes {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    namespace: String,
    cfg: SandboxConfig,
    /// Each pod's client and where it answers.
    clients: StdMutex<HashMap<String, (SandboxClient, Address)>>,
    start: Mutex<()>,
    egress: StdMutex<Option<Arc<dyn EgressHandler>>>,
    /// The egress tunnel this worker serves for each pod it holds a client for.
    tunnels: StdMutex<HashMap<String, tokio::task::JoinHandle<()>>>,
    /// The pods whose NetworkPolicy this worker applied.
    applied_policy: StdMutex<std::collections::HashSet<String>>,
    census: hermes_sandbox::Census,
    /// Each agent's image and limits, and the spec each pod this worker reached was made for.
    specs: hermes_sandbox::spec::Specs,
    made_for: StdMutex<HashMap<String, String>>,
}

fn api_err(e: kube::Error) -> SandboxError {
    SandboxError::Backend(format!("kubernetes: {e}"))
}

/// The HTTP status of an API error, if it is one.
fn status(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

impl KubeSandboxes {
    /// Uses the in-cluster configuration (or the local kubeconfig).
    pub async fn connect(cfg: &SandboxConfig) -> Result<Self> {
        let client = Client::try_default().await.map_err(|e| SandboxError::Unavailable(e.to_string()))?;
        Ok(Self::with_client(client, cfg))
    }

    /// Uses `client` (tests pass one over a scripted API).
    pub fn with_client(client: Client, cfg: &SandboxConfig) -> Self {
        let namespace = if cfg.kubernetes.namespace.is_empty() {
            client.default_namespace().to_owned()
        } else {
            cfg.kubernetes.namespace.clone()
        };
        Self {
            inner: Arc::new(Inner {
                client,
                namespace,
                cfg: cfg.clone(),
                clients: StdMutex::new(HashMap::new()),
                start: Mutex::new(()),
                egress: StdMutex::new(None),
                tunnels: StdMutex::new(HashMap::new()),
                applied_policy: StdMutex::new(std::collections::HashSet::new()),
                specs: hermes_sandbox::spec::Specs::default(),
                made_for: StdMutex::new(HashMap::new()),
                census: hermes_sandbox::Census::default(),
            }),
        }
    }

    pub fn names(&self, key: SandboxKey) -> Names {
        Names::of(&self.inner.cfg.kubernetes.name_prefix, key)
    }

    fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.inner.client.clone(), &self.inner.namespace)
    }

    fn cached(&self, pod: &str) -> Option<SandboxClient> {
        self.inner.clients.lock().ok()?.get(pod).map(|(client, _)| client.clone())
    }

    fn forget(&self, pod: &str) {
        if let Ok(mut clients) = self.inner.clients.lock() {
            clients.remove(pod);
        }
        if let Some(tunnel) = self.inner.tunnels.lock().ok().and_then(|mut t| t.remove(pod)) {
            tunnel.abort();
        }
    }

    /// Creates `object` unless it exists.
    async fn ensure<K>(&self, object: &K) -> Result<()>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Serialize
            + std::fmt::Debug,
        <K as Resource>::DynamicType: Default,
    {
        match self.api::<K>().create(&PostParams::default(), object).await {
            Ok(_) => Ok(()),
            Err(e) if status(&e) == Some(409) => Ok(()),
            Err(e) => Err(api_err(e)),
        }
    }

    /// The sandbox's token (created with its Secret on first use).
    async fn token(&self, key: SandboxKey, names: &Names) -> Result<String> {
        self.secret_field(&names.secret, "token", || {
            let token: String = rand::rng().sample_iter(rand::distr::Alphanumeric).take(40).map(char::from).collect();
            Ok(manifests::secret(&self.inner.cfg.kubernetes, key, names, &token))
        })
        .await
    }

    /// The sandbox's certificate (PEM), made with its key and their Secret on first use.
    async fn certificate(&self, key: SandboxKey, names: &Names) -> Result<String> {
        self.secret_field(&tls::secret_name(names), tls::CERT_KEY, || {
            Ok(tls::secret(&self.inner.cfg.kubernetes, key, names, &tls::SandboxTls::generate(&names.pod)?))
        })
        .await
    }

    /// `field` of Secret `name`, which `make` creates when it is missing; when another worker
    /// created it first, theirs.
    async fn secret_field(&self, name: &str, field: &str, make: impl Fn() -> Result<Secret>) -> Result<String> {
        let secrets = self.api::<Secret>();
        // Read again at most once: after a create that lost to another worker's.
        for _ in 0..2 {
            if let Some(existing) = secrets.get_opt(name).await.map_err(api_err)? {
                let value = existing.data.and_then(|mut d| d.remove(field)).map(|ByteString(b)| b);
                return value.and_then(|b| String::from_utf8(b).ok()).ok_or_else(|| {
                    SandboxError::Backend(format!("the sandbox's Secret {name} has no readable {field}"))
                });
            }
            let secret = make()?;
            match secrets.create(&PostParams::default(), &secret).await {
                Ok(_) => {
                    let value = secret.string_data.and_then(|mut d| d.remove(field));
                    return value.ok_or_else(|| SandboxError::Backend(format!("no {field} was made for {name}")));
                }
                Err(e) if status(&e) == Some(409) => {}
                Err(e) => return Err(api_err(e)),
            }
        }
        Err(SandboxError::Backend(format!("the sandbox's Secret {name} was created but cannot be read")))
    }

    /// Applies the sandbox's NetworkPolicy (server-side apply, so every worker converges on the
    /// same object; a pod from a release that opened it to the internet is closed again)
    /// unless this worker already did.
    async fn ensure_policy(&self, key: SandboxKey, names: &Names) -> Result<()> {
        if self.inner.applied_policy.lock().is_ok_and(|a| a.contains(&names.pod)) {
            return Ok(());
        }
        let policy = manifests::network_policy(&self.inner.cfg.kubernetes, key, names);
        let params = PatchParams::apply("hermes-worker").force();
        self.api::<NetworkPolicy>().patch(&names.pod, &params, &Patch::Apply(&policy)).await.map_err(api_err)?;
        tracing::info!(pod = %names.pod, "sandbox network policy applied");
        if let Ok(mut applied) = self.inner.applied_policy.lock() {
            applied.insert(names.pod.clone());
        }
        Ok(())
    }

    /// Makes sure the pod exists and runs; returns its IP.
    async fn ensure_pod(&self, key: SandboxKey, names: &Names, spec: &SandboxSpec) -> Result<String> {
        let cfg = &self.inner.cfg;
        let pods = self.api::<Pod>();
        let shaped = manifests::with_spec(&cfg.kubernetes, spec);
        let wanted = spec.fingerprint();
        let deadline = Instant::now() + Duration::from_secs(cfg.kubernetes.start_timeout_seconds);
        loop {
            match pods.get_opt(&names.pod).await.map_err(api_err)? {
                None => {
                    // The token and certificate first: the pod reads them.
                    self.token(key, names).await?;
                    if cfg.kubernetes.tls {
                        self.certificate(key, names).await?;
                    }
                    self.ensure(&manifests::pvc(&shaped, key, names)).await?;
                    self.ensure_policy(key, names).await?;
                    let mut pod = manifests::pod(&shaped, key, names, spec, cfg.exec_timeout_seconds);
                    pod.metadata
                        .labels
                        .get_or_insert_default()
                        .insert(manifests::LABEL_SPEC.to_owned(), wanted.clone());
                    self.ensure(&pod).await?;
                    tracing::info!(pod = %names.pod, tenant.id = %key.tenant, agent.id = %key.agent, "sandbox pod created");
                    metrics::counter!("hermes_sandbox_created_total", "backend" => "kubernetes").increment(1);
                }
                // Started before `sandbox.kubernetes.tls` changed: this worker could not reach it.
                // The agent's image or limits changed: a new pod on the same volume.
                Some(pod) if manifests::spec_of(&pod) != wanted => {
                    tracing::info!(pod = %names.pod, "the agent's sandbox settings changed; replacing its pod");
                    let _ = pods.delete(&names.pod, &DeleteParams::default()).await;
                }
                Some(pod) if !manifests::tunnels_egress(&pod) => {
                    tracing::info!(pod = %names.pod, "sandbox pod from before the egress tunnel; replacing it");
                    let _ = pods.delete(&names.pod, &DeleteParams::default()).await;
                }
                Some(pod) if tls::serves_tls(&pod) != cfg.kubernetes.tls => {
                    let tls = cfg.kubernetes.tls;
                    tracing::warn!(pod = %names.pod, tls, "sandbox pod serves another transport; replacing it");
                    let _ = pods.delete(&names.pod, &DeleteParams::default()).await;
                }
                Some(pod) => {
                    let status = pod.status.unwrap_or_default();
                    match status.phase.as_deref() {
                        Some("Running") => {
                            if let Some(ip) = status.pod_ip.filter(|ip| !ip.is_empty()) {
                                return Ok(ip);
                            }
                        }
                        Some("Failed" | "Succeeded") => {
                            tracing::warn!(pod = %names.pod, "sandbox pod ended; replacing it");
                            let _ = pods.delete(&names.pod, &DeleteParams::default()).await;
                        }
                        _ => {}
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(SandboxError::Unavailable(format!("sandbox pod {} did not start in time", names.pod)));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Where the pod's sandboxd answers, and with what: its token and, with TLS, the one
    /// certificate it may present.
    async fn address(&self, key: SandboxKey, names: &Names, ip: &str) -> Result<Address> {
        let token = self.token(key, names).await?;
        let port = self.inner.cfg.kubernetes.port;
        if !self.inner.cfg.kubernetes.tls {
            return Ok(Address::Tcp { url: format!("http://{ip}:{port}"), token, tls: None });
        }
        let pinned = PinnedCert { pem: self.certificate(key, names).await?, name: names.pod.clone() };
        Ok(Address::Tcp { url: format!("https://{ip}:{port}"), token, tls: Some(pinned) })
    }

    async fn connect_pod(&self, key: SandboxKey, names: &Names, ip: &str, wait: Duration) -> Result<SandboxClient> {
        let address = self.address(key, names, ip).await?;
        let client = SandboxClient::connect_within(&address, wait).await?;
        if let Ok(mut clients) = self.inner.clients.lock() {
            clients.insert(names.pod.clone(), (client.clone(), address));
        }
        Ok(client)
    }

    /// Serves the pod's egress tunnel, on a connection of its own, unless this worker already
    /// does. Only workers that open the sandbox serve it (not every worker's reaper), so the
    /// proxy's per-sandbox limits multiply by those few.
    async fn serve_egress(&self, key: SandboxKey, names: &Names) {
        let Some(handler) = self.inner.egress.lock().ok().and_then(|h| h.clone()) else { return };
        if self.inner.tunnels.lock().is_ok_and(|t| t.get(&names.pod).is_some_and(|task| !task.is_finished())) {
            return;
        }
        let Some(address) = self.inner.clients.lock().ok().and_then(|c| c.get(&names.pod).map(|(_, a)| a.clone()))
        else {
            return;
        };
        let client = match SandboxClient::connect_for_egress(&address).await {
            Ok(client) => client,
            Err(e) => {
                tracing::warn!(pod = %names.pod, error = %e, "cannot open the sandbox's egress tunnel");
                return;
            }
        };
        let max_open = self.inner.cfg.egress_max_connections;
        let task = hermes_sandbox::egress_tunnel::serve(client, key, handler, max_open);
        if let Ok(mut tunnels) = self.inner.tunnels.lock()
            && let Some(old) = tunnels.insert(names.pod.clone(), task)
        {
            old.abort();
        }
    }

    /// A client for `key`'s pod, creating, starting or replacing it as needed.
    async fn open_pod(&self, key: SandboxKey) -> Result<SandboxClient> {
        let names = self.names(key);
        let spec = self.inner.specs.of(key).await;
        let wanted = spec.fingerprint();
        let made_for = self.inner.made_for.lock().ok().and_then(|m| m.get(&names.pod).cloned());
        if made_for.as_ref().is_some_and(|made| *made != wanted) {
            self.forget(&names.pod);
        }
        if let Some(client) = self.cached(&names.pod) {
            return Ok(client);
        }
        let _guard = self.inner.start.lock().await;
        if let Some(client) = self.cached(&names.pod) {
            return Ok(client);
        }
        let ip = self.ensure_pod(key, &names, &spec).await?;
        if let Ok(mut made) = self.inner.made_for.lock() {
            made.insert(names.pod.clone(), wanted);
        }
        // A pod another worker, or an older release, started.
        self.ensure_policy(key, &names).await?;
        let wait = Duration::from_secs(self.inner.cfg.kubernetes.start_timeout_seconds.min(60));
        self.connect_pod(key, &names, &ip, wait).await
    }

    /// A client for `key`'s pod only if it runs already.
    async fn running_pod(&self, key: SandboxKey) -> Result<Option<SandboxClient>> {
        let names = self.names(key);
        if let Some(client) = self.cached(&names.pod) {
            return Ok(Some(client));
        }
        let Some(pod) = self.api::<Pod>().get_opt(&names.pod).await.map_err(api_err)? else { return Ok(None) };
        let status = pod.status.unwrap_or_default();
        match (status.phase.as_deref(), status.pod_ip) {
            (Some("Running"), Some(ip)) if !ip.is_empty() => {
                Ok(self.connect_pod(key, &names, &ip, Duration::from_secs(2)).await.ok())
            }
            _ => Ok(None),
        }
    }

    /// Deletes pods whose daemon reports them idle (see `hermes_sandbox::is_idle`) or does not
    /// answer; their PVCs and Secrets stay for the next use.
    pub async fn reap_idle(&self) -> Result<usize> {
        let cfg = &self.inner.cfg;
        let selector = format!("{LABEL_OWNER}={}", cfg.kubernetes.name_prefix);
        let pods = self.api::<Pod>().list(&ListParams::default().labels(&selector)).await.map_err(api_err)?;
        let seen = pods.items.len();
        let mut removed = 0;
        let mut kept = Vec::new();
        for pod in pods.items {
            let Some(name) = pod.metadata.name.clone() else { continue };
            let labels = pod.metadata.labels.clone().unwrap_or_default();
            let key = match (labels.get(manifests::LABEL_TENANT), labels.get(manifests::LABEL_AGENT)) {
                (Some(t), Some(a)) => parse_key(t, a, labels.get(manifests::LABEL_WORKSPACE).map(String::as_str)),
                _ => None,
            };
            let ip = pod.status.and_then(|s| s.pod_ip).unwrap_or_default();
            let answer = match (key, self.cached(&name)) {
                (_, Some(client)) => status_within(&client).await,
                (Some(key), None) if !ip.is_empty() => {
                    match self.connect_pod(key, &self.names(key), &ip, Duration::from_secs(2)).await {
                        Ok(client) => status_within(&client).await,
                        Err(_) => None,
                    }
                }
                _ => None,
            };
            let idle = answer.as_ref().is_none_or(|s| hermes_sandbox::is_idle(s, cfg.idle_seconds));
            if let (false, Some(key), Some(answer)) = (idle, key, &answer) {
                let ids = (key.tenant.as_uuid(), key.agent.as_uuid());
                kept.push(hermes_sandbox::live_sandbox("kubernetes", &name, ids, answer));
            }
            if idle {
                tracing::info!(pod = %name, "removing idle or broken sandbox pod");
                self.forget(&name);
                if let Err(e) = self.api::<Pod>().delete(&name, &DeleteParams::default()).await
                    && status(&e) != Some(404)
                {
                    tracing::warn!(pod = %name, error = %e, "cannot delete the sandbox pod");
                    continue;
                }
                removed += 1;
            } else if let Some(key) = key
                && let Err(e) = self.ensure_policy(key, &self.names(key)).await
            {
                tracing::warn!(pod = %name, error = %e, "cannot update the sandbox's network policy");
            }
        }
        hermes_sandbox::record_live("kubernetes", seen - removed);
        self.inner.census.replace(kept);
        Ok(removed)
    }
}

/// The daemon's status, unless it takes longer than a daemon that works would (a hung one
/// must not hold up the reaper's pass over every other pod).
async fn status_within(client: &SandboxClient) -> Option<hermes_sandbox::proto::StatusResponse> {
    tokio::time::timeout(Duration::from_secs(10), client.status()).await.ok()?.ok()
}

fn parse_key(tenant: &str, agent: &str, workspace: Option<&str>) -> Option<SandboxKey> {
    let tenant = tenant.parse::<uuid::Uuid>().ok()?;
    let agent = agent.parse::<uuid::Uuid>().ok()?;
    #[expect(clippy::disallowed_methods, reason = "labels this backend wrote for that tenant's sandbox")]
    let tenant = hermes_core::TenantId::from_authenticated(tenant);
    let workspace = hermes_core::Workspace::from_label(workspace)?;
    Some(SandboxKey { tenant, agent: hermes_core::AgentId::from_uuid(agent), workspace })
}

impl Sandboxes for KubeSandboxes {
    fn open(&self, key: SandboxKey) -> BoxFuture<'_, Result<SandboxClient>> {
        Box::pin(async move {
            let client = self.open_pod(key).await?;
            self.serve_egress(key, &self.names(key)).await;
            Ok(client)
        })
    }

    fn running(&self, key: SandboxKey) -> BoxFuture<'_, Result<Option<SandboxClient>>> {
        Box::pin(async move {
            let client = self.running_pod(key).await?;
            if client.is_some() {
                self.serve_egress(key, &self.names(key)).await;
            }
            Ok(client)
        })
    }

    fn invalidate(&self, key: SandboxKey) {
        self.forget(&self.names(key).pod);
    }

    fn set_egress(&self, handler: Arc<dyn EgressHandler>) {
        if let Ok(mut egress) = self.inner.egress.lock() {
            *egress = Some(handler);
        }
    }

    fn set_specs(&self, source: Arc<dyn hermes_sandbox::SpecSource>) {
        self.inner.specs.set(source);
    }

    fn reap_idle(&self) -> BoxFuture<'_, Result<usize>> {
        Box::pin(KubeSandboxes::reap_idle(self))
    }

    fn tenants_kept(&self) -> BoxFuture<'_, Result<Vec<uuid::Uuid>>> {
        Box::pin(KubeSandboxes::tenants_kept(self))
    }

    fn remove_tenant(&self, tenant: hermes_core::TenantId) -> BoxFuture<'_, Result<usize>> {
        Box::pin(KubeSandboxes::remove_tenant(self, tenant))
    }

    fn census(&self) -> Vec<hermes_core::census::LiveSandbox> {
        self.inner.census.snapshot()
    }

    fn ping(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(
            async move { self.api::<Pod>().list(&ListParams::default().limit(1)).await.map(|_| ()).map_err(api_err) },
        )
    }
}

/// The manifests of `key`'s sandbox made for `spec`, for operators and offline validation.
pub fn manifests_of(cfg: &SandboxConfig, key: SandboxKey, spec: &SandboxSpec) -> Vec<serde_json::Value> {
    let names = Names::of(&cfg.kubernetes.name_prefix, key);
    let k = &cfg.kubernetes;
    let mut objects = vec![with_kind(manifests::secret(k, key, &names, "<token>"))];
    if k.tls {
        let placeholder = tls::SandboxTls { cert_pem: "<certificate>".into(), key_pem: "<key>".into() };
        objects.push(with_kind(tls::secret(k, key, &names, &placeholder)));
    }
    objects.extend([
        with_kind(manifests::pvc(k, key, &names)),
        with_kind(manifests::pod(k, key, &names, spec, cfg.exec_timeout_seconds)),
        with_kind(manifests::network_policy(k, key, &names)),
    ]);
    objects
}

/// An object as `kubectl apply` reads it (typed objects carry apiVersion and kind on the wire).
fn with_kind<K: Resource<DynamicType = ()> + Serialize>(object: K) -> serde_json::Value {
    let mut value = serde_json::to_value(&object).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), K::api_version(&()).into());
        map.insert("kind".into(), K::kind(&()).into());
    }
    value
}
