//! The transcript: messages of a session in order, written as they happen.
//!
//! Writes are fenced: each carries the fencing token of the worker that owns the session and
//! is refused once a newer worker has claimed it, so a paused zombie cannot write late.

use serde_json::Value;
use sqlx::{FromRow, PgConnection};
use uuid::Uuid;

use hermes_core::{ChatMessage, Content, Role, SessionId, TenantId, ToolCall, TurnId};

use crate::{Result, StoreError, views::Conversations};

/// A message with its place in the session.
#[derive(Debug, Clone)]
pub struct StoredMessage {
    pub seq: i32,
    pub turn_id: Option<TurnId>,
    /// 0 for the user input of a turn, then one step per model call.
    pub turn_step: Option<i32>,
    pub message: ChatMessage,
}

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// Stored at this sequence number.
    At(i32),
    /// The same step or tool result was stored before (a resumed turn); nothing written.
    AlreadyStored,
}

pub(crate) struct MessageColumns {
    pub role: &'static str,
    pub content: Option<Value>,
    pub tool_calls: Option<Value>,
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
    pub reasoning: Option<String>,
    /// What `session_search` finds the message by (a tsvector literal; see `search_text`).
    pub search: Option<String>,
    /// Reasoning to send back to the model that wrote it (`reasoning_replay`; bound apart).
    pub replay: Option<Value>,
}

impl MessageColumns {
    /// Placeholder values for a statement that inserts no message.
    pub(crate) fn empty_assistant() -> Self {
        Self {
            role: "assistant",
            content: None,
            tool_calls: None,
            tool_call_id: None,
            name: None,
            reasoning: None,
            search: None,
            replay: None,
        }
    }

    /// Binds role, content, tool_calls, tool_call_id, name and reasoning, in that order.
    pub(crate) fn bind_to<'q>(
        self,
        query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
        query
            .bind(self.role)
            .bind(self.content)
            .bind(self.tool_calls)
            .bind(self.tool_call_id)
            .bind(self.name)
            .bind(self.reasoning)
    }
}

/// Replaces NUL characters, which Postgres refuses in `text` and `jsonb`, with U+FFFD.
/// Tool output (a `head -c` of a binary) and model output may contain them.
pub(crate) fn without_nul(text: &str) -> String {
    text.replace('\0', "\u{FFFD}")
}

fn strip_nul_json(value: &mut Value) {
    match value {
        Value::String(s) if s.contains('\0') => *s = without_nul(s),
        Value::Array(items) => items.iter_mut().for_each(strip_nul_json),
        Value::Object(map) => map.values_mut().for_each(strip_nul_json),
        _ => {}
    }
}

/// Serialises to JSON for storage, without NUL characters.
pub(crate) fn storable_json<T: serde::Serialize>(value: &T) -> Result<Value> {
    let mut json = serde_json::to_value(value).map_err(|e| StoreError::Invalid(e.to_string()))?;
    strip_nul_json(&mut json);
    Ok(json)
}

/// The words of a user or assistant message (its text and the tools it called with their
/// arguments); tool results and system text are not searched.
fn searchable_text(msg: &ChatMessage) -> Option<String> {
    if !matches!(msg.role, Role::User | Role::Assistant) {
        return None;
    }
    let mut text = msg.text();
    for call in &msg.tool_calls {
        text.push('\n');
        text.push_str(&call.function.name);
        text.push(' ');
        text.push_str(&call.function.arguments);
    }
    Some(text)
}

pub(crate) fn columns(msg: &ChatMessage) -> Result<MessageColumns> {
    let content = msg.content.as_ref().map(storable_json).transpose()?;
    let tool_calls = if msg.tool_calls.is_empty() { None } else { Some(storable_json(&msg.tool_calls)?) };
    Ok(MessageColumns {
        search: searchable_text(msg).map(|t| crate::search_text::index_vector(&t)).filter(|v| !v.is_empty()),
        role: msg.role.as_str(),
        content,
        tool_calls,
        tool_call_id: msg.tool_call_id.as_deref().map(without_nul),
        name: msg.name.as_deref().map(without_nul),
        reasoning: msg.reasoning.as_deref().map(without_nul),
        replay: msg.replay.as_ref().map(storable_json).transpose()?,
    })
}

/// A message's row: `seq, turn_id, turn_step, role, content, tool_calls, tool_call_id, name,
/// reasoning, reasoning_replay`.
#[derive(sqlx::FromRow)]
struct MessageRow {
    seq: i32,
    turn_id: Option<Uuid>,
    turn_step: Option<i32>,
    role: String,
    content: Option<Value>,
    tool_calls: Option<Value>,
    tool_call_id: Option<String>,
    name: Option<String>,
    reasoning: Option<String>,
    reasoning_replay: Option<Value>,
}

