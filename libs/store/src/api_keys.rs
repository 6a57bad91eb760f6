//! API keys: `hk_<12 hex>_<32 chars>`; the first part is shown in listings, the whole key is
//! shown once at creation and stored only as its SHA-256 (the key carries 192 random bits, so
//! a slow password hash would add latency to every request and no security).

use base64::Engine;
use chrono::{DateTime, Utc};
use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};
use sqlx::PgConnection;
use uuid::Uuid;

use hermes_core::{AgentId, ApiKeyId, TenantId};

use crate::admin::audited::tenant_writes;
use crate::{Result, StoreError, views::Tenancy};

/// A stored key (never the secret part), as the admin API shows it.
pub use hermes_wire::admin::ApiKey;

/// Who a valid key speaks for.
#[derive(Debug, Clone, Copy)]
pub struct KeyAuth {
    pub tenant_id: TenantId,
    pub key_id: ApiKeyId,
    /// When set, the key may use only this agent.
    pub agent_id: Option<AgentId>,
    /// The limits set on this key and its tenant (`None`: the installation's default).
    pub limits: Limits,
}

/// Rate limits stored on a key and its tenant; 0 is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub key_requests_per_minute: Option<u32>,
    pub key_concurrent_turns: Option<u32>,
    pub tenant_requests_per_minute: Option<u32>,
    pub tenant_concurrent_turns: Option<u32>,
}

/// A limit as stored (`integer`): larger ones are as good as unlimited anyway.
fn stored_limit(v: Option<u32>) -> Option<i32> {
    v.map(|n| i32::try_from(n).unwrap_or(i32::MAX))
}

/// A limit as read back: a negative one (no writer stores it) is unlimited.
fn read_limit(v: Option<i32>) -> Option<u32> {
    v.map(|n| u32::try_from(n).unwrap_or(0))
}

/// The row [`Tenancy::authenticate_api_key`](crate::views::Tenancy::authenticate_api_key) reads: the key, its tenant and both their limits.
#[derive(sqlx::FromRow)]
struct KeyAuthRow {
    #[sqlx(try_from = "crate::rows::Id")]
    id: ApiKeyId,
    tenant_id: Uuid,
    #[sqlx(try_from = "crate::rows::MaybeId")]
    agent_id: Option<AgentId>,
    key_rpm: Option<i32>,
    key_turns: Option<i32>,
    tenant_rpm: Option<i32>,
    tenant_turns: Option<i32>,
}

impl From<KeyAuthRow> for KeyAuth {
    fn from(row: KeyAuthRow) -> Self {
        KeyAuth {
            #[expect(clippy::disallowed_methods, reason = "this is the API-key authentication step")]
            tenant_id: TenantId::from_authenticated(row.tenant_id),
            key_id: row.id,
            agent_id: row.agent_id,
            limits: Limits {
                key_requests_per_minute: read_limit(row.key_rpm),
                key_concurrent_turns: read_limit(row.key_turns),
                tenant_requests_per_minute: read_limit(row.tenant_rpm),
                tenant_concurrent_turns: read_limit(row.tenant_turns),
            },
        }
    }
}

impl Tenancy<'_> {
    /// Sets an API key's limits.
    pub async fn set_key_limits(
        self,
        tenant: TenantId,
        key: ApiKeyId,
        per_minute: Option<u32>,
        turns: Option<u32>,
    ) -> Result<()> {
        let done = sqlx::query(
            "UPDATE api_keys SET requests_per_minute = $3, concurrent_turns = $4 WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(key.as_uuid())
        .bind(stored_limit(per_minute))
        .bind(stored_limit(turns))
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        crate::require_changed(&done)
    }
}

fn hash_key(key: &str) -> Vec<u8> {
    Sha256::digest(key.as_bytes()).to_vec()
}

fn generate_key() -> Result<(String, String)> {
    let mut raw = [0u8; 30];
    SystemRandom::new().fill(&mut raw).map_err(|_| StoreError::Secret("no system randomness".into()))?;
    let prefix: String = raw[..6].iter().map(|b| format!("{b:02x}")).collect();
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw[6..]);
    let prefix = format!("hk_{prefix}");
    Ok((format!("{prefix}_{secret}"), prefix))
}

