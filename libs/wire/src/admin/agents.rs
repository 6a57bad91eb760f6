//! An agent's skills, MCP servers and curated memory as the admin API shows them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::{AgentId, SkillState};

/// An agent's skills and the names hidden from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AgentSkills {
    #[schema(value_type = String, format = "uuid")]
    pub agent_id: AgentId,
    pub skills: Vec<AgentSkill>,
    /// The names hidden from the agent.
    pub disabled: Vec<String>,
}

/// A skill as one agent sees it, with the curator's verdict and its use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AgentSkill {
    pub name: String,
    pub category: String,
    pub description: String,
    /// `bundled`, `tenant` or `agent`.
    pub scope: String,
    pub pinned: bool,
    /// `active`, `stale` or `archived`.
    #[schema(value_type = String)]
    pub state: SkillState,
    pub view_count: i64,
    pub use_count: i64,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_used_at: Option<DateTime<Utc>>,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: DateTime<Utc>,
    /// Hidden from the agent.
    pub disabled: bool,
}

/// A skill and its SKILL.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkillDocument {
    pub name: String,
    pub category: String,
    pub description: String,
    /// `bundled`, `tenant` or `agent`.
    pub scope: String,
    pub skill_md: String,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: DateTime<Utc>,
}

/// A skill hidden from an agent, or shown again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkillToggled {
    pub name: String,
    pub disabled: bool,
}

/// A skill stored for every agent of the tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkillSaved {
    pub name: String,
    pub category: String,
    pub description: String,
}

/// An agent's MCP server as listed, its secret values masked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct McpServer {
    pub name: String,
    pub enabled: bool,
    /// Upstream's shape (`command`, `args`, `env` or `url`, `headers`, ...), secrets masked.
    #[schema(value_type = Object)]
    pub config: serde_json::Value,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: DateTime<Utc>,
}

/// An MCP server just set, its secret values masked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct McpServerSet {
    pub name: String,
    pub enabled: bool,
    #[schema(value_type = Object)]
    pub config: serde_json::Value,
}

/// An agent's curated memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Memory {
    #[schema(value_type = String, format = "uuid")]
    pub agent_id: AgentId,
    /// Whether the agent has the memory toolset (only then does its prompt carry memory).
    pub enabled: bool,
    /// Whose USER profile is shown (empty: none).
    pub user: String,
    pub memory: Vec<String>,
    pub user_profile: Vec<String>,
    pub memory_char_limit: usize,
    pub user_char_limit: usize,
}

/// A memory document's entries as they now are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MemoryWritten {
    /// `memory` or `user`.
    pub target: String,
    pub entries: Vec<String>,
}
