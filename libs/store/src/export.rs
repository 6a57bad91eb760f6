//! A session's lineage and its export, as JSON (everything we keep) or ShareGPT (the
//! conversation format training pipelines read: `human`, `gpt`, `tool`, with tool calls as
//! `<tool_call>` blocks, as Hermes's own trajectory exports write them).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use sqlx::Row;

use hermes_core::{ChatMessage, Role, SessionId, TenantId};

use crate::{Result, StoreError, views::Conversations};

/// One session of a lineage, as `/api/sessions` shows it.
pub use hermes_wire::v1::LineageNode;

/// Everything about one session.
#[derive(Debug, Clone, Serialize)]
pub struct SessionExport {
    pub session_id: SessionId,
    pub title: Option<String>,
    pub source: hermes_core::SessionSource,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub system_prompt: Option<String>,
    pub lineage: Vec<LineageNode>,
    pub messages: Vec<ExportedMessage>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExportedMessage {
    pub seq: i32,
    #[serde(flatten)]
    pub message: ChatMessage,
    pub created_at: DateTime<Utc>,
}

impl Conversations<'_> {
    /// The whole family of `session`: up to its root through every kind of parent link, then
    /// every descendant, in depth-first order of creation.
    pub async fn session_lineage(self, tenant: TenantId, session: SessionId) -> Result<Vec<LineageNode>> {
        let rows = sqlx::query(
            "WITH RECURSIVE up AS (
                SELECT id, parent_session_id, 0 AS hops FROM sessions WHERE tenant_id = $1 AND id = $2
                UNION ALL
                SELECT p.id, p.parent_session_id, up.hops + 1
                FROM up JOIN sessions p ON p.tenant_id = $1 AND p.id = up.parent_session_id
                WHERE up.hops < 1000
             ), root AS (
                SELECT id FROM up ORDER BY hops DESC LIMIT 1
             ), down AS (
                SELECT s.id, s.parent_session_id, s.lineage, s.title, s.created_at, 0 AS depth,
                       ARRAY[s.created_at::text || s.id::text] AS path
                FROM sessions s JOIN root ON s.id = root.id WHERE s.tenant_id = $1
                UNION ALL
                SELECT c.id, c.parent_session_id, c.lineage, c.title, c.created_at, down.depth + 1,
                       down.path || (c.created_at::text || c.id::text)
                FROM down JOIN sessions c ON c.tenant_id = $1 AND c.parent_session_id = down.id
                WHERE down.depth < 1000
             )
             SELECT id, parent_session_id, lineage, title, created_at, depth FROM down ORDER BY path",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        if rows.is_empty() {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(crate::rows::read::<LineageNode>).collect()
    }

    /// `session` with its lineage and every message.
    pub async fn export_session(self, tenant: TenantId, session: SessionId) -> Result<SessionExport> {
        let meta = self.session(tenant, session).await?;
        let lineage = self.session_lineage(tenant, session).await?;
        let stored = self.session_messages(tenant, session).await?;
        let times =
            sqlx::query("SELECT seq, created_at FROM messages WHERE tenant_id = $1 AND session_id = $2 ORDER BY seq")
                .bind(tenant.as_uuid())
                .bind(session.as_uuid())
                .fetch_all(&mut *self.as_tenant(tenant).await?)
                .await?;
        let mut at = std::collections::HashMap::with_capacity(times.len());
        for t in &times {
            at.insert(t.try_get::<i32, _>("seq")?, t.try_get::<DateTime<Utc>, _>("created_at")?);
        }
        let messages = stored
            .into_iter()
            .map(|m| ExportedMessage {
                seq: m.seq,
                created_at: at.get(&m.seq).copied().unwrap_or(meta.created_at),
                message: m.message,
            })
            .collect();
        Ok(SessionExport {
            session_id: session,
            title: meta.title,
            source: meta.source,
            created_at: meta.created_at,
            updated_at: meta.updated_at,
            system_prompt: meta.system_prompt,
            lineage,
            messages,
        })
    }
}

impl SessionExport {
    /// The conversation in ShareGPT form.
    pub fn to_sharegpt(&self) -> Value {
        let mut turns = Vec::with_capacity(self.messages.len() + 1);
        if let Some(prompt) = &self.system_prompt {
            turns.push(json!({"from": "system", "value": prompt}));
        }
        for m in &self.messages {
            let message = &m.message;
            let (from, value) = match message.role {
                Role::System => ("system", message.text()),
                Role::User => ("human", message.text()),
                Role::Assistant => {
                    let mut value = message.text();
                    for call in &message.tool_calls {
                        let arguments: Value = serde_json::from_str(&call.function.arguments)
                            .unwrap_or_else(|_| json!(call.function.arguments));
                        let block = json!({"name": call.function.name, "arguments": arguments});
                        if !value.is_empty() {
                            value.push('\n');
                        }
                        value.push_str(&format!("<tool_call>\n{block}\n</tool_call>"));
                    }
                    ("gpt", value)
                }
                Role::Tool => {
                    let block = json!({
                        "tool_call_id": message.tool_call_id,
                        "name": message.name,
                        "content": message.text(),
                    });
                    ("tool", format!("<tool_response>\n{block}\n</tool_response>"))
                }
            };
            turns.push(json!({"from": from, "value": value}));
        }
        json!({"id": self.session_id.to_string(), "title": self.title, "conversations": turns})
    }
}
