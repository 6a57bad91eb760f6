//! The worker's key source: a tenant's pools from Postgres (sealed keys, strategy) with their
//! live state in Redis, plus the agent's own key as the first member of its provider's pool.

use std::sync::Arc;
use std::time::Duration;

use hermes_cache::KeyPools;
use hermes_core::TenantId;
use hermes_llm::{Credential, ErrorClass, KeySource, LlmError};
use hermes_store::{CredentialPools, PooledCredential, SecretBox};

pub(crate) struct TenantKeys {
    pub pools: KeyPools,
    pub secrets: Option<SecretBox>,
    pub tenant: TenantId,
    /// The agent's own key and the pool it belongs to.
    pub agent_key: Option<(String, Credential)>,
    /// The tenant's pools, read with the turn (a provider missing here has no keys).
    pub stored: Arc<CredentialPools>,
}

impl TenantKeys {
    fn open(&self, cred: &PooledCredential) -> Result<Credential, LlmError> {
        let secrets = self
            .secrets
            .as_ref()
            .ok_or_else(|| LlmError::new(ErrorClass::AuthTransient, "secrets.master_key is not configured"))?;
        let secret = cred
            .open(self.tenant, secrets)
            .map_err(|e| LlmError::new(ErrorClass::AuthTransient, format!("cannot open key {}: {e}", cred.label)))?;
        Ok(Credential { id: cred.id.to_string(), secret, allowed_hosts: cred.allowed_hosts.clone() })
    }
}

impl KeySource for TenantKeys {
    async fn acquire(&self, provider: &str, exclude: &[String]) -> Result<Option<Credential>, LlmError> {
        let (creds, strategy) =
            self.stored.get(provider).map(|(c, s)| (c.as_slice(), s.as_str())).unwrap_or((&[], "fill_first"));
        let own = self.agent_key.as_ref().filter(|(p, _)| p == provider).map(|(_, k)| k);
        let mut candidates: Vec<String> = own.iter().map(|k| k.id.clone()).collect();
        candidates.extend(creds.iter().map(|c| c.id.to_string()));
        if candidates.is_empty() {
            // A provider without keys (a local model server).
            return Ok(None);
        }
        candidates.retain(|id| !exclude.contains(id));
        let exhausted =
            || LlmError::new(ErrorClass::RateLimit, format!("every key of {provider} is cooling down or retired"));
        if candidates.is_empty() {
            return Err(exhausted());
        }
        let picked = match self.pools.select(self.tenant, provider, strategy, &candidates).await {
            Ok(Some(id)) => id,
            Ok(None) => return Err(exhausted()),
            Err(e) => {
                // Redis is coordination only: without it, use the first candidate.
                tracing::warn!(error = %e, "key pool state unavailable; using the first key");
                candidates[0].clone()
            }
        };
        if let Some(k) = own.filter(|k| k.id == picked) {
            return Ok(Some(k.clone()));
        }
        let cred = creds.iter().find(|c| c.id.to_string() == picked).ok_or_else(exhausted)?;
        self.open(cred).map(Some)
    }

    async fn report(&self, provider: &str, key_id: &str, cooldown: Option<Duration>) {
        match cooldown {
            Some(d) => tracing::warn!(provider, key = key_id, cooldown_s = d.as_secs(), "provider key cooling down"),
            None => tracing::warn!(provider, key = key_id, "provider key retired (revoked or invalid)"),
        }
        if let Err(e) = self.pools.report(self.tenant, provider, key_id, cooldown).await {
            tracing::warn!(error = %e, "cannot record the key's state");
        }
    }
}

/// The tenant's own key for a keyed service at `base_url` (a web backend, an image or speech
/// service), from its pool named `pool` (`tavily`, `fal`, `elevenlabs`, `openai`): the first
/// key whose allowed hosts include the service's host, so a key never goes where its owner
/// did not allow. `None`: the tenant has none there (the operator's key serves).
pub(crate) fn service_key(
    pools: &CredentialPools,
    tenant: TenantId,
    secrets: Option<&SecretBox>,
    pool: &str,
    base_url: &str,
) -> Option<String> {
    let secrets = secrets?;
    let (creds, _) = pools.get(pool)?;
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str()?;
    let usable = creds.iter().find(|c| c.allows(host))?;
    match usable.open(tenant, secrets) {
        Ok(key) => Some(key),
        Err(e) => {
            tracing::warn!(error = %e, pool, "cannot open the team's key; the installation's serves");
            None
        }
    }
}