impl Tenancy<'_> {
    /// Resolves a presented key; `None` for unknown, revoked or expired keys.
    pub async fn authenticate_api_key(self, presented: &str) -> Result<Option<KeyAuth>> {
        if !presented.starts_with("hk_") || presented.len() > 128 {
            return Ok(None);
        }
        let row = sqlx::query_as::<_, KeyAuthRow>(
            "SELECT k.id, k.tenant_id, k.agent_id, k.requests_per_minute AS key_rpm, k.concurrent_turns AS key_turns,
                    t.requests_per_minute AS tenant_rpm, t.concurrent_turns AS tenant_turns
             FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
             WHERE k.hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())",
        )
        .bind(hash_key(presented))
        .fetch_optional(self.system_pool())
        .await?;
        Ok(row.map(KeyAuth::from))
    }

    /// The toolsets `key`'s turns are kept to (`None`: all of their agent's).
    pub async fn api_key_toolsets(self, tenant: TenantId, key: ApiKeyId) -> Result<Option<Vec<String>>> {
        let found: Option<Option<Vec<String>>> =
            sqlx::query_scalar("SELECT toolsets FROM api_keys WHERE tenant_id = $1 AND id = $2")
                .bind(tenant.as_uuid())
                .bind(key.as_uuid())
                .fetch_optional(&mut *self.as_tenant(tenant).await?)
                .await?;
        found.ok_or(StoreError::NotFound)
    }

    /// `tenant`'s keys, newest first (revoked ones too, marked).
    pub async fn api_keys(self, tenant: TenantId) -> Result<Vec<ApiKey>> {
        Ok(sqlx::query_as::<_, ApiKey>(
            "SELECT id, tenant_id, agent_id, name, prefix, toolsets, created_at, expires_at, revoked_at FROM api_keys
             WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT 1000",
        )
        .bind(tenant.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?)
    }
}

tenant_writes! {
    in Tenancy;
    /// Creates a key for `tenant` (optionally bound to one agent) and returns it with the
    /// clear-text key, which is not stored and cannot be shown again.
    pub async fn create_api_key(
        agent: Option<AgentId>,
        name: &str,
        expires_at: Option<DateTime<Utc>>,
    ) -> Result<(ApiKey, String)>
        = create_api_key_on;

    /// Revokes a key of `tenant`; later requests with it get 401.
    pub async fn revoke_api_key(key: ApiKeyId) -> Result<()> = revoke_api_key_on;

    /// Keeps the turns of `key` to these of their agent's toolsets (`None`: all of them).
    pub async fn limit_api_key_toolsets(key: ApiKeyId, toolsets: Option<&[String]>) -> Result<()>
        = limit_api_key_toolsets_on;

    /// Sets a tenant's limits (`None`: the installation's default; 0: unlimited).
    pub async fn set_tenant_limits(per_minute: Option<u32>, turns: Option<u32>) -> Result<()> = set_tenant_limits_on;
}

/// [`Tenancy::set_tenant_limits`](crate::views::Tenancy::set_tenant_limits) on a connection already set to `tenant`.
async fn set_tenant_limits_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    per_minute: Option<u32>,
    turns: Option<u32>,
) -> Result<()> {
    sqlx::query("UPDATE tenants SET requests_per_minute = $2, concurrent_turns = $3 WHERE id = $1")
        .bind(tenant.as_uuid())
        .bind(stored_limit(per_minute))
        .bind(stored_limit(turns))
        .execute(conn)
        .await?;
    Ok(())
}

/// [`Tenancy::limit_api_key_toolsets`](crate::views::Tenancy::limit_api_key_toolsets) on a connection already set to `tenant`.
async fn limit_api_key_toolsets_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    key: ApiKeyId,
    toolsets: Option<&[String]>,
) -> Result<()> {
    let done = sqlx::query("UPDATE api_keys SET toolsets = $3 WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_uuid())
        .bind(key.as_uuid())
        .bind(toolsets)
        .execute(conn)
        .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(())
}

/// [`Tenancy::create_api_key`](crate::views::Tenancy::create_api_key) on a connection already set to `tenant`.
async fn create_api_key_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: Option<AgentId>,
    name: &str,
    expires_at: Option<DateTime<Utc>>,
) -> Result<(ApiKey, String)> {
    let id = ApiKeyId::new();
    let (key, prefix) = generate_key()?;
    let created_at: DateTime<Utc> = sqlx::query_scalar(
        "INSERT INTO api_keys (id, tenant_id, agent_id, name, prefix, hash, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at",
    )
    .bind(id.as_uuid())
    .bind(tenant.as_uuid())
    .bind(agent.map(|a| a.as_uuid()))
    .bind(name)
    .bind(&prefix)
    .bind(hash_key(&key))
    .bind(expires_at)
    .fetch_one(conn)
    .await
    .map_err(StoreError::not_found_on_foreign_key)?;
    let api_key = ApiKey {
        id,
        tenant_id: tenant,
        agent_id: agent,
        name: name.to_owned(),
        prefix,
        toolsets: None,
        created_at,
        expires_at,
        revoked_at: None,
    };
    Ok((api_key, key))
}

/// [`Tenancy::revoke_api_key`](crate::views::Tenancy::revoke_api_key) on a connection already set to `tenant`.
async fn revoke_api_key_on(conn: &mut PgConnection, tenant: TenantId, key: ApiKeyId) -> Result<()> {
    let done =
        sqlx::query("UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL")
            .bind(tenant.as_uuid())
            .bind(key.as_uuid())
            .execute(conn)
            .await?;
    crate::require_changed(&done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_a_visible_prefix_and_enough_entropy() {
        let (key, prefix) = generate_key().unwrap();
        assert!(key.starts_with(&prefix));
        assert_eq!(prefix.len(), 15);
        assert_eq!(key.len(), 15 + 1 + 32);
        let (other, _) = generate_key().unwrap();
        assert_ne!(key, other);
    }
}
