//! Sessions: one conversation with one agent.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};

use hermes_core::{AgentId, ChatMessage, SessionId, SessionSource, TenantId, TurnId};

use crate::{Result, StoreError, views::Conversations};

/// A session row.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct Session {
    #[sqlx(try_from = "crate::rows::Id")]
    pub id: SessionId,
    #[sqlx(try_from = "crate::rows::Id")]
    pub tenant_id: TenantId,
    #[sqlx(try_from = "crate::rows::Id")]
    pub agent_id: AgentId,
    #[sqlx(try_from = "String")]
    pub source: SessionSource,
    pub title: Option<String>,
    /// The frozen stable system prompt; `None` until the first turn renders it.
    #[serde(skip)]
    pub system_prompt: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Longest automatic title, in characters.
const TITLE_CHARS: usize = 60;

/// A title from the conversation's first user message: its first line, cut at a word
/// boundary (anywhere for text without spaces) with an ellipsis. `None` when it has no text.
pub(crate) fn auto_title(input: &ChatMessage, history: &[ChatMessage]) -> Option<String> {
    let first = history.iter().find(|m| m.role == hermes_core::Role::User).unwrap_or(input);
    let text = first.text();
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = crate::messages::without_nul(&line);
    if line.chars().count() <= TITLE_CHARS {
        return Some(line);
    }
    let cut: String = line.chars().take(TITLE_CHARS).collect();
    let cut = match cut.rfind(' ') {
        Some(space) if space > TITLE_CHARS / 2 => cut[..space].to_owned(),
        _ => cut,
    };
    Some(format!("{}…", cut.trim_end()))
}

