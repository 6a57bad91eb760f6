//! Which session a chat's next message belongs to. A chat (a platform conversation, or any key
//! a caller chooses) has a current session in `session_routes`; its messages go there until the
//! tenant's policy says the conversation is over (`session_policy.rs`), and then a fresh
//! session starts, with a fresh prompt and memory snapshot. A session with a background
//! process still running is never reset. The turn a chat's next message starts is built by
//! `Turns::route_target`, beside the turn targets in `turns.rs`.

use chrono::{DateTime, Utc};
use sqlx::Row;

use hermes_core::{AgentId, SessionId, SessionSource, TenantId};

use crate::{Result, views::Conversations};

/// A chat, as the gateway names it.
#[derive(Debug, Clone)]
pub struct Route {
    pub agent: AgentId,
    /// e.g. `telegram:chat:42`, `slack:T1:C2:thread`.
    pub key: String,
    /// Where new sessions come from (the chat's platform).
    pub source: SessionSource,
    /// The end user of new sessions (their USER profile, their search scope).
    pub user_key: String,
}

impl Conversations<'_> {
    /// The chat's current session and when it was last active.
    pub async fn route_state(self, tenant: TenantId, route: &Route) -> Result<Option<(SessionId, DateTime<Utc>)>> {
        let row = sqlx::query(
            "SELECT s.id, s.updated_at FROM session_routes r
             JOIN sessions s ON s.tenant_id = r.tenant_id AND s.id = r.session_id
             WHERE r.tenant_id = $1 AND r.agent_id = $2 AND r.route_key = $3",
        )
        .bind(tenant.as_uuid())
        .bind(route.agent.as_uuid())
        .bind(&route.key)
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        row.map(|r| Ok((SessionId::from_uuid(r.try_get("id")?), r.try_get("updated_at")?))).transpose()
    }

    /// Turns at work for this chat's person in conversations of theirs that are not the chat's
    /// current one (what `/background` started): what caps them.
    pub async fn side_turns_open(self, tenant: TenantId, route: &Route) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM turns t JOIN sessions s ON s.tenant_id = t.tenant_id AND s.id = t.session_id
             WHERE t.tenant_id = $1 AND s.agent_id = $2 AND s.source = $3 AND s.user_key = $4
               AND s.parent_session_id IS NULL AND t.status IN ('queued', 'running', 'waiting')
               AND NOT EXISTS (SELECT 1 FROM session_routes r WHERE r.tenant_id = $1 AND r.session_id = s.id)",
        )
        .bind(tenant.as_uuid())
        .bind(route.agent.as_uuid())
        .bind(route.source.as_str())
        .bind(&route.user_key)
        .fetch_one(&mut *self.as_tenant(tenant).await?)
        .await?)
    }

    /// The chat's earlier conversations (its person's sessions from this platform and agent),
    /// most recently active first: what `/sessions` lists and `/resume` picks from.
    pub async fn route_sessions(self, tenant: TenantId, route: &Route, limit: i64) -> Result<Vec<crate::SessionInfo>> {
        let ids: Vec<uuid::Uuid> = sqlx::query_scalar(
            "SELECT id FROM sessions
             WHERE tenant_id = $1 AND agent_id = $2 AND source = $3 AND user_key = $4
               AND lineage IS DISTINCT FROM 'subagent'
             ORDER BY updated_at DESC, id LIMIT $5",
        )
        .bind(tenant.as_uuid())
        .bind(route.agent.as_uuid())
        .bind(route.source.as_str())
        .bind(&route.user_key)
        .bind(limit)
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.push(self.session_info(tenant, Some(route.agent), SessionId::from_uuid(id)).await?);
        }
        Ok(out)
    }

    /// Makes `session` the chat's current conversation again (`/resume`); it must be one of
    /// [`Conversations::route_sessions`](crate::views::Conversations::route_sessions).
    pub async fn resume_route(self, tenant: TenantId, route: &Route, session: SessionId) -> Result<()> {
        let done = sqlx::query(
            "INSERT INTO session_routes (tenant_id, agent_id, route_key, session_id)
             SELECT $1, $2, $3, id FROM sessions
             WHERE tenant_id = $1 AND agent_id = $2 AND id = $4 AND source = $5 AND user_key = $6
             ON CONFLICT (tenant_id, agent_id, route_key) DO UPDATE SET session_id = EXCLUDED.session_id",
        )
        .bind(tenant.as_uuid())
        .bind(route.agent.as_uuid())
        .bind(crate::messages::without_nul(&route.key))
        .bind(session.as_uuid())
        .bind(route.source.as_str())
        .bind(&route.user_key)
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        crate::require_changed(&done)
    }

    /// Ends the chat's current conversation (`/new`): its next message starts a fresh session.
    pub async fn end_route(self, tenant: TenantId, route: &Route) -> Result<()> {
        sqlx::query("DELETE FROM session_routes WHERE tenant_id = $1 AND agent_id = $2 AND route_key = $3")
            .bind(tenant.as_uuid())
            .bind(route.agent.as_uuid())
            .bind(&route.key)
            .execute(&mut *self.as_tenant(tenant).await?)
            .await?;
        Ok(())
    }
}

/// The session a `TurnTarget::Route` turn goes to, inside the enqueue transaction: the route's
/// current session, or a new one (also when another message already reset the route, its new
/// session is used rather than starting a second).
pub(crate) async fn session_for_route(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    route: &Route,
    fresh: bool,
    replaces: Option<SessionId>,
    title: Option<&str>,
) -> Result<SessionId> {
    let current: Option<uuid::Uuid> = sqlx::query_scalar(
        "SELECT session_id FROM session_routes WHERE tenant_id = $1 AND agent_id = $2 AND route_key = $3 FOR UPDATE",
    )
    .bind(tenant.as_uuid())
    .bind(route.agent.as_uuid())
    .bind(&route.key)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(current) = current {
        let already_reset = replaces.is_some_and(|old| old.as_uuid() != current);
        if !fresh || already_reset {
            return Ok(SessionId::from_uuid(current));
        }
    }
    let session = SessionId::new();
    sqlx::query(
        "INSERT INTO sessions (id, tenant_id, agent_id, source, user_key, title) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(session.as_uuid())
    .bind(tenant.as_uuid())
    .bind(route.agent.as_uuid())
    .bind(route.source.as_str())
    .bind(crate::messages::without_nul(&route.user_key))
    .bind(title)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO session_routes (tenant_id, agent_id, route_key, session_id) VALUES ($1, $2, $3, $4)
         ON CONFLICT (tenant_id, agent_id, route_key) DO UPDATE SET session_id = EXCLUDED.session_id",
    )
    .bind(tenant.as_uuid())
    .bind(route.agent.as_uuid())
    .bind(crate::messages::without_nul(&route.key))
    .bind(session.as_uuid())
    .execute(&mut *tx)
    .await?;
    Ok(session)
}
