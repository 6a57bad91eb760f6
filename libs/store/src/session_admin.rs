//! Sessions as resources of the HTTP API (`/api/sessions`): listing, an empty session to
//! start, paging through messages, forking and deleting. Everything is scoped to the tenant,
//! and optionally to the one agent an API key is restricted to.

use sqlx::PgConnection;

use hermes_core::{AgentId, SessionId, SessionSource, TenantId};

use crate::admin::audited::tenant_writes;
use crate::{Result, StoreError, views::Conversations};

/// A session as listed, as `/api/sessions` shows it.
pub use hermes_wire::v1::Session as SessionInfo;

macro_rules! info_select {
    () => {
        "SELECT s.id, s.agent_id, a.name AS model, s.title, s.source, s.parent_session_id, s.lineage,
                s.created_at, s.updated_at,
                (SELECT count(*) FROM messages m WHERE m.tenant_id = s.tenant_id AND m.session_id = s.id) AS message_count
         FROM sessions s JOIN agents a ON a.tenant_id = s.tenant_id AND a.id = s.agent_id"
    };
}
pub(crate) use info_select;

impl Conversations<'_> {
    /// The tenant's sessions (of `agent` only, when given), most recently active first.
    pub async fn list_sessions(
        self,
        tenant: TenantId,
        agent: Option<AgentId>,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<SessionInfo>> {
        let rows = sqlx::query(concat!(
            info_select!(),
            " WHERE s.tenant_id = $1 AND ($2::uuid IS NULL OR s.agent_id = $2) AND s.lineage IS DISTINCT FROM 'subagent'
              ORDER BY s.updated_at DESC, s.id LIMIT $3 OFFSET $4"
        ))
        .bind(tenant.as_uuid())
        .bind(agent.map(|a| a.as_uuid()))
        .bind(limit)
        .bind(offset)
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        rows.iter().map(crate::rows::read::<SessionInfo>).collect()
    }

    /// One session of the tenant (of `agent` only, when given).
    pub async fn session_info(self, tenant: TenantId, agent: Option<AgentId>, id: SessionId) -> Result<SessionInfo> {
        let row = sqlx::query(concat!(
            info_select!(),
            " WHERE s.tenant_id = $1 AND s.id = $2 AND ($3::uuid IS NULL OR s.agent_id = $3)"
        ))
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(agent.map(|a| a.as_uuid()))
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?
        .ok_or(StoreError::NotFound)?;
        crate::rows::read::<SessionInfo>(&row)
    }

    /// An empty session of `agent`, to send turns to later.
    pub async fn create_session(
        self,
        tenant: TenantId,
        agent: AgentId,
        source: SessionSource,
        user_key: &str,
        title: Option<&str>,
    ) -> Result<SessionId> {
        let id = SessionId::new();
        sqlx::query(
            "INSERT INTO sessions (id, tenant_id, agent_id, source, user_key, title, title_source)
             VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $6::text IS NULL THEN 'first_message' ELSE 'given' END)",
        )
        .bind(id.as_uuid())
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(source.as_str())
        .bind(crate::messages::without_nul(user_key))
        .bind(title.map(crate::messages::without_nul))
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(id)
    }

    /// A new session continuing `id`'s conversation up to message `up_to` (all of it when
    /// `None`), linked to it as a fork; the same agent and end user. Returns its id.
    pub async fn fork_session(
        self,
        tenant: TenantId,
        id: SessionId,
        up_to: Option<i32>,
        title: Option<&str>,
    ) -> Result<SessionId> {
        let child = SessionId::new();
        let mut tx = self.tenant_tx(tenant).await?;
        let created = sqlx::query(
            "INSERT INTO sessions (id, tenant_id, agent_id, source, title, title_source, user_key, parent_session_id,
                                   lineage, next_seq, workspace_root, model_settings)
             SELECT $3, tenant_id, agent_id, source, COALESCE($4, title), 'given', user_key, id, 'fork',
                    (SELECT COALESCE(max(seq), 0) + 1 FROM messages
                     WHERE tenant_id = $1 AND session_id = $2 AND ($5::int IS NULL OR seq <= $5)),
                    COALESCE(workspace_root, id), model_settings
             FROM sessions WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(child.as_uuid())
        .bind(title.map(crate::messages::without_nul))
        .bind(up_to)
        .execute(&mut *tx)
        .await?;
        crate::require_changed(&created)?;
        // The copied history keeps its order and search vectors; it belongs to no turn here.
        sqlx::query(
            "INSERT INTO messages (tenant_id, session_id, seq, role, content, tool_calls, tool_call_id, name, reasoning,
                                   search, reasoning_replay, created_at)
             SELECT tenant_id, $3, seq, role, content, tool_calls, tool_call_id, name, reasoning, search,
                    reasoning_replay, created_at
             FROM messages WHERE tenant_id = $1 AND session_id = $2 AND ($4::int IS NULL OR seq <= $4)",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(child.as_uuid())
        .bind(up_to)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(child)
    }
}

/// Deletes what a session leaves outside its own rows (its turns and messages go with it): the
/// platform updates and replies of its turns, and the event deliveries about it. Deleting a
/// conversation deletes its text everywhere.
pub(crate) async fn forget_traces(db: &mut sqlx::PgConnection, tenant: uuid::Uuid, session: uuid::Uuid) -> Result<()> {
    sqlx::query(
        "WITH turns_of AS (SELECT id FROM turns WHERE tenant_id = $1 AND session_id = $2),
              gone_in AS (DELETE FROM inbound WHERE tenant_id = $1 AND turn_id IN (SELECT id FROM turns_of)),
              gone_out AS (DELETE FROM outbox WHERE tenant_id = $1 AND turn_id IN (SELECT id FROM turns_of))
         DELETE FROM event_deliveries WHERE tenant_id = $1 AND data ->> 'session_id' = $2::text",
    )
    .bind(tenant)
    .bind(session)
    .execute(db)
    .await?;
    Ok(())
}

tenant_writes! {
    in Conversations;
    /// Deletes a session with its messages and turns; refused while a turn of it is open. The
    /// session row is locked first, so a turn being enqueued either finishes first (and is seen)
    /// or fails on the missing session: none is dropped silently.
    pub async fn delete_session(agent: Option<AgentId>, id: SessionId) -> Result<()> = delete_session_on in transaction;
}

/// [`Conversations::delete_session`](crate::views::Conversations::delete_session) on a connection already set to `tenant`.
async fn delete_session_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: Option<AgentId>,
    id: SessionId,
) -> Result<()> {
    let found = sqlx::query(
        "SELECT 1 FROM sessions WHERE tenant_id = $1 AND id = $2 AND ($3::uuid IS NULL OR agent_id = $3) FOR UPDATE",
    )
    .bind(tenant.as_uuid())
    .bind(id.as_uuid())
    .bind(agent.map(|a| a.as_uuid()))
    .fetch_optional(&mut *conn)
    .await?;
    if found.is_none() {
        return Err(StoreError::NotFound);
    }
    let busy: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM turns WHERE tenant_id = $1 AND session_id = $2
                        AND status IN ('queued', 'running', 'waiting'))",
    )
    .bind(tenant.as_uuid())
    .bind(id.as_uuid())
    .fetch_one(&mut *conn)
    .await?;
    if busy {
        return Err(StoreError::Busy("a turn of this session is still open; stop it or wait for it first".into()));
    }
    forget_traces(&mut *conn, tenant.as_uuid(), id.as_uuid()).await?;
    sqlx::query("DELETE FROM sessions WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .execute(&mut *conn)
        .await?;
    Ok(())
}
