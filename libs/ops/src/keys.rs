//! API keys (the OpenAI-compatible API's credentials): made, limited and revoked.

use chrono::{Duration, Utc};

use hermes_core::{ApiKeyId, ErrorCode, TenantId};
use hermes_store::Store;
use hermes_store::admin::{Audit, Change};
use hermes_wire::admin::{ApiKeyMade, NewApiKey};

use crate::{OpsError, Result};

/// Longest name of a key.
const MAX_NAME_CHARS: usize = 100;
/// Longest lifetime a key may be given, in days.
const MAX_DAYS: u32 = 366;

/// Makes a key (for one agent, or every agent of the tenant); its secret is in the answer and
/// nowhere else.
pub async fn create(store: &Store, by: Audit, tenant: TenantId, new: &NewApiKey) -> Result<ApiKeyMade> {
    let name = new.name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(OpsError::invalid("name", "a key's name is 1 to 100 characters"));
    }
    let agent = match new.agent.as_deref() {
        None => None,
        Some(reference) => Some(crate::agent(store, tenant, reference).await?.id),
    };
    let expires_at = match new.expires_in_days {
        None => None,
        Some(days @ 1..=MAX_DAYS) => Some(Utc::now() + Duration::days(i64::from(days))),
        Some(_) => return Err(OpsError::invalid("expires_in_days", "expires_in_days is 1 to 366")),
    };
    crate::agents::check_toolsets(new.toolsets.iter().flatten())?;
    let mut tx = store.audited(tenant, by).await?;
    let (mut key, secret) = tx.create_api_key(agent, name, expires_at).await?;
    if let Some(toolsets) = &new.toolsets {
        tx.limit_api_key_toolsets(key.id, Some(toolsets)).await?;
        key.toolsets = Some(toolsets.clone());
    }
    tx.commit(Change::new("api_key.created", "api_key", key.id).after(&key)).await?;
    Ok(ApiKeyMade { key, secret })
}

/// Revokes a live key: requests with it get 401 at once.
pub async fn revoke(store: &Store, by: Audit, tenant: TenantId, key: ApiKeyId) -> Result<()> {
    let mut tx = store.audited(tenant, by).await?;
    tx.revoke_api_key(key).await.map_err(|e| OpsError::missing(e, ErrorCode::NotFound, "key"))?;
    tx.commit(Change::new("api_key.revoked", "api_key", key)).await?;
    Ok(())
}
