//! What a turn that waits for the user shows: the question or approval and where to answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use hermes_core::{InteractionKind, PendingInteraction};

/// The `hermes.interaction` object of an answer whose turn waits for the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Interaction {
    #[schema(value_type = String, format = "uuid")]
    pub id: hermes_core::InteractionId,
    /// `approval` or `clarify`.
    #[schema(value_type = String)]
    pub kind: InteractionKind,
    /// Approval: `command`, `pattern_keys`, `description`, `choices`. Clarify: `question`,
    /// `choices`.
    #[schema(value_type = Object)]
    pub prompt: Value,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    /// `POST` the answer here.
    pub answer_url: String,
}

impl From<&PendingInteraction> for Interaction {
    fn from(i: &PendingInteraction) -> Self {
        Self {
            id: i.id,
            kind: i.kind,
            prompt: i.prompt.clone(),
            expires_at: i.expires_at,
            answer_url: format!("/v1/interactions/{}", i.id),
        }
    }
}
