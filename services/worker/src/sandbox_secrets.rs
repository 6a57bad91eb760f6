//! Team secrets in sandboxes (issue 39), the worker's side: for one sandbox, the placeholders
//! its programs get and the secrets the egress proxy may put in their place, from the agent's
//! bindings (read again after [`TTL`]) and the installation's egress CA (made once, stored
//! sealed, the same for every worker).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_config::SandboxConfig;
use hermes_core::{AgentId, TenantId};
use hermes_sandbox::SandboxKey;
use hermes_secret_egress::{Authority, Secret, Upstream, placeholder};
use hermes_store::{SecretBox, Store};

/// How long an agent's bindings are trusted before they are read again.
const TTL: Duration = Duration::from_secs(10);

/// One binding with its key opened (`None`: the credential has no key now).
struct Bound {
    name: String,
    pool: String,
    value: Option<String>,
    hosts: Vec<String>,
    placement: hermes_core::secret_placement::SecretPlacement,
}

/// Each agent's bindings, and when they were read.
type ReadBindings = HashMap<(TenantId, AgentId), (Instant, Arc<Vec<Bound>>)>;

pub(crate) struct SandboxSecrets {
    store: Store,
    secrets: Option<SecretBox>,
    upstream: Upstream,
    authority: tokio::sync::OnceCell<Option<Arc<Authority>>>,
    bindings: Mutex<ReadBindings>,
}

impl SandboxSecrets {
    /// `None` when the proxy's onward TLS cannot be set up (no trusted roots at all).
    pub fn new(store: Store, secrets: Option<SecretBox>, cfg: &SandboxConfig) -> Option<Self> {
        let extra: Vec<String> =
            cfg.egress_trusted_ca_files.iter().filter_map(|path| read_pem(path)).collect::<Vec<_>>();
        let upstream = match Upstream::new(cfg.egress_system_roots, &extra) {
            Ok(upstream) => upstream,
            Err(e) => {
                tracing::error!(error = %e, "secrets cannot reach their hosts: the egress proxy has no trusted roots");
                return None;
            }
        };
        Some(Self { store, secrets, upstream, authority: Default::default(), bindings: Mutex::default() })
    }

    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// The installation's egress CA: read, else made and stored (the first stored wins).
    pub async fn authority(&self) -> Option<Arc<Authority>> {
        let load = async {
            let secrets = self.secrets.as_ref()?;
            let stored = match self.store.system().egress_authority(secrets).await {
                Ok(Some(stored)) => stored,
                Ok(None) => {
                    let made = Authority::generate().ok()?;
                    let kept = self.store.system().keep_egress_authority((made.cert_pem(), made.key_pem()), secrets);
                    kept.await.ok()?
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the egress CA");
                    return None;
                }
            };
            Authority::from_pem(&stored.0, &stored.1).ok().map(Arc::new)
        };
        self.authority.get_or_init(|| load).await.clone()
    }

    async fn bound(&self, tenant: TenantId, agent: AgentId) -> Arc<Vec<Bound>> {
        let cached = self.bindings.lock().ok().and_then(|b| b.get(&(tenant, agent)).cloned());
        if let Some((at, bound)) = cached
            && at.elapsed() < TTL
        {
            return bound;
        }
        let read = match self.store.agents().bound_secrets(tenant, agent).await {
            Ok(read) => read,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the agent's secret bindings");
                Vec::new()
            }
        };
        let bound: Vec<Bound> = read
            .into_iter()
            .map(|(binding, key)| {
                let value = key.as_ref().zip(self.secrets.as_ref()).and_then(|(k, s)| k.open(tenant, s).ok());
                let hosts = key.map(|k| k.allowed_hosts).unwrap_or_default();
                Bound { name: binding.env_name, pool: binding.pool, value, hosts, placement: binding.placement }
            })
            .collect();
        let bound = Arc::new(bound);
        if let Ok(mut cache) = self.bindings.lock() {
            cache.insert((tenant, agent), (Instant::now(), bound.clone()));
        }
        bound
    }

    fn placeholder_of(authority: &Authority, key: SandboxKey, name: &str) -> String {
        let sandbox = format!("{}/{}/{}", key.tenant, key.agent, key.workspace.label());
        placeholder(&authority.placeholder_key(), &sandbox, name)
    }

    /// The variables `key`'s programs get: each bound name and its placeholder.
    pub async fn env(&self, key: SandboxKey) -> Vec<(String, String)> {
        let bound = self.bound(key.tenant, key.agent).await;
        if bound.is_empty() {
            return Vec::new();
        }
        let Some(authority) = self.authority().await else { return Vec::new() };
        bound.iter().map(|b| (b.name.clone(), Self::placeholder_of(&authority, key, &b.name))).collect()
    }

    /// The placeholder `key`'s programs hold for `reference`: the agent's binding of that
    /// variable name, else its binding of that credential pool (case-insensitively), as a
    /// stdio MCP server's `${NAME}` says. Why not, when there is none.
    pub async fn placeholder_for(&self, key: SandboxKey, reference: &str) -> Result<String, String> {
        let bound = self.bound(key.tenant, key.agent).await;
        let binding = bound.iter().find(|b| b.name == reference);
        let binding = binding.or_else(|| bound.iter().find(|b| b.pool.eq_ignore_ascii_case(reference)));
        let Some(binding) = binding else {
            return Err(format!(
                "`${{{reference}}}` names none of the agent's bound secrets (bind the team's key to the agent first: \
                 hermesctl secret bind)"
            ));
        };
        let authority = self.authority().await.ok_or("the installation's egress CA cannot be read or made")?;
        Ok(Self::placeholder_of(&authority, key, &binding.name))
    }

    /// The secrets `key`'s connections to `host` may carry (none: tunnelled untouched).
    pub async fn for_host(&self, key: SandboxKey, host: &str) -> Vec<Secret> {
        let bound = self.bound(key.tenant, key.agent).await;
        let going = bound.iter().filter(|b| b.value.is_some() && hermes_core::hosts::allowed(&b.hosts, host));
        let going: Vec<&Bound> = going.collect();
        if going.is_empty() {
            return Vec::new();
        }
        let Some(authority) = self.authority().await else { return Vec::new() };
        going
            .into_iter()
            .map(|b| Secret {
                name: b.name.clone(),
                placeholder: Self::placeholder_of(&authority, key, &b.name),
                value: b.value.clone().unwrap_or_default(),
                hosts: b.hosts.clone(),
                placement: b.placement.clone(),
            })
            .collect()
    }
}

fn read_pem(path: &str) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(pem) => Some(pem),
        Err(e) => {
            tracing::error!(%path, error = %e, "cannot read a sandbox.egress_trusted_ca_files entry");
            None
        }
    }
}
