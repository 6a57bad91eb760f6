//! Sessions: one conversation with one agent.

use chrono::{DateTime, Utc};
use sqlx::Row;

use hermes_core::{AgentId, SessionId, TenantId};

use crate::{Result, Store, StoreError};

/// A session row.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Session {
    pub id: SessionId,
    pub tenant_id: TenantId,
    pub agent_id: AgentId,
    pub source: String,
    pub title: Option<String>,
    /// The frozen stable system prompt; `None` until the first turn renders it.
    #[serde(skip)]
    pub system_prompt: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Store {
    /// The tenant's session `id`; another tenant's session is `NotFound`.
    pub async fn session(&self, tenant: TenantId, id: SessionId) -> Result<Session> {
        let row = sqlx::query(
            "SELECT agent_id, source, title, system_prompt, created_at, updated_at
             FROM sessions WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .fetch_optional(self.pool())
        .await?
        .ok_or(StoreError::NotFound)?;
        Ok(Session {
            id,
            tenant_id: tenant,
            agent_id: AgentId::from_uuid(row.try_get("agent_id")?),
            source: row.try_get("source")?,
            title: row.try_get("title")?,
            system_prompt: row.try_get("system_prompt")?,
            created_at: row.try_get("created_at")?,
            updated_at: row.try_get("updated_at")?,
        })
    }
}
