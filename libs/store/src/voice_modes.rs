//! Each chat's `/voice` mode (migration 0051), keyed by the chat's route as sessions are:
//! no row is `off`.

use hermes_core::{AgentId, TenantId, VoiceMode};

use crate::{Result, StoreError, views::Conversations};

impl Conversations<'_> {
    /// Sets the chat's mode (`Off` removes it). Another tenant's agent is `NotFound`.
    pub async fn set_voice_mode(
        self,
        tenant: TenantId,
        agent: AgentId,
        route_key: &str,
        mode: VoiceMode,
    ) -> Result<()> {
        let mut conn = self.as_tenant(tenant).await?;
        if mode == VoiceMode::Off {
            sqlx::query("DELETE FROM chat_voice_modes WHERE tenant_id = $1 AND agent_id = $2 AND route_key = $3")
                .bind(tenant.as_uuid())
                .bind(agent.as_uuid())
                .bind(route_key)
                .execute(&mut *conn)
                .await?;
            return Ok(());
        }
        let done = sqlx::query(
            "INSERT INTO chat_voice_modes (tenant_id, agent_id, route_key, mode)
             SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2)
             ON CONFLICT (tenant_id, agent_id, route_key) DO UPDATE SET mode = EXCLUDED.mode, updated_at = now()",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(route_key)
        .bind(mode.as_str())
        .execute(&mut *conn)
        .await?;
        crate::require_changed(&done)
    }

    /// The chat's mode (`Off` when none was set).
    pub async fn voice_mode(self, tenant: TenantId, agent: AgentId, route_key: &str) -> Result<VoiceMode> {
        let mode: Option<String> = sqlx::query_scalar(
            "SELECT mode FROM chat_voice_modes WHERE tenant_id = $1 AND agent_id = $2 AND route_key = $3",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(route_key)
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        mode.map_or(Ok(VoiceMode::Off), |m| m.parse().map_err(|_| StoreError::Invalid(format!("voice mode {m}"))))
    }
}
