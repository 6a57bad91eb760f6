//! An agent's secret bindings (issue 39): an environment variable name bound to one of the
//! team's credential pools, with where in a request the egress proxy may put its value. The
//! value itself stays sealed in `provider_credentials`; a binding holds no secret.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use sqlx::types::Json;

use hermes_core::secret_placement::SecretPlacement;
use hermes_core::{AgentId, TenantId};

use crate::admin::audited::tenant_writes;
use crate::credentials::PooledCredential;
use crate::{Result, StoreError, views::Agents};

/// A stored binding.
#[derive(Debug, Clone, PartialEq, serde::Serialize, sqlx::FromRow)]
pub struct SecretBinding {
    #[sqlx(try_from = "crate::rows::Id")]
    pub agent_id: AgentId,
    pub env_name: String,
    /// The credential pool (`provider_credentials.provider`) whose first key it stands for.
    pub pool: String,
    #[sqlx(json)]
    pub placement: SecretPlacement,
    pub created_at: DateTime<Utc>,
}

/// A binding with the key it stands for now: the pool's first by priority; `None` when the
/// pool has no key (the binding is shown as missing, and its placeholder goes nowhere).
pub type BoundSecret = (SecretBinding, Option<PooledCredential>);

const COLUMNS: &str = "agent_id, env_name, pool, placement, created_at";

impl Agents<'_> {
    /// The agent's bindings, by variable name.
    pub async fn secret_bindings(self, tenant: TenantId, agent: AgentId) -> Result<Vec<SecretBinding>> {
        let sql =
            format!("SELECT {COLUMNS} FROM secret_bindings WHERE tenant_id = $1 AND agent_id = $2 ORDER BY env_name");
        Ok(sqlx::query_as::<_, SecretBinding>(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_uuid())
            .bind(agent.as_uuid())
            .fetch_all(&mut *self.as_tenant(tenant).await?)
            .await?)
    }

    /// The agent's bindings with the sealed key each stands for, for the egress proxy and the
    /// sandbox's placeholders.
    pub async fn bound_secrets(self, tenant: TenantId, agent: AgentId) -> Result<Vec<BoundSecret>> {
        let bindings = self.secret_bindings(tenant, agent).await?;
        if bindings.is_empty() {
            return Ok(Vec::new());
        }
        let pools = self.tenancy().credential_pools(tenant).await?;
        Ok(bindings
            .into_iter()
            .map(|b| {
                let key = pools.get(&b.pool).and_then(|(keys, _)| keys.first().cloned());
                (b, key)
            })
            .collect())
    }
}

tenant_writes! {
    in Agents;
    /// Binds `env_name` of the agent's sandboxes to the pool `pool`, replacing any binding of
    /// that name. Whether it replaced one.
    pub async fn bind_secret(agent: AgentId, env_name: &str, pool: &str, placement: &SecretPlacement) -> Result<bool>
        = bind_secret_on;

    /// Removes the agent's binding of `env_name`.
    pub async fn unbind_secret(agent: AgentId, env_name: &str) -> Result<SecretBinding> = unbind_secret_on;
}

/// [`Agents::bind_secret`](crate::views::Agents::bind_secret) on a connection already set to `tenant`.
async fn bind_secret_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    env_name: &str,
    pool: &str,
    placement: &SecretPlacement,
) -> Result<bool> {
    let known: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM provider_credentials WHERE tenant_id = $1 AND provider = $2)")
            .bind(tenant.as_uuid())
            .bind(pool)
            .fetch_one(&mut *conn)
            .await?;
    if !known {
        return Err(StoreError::Invalid(format!(
            "the team has no credential named {pool}: add one first (hermesctl credential add --provider {pool} \
             --host ...)"
        )));
    }
    let replaced: bool = sqlx::query_scalar(
        "INSERT INTO secret_bindings (tenant_id, agent_id, env_name, pool, placement) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (tenant_id, agent_id, env_name) DO UPDATE SET pool = EXCLUDED.pool, placement = EXCLUDED.placement
         RETURNING (xmax <> 0)",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .bind(env_name)
    .bind(pool)
    .bind(Json(placement))
    .fetch_one(conn)
    .await?;
    Ok(replaced)
}

/// [`Agents::unbind_secret`](crate::views::Agents::unbind_secret) on a connection already set to `tenant`.
async fn unbind_secret_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    env_name: &str,
) -> Result<SecretBinding> {
    let sql = format!(
        "DELETE FROM secret_bindings WHERE tenant_id = $1 AND agent_id = $2 AND env_name = $3 RETURNING {COLUMNS}"
    );
    sqlx::query_as::<_, SecretBinding>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(env_name)
        .fetch_optional(conn)
        .await?
        .ok_or(StoreError::NotFound)
}
