//! An agent's MCP servers: the configuration as shown (every `env` and `headers` value
//! masked) and the values sealed with the master key, the row named in the sealing so a copy
//! elsewhere does not open. The store keeps JSON; `hermes_mcp` gives it its shape.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;

use hermes_core::{AgentId, TenantId};

use crate::admin::audited::tenant_writes;
use crate::{Result, SecretBox, StoreError, views::Agents};

/// A stored server.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredMcpServer {
    #[sqlx(try_from = "crate::rows::Id")]
    pub agent_id: AgentId,
    pub name: String,
    /// The configuration with its secret values masked.
    pub spec: Value,
    pub enabled: bool,
    pub updated_at: DateTime<Utc>,
    #[sqlx(rename = "secrets")]
    sealed: Option<Vec<u8>>,
}

fn context(tenant: TenantId, agent: AgentId, name: &str) -> String {
    format!("mcp-server:{tenant}:{agent}:{name}")
}

impl StoredMcpServer {
    /// The secret values (`{"env": {...}, "headers": {...}}`), opened.
    pub fn secrets(&self, tenant: TenantId, secrets: &SecretBox) -> Result<Value> {
        let Some(sealed) = &self.sealed else { return Ok(Value::Object(Default::default())) };
        let plain = secrets.open(&context(tenant, self.agent_id, &self.name), sealed)?;
        serde_json::from_slice(&plain).map_err(|_| StoreError::Corrupt("an MCP server's secrets are not JSON".into()))
    }
}

impl Agents<'_> {
    /// The agent's servers, by name.
    pub async fn mcp_servers(self, tenant: TenantId, agent: AgentId) -> Result<Vec<StoredMcpServer>> {
        Ok(sqlx::query_as::<_, StoredMcpServer>(
            "SELECT agent_id, name, spec, secrets, enabled, updated_at FROM mcp_servers
             WHERE tenant_id = $1 AND agent_id = $2 ORDER BY name",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?)
    }
}

tenant_writes! {
    in Agents;
    /// Adds or replaces the agent's server `name` with its spec and whether it is enabled;
    /// `secrets` (`{"env", "headers"}`) are sealed (none: `secrets` may be `null`). Whether it
    /// replaced one.
    pub async fn set_mcp_server(
        agent: AgentId,
        name: &str,
        server: (&Value, bool),
        secrets: &Value,
        secret_box: Option<&SecretBox>,
    ) -> Result<bool>
        = set_mcp_server_on;

    /// Removes the agent's server `name`.
    pub async fn delete_mcp_server(agent: AgentId, name: &str) -> Result<StoredMcpServer> = delete_mcp_server_on;
}

/// [`Agents::set_mcp_server`](crate::views::Agents::set_mcp_server) on a connection already set to `tenant`.
async fn set_mcp_server_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    name: &str,
    (spec, enabled): (&Value, bool),
    secrets: &Value,
    secret_box: Option<&SecretBox>,
) -> Result<bool> {
    let has_secrets =
        secrets.as_object().is_some_and(|o| o.values().any(|v| v.as_object().is_some_and(|m| !m.is_empty())));
    let sealed = if has_secrets {
        let secret_box = SecretBox::required(secret_box, "an MCP server's env and headers")?;
        let plain = serde_json::to_vec(secrets).map_err(|e| StoreError::Invalid(e.to_string()))?;
        Some(secret_box.seal(&context(tenant, agent, name), &plain)?)
    } else {
        None
    };
    let replaced: bool = sqlx::query_scalar(
        "INSERT INTO mcp_servers (tenant_id, agent_id, name, spec, secrets, enabled)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (tenant_id, agent_id, name) DO UPDATE
            SET spec = EXCLUDED.spec, secrets = EXCLUDED.secrets, enabled = EXCLUDED.enabled, updated_at = now()
         RETURNING (xmax <> 0)",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .bind(name)
    .bind(spec)
    .bind(sealed)
    .bind(enabled)
    .fetch_one(conn)
    .await?;
    Ok(replaced)
}

/// [`Agents::delete_mcp_server`](crate::views::Agents::delete_mcp_server) on a connection already set to `tenant`.
async fn delete_mcp_server_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    name: &str,
) -> Result<StoredMcpServer> {
    sqlx::query_as::<_, StoredMcpServer>(
        "DELETE FROM mcp_servers WHERE tenant_id = $1 AND agent_id = $2 AND name = $3
         RETURNING agent_id, name, spec, secrets, enabled, updated_at",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .bind(name)
    .fetch_optional(conn)
    .await?
    .ok_or(StoreError::NotFound)
}
