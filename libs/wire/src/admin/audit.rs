//! The audit log as the admin API shows it: one entry per admin write, newest first.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::TenantId;

/// Who made a change (read from the log's `actor_*` columns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct AuditActor {
    /// `person`, `token`, `cli`, `chat` or `system`.
    #[cfg_attr(feature = "sqlx", sqlx(rename = "actor_kind"))]
    pub kind: String,
    /// A person's or token's id, a chat user's key.
    #[cfg_attr(feature = "sqlx", sqlx(rename = "actor_id"))]
    pub id: String,
    /// For people to read: an email, a token's name.
    #[cfg_attr(feature = "sqlx", sqlx(rename = "actor_label"))]
    pub label: String,
}

/// One admin write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct AuditEntry {
    pub id: i64,
    /// `null`: the installation's own (tenants, operators).
    #[schema(value_type = Option<String>, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::MaybeId"))]
    pub tenant_id: Option<TenantId>,
    pub at: DateTime<Utc>,
    #[cfg_attr(feature = "sqlx", sqlx(flatten))]
    pub actor: AuditActor,
    /// Such as `member.role_changed`, `api_key.created`.
    pub action: String,
    pub object_kind: String,
    pub object_id: String,
    /// The object before and after, secrets masked.
    #[schema(value_type = Option<Object>)]
    pub before: Option<serde_json::Value>,
    #[schema(value_type = Option<Object>)]
    pub after: Option<serde_json::Value>,
    pub request_id: Option<String>,
    pub source_address: Option<String>,
}

/// A page of entries, with the `cursor` of the next page (`null` on the last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AuditPage {
    pub object: crate::ListKind,
    pub data: Vec<AuditEntry>,
    pub next: Option<i64>,
}
