//! A tenant's provider keys, pooled per provider. Postgres holds the sealed keys and the
//! pool's strategy; the live state (cooldowns, usage counts) is in Redis so that every worker
//! shares it.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};

use hermes_core::{CredentialId, TenantId};

use crate::admin::audited::tenant_writes;
use crate::{Result, SecretBox, StoreError, views::Tenancy};

/// A pooled key as stored (sealed).
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct PooledCredential {
    #[sqlx(try_from = "crate::rows::Id")]
    pub id: CredentialId,
    pub provider: String,
    pub label: String,
    #[serde(skip)]
    #[sqlx(rename = "secret")]
    pub sealed: Vec<u8>,
    pub priority: i32,
    pub allowed_hosts: Vec<String>,
    pub created_at: DateTime<Utc>,
}

/// What it takes to add a key to a pool.
#[derive(Debug, Clone)]
pub struct NewCredential {
    pub provider: String,
    pub label: String,
    pub secret: String,
    pub priority: i32,
    pub allowed_hosts: Vec<String>,
}

fn context(tenant: TenantId, id: CredentialId) -> String {
    format!("provider-credential:{tenant}:{id}")
}

impl PooledCredential {
    /// The key in clear.
    /// Whether this key may be sent to `host`.
    pub fn allows(&self, host: &str) -> bool {
        hermes_core::hosts::allowed(&self.allowed_hosts, host)
    }

    pub fn open(&self, tenant: TenantId, secrets: &SecretBox) -> Result<String> {
        let plain = secrets.open(&context(tenant, self.id), &self.sealed)?;
        String::from_utf8(plain).map_err(|_| StoreError::Corrupt("provider key is not UTF-8".into()))
    }
}

/// A tenant's pools by provider: the keys in priority order and the strategy.
pub type CredentialPools = std::collections::HashMap<String, (Vec<PooledCredential>, String)>;

/// The selection strategies of a pool.
pub const STRATEGIES: [&str; 4] = ["fill_first", "round_robin", "random", "least_used"];

impl Tenancy<'_> {
    /// Every pool of the tenant, by provider: its keys in priority order and its strategy.
    /// Read once at the start of a turn, alongside the turn's other reads.
    /// Checks an HTTP MCP server's `${NAME}` references as it is saved: each of `names` must
    /// name one of the tenant's credential pools (case-insensitively). `Invalid`, saying which
    /// and what to do, otherwise.
    pub async fn check_secret_refs(self, tenant: TenantId, names: &[String]) -> Result<()> {
        if names.is_empty() {
            return Ok(());
        }
        let pools = self.credential_pools(tenant).await?;
        if let Some(name) = names.iter().find(|name| !pools.keys().any(|pool| pool.eq_ignore_ascii_case(name))) {
            return Err(StoreError::Invalid(format!(
                "`${{{name}}}` names none of the team's keys: add a credential named {name} first"
            )));
        }
        Ok(())
    }

    pub async fn credential_pools(self, tenant: TenantId) -> Result<CredentialPools> {
        credential_pools_on(&mut *self.as_tenant(tenant).await?, tenant).await
    }
}

/// [`Tenancy::credential_pools`](crate::views::Tenancy::credential_pools) on a connection already set to `tenant`.
pub(crate) async fn credential_pools_on(conn: &mut PgConnection, tenant: TenantId) -> Result<CredentialPools> {
    let rows = sqlx::query(
        "SELECT c.id, c.provider, c.label, c.secret, c.priority, c.allowed_hosts, c.created_at,
                COALESCE(p.strategy, 'fill_first') AS strategy
         FROM provider_credentials c
         LEFT JOIN provider_pools p ON p.tenant_id = c.tenant_id AND p.provider = c.provider
         WHERE c.tenant_id = $1
         ORDER BY c.provider, c.priority, c.created_at",
    )
    .bind(tenant.as_uuid())
    .fetch_all(conn)
    .await?;
    let mut pools = CredentialPools::new();
    for row in &rows {
        let credential: PooledCredential = crate::rows::read(row)?;
        let strategy: String = row.try_get("strategy")?;
        pools.entry(credential.provider.clone()).or_insert_with(|| (Vec::new(), strategy)).0.push(credential);
    }
    Ok(pools)
}

tenant_writes! {
    in Tenancy;
    /// Adds a key to the tenant's pool for its provider.
    pub async fn add_credential(new: NewCredential, secrets: &SecretBox) -> Result<PooledCredential>
        = add_credential_on;

    /// Takes a key out of the tenant's pools for good.
    pub async fn delete_credential(id: CredentialId) -> Result<PooledCredential> = delete_credential_on;

    /// Sets how the pool of `provider` picks a key.
    pub async fn set_pool_strategy(provider: &str, strategy: &str) -> Result<()> = set_pool_strategy_on;
}

/// [`Tenancy::add_credential`](crate::views::Tenancy::add_credential) on a connection already set to `tenant`.
async fn add_credential_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    new: NewCredential,
    secrets: &SecretBox,
) -> Result<PooledCredential> {
    if new.allowed_hosts.is_empty() {
        return Err(StoreError::Invalid("a provider key needs the hosts it may be sent to".into()));
    }
    let id = CredentialId::new();
    let sealed = secrets.seal(&context(tenant, id), new.secret.as_bytes())?;
    let row = sqlx::query(
        "INSERT INTO provider_credentials
             (id, tenant_id, provider, label, secret, priority, allowed_hosts)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at",
    )
    .bind(id.as_uuid())
    .bind(tenant.as_uuid())
    .bind(&new.provider)
    .bind(&new.label)
    .bind(&sealed)
    .bind(new.priority)
    .bind(&new.allowed_hosts)
    .fetch_one(conn)
    .await
    .map_err(|e| StoreError::conflict_on_unique(e, &format!("credential {:?} of {}", new.label, new.provider)))?;
    Ok(PooledCredential {
        id,
        provider: new.provider,
        label: new.label,
        sealed,
        priority: new.priority,
        allowed_hosts: new.allowed_hosts,
        created_at: row.try_get("created_at")?,
    })
}

/// [`Tenancy::delete_credential`](crate::views::Tenancy::delete_credential) on a connection already set to `tenant`.
async fn delete_credential_on(conn: &mut PgConnection, tenant: TenantId, id: CredentialId) -> Result<PooledCredential> {
    let row = sqlx::query(
        "DELETE FROM provider_credentials WHERE tenant_id = $1 AND id = $2
         RETURNING id, provider, label, secret, priority, allowed_hosts, created_at",
    )
    .bind(tenant.as_uuid())
    .bind(id.as_uuid())
    .fetch_optional(conn)
    .await?
    .ok_or(StoreError::NotFound)?;
    crate::rows::read(&row)
}

/// [`Tenancy::set_pool_strategy`](crate::views::Tenancy::set_pool_strategy) on a connection already set to `tenant`.
async fn set_pool_strategy_on(conn: &mut PgConnection, tenant: TenantId, provider: &str, strategy: &str) -> Result<()> {
    if !STRATEGIES.contains(&strategy) {
        return Err(StoreError::Invalid(format!("strategy must be one of {}", STRATEGIES.join(", "))));
    }
    sqlx::query(
        "INSERT INTO provider_pools (tenant_id, provider, strategy) VALUES ($1, $2, $3)
         ON CONFLICT (tenant_id, provider) DO UPDATE SET strategy = EXCLUDED.strategy",
    )
    .bind(tenant.as_uuid())
    .bind(provider)
    .bind(strategy)
    .execute(conn)
    .await?;
    Ok(())
}
