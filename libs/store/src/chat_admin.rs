//! What chat commands change beyond sessions and routes: `/undo` takes the last exchange back,
//! `/model NAME` switches the agent's model.

use sqlx::PgConnection;

use hermes_core::{AgentId, SessionId, TenantId};

use crate::admin::audited::tenant_writes;
use crate::{Result, StoreError, views::Conversations};

impl Conversations<'_> {
    /// Removes the session's last user message and everything after it; how many messages
    /// went (`0` when there was none). Refused (`Busy`) while a turn of the session is open.
    pub async fn undo_last_exchange(self, tenant: TenantId, session: SessionId) -> Result<u64> {
        let mut tx = self.tenant_tx(tenant).await?;
        // The session row is locked so no turn starts meanwhile.
        sqlx::query("SELECT 1 FROM sessions WHERE tenant_id = $1 AND id = $2 FOR UPDATE")
            .bind(tenant.as_uuid())
            .bind(session.as_uuid())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM turns WHERE tenant_id = $1 AND session_id = $2
               AND status IN ('queued', 'running', 'waiting')",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .fetch_one(&mut *tx)
        .await?;
        if open > 0 {
            return Err(StoreError::Busy("the agent is still working on this conversation".into()));
        }
        let done = sqlx::query(
            "DELETE FROM messages WHERE tenant_id = $1 AND session_id = $2
               AND seq >= (SELECT max(seq) FROM messages WHERE tenant_id = $1 AND session_id = $2 AND role = 'user')",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    }
}

tenant_writes! {
    in Conversations;
    /// Switches the agent to `model` (its provider stays); the old model's name.
    pub async fn set_agent_model(agent: AgentId, model: &str) -> Result<String> = set_agent_model_on;
}

/// [`Conversations::set_agent_model`](crate::views::Conversations::set_agent_model) on a connection already set to `tenant`.
async fn set_agent_model_on(conn: &mut PgConnection, tenant: TenantId, agent: AgentId, model: &str) -> Result<String> {
    let model = model.trim();
    if model.is_empty() || model.len() > 200 || model.chars().any(char::is_control) {
        return Err(StoreError::Invalid("give a model name".into()));
    }
    let old: Option<String> = sqlx::query_scalar(
        "UPDATE agents a SET model = $3, updated_at = now() FROM agents before
         WHERE a.tenant_id = $1 AND a.id = $2 AND before.tenant_id = a.tenant_id AND before.id = a.id
         RETURNING before.model",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .bind(model)
    .fetch_optional(conn)
    .await?;
    old.ok_or(StoreError::NotFound)
}
