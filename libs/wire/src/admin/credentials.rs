//! A tenant's credentials as the admin API shows them: admin tokens (automation of the admin
//! API) and API keys (the OpenAI-compatible API). Secrets appear once, in the `*Made` answer.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::{AdminTokenId, AgentId, ApiKeyId, MemberRole, PersonId, TenantId};

/// An admin token as listed (never its secret).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct AdminToken {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: AdminTokenId,
    pub name: String,
    /// The person it acts as; `null`: a tenant's service token.
    #[schema(value_type = Option<String>, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::MaybeId"))]
    pub person_id: Option<PersonId>,
    /// The most it may do: `owner`, `admin` or `member`.
    #[schema(value_type = String)]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub role: MemberRole,
    pub prefix: String,
    pub expires_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// A token just made, with its secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TokenMade {
    pub token: AdminToken,
    /// `hat_...`: shown this once.
    pub secret: String,
}

/// A token to make: the caller's own (acting as them, never above their role) or the tenant's
/// service token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    pub name: String,
    /// The most it may do: `owner`, `admin` or `member` (read-only). Default `member`.
    #[schema(value_type = Option<String>, example = "member")]
    pub role: Option<MemberRole>,
    /// 1 to 366; default 90.
    pub expires_in_days: Option<u32>,
    /// A service token belongs to the tenant, not to its maker: it outlives their membership.
    #[serde(default)]
    pub service: bool,
}

/// An API key as listed (never its secret).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct ApiKey {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: ApiKeyId,
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub tenant_id: TenantId,
    /// The one agent it may use; `null`: every agent of the tenant.
    #[schema(value_type = Option<String>, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::MaybeId"))]
    pub agent_id: Option<AgentId>,
    pub name: String,
    pub prefix: String,
    /// The only toolsets of their agent's its turns may use; `null`: all of them.
    #[serde(default)]
    pub toolsets: Option<Vec<String>>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A key just made, with its secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApiKeyMade {
    pub key: ApiKey,
    /// `hk_...`: shown this once.
    pub secret: String,
}

/// An API key to make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewApiKey {
    pub name: String,
    /// Restrict the key to one agent (its name or id); unset: every agent of the tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Unset: the key does not expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<u32>,
    /// Keep the key's turns to these of their agent's toolsets (never more than the agent
    /// has); unset: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolsets: Option<Vec<String>>,
}
