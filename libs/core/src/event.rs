//! Events a worker publishes while it runs a turn, consumed by whoever holds the client
//! (an API pod's HTTP response, a gateway pod's chat).

use serde::{Deserialize, Serialize};

use crate::ids::{SessionId, TenantId, TurnId};

/// Token usage of one or more LLM calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Prompt tokens read from the provider's cache (billed at a discount).
    #[serde(default)]
    pub cached_tokens: u64,
    /// Prompt tokens written to the provider's cache (Anthropic bills them at a premium).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Completion tokens spent reasoning (part of `completion_tokens` and billed as output),
    /// where the provider reports them.
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Served on the provider's priority tier (OpenAI's `service_tier` `priority` or `fast`,
    /// Anthropic's `speed: fast`), as the provider reports it: priced at a premium.
    #[serde(default)]
    pub priority: bool,
}

/// Whether a provider's word for the tier that served a call is its priority (fast) tier.
pub fn is_priority_tier(tier: &str) -> bool {
    matches!(tier, "priority" | "fast")
}

/// One answered model call: the endpoint that answered it (after any fallback), the pooled
/// key it used and its tokens. The model client meters each call (`hermes_llm::CallMeter`);
/// the store keeps one ledger row a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCall {
    /// Why the call was made: `main`, `auxiliary` (summaries), `subagent`, ...
    pub purpose: crate::CallPurpose,
    pub provider: String,
    pub model: String,
    /// The pooled key's id, when a key was used.
    pub key_id: Option<String>,
    pub usage: Usage,
    /// From the request to the answer's last byte, retries of this endpoint included.
    pub latency_ms: u64,
}

impl Usage {
    /// Adds another call's usage to this one.
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.priority |= other.priority;
    }
}

/// Why a turn's answer ended, in OpenAI's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    Error,
}

/// The end result of a turn, stored on the turn row and sent in the final event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnOutcome {
    pub content: String,
    pub finish_reason: FinishReason,
    pub usage: Usage,
    /// Set when the turn failed; a short, user-safe explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Machine-readable error code (`agent_incomplete`, `provider_timeout`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<crate::ErrorCode>,
    /// The session the conversation continues in, when the turn compacted it into a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<crate::SessionId>,
}

impl TurnOutcome {
    /// The outcome of a turn stopped at the user's request.
    pub fn cancelled() -> Self {
        Self {
            content: String::new(),
            finish_reason: FinishReason::Stop,
            usage: Usage::default(),
            error: Some("the turn was stopped before it finished".into()),
            error_code: Some(crate::ErrorCode::Cancelled),
            session_id: None,
        }
    }
}

/// Most characters of tool arguments or output an event carries: events are for live
/// display, the full text is in the session's messages.
pub const EVENT_TEXT_CHARS: usize = 8_000;

/// `text` cut to [`EVENT_TEXT_CHARS`], saying how much was left out.
pub fn event_text(text: &str) -> String {
    let total = text.chars().count();
    if total <= EVENT_TEXT_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(EVENT_TEXT_CHARS).collect();
    cut.push_str(&format!("…[{} more characters]", total - EVENT_TEXT_CHARS));
    cut
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnEventKind {
    /// A worker started (or resumed) the turn; the envelope's `attempt` says which run.
    Started,
    /// A piece of the answer text.
    Delta { text: String },
    /// A piece of reasoning text; never part of the answer.
    Reasoning { text: String },
    /// A tool call began. `preview` is a short excerpt of the arguments for progress lines;
    /// `arguments` holds them up to [`EVENT_TEXT_CHARS`] (Responses API `function_call` items).
    ToolStarted {
        call_id: String,
        tool: String,
        preview: String,
        #[serde(default)]
        arguments: String,
    },
    /// A tool call ended; `output` is its result up to [`EVENT_TEXT_CHARS`].
    ToolCompleted {
        call_id: String,
        tool: String,
        ok: bool,
        duration_ms: u64,
        #[serde(default)]
        output: String,
    },
    /// A delegated child of this turn started a tool (children in the foreground run inside
    /// the turn's `delegate_task` call): task `position` of `tasks`, for progress lines. A
    /// pod that does not know this event drops it.
    ChildTool { position: u32, tasks: u32, tool: String, preview: String },
    /// Something the user should know that is not part of the answer: `soft_cap_reached`.
    Notice { code: String, message: String },
    /// The turn ended (successfully or not); always the last event.
    Finished { outcome: TurnOutcome },
    /// The turn waits for the user (an approval or a question); the last event of this run.
    /// Answering it (`POST /v1/interactions/{id}`) resumes the turn.
    Waiting { interaction: PendingInteraction },
}

/// The answer a parked call resumes with (`interactions.answer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum InteractionAnswer {
    /// An approval's choice.
    Approval { choice: crate::ApprovalChoice },
    /// A question's answer (typed, or the text of the button pressed).
    Text { text: String },
    /// Nobody answered in time: an approval counts as denied.
    Expired { expired: bool },
}

impl InteractionAnswer {
    pub fn text(text: impl Into<String>) -> Self {
        InteractionAnswer::Text { text: text.into() }
    }
}

/// A question a parked turn waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingInteraction {
    pub id: crate::InteractionId,
    pub kind: crate::InteractionKind,
    /// Approval: `command`, `pattern_keys`, `description`, `choices`. Clarify: `question`,
    /// `choices`.
    pub prompt: serde_json::Value,
    /// Unanswered by then, it counts as "deny" (approval) or "no answer" (clarify).
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// An event with its addressing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnEvent {
    pub tenant_id: TenantId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    /// The attempt (1 on the first run of the turn) that produced the event; listeners drop
    /// events of attempts older than the newest they saw.
    #[serde(default)]
    pub attempt: u32,
    #[serde(flatten)]
    pub kind: TurnEventKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_round_trips_through_json() {
        #[expect(clippy::disallowed_methods, reason = "test fixture")]
        let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
        let kinds = [
            TurnEventKind::Started,
            TurnEventKind::Delta { text: "hi".into() },
            TurnEventKind::ToolCompleted {
                call_id: "c".into(),
                tool: "t".into(),
                ok: true,
                duration_ms: 3,
                output: "done".into(),
            },
            TurnEventKind::Finished { outcome: TurnOutcome::cancelled() },
        ];
        for kind in kinds {
            let event =
                TurnEvent { tenant_id: tenant, session_id: SessionId::new(), turn_id: TurnId::new(), attempt: 2, kind };
            let json = serde_json::to_string(&event).unwrap();
            let back: TurnEvent = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
            assert_eq!(back, event);
        }
    }
}
