//! Sessions as `/api/sessions` (and the admin console) show them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::{AgentId, SessionId, SessionSource};

/// A session as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct Session {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: SessionId,
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub agent_id: AgentId,
    /// The agent's name: the `model` clients use.
    pub model: String,
    pub title: Option<String>,
    /// `api`, `cron`, `webhook`, `subagent`, or the chat platform.
    #[schema(value_type = String)]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub source: SessionSource,
    #[schema(value_type = Option<String>, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::MaybeId"))]
    pub parent_session_id: Option<SessionId>,
    /// How the session began: `fork`, `compaction` or `subagent` (none for a first session).
    pub lineage: Option<String>,
    pub message_count: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A session and its whole family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SessionWithLineage {
    #[serde(flatten)]
    pub session: Session,
    /// The whole family, root first, with depths.
    pub lineage_tree: Vec<LineageNode>,
}

/// One session of a lineage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct LineageNode {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(rename = "id", try_from = "crate::rows::Id"))]
    pub session_id: SessionId,
    #[schema(value_type = Option<String>, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::MaybeId"))]
    pub parent_session_id: Option<SessionId>,
    /// How it continues its parent: `compaction`, `fork` or `subagent`; `null` for the root.
    pub lineage: Option<String>,
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    /// Steps from the root.
    pub depth: i32,
}

/// A stored message in OpenAI form, with its sequence number in the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NumberedMessage {
    /// `role`, `content` and, as OpenAI has them, `tool_calls`, `tool_call_id`, `name`.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub message: hermes_core::ChatMessage,
    pub seq: i32,
}
