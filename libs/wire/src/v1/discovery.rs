//! What the server and an agent offer: capabilities, toolsets and skills.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::SkillState;

/// What this server supports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Capabilities {
    /// Always `hermes.api_server.capabilities`.
    pub object: String,
    pub platform: String,
    pub version: String,
    pub auth: CapabilityAuth,
    pub runtime: String,
    /// Feature names and whether they are on.
    pub features: BTreeMap<String, bool>,
    /// Endpoint names and their paths.
    pub endpoints: BTreeMap<String, String>,
}

/// How a client authenticates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CapabilityAuth {
    /// Always `bearer`.
    pub r#type: String,
    /// Always `tenant`.
    pub scope: String,
    pub agent_restricted_keys: bool,
}

/// A list about one agent: `{"object": "list", "model": <agent>, "data": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ForModel<T> {
    pub object: crate::ListKind,
    /// The agent's name.
    pub model: String,
    pub data: Vec<T>,
}

impl<T> ForModel<T> {
    pub fn of(model: String, data: Vec<T>) -> Self {
        Self { object: crate::ListKind::List, model, data }
    }
}

/// A toolset and whether the agent has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Toolset {
    pub name: String,
    pub description: String,
    pub tools: Vec<String>,
    pub enabled: bool,
}

/// A skill the agent sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ListedSkill {
    pub name: String,
    pub description: String,
    pub category: String,
    pub version: Option<String>,
    pub tags: Vec<String>,
    /// `bundled`, `tenant` or `agent`.
    pub source: String,
    /// `active` or `stale`.
    #[schema(value_type = String)]
    pub state: SkillState,
    pub pinned: bool,
    pub view_count: i64,
    pub use_count: i64,
    pub last_used_at: Option<DateTime<Utc>>,
}
