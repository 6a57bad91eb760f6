//! Each agent's sandbox image and limits for the sandbox backends ([`SpecSource`]): its
//! `sandbox` setting, the image name resolved to the operator's reference. Read from the store
//! at most every few seconds per agent, so a changed setting reaches the next turn's sandbox.
//! A sandbox of an agent with bound secrets also gets their placeholders and the egress CA to
//! trust ([`SandboxSecrets`]); a changed binding remakes it at its next use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use hermes_config::SandboxConfig;
use hermes_core::{AgentId, TenantId};
use hermes_sandbox::{SandboxKey, SandboxSpec, SpecSource};
use hermes_store::Store;

use crate::sandbox_secrets::SandboxSecrets;

/// How long a read setting is used before it is read again.
const TTL: Duration = Duration::from_secs(5);

pub(crate) struct AgentSpecs(Arc<Inner>);

struct Inner {
    store: Store,
    cfg: SandboxConfig,
    read: Mutex<HashMap<(TenantId, AgentId), (Instant, SandboxSpec)>>,
    secrets: Option<Arc<SandboxSecrets>>,
}

impl AgentSpecs {
    pub(crate) fn new(store: Store, cfg: &SandboxConfig, secrets: Option<Arc<SandboxSecrets>>) -> Arc<Self> {
        Arc::new(Self(Arc::new(Inner { store, cfg: cfg.clone(), read: Mutex::default(), secrets })))
    }
}

impl Inner {
    /// `key`'s spec: its agent's image and limits, with its bound secrets' placeholders.
    async fn spec_of(&self, key: SandboxKey) -> SandboxSpec {
        let mut spec = self.agent_spec(key).await;
        if let Some(secrets) = &self.secrets {
            let env = secrets.env(key).await;
            if !env.is_empty() {
                spec.trust = secrets.authority().await.map(|a| hermes_sandbox::Trust {
                    pem: a.cert_pem().to_owned(),
                    spki_sha256: a.spki_sha256().to_owned(),
                });
                spec.env = env.into_iter().collect();
            }
        }
        spec
    }

    async fn agent_spec(&self, key: SandboxKey) -> SandboxSpec {
        let id = (key.tenant, key.agent);
        if let Some((at, spec)) = self.read.lock().ok().and_then(|r| r.get(&id).cloned())
            && at.elapsed() < TTL
        {
            return spec;
        }
        let spec = match self.store.agents().agent(key.tenant, key.agent).await {
            Ok(agent) => {
                let choice = &agent.sandbox;
                // An image the operator no longer offers falls back to the default one.
                let image = choice.image.as_deref().and_then(|name| self.cfg.image_reference(Some(name)));
                SandboxSpec {
                    image,
                    cpus: choice.cpus.map(|c| c.min(self.cfg.max.cpus)),
                    memory_mb: choice.memory_mb.map(|m| m.min(self.cfg.max.memory_mb)),
                    disk_mb: choice.disk_mb.map(|d| d.min(self.cfg.max.disk_mb)),
                    pids: choice.pids.map(|p| p.min(self.cfg.max.pids)),
                    ..SandboxSpec::default()
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the agent's sandbox setting; using the defaults");
                return SandboxSpec::default();
            }
        };
        if let Ok(mut read) = self.read.lock() {
            read.insert(id, (Instant::now(), spec.clone()));
        }
        spec
    }
}

impl SpecSource for AgentSpecs {
    fn spec(&self, key: SandboxKey) -> BoxFuture<'static, SandboxSpec> {
        let inner = self.0.clone();
        Box::pin(async move { inner.spec_of(key).await })
    }
}
