//! An agent to create and the changes to one: the admin API's bodies, which
//! `hermesctl agent create` builds too (on the database and over the admin API), so both doors
//! take the same fields and `hermes_ops::agents` checks them once.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::toolsets::OperatorService;
use hermes_core::{ApiMode, ApprovalMode, ImageInputMode};

use super::ModelRef;

/// An agent to create.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAgent {
    /// What API clients send as `model`.
    pub name: String,
    /// The provider's model id.
    pub model: String,
    /// The provider's OpenAI-compatible base URL, such as `https://api.openai.com/v1`.
    pub provider_base_url: String,
    /// Write-only: sealed at rest, never shown again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soul: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
    /// Toolset names (`GET /admin/v1/tenants/{tenant}/toolsets`). Absent: the installation's
    /// defaults (the base set, and each optional toolset whose service the operator
    /// configured); `[]`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolsets: Option<Vec<String>>,
    /// Whether its sandbox may reach the public internet.
    #[serde(default)]
    pub egress: bool,
    /// How dangerous commands are approved: `manual` (the default), `smart` or `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub approval_mode: Option<ApprovalMode>,
    /// Models to fall back to, in order; their keys come from the tenant's pools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<ModelRef>,
    /// The provider API (`chat_completions`, `anthropic_messages`, `responses`); default: from
    /// the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub api_mode: Option<ApiMode>,
    /// A cheaper model for side tasks such as compaction summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auxiliary: Option<ModelRef>,
    /// The model's context window in tokens; default: known from the model's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<i32>,
    /// A model that can see: it describes images for a text-only model and answers
    /// `vision_analyze`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision_model: Option<ModelRef>,
    /// How the model is shown the images people send: `auto` (the default), `native` or `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub image_input_mode: Option<ImageInputMode>,
    /// Hosts the provider key may be sent to; default: the base URL's host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_key_hosts: Vec<String>,
    /// Whose sandbox its tools use: `person` (the default: one per end user), `agent` (one
    /// for everyone) or `session` (one per conversation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub workspace: Option<hermes_core::WorkspaceScope>,
    /// Its sandboxes' image (`default`, `node`, ...: `GET /admin/v1/tenants/{t}/sandbox-images`) and
    /// `cpus`, `memory_mb`, `disk_mb`, `pids` within the operator's maxima.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub sandbox: Option<hermes_core::SandboxChoice>,
    /// Its model's `temperature`, `top_p`, `max_output_tokens`, `reasoning_effort`,
    /// `thinking_budget` and `fast`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub model_settings: Option<hermes_core::ModelSettings>,
    /// What API callers may ask per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub client_limits: Option<hermes_core::ClientLimits>,
    /// Where OpenRouter may send its calls (see the agent's `provider_routing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub provider_routing: Option<hermes_core::ProviderRouting>,
    /// Models of its own for side tasks, each a fallback chain (see the agent's
    /// `auxiliary_models`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub auxiliary_models: Option<super::AuxiliaryModels>,
}

/// Changes to an agent (absent: unchanged; an empty `soul` or `system_message` clears it).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentEdit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soul: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolsets: Option<Vec<String>>,
    /// Models to fall back to, in order: `{"model": ..., "base_url": ...}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub fallbacks: Option<Vec<ModelRef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<bool>,
    /// `manual`, `smart` or `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<String>,
    /// How the model is shown the images people send: `auto`, `native` or `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_input_mode: Option<String>,
    /// `agent`, `person` or `session`: whose sandbox its tools use from its next turn (the
    /// files of the old workspaces stay where they are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Replaces its sandboxes' image and limits (`{}`: the defaults); running sandboxes are
    /// remade with them at their next use, their workspaces kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub sandbox: Option<hermes_core::SandboxChoice>,
    /// Replaces its model's sampling and reasoning settings (`{}`: the provider's); turns
    /// claimed after it use them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub model_settings: Option<hermes_core::ModelSettings>,
    /// Replaces what API callers may ask per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub client_limits: Option<hermes_core::ClientLimits>,
    /// Replaces where OpenRouter may send its calls (`{}`: OpenRouter's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub provider_routing: Option<hermes_core::ProviderRouting>,
    /// Replaces its side tasks' models (`{}`: every task on `auxiliary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub auxiliary_models: Option<super::AuxiliaryModels>,
    /// The model that describes images (`{"model": ..., "base_url": ...}`); `null` removes it.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, nullable)]
    pub vision_model: Option<Option<ModelRef>>,
}

/// A toolset as the installation offers it to a new or edited agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolsetChoice {
    pub name: String,
    pub description: String,
    /// Whether the installation has what it needs.
    pub configured: bool,
    /// The service of the operator's it needs: `web_search`, `image_gen`, `tts` or
    /// `browser_image` (`null`: nothing beyond the agent's model and sandbox).
    #[schema(value_type = Option<String>)]
    pub needs: Option<OperatorService>,
    /// Whether a new agent gets it when its maker names no toolsets (`vision`: when one of
    /// the agent's models can see).
    pub default: bool,
}

/// A field that is present (even as `null`) is `Some`, so `null` can clear what absence keeps.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::{AgentEdit, NewAgent};

    #[test]
    fn a_null_vision_model_clears_it_and_an_absent_one_keeps_it() {
        let cleared: AgentEdit = serde_json::from_str(r#"{"vision_model": null}"#).unwrap();
        assert_eq!(cleared.vision_model, Some(None));
        let kept: AgentEdit = serde_json::from_str("{}").unwrap();
        assert_eq!(kept.vision_model, None);
    }

    #[test]
    fn a_new_agent_needs_its_name_model_and_url_and_refuses_unknown_fields() {
        let minimal: NewAgent =
            serde_json::from_str(r#"{"name": "a", "model": "m", "provider_base_url": "https://x.example/v1"}"#)
                .unwrap();
        assert!(minimal.toolsets.is_none() && !minimal.egress && minimal.approval_mode.is_none());
        let none: NewAgent = serde_json::from_str(
            r#"{"name": "a", "model": "m", "provider_base_url": "https://x.example/v1", "toolsets": []}"#,
        )
        .unwrap();
        assert_eq!(none.toolsets, Some(vec![]), "an empty list asks for no toolsets, not the defaults");
        assert!(serde_json::from_str::<NewAgent>(r#"{"name": "a", "model": "m"}"#).is_err());
        let unknown = r#"{"name": "a", "model": "m", "provider_base_url": "u", "colour": "red"}"#;
        assert!(serde_json::from_str::<NewAgent>(unknown).is_err());
    }
}