impl TryFrom<MessageRow> for StoredMessage {
    type Error = StoreError;

    fn try_from(row: MessageRow) -> Result<Self> {
        let role = Role::parse(&row.role).ok_or_else(|| StoreError::Corrupt(format!("unknown role {:?}", row.role)))?;
        let content = row
            .content
            .map(serde_json::from_value::<Content>)
            .transpose()
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let tool_calls = row
            .tool_calls
            .map(serde_json::from_value::<Vec<ToolCall>>)
            .transpose()
            .map_err(|e| StoreError::Corrupt(e.to_string()))?
            .unwrap_or_default();
        Ok(StoredMessage {
            seq: row.seq,
            turn_id: row.turn_id.map(TurnId::from_uuid),
            turn_step: row.turn_step,
            message: ChatMessage {
                role,
                content,
                tool_calls,
                tool_call_id: row.tool_call_id,
                name: row.name,
                reasoning: row.reasoning,
                // Unreadable replay (a format from another release) is only lost reasoning.
                replay: row.reasoning_replay.and_then(|v| serde_json::from_value(v).ok()),
            },
        })
    }
}

/// What [`append_in`]'s statement reports: whether the fence still owned the session, where
/// the message went (null: stored before), and the session's prompt.
#[derive(sqlx::FromRow)]
struct AppendRow {
    owned: i64,
    seq: Option<i32>,
    system_prompt: Option<String>,
}

/// Where a fenced append goes: step `step` of `turn` in `session`, if `fence` still owns it.
struct Slot {
    session: SessionId,
    fence: i64,
    turn: TurnId,
    step: i32,
}

/// Appends one message at `slot` on `conn`; optionally freezes the session's system prompt in
/// the same statement. Returns what happened and the session's prompt.
async fn append_in(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    slot: Slot,
    msg: &ChatMessage,
    freeze_prompt: Option<&str>,
) -> Result<(Appended, Option<String>)> {
    let Slot { session, fence, turn, step } = slot;
    let c = columns(msg)?;
    let search = c.search.clone();
    let replay = c.replay.clone();
    let query = sqlx::query(
        "WITH s AS (
            UPDATE sessions SET next_seq = next_seq + 1, updated_at = now(),
                   system_prompt = COALESCE(system_prompt, $12)
            WHERE tenant_id = $1 AND id = $2 AND fence = $3
            RETURNING next_seq - 1 AS seq, system_prompt
         ), ins AS (
            INSERT INTO messages (tenant_id, session_id, seq, turn_id, turn_step, role, content,
                                  tool_calls, tool_call_id, name, reasoning, search, reasoning_replay)
            SELECT $1, $2, s.seq, $4, $5, $6, $7, $8, $9, $10, $11, $13::tsvector, $14 FROM s
            ON CONFLICT DO NOTHING
            RETURNING seq
         )
         SELECT (SELECT count(*) FROM s) AS owned, (SELECT seq FROM ins) AS seq,
                (SELECT system_prompt FROM s) AS system_prompt",
    )
    .bind(tenant.as_uuid())
    .bind(session.as_uuid())
    .bind(fence)
    .bind(turn.as_uuid())
    .bind(step);
    let row = c.bind_to(query).bind(freeze_prompt).bind(search).bind(replay).fetch_one(conn).await?;
    let row = AppendRow::from_row(&row)?;
    if row.owned == 0 {
        return Err(StoreError::Fenced);
    }
    Ok((row.seq.map_or(Appended::AlreadyStored, Appended::At), row.system_prompt))
}

