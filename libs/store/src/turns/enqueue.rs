//! Writing a new turn: its session (existing, new, derived from the conversation's start, or
//! a chat's route) and, for a new session, its seeded history, in one transaction.

use hermes_core::{ChatMessage, SessionId, SessionSource, TenantId, TurnId};

use super::new_turn::{NewTurn, TurnTarget};
use crate::messages::columns;
use crate::{Result, StoreError, views::Turns};

/// Inserts a new session's seeded history in one statement (sequence numbers 1..=n).
async fn insert_history(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    session: SessionId,
    history: &[ChatMessage],
) -> Result<()> {
    let mut seqs = Vec::with_capacity(history.len());
    let mut roles = Vec::with_capacity(history.len());
    let mut contents = Vec::with_capacity(history.len());
    let mut calls = Vec::with_capacity(history.len());
    let mut call_ids = Vec::with_capacity(history.len());
    let mut names = Vec::with_capacity(history.len());
    let mut reasonings = Vec::with_capacity(history.len());
    let mut searches = Vec::with_capacity(history.len());
    for (i, msg) in history.iter().enumerate() {
        let c = columns(msg)?;
        seqs.push(i32::try_from(i + 1).map_err(|_| StoreError::Invalid("history too long".into()))?);
        roles.push(c.role.to_owned());
        contents.push(c.content);
        calls.push(c.tool_calls);
        call_ids.push(c.tool_call_id);
        names.push(c.name);
        reasonings.push(c.reasoning);
        searches.push(c.search);
    }
    sqlx::query(
        "INSERT INTO messages (tenant_id, session_id, seq, role, content, tool_calls, tool_call_id, name, reasoning,
                               search)
         SELECT $1, $2, m.seq, m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.reasoning, m.search::tsvector
         FROM UNNEST($3::int[], $4::text[], $5::jsonb[], $6::jsonb[], $7::text[], $8::text[], $9::text[], $10::text[])
              AS m(seq, role, content, tool_calls, tool_call_id, name, reasoning, search)",
    )
    .bind(tenant.as_uuid())
    .bind(session.as_uuid())
    .bind(seqs)
    .bind(roles)
    .bind(contents)
    .bind(calls)
    .bind(call_ids)
    .bind(names)
    .bind(reasonings)
    .bind(searches)
    .execute(conn)
    .await?;
    Ok(())
}

impl Turns<'_> {
    /// Writes a turn (and, for a new session, the session and its seeded history) in one
    /// transaction. An `Existing` session of another tenant or agent is `NotFound`.
    pub async fn enqueue_turn(self, tenant: TenantId, new: NewTurn) -> Result<(SessionId, TurnId)> {
        if let TurnTarget::New { source, user_key, history } = &new.target
            && history.is_empty()
            && new.response.is_none()
        {
            // The commonest turn (a new conversation of one message) is one statement: no
            // transaction's BEGIN and COMMIT round trips.
            return new_session_turn(&mut *self.as_tenant(tenant).await?, tenant, &new, *source, user_key).await;
        }
        let mut tx = self.tenant_tx(tenant).await?;
        let ids = enqueue_in(&mut tx, tenant, &new).await?;
        tx.commit().await?;
        Ok(ids)
    }
}

/// A new session with no history and its first turn, in one statement.
async fn new_session_turn(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    new: &NewTurn,
    source: SessionSource,
    user_key: &str,
) -> Result<(SessionId, TurnId)> {
    let (session_id, turn_id) = (SessionId::new(), TurnId::new());
    sqlx::query(
        "WITH s AS (
            INSERT INTO sessions (id, tenant_id, agent_id, source, next_seq, user_key, title)
            VALUES ($1, $2, $3, $4, 1, $5, $6) RETURNING id
         )
         INSERT INTO turns (id, tenant_id, session_id, input, instructions, stream, notify_hub, api_key_id, reply_to,
                            trace_parent, model_settings)
         SELECT $7, $2, s.id, $8, $9, $10, $11, $12, $13, $14, $15 FROM s",
    )
    .bind(session_id.as_uuid())
    .bind(tenant.as_uuid())
    .bind(new.agent_id.as_uuid())
    .bind(source.as_str())
    .bind(crate::messages::without_nul(user_key))
    .bind(crate::sessions::auto_title(&new.input, &[]))
    .bind(turn_id.as_uuid())
    .bind(crate::messages::storable_json(&new.input)?)
    .bind(new.instructions.as_deref().map(crate::messages::without_nul))
    .bind(new.stream)
    .bind(&new.notify_hub)
    .bind(new.api_key.map(|k| k.as_uuid()))
    .bind(new.reply_to.as_ref().map(sqlx::types::Json))
    .bind(new.trace.as_ref().map(|t| t.as_str()))
    .bind(new.model_settings.as_ref().map(sqlx::types::Json))
    .execute(conn)
    .await?;
    Ok((session_id, turn_id))
}

