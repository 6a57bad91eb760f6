//! A tenant's turns as the console watches them: the ones still open (queued, running, or
//! waiting for an answer), and which session a turn belongs to.

use hermes_core::{SessionId, TenantId, TurnId};

use crate::{Result, StoreError, views::Admin};

/// An open turn, as the console shows it.
pub use hermes_wire::admin::OpenTurn;

impl Admin<'_> {
    /// `tenant`'s open turns, newest first (at most 200).
    pub async fn open_turns(self, tenant: TenantId) -> Result<Vec<OpenTurn>> {
        Ok(sqlx::query_as(
            "SELECT t.id, t.session_id, a.name AS agent, t.status::text AS status,
                    t.cancel_requested_at IS NOT NULL AS stopping,
                    left(COALESCE(t.input->>'content', t.input->'content'->0->>'text', ''), 200) AS input,
                    t.created_at, t.started_at
             FROM turns t
             JOIN sessions s ON s.tenant_id = t.tenant_id AND s.id = t.session_id
             JOIN agents a ON a.tenant_id = s.tenant_id AND a.id = s.agent_id
             WHERE t.tenant_id = $1 AND t.status IN ('queued', 'running', 'waiting')
             ORDER BY t.created_at DESC LIMIT 200",
        )
        .bind(tenant.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?)
    }

    /// The session `turn` belongs to.
    pub async fn turn_session(self, tenant: TenantId, turn: TurnId) -> Result<SessionId> {
        let session: uuid::Uuid = sqlx::query_scalar("SELECT session_id FROM turns WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_uuid())
            .bind(turn.as_uuid())
            .fetch_optional(&mut *self.as_tenant(tenant).await?)
            .await?
            .ok_or(StoreError::NotFound)?;
        Ok(SessionId::from_uuid(session))
    }
}

/// A question a parked turn waits on (an approval of a command, or a clarifying question), as
/// the console shows it.
pub use hermes_wire::admin::WaitingQuestion;

impl Admin<'_> {
    /// `tenant`'s questions still waiting for an answer, oldest first (at most 200).
    pub async fn waiting_interactions(self, tenant: TenantId) -> Result<Vec<WaitingQuestion>> {
        Ok(sqlx::query_as(
            "SELECT i.id, i.turn_id, i.session_id, a.name AS agent, i.kind, i.prompt, i.created_at, i.expires_at
             FROM interactions i JOIN agents a ON a.tenant_id = i.tenant_id AND a.id = i.agent_id
             WHERE i.tenant_id = $1 AND i.status = 'pending' AND i.expires_at > now()
             ORDER BY i.created_at LIMIT 200",
        )
        .bind(tenant.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?)
    }
}
