//! Agents as the admin API shows them (never their provider key), and their skills, MCP
//! servers and curated memory.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::{AgentId, ApiMode, ApprovalMode, ImageInputMode, SkillState, TenantId};

/// An agent (its provider key is never shown).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Agent {
    #[schema(value_type = String, format = "uuid")]
    pub id: AgentId,
    #[schema(value_type = String, format = "uuid")]
    pub tenant_id: TenantId,
    /// The `model` clients name.
    pub name: String,
    /// The LLM it uses.
    pub model: String,
    pub provider_base_url: String,
    pub has_provider_key: bool,
    pub soul: Option<String>,
    pub system_message: Option<String>,
    pub toolsets: Vec<String>,
    /// Hosts the agent's own provider key may be sent to.
    pub provider_key_hosts: Vec<String>,
    /// Models to fall back to, in order.
    pub fallbacks: Vec<ModelRef>,
    /// The provider API when set explicitly: `chat_completions`, `anthropic_messages` or
    /// `responses`; unset, the provider and base URL decide.
    #[schema(value_type = Option<String>)]
    pub api_mode: Option<ApiMode>,
    /// The model for side tasks (compaction summaries); the main model when unset.
    pub auxiliary: Option<ModelRef>,
    /// The context window in tokens, when set explicitly.
    pub context_window: Option<i32>,
    /// How dangerous commands are approved.
    #[schema(value_type = String)]
    pub approval_mode: ApprovalMode,
    /// Whether its sandbox may reach the public internet.
    pub egress: bool,
    /// Skills this agent never sees.
    pub disabled_skills: Vec<String>,
    /// How its model is shown the images people send.
    #[schema(value_type = String)]
    pub image_input_mode: ImageInputMode,
    /// The model that describes images.
    pub vision_model: Option<ModelRef>,
    /// Whose sandbox its tools use: `agent` (one for everyone), `person` (one per end user)
    /// or `session` (one per conversation).
    #[schema(value_type = String)]
    pub workspace: hermes_core::WorkspaceScope,
    /// Its sandboxes' image (one of the operator's, by name) and limits; `{}`: the defaults.
    #[schema(value_type = Object)]
    pub sandbox: hermes_core::SandboxChoice,
    /// Its model's sampling and reasoning: `temperature`, `top_p`, `max_output_tokens`,
    /// `reasoning_effort` (`none` to `xhigh`), `thinking_budget`, `fast`; `{}`: the provider's.
    #[schema(value_type = Object)]
    pub model_settings: hermes_core::ModelSettings,
    /// What API callers may ask per request: `max_output_tokens`, `max_reasoning_effort`,
    /// `allow_fast`.
    #[schema(value_type = Object)]
    pub client_limits: hermes_core::ClientLimits,
    /// Where OpenRouter may send its calls: `order`, `only`, `ignore`, `sort` (`price`,
    /// `throughput`, `latency`), `allow_fallbacks`, `data_collection` (`allow`, `deny`),
    /// `require_parameters`; `{}`: OpenRouter's defaults.
    #[schema(value_type = Object)]
    pub provider_routing: hermes_core::ProviderRouting,
    /// Models of its own for side tasks (`compression`, `vision`, `approval`, `goal_judge`,
    /// `review`, `title`, `web_extract`), each a fallback chain tried in order; a task left out
    /// uses `auxiliary` (`web_extract` left out: long pages are cut, not summarised).
    #[schema(value_type = Object)]
    pub auxiliary_models: AuxiliaryModels,
    pub created_at: DateTime<Utc>,
}

/// Each side task's own models, in the order they are tried.
pub type AuxiliaryModels = std::collections::BTreeMap<hermes_core::AuxiliaryTask, Vec<ModelRef>>;

/// Another model an agent uses (a fallback, the auxiliary or vision model): its keys come from
/// the tenant's pool for its provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ModelRef {
    pub base_url: String,
    pub model: String,
    /// `chat_completions`, `anthropic_messages` or `responses`; unset, the provider and base
    /// URL decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub api_mode: Option<ApiMode>,
}

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
    pub last_used_at: Option<DateTime<Utc>>,
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

/// The sandbox images agents of this installation may pick, and the most they may ask for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SandboxOffer {
    pub images: Vec<SandboxImageShown>,
    pub max_cpus: f64,
    pub max_memory_mb: u64,
    pub max_disk_mb: u64,
    pub max_pids: i64,
}

/// An image agents may pick: its name and what it carries (the reference is the operator's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SandboxImageShown {
    pub name: String,
    pub carries: String,
}