/// A `TurnTarget::Derived` session: created with its history, or found (it must be this
/// tenant's and agent's) and followed to its latest compacted continuation.
async fn derived_session(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    new: &NewTurn,
    id: SessionId,
    source: SessionSource,
    user_key: &str,
    history: &[ChatMessage],
) -> Result<SessionId> {
    let title = crate::sessions::auto_title(&new.input, history);
    let next_seq = i32::try_from(history.len() + 1).map_err(|_| StoreError::Invalid("history too long".into()))?;
    // No conflict target: two pods creating the same session at once may collide on the id or
    // on (tenant_id, id), and either way the second finds the first's session.
    let created = sqlx::query(
        "INSERT INTO sessions (id, tenant_id, agent_id, source, next_seq, user_key, title)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
    )
    .bind(id.as_uuid())
    .bind(tenant.as_uuid())
    .bind(new.agent_id.as_uuid())
    .bind(source.as_str())
    .bind(next_seq)
    .bind(crate::messages::without_nul(user_key))
    .bind(title)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if created == 1 {
        if !history.is_empty() {
            insert_history(&mut *tx, tenant, id, history).await?;
        }
        return Ok(id);
    }
    let latest: Option<uuid::Uuid> = sqlx::query_scalar(
        "WITH RECURSIVE down AS (
            SELECT id, 0 AS depth FROM sessions WHERE tenant_id = $1 AND id = $2 AND agent_id = $3
            UNION ALL
            SELECT c.id, down.depth + 1 FROM down
            JOIN sessions c ON c.tenant_id = $1 AND c.parent_session_id = down.id AND c.lineage = 'compaction'
            WHERE down.depth < 1000
         )
         SELECT id FROM down ORDER BY depth DESC LIMIT 1",
    )
    .bind(tenant.as_uuid())
    .bind(id.as_uuid())
    .bind(new.agent_id.as_uuid())
    .fetch_optional(&mut *tx)
    .await?;
    latest.map(SessionId::from_uuid).ok_or(StoreError::NotFound)
}

/// The writes of [`Turns::enqueue_turn`](crate::views::Turns::enqueue_turn), inside the caller's transaction.
pub(crate) async fn enqueue_in(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    new: &NewTurn,
) -> Result<(SessionId, TurnId)> {
    let turn_id = TurnId::new();
    let input = crate::messages::storable_json(&new.input)?;
    let instructions = new.instructions.as_deref().map(crate::messages::without_nul);
    let session_id = match &new.target {
        TurnTarget::Existing(id) => {
            let found = sqlx::query("SELECT 1 FROM sessions WHERE tenant_id = $1 AND id = $2 AND agent_id = $3")
                .bind(tenant.as_uuid())
                .bind(id.as_uuid())
                .bind(new.agent_id.as_uuid())
                .fetch_optional(&mut *tx)
                .await?;
            if found.is_none() {
                return Err(StoreError::NotFound);
            }
            *id
        }
        TurnTarget::Route { route, fresh, replaces } => {
            if route.agent != new.agent_id {
                return Err(StoreError::Invalid("the route belongs to another agent".into()));
            }
            let title = crate::sessions::auto_title(&new.input, &[]);
            crate::routes::session_for_route(&mut *tx, tenant, route, *fresh, *replaces, title.as_deref()).await?
        }
        TurnTarget::Derived { id, source, user_key, history } => {
            derived_session(&mut *tx, tenant, new, *id, *source, user_key, history).await?
        }
        TurnTarget::New { source, user_key, history } => {
            let id = SessionId::new();
            let title = crate::sessions::auto_title(&new.input, history);
            sqlx::query(
                "INSERT INTO sessions (id, tenant_id, agent_id, source, next_seq, user_key, title)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(id.as_uuid())
            .bind(tenant.as_uuid())
            .bind(new.agent_id.as_uuid())
            .bind(source.as_str())
            .bind(i32::try_from(history.len() + 1).map_err(|_| StoreError::Invalid("history too long".into()))?)
            .bind(crate::messages::without_nul(user_key))
            .bind(title)
            .execute(&mut *tx)
            .await?;
            if !history.is_empty() {
                insert_history(&mut *tx, tenant, id, history).await?;
            }
            id
        }
    };
    sqlx::query(
        "INSERT INTO turns (id, tenant_id, session_id, input, instructions, stream, notify_hub, api_key_id, reply_to,
                            trace_parent, model_settings)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(turn_id.as_uuid())
    .bind(tenant.as_uuid())
    .bind(session_id.as_uuid())
    .bind(input)
    .bind(instructions)
    .bind(new.stream)
    .bind(&new.notify_hub)
    .bind(new.api_key.map(|k| k.as_uuid()))
    .bind(new.reply_to.as_ref().map(sqlx::types::Json))
    .bind(new.trace.as_ref().map(|t| t.as_str()))
    .bind(new.model_settings.as_ref().map(sqlx::types::Json))
    .execute(&mut *tx)
    .await?;
    if let Some(response) = &new.response {
        crate::responses::record_in(&mut *tx, tenant, turn_id, response).await?;
    }
    Ok((session_id, turn_id))
}
