//! Tenants' own identity providers, kept for a while once built (security review 2026-12, L13):
//! `/admin/v1/oidc/start` needs no sign-in, so without this every request for a team's domain
//! would read that team's discovery document and keys again, and anyone could make the API pods
//! flood a tenant's provider. A provider changed by an operator is built afresh.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_config::HermesConfig;
use hermes_core::TenantId;
use hermes_store::admin::SsoProvider;

use crate::admin::oidc_client::Oidc;

/// How long a built provider (its discovery and keys) is kept.
const KEEP_FOR: Duration = Duration::from_secs(600);

/// What a kept provider was built from: any change builds it again.
#[derive(PartialEq, Eq)]
struct Settings {
    issuer: String,
    client_id: String,
    client_secret: Option<String>,
    scopes: String,
}

impl Settings {
    fn of(p: &SsoProvider) -> Self {
        Self {
            issuer: p.issuer.clone(),
            client_id: p.client_id.clone(),
            client_secret: p.client_secret.clone(),
            scopes: p.scopes.clone(),
        }
    }
}

struct Kept {
    built_at: Instant,
    settings: Settings,
    oidc: Arc<Oidc>,
}

/// Each tenant's provider, as last built (one entry per tenant that has one: the operators'
/// settings bound it).
#[derive(Default)]
pub(crate) struct TenantProviders(Mutex<HashMap<TenantId, Kept>>);

impl TenantProviders {
    /// The tenant's provider, built now only when it is not kept, is stale or has changed.
    pub(crate) fn get(&self, config: &HermesConfig, provider: &SsoProvider) -> Result<Arc<Oidc>, reqwest::Error> {
        let settings = Settings::of(provider);
        let mut kept = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(k) = kept.get(&provider.tenant)
            && k.settings == settings
            && k.built_at.elapsed() < KEEP_FOR
        {
            return Ok(k.oidc.clone());
        }
        let oidc = Arc::new(Oidc::for_tenant(config, provider)?);
        kept.insert(provider.tenant, Kept { built_at: Instant::now(), settings, oidc: oidc.clone() });
        Ok(oidc)
    }
}