impl Conversations<'_> {
    /// Appends `msg` to the session as step `step` of `turn`, if `fence` still owns the
    /// session. Idempotent per (turn, step) and per (turn, tool call).
    pub async fn append_message(
        self,
        tenant: TenantId,
        session: SessionId,
        fence: i64,
        turn: TurnId,
        step: i32,
        msg: &ChatMessage,
    ) -> Result<Appended> {
        let mut conn = self.as_tenant(tenant).await?;
        Ok(append_in(&mut conn, tenant, Slot { session, fence, turn, step }, msg, None).await?.0)
    }

    /// Starts a turn in one fenced statement: stores its user input as step 0 and freezes
    /// `prompt` as the session's system prompt unless it has one. Returns the prompt the
    /// session now has (an earlier one wins, byte for byte).
    pub async fn begin_turn(
        self,
        tenant: TenantId,
        session: SessionId,
        fence: i64,
        turn: TurnId,
        input: &ChatMessage,
        prompt: &str,
    ) -> Result<String> {
        let mut conn = self.as_tenant(tenant).await?;
        let slot = Slot { session, fence, turn, step: 0 };
        let (_, frozen) = append_in(&mut conn, tenant, slot, input, Some(prompt)).await?;
        frozen.ok_or_else(|| StoreError::Corrupt("session has no system prompt after freezing".into()))
    }

    /// The session's messages in order.
    pub async fn session_messages(self, tenant: TenantId, session: SessionId) -> Result<Vec<StoredMessage>> {
        self.messages_after(tenant, session, 0, None).await
    }

    /// Messages of a session after sequence number `after_seq`, in order, at most `limit` (all
    /// when `None`): a page of the transcript.
    pub async fn messages_after(
        self,
        tenant: TenantId,
        session: SessionId,
        after_seq: i32,
        limit: Option<i64>,
    ) -> Result<Vec<StoredMessage>> {
        messages_after_on(&mut *self.as_tenant(tenant).await?, tenant, session, after_seq, limit).await
    }

    /// The text of a session's last user message (what `/retry` asks again).
    pub async fn last_user_text(self, tenant: TenantId, session: SessionId) -> Result<Option<String>> {
        let row = sqlx::query_as::<_, MessageRow>(
            "SELECT seq, turn_id, turn_step, role, content, tool_calls, tool_call_id, name, reasoning,
                    reasoning_replay
             FROM messages WHERE tenant_id = $1 AND session_id = $2 AND role = 'user' ORDER BY seq DESC LIMIT 1",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        row.map(|r| StoredMessage::try_from(r).map(|m| m.message.text())).transpose()
    }

    /// The messages a turn stored, in order (in whichever session the turn ended up).
    pub async fn turn_messages(self, tenant: TenantId, turn: TurnId) -> Result<Vec<ChatMessage>> {
        let rows = sqlx::query_as::<_, MessageRow>(
            "SELECT m.seq, m.turn_id, m.turn_step, m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.reasoning,
                    m.reasoning_replay
             FROM turns t JOIN messages m ON m.tenant_id = t.tenant_id AND m.session_id = t.session_id
             WHERE t.tenant_id = $1 AND t.id = $2 AND m.turn_id = $2 ORDER BY m.seq",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        rows.into_iter().map(|r| StoredMessage::try_from(r).map(|m| m.message)).collect()
    }

    /// What the turn's last model call (the one that answered) reasoned, its first `max_chars`
    /// characters; `None` if it reasoned nothing.
    pub async fn answer_reasoning(self, tenant: TenantId, turn: TurnId, max_chars: i32) -> Result<Option<String>> {
        let reasoning = sqlx::query_scalar::<_, Option<String>>(
            "SELECT left(m.reasoning, $3)
             FROM turns t JOIN messages m ON m.tenant_id = t.tenant_id AND m.session_id = t.session_id
             WHERE t.tenant_id = $1 AND t.id = $2 AND m.turn_id = $2 AND m.role = 'assistant'
             ORDER BY m.seq DESC LIMIT 1",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .bind(max_chars)
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(reasoning.flatten().filter(|r| !r.trim().is_empty()))
    }

    /// What each of the turn's model calls reasoned, in order (calls without any left out).
    pub async fn turn_reasoning(self, tenant: TenantId, turn: TurnId) -> Result<Vec<String>> {
        let reasoning = sqlx::query_scalar::<_, String>(
            "SELECT m.reasoning
             FROM turns t JOIN messages m ON m.tenant_id = t.tenant_id AND m.session_id = t.session_id
             WHERE t.tenant_id = $1 AND t.id = $2 AND m.turn_id = $2 AND m.role = 'assistant' AND m.reasoning <> ''
             ORDER BY m.seq",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(reasoning)
    }
}

/// [`Conversations::messages_after`](crate::views::Conversations::messages_after) on a connection already set to `tenant`.
pub(crate) async fn messages_after_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    session: SessionId,
    after_seq: i32,
    limit: Option<i64>,
) -> Result<Vec<StoredMessage>> {
    let rows = sqlx::query_as::<_, MessageRow>(
        "SELECT seq, turn_id, turn_step, role, content, tool_calls, tool_call_id, name, reasoning,
                    reasoning_replay
         FROM messages WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 ORDER BY seq LIMIT $4",
    )
    .bind(tenant.as_uuid())
    .bind(session.as_uuid())
    .bind(after_seq)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.into_iter().map(StoredMessage::try_from).collect()
}
