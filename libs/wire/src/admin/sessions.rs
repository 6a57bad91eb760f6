//! Conversations as the admin console follows them: sessions found, turns at work, and the
//! questions parked turns wait on.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::{SessionId, TurnId};

use crate::v1::Session;

/// A session as the console lists it: with its best matching message when searching.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ListedSession {
    #[serde(flatten)]
    pub session: Session,
    /// The `seq` of the best matching message (searches only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_seq: Option<i32>,
    /// Its text around the match (searches only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
}

/// A turn queued, running or waiting for an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct OpenTurn {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: TurnId,
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub session_id: SessionId,
    /// The agent's name.
    pub agent: String,
    /// `queued`, `running` or `waiting`.
    pub status: String,
    /// Whether someone asked it to stop.
    pub stopping: bool,
    /// The start of the user's message (at most 200 characters).
    pub input: String,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
}

/// A question a parked turn waits on: an approval of a command, or a clarifying question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct WaitingQuestion {
    #[schema(value_type = String, format = "uuid")]
    pub id: uuid::Uuid,
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub turn_id: TurnId,
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub session_id: SessionId,
    /// The agent's name.
    pub agent: String,
    /// `approval` or `clarify`.
    pub kind: String,
    /// What is asked: the command and why, or the question and its choices.
    #[schema(value_type = Object)]
    pub prompt: serde_json::Value,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// A session and a page of its messages (`GET /admin/v1/tenants/{tenant}/sessions/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Transcript {
    pub session: crate::v1::Session,
    pub messages: Vec<crate::v1::NumberedMessage>,
    /// Whether later messages follow (ask again with `after` set to the last `seq`).
    pub has_more: bool,
}