impl Conversations<'_> {
    /// Renames a session; `None` clears the title. Another tenant's session is `NotFound`.
    pub async fn set_session_title(self, tenant: TenantId, id: SessionId, title: Option<&str>) -> Result<()> {
        let title = title.map(str::trim).filter(|t| !t.is_empty()).map(crate::messages::without_nul);
        if title.as_ref().is_some_and(|t| t.chars().count() > 200) {
            return Err(StoreError::Invalid("a title is at most 200 characters".into()));
        }
        let done =
            sqlx::query("UPDATE sessions SET title = $3, title_source = 'given' WHERE tenant_id = $1 AND id = $2")
                .bind(tenant.as_uuid())
                .bind(id.as_uuid())
                .bind(title)
                .execute(&mut *self.as_tenant(tenant).await?)
                .await?;
        crate::require_changed(&done)
    }

    /// Whether a model may title the session now: its title still comes from its first
    /// message, it began here (no parent), and at most two turns were sent to it (the first
    /// exchange, or the one after a first that failed).
    pub async fn awaits_model_title(self, tenant: TenantId, id: SessionId) -> Result<bool> {
        let awaits: Option<bool> = sqlx::query_scalar(
            "SELECT s.title_source = 'first_message' AND s.parent_session_id IS NULL
                    AND (SELECT count(*) FROM turns t WHERE t.tenant_id = s.tenant_id AND t.session_id = s.id) <= 2
             FROM sessions s WHERE s.tenant_id = $1 AND s.id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        awaits.ok_or(StoreError::NotFound)
    }

    /// Titles the session with what a model wrote, unless someone titled it meanwhile (or a
    /// model already did): whether it was written.
    pub async fn set_model_title(self, tenant: TenantId, id: SessionId, title: &str) -> Result<bool> {
        let title = crate::messages::without_nul(title.trim());
        if title.is_empty() || title.chars().count() > 200 {
            return Err(StoreError::Invalid("a title is 1 to 200 characters".into()));
        }
        let done = sqlx::query(
            "UPDATE sessions SET title = $3, title_source = 'model'
             WHERE tenant_id = $1 AND id = $2 AND title_source = 'first_message'",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(title)
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// What the session's chat commands asked of the model (`/reasoning`, `/fast`), over its
    /// agent's settings; `{}` when nothing. Another tenant's session is `NotFound`.
    pub async fn session_model_settings(self, tenant: TenantId, id: SessionId) -> Result<hermes_core::ModelSettings> {
        let stored: Option<serde_json::Value> =
            sqlx::query_scalar("SELECT model_settings FROM sessions WHERE tenant_id = $1 AND id = $2")
                .bind(tenant.as_uuid())
                .bind(id.as_uuid())
                .fetch_optional(&mut *self.as_tenant(tenant).await?)
                .await?;
        stored.map(hermes_core::Stored::from_stored).ok_or(StoreError::NotFound)
    }

    /// Replaces what the session asks of the model; turns claimed after it use it.
    pub async fn set_session_model_settings(
        self,
        tenant: TenantId,
        id: SessionId,
        settings: &hermes_core::ModelSettings,
    ) -> Result<()> {
        let done = sqlx::query("UPDATE sessions SET model_settings = $3 WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_uuid())
            .bind(id.as_uuid())
            .bind(sqlx::types::Json(settings))
            .execute(&mut *self.as_tenant(tenant).await?)
            .await?;
        crate::require_changed(&done)
    }

    /// Who the session's end user is (see migration 0005).
    pub async fn session_user_key(self, tenant: TenantId, id: SessionId) -> Result<String> {
        sqlx::query_scalar("SELECT user_key FROM sessions WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_uuid())
            .bind(id.as_uuid())
            .fetch_optional(&mut *self.as_tenant(tenant).await?)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// The tenant's session `id`; another tenant's session is `NotFound`.
    pub async fn session(self, tenant: TenantId, id: SessionId) -> Result<Session> {
        sqlx::query_as(
            "SELECT id, tenant_id, agent_id, source, title, system_prompt, created_at, updated_at
             FROM sessions WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?
        .ok_or(StoreError::NotFound)
    }
}

impl Conversations<'_> {
    /// Continues `parent` in a new child session after a compaction: the child gets the new
    /// stable prompt, the compacted history (messages of the running turn keep their step) and
    /// the running turn, all in one transaction, if `fence` still owns the parent.
    pub async fn fork_compacted(
        self,
        tenant: TenantId,
        parent: SessionId,
        fence: i64,
        turn: TurnId,
        prompt: &str,
        body: &[(Option<i32>, ChatMessage)],
    ) -> Result<SessionId> {
        let mut tx = self.tenant_tx(tenant).await?;
        let child = insert_compacted_child(&mut tx, tenant, parent, fence, prompt, body.len()).await?;
        // Copies of what the parent holds: no event hook hears of these tool results again.
        sqlx::query("SELECT set_config('hermes.copying', 'on', true)").execute(&mut *tx).await?;
        insert_history(&mut tx, tenant, child, turn, body).await?;
        move_to_child(&mut tx, tenant, parent, child, turn).await?;
        tx.commit().await?;
        Ok(child)
    }

    /// A session for a delegated child of `parent`'s turn (lineage `subagent`).
    pub async fn create_child_session(self, tenant: TenantId, parent: SessionId, title: &str) -> Result<SessionId> {
        let child = SessionId::new();
        let done = sqlx::query(
            "INSERT INTO sessions (id, tenant_id, agent_id, source, title, parent_session_id, lineage, user_key,
                                   workspace_root, model_settings)
             SELECT $3, tenant_id, agent_id, $5, $4, id, 'subagent', user_key, COALESCE(workspace_root, id),
                    model_settings
             FROM sessions WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(parent.as_uuid())
        .bind(child.as_uuid())
        .bind(title.chars().take(200).collect::<String>())
        .bind(SessionSource::Subagent.as_str())
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        crate::require_changed(&done)?;
        Ok(child)
    }

    /// The session `id` continues from, if it was compacted or forked from another.
    pub async fn session_parent(self, tenant: TenantId, id: SessionId) -> Result<Option<(SessionId, String)>> {
        let row = sqlx::query("SELECT parent_session_id, lineage FROM sessions WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_uuid())
            .bind(id.as_uuid())
            .fetch_optional(&mut *self.as_tenant(tenant).await?)
            .await?
            .ok_or(StoreError::NotFound)?;
        let parent: Option<uuid::Uuid> = row.try_get("parent_session_id")?;
        let lineage: Option<String> = row.try_get("lineage")?;
        Ok(parent.map(|p| (SessionId::from_uuid(p), lineage.unwrap_or_default())))
    }
}

/// The child session of a compaction, if `fence` still owns (and now locks) `parent`: the
/// parent's agent, source, title and user, with the new stable prompt and room for `len`
/// messages.
async fn insert_compacted_child(
    db: &mut PgConnection,
    tenant: TenantId,
    parent: SessionId,
    fence: i64,
    prompt: &str,
    len: usize,
) -> Result<SessionId> {
    let row = sqlx::query(
        "SELECT agent_id, source, title, user_key, COALESCE(workspace_root, id) AS workspace_root, model_settings
         FROM sessions WHERE tenant_id = $1 AND id = $2 AND fence = $3 FOR UPDATE",
    )
    .bind(tenant.as_uuid())
    .bind(parent.as_uuid())
    .bind(fence)
    .fetch_optional(&mut *db)
    .await?
    .ok_or(StoreError::Fenced)?;
    let child = SessionId::new();
    let next_seq = i32::try_from(len + 1).map_err(|_| StoreError::Invalid("history too long".into()))?;
    sqlx::query(
        "INSERT INTO sessions (id, tenant_id, agent_id, source, title, system_prompt, fence, next_seq,
                               parent_session_id, lineage, user_key, workspace_root, model_settings)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'compaction', $10, $11, $12)",
    )
    .bind(child.as_uuid())
    .bind(tenant.as_uuid())
    .bind(row.try_get::<uuid::Uuid, _>("agent_id")?)
    .bind(row.try_get::<String, _>("source")?)
    .bind(row.try_get::<Option<String>, _>("title")?)
    .bind(crate::messages::without_nul(prompt))
    .bind(fence)
    .bind(next_seq)
    .bind(parent.as_uuid())
    .bind(row.try_get::<String, _>("user_key")?)
    .bind(row.try_get::<uuid::Uuid, _>("workspace_root")?)
    .bind(row.try_get::<serde_json::Value, _>("model_settings")?)
    .execute(&mut *db)
    .await?;
    Ok(child)
}

/// The compacted history as the child's messages from seq 1; those of the running `turn`
/// (with a step) stay its.
async fn insert_history(
    db: &mut PgConnection,
    tenant: TenantId,
    child: SessionId,
    turn: TurnId,
    body: &[(Option<i32>, ChatMessage)],
) -> Result<()> {
    for (i, (step, msg)) in body.iter().enumerate() {
        let query = sqlx::query(
            "INSERT INTO messages (tenant_id, session_id, seq, turn_id, turn_step, role, content, tool_calls,
                                   tool_call_id, name, reasoning, search, reasoning_replay)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::tsvector, $13)",
        )
        .bind(tenant.as_uuid())
        .bind(child.as_uuid())
        .bind(i32::try_from(i + 1).map_err(|_| StoreError::Invalid("history too long".into()))?)
        .bind(step.map(|_| turn.as_uuid()))
        .bind(step);
        let columns = crate::messages::columns(msg)?;
        let (search, replay) = (columns.search.clone(), columns.replay.clone());
        columns.bind_to(query).bind(search).bind(replay).execute(&mut *db).await?;
    }
    Ok(())
}

/// Moves the running `turn` and what goes on with the conversation from `parent` to `child`.
async fn move_to_child(
    db: &mut PgConnection,
    tenant: TenantId,
    parent: SessionId,
    child: SessionId,
    turn: TurnId,
) -> Result<()> {
    // Each statement moves rows keyed by the tenant (`$1`) and the turn or the parent (`$2`) to
    // the child (`$3`).
    let moves: [(&'static str, uuid::Uuid); 5] = [
        ("UPDATE turns SET session_id = $3 WHERE tenant_id = $1 AND id = $2", turn.as_uuid()),
        // Chats that were in the parent go on in the child, and so do their waiting messages.
        ("UPDATE session_routes SET session_id = $3 WHERE tenant_id = $1 AND session_id = $2", parent.as_uuid()),
        (
            "UPDATE turns SET session_id = $3 WHERE tenant_id = $1 AND session_id = $2 AND status = 'queued'",
            parent.as_uuid(),
        ),
        // The task list goes on with the conversation.
        (
            "INSERT INTO session_todos (tenant_id, session_id, items)
             SELECT tenant_id, $3, items FROM session_todos WHERE tenant_id = $1 AND session_id = $2",
            parent.as_uuid(),
        ),
        // So does a standing goal (`/goal`).
        ("UPDATE session_goals SET session_id = $3 WHERE tenant_id = $1 AND session_id = $2", parent.as_uuid()),
    ];
    for (sql, from) in moves {
        sqlx::query(sql).bind(tenant.as_uuid()).bind(from).bind(child.as_uuid()).execute(&mut *db).await?;
    }
    Ok(())
}

impl Conversations<'_> {
    /// The session's task list (empty when it has none).
    pub async fn todos(self, tenant: TenantId, session: SessionId) -> Result<serde_json::Value> {
        let items: Option<serde_json::Value> =
            sqlx::query_scalar("SELECT items FROM session_todos WHERE tenant_id = $1 AND session_id = $2")
                .bind(tenant.as_uuid())
                .bind(session.as_uuid())
                .fetch_optional(&mut *self.as_tenant(tenant).await?)
                .await?;
        Ok(items.unwrap_or_else(|| serde_json::Value::Array(Vec::new())))
    }

    /// Replaces the session's task list.
    pub async fn set_todos(self, tenant: TenantId, session: SessionId, items: &serde_json::Value) -> Result<()> {
        sqlx::query(
            "INSERT INTO session_todos (tenant_id, session_id, items) VALUES ($1, $2, $3)
             ON CONFLICT (tenant_id, session_id) DO UPDATE SET items = EXCLUDED.items, updated_at = now()",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .bind(items)
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(())
    }
}
