//! `POST /v1/chat/completions` as OpenAI has it: the request, the `chat.completion` answer, and
//! the `chat.completion.chunk`s of a stream, with Hermes' named progress events.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use hermes_core::{ErrorCode, FinishReason, SessionId};

use super::Interaction;

/// The fields Hermes reads; every other OpenAI field is accepted and ignored, as OpenAI does.
/// Loosely typed on purpose: the api checks them and names the field that is wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChatCompletionRequest {
    /// The agent's name (`GET /v1/models`); optional when the key has one agent.
    #[serde(default)]
    pub model: Option<String>,
    /// OpenAI chat messages; text and image parts.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub messages: Option<Vec<Value>>,
    /// A boolean (the strings `"true"` and `"false"` count too).
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub stream: Option<Value>,
    /// `{"include_usage": true}` adds a last chunk with the usage.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub stream_options: Option<Value>,
    /// 0 to 2: this turn's sampling temperature (the agent's otherwise).
    #[serde(default)]
    #[schema(value_type = Option<f64>)]
    pub temperature: Option<Value>,
    /// Above 0, at most 1.
    #[serde(default)]
    #[schema(value_type = Option<f64>)]
    pub top_p: Option<Value>,
    /// The output cap of each model call, at most the agent's `client_limits.max_output_tokens`.
    #[serde(default)]
    #[schema(value_type = Option<u32>)]
    pub max_tokens: Option<Value>,
    /// The same as `max_tokens` (OpenAI's newer name); it wins when both are sent.
    #[serde(default)]
    #[schema(value_type = Option<u32>)]
    pub max_completion_tokens: Option<Value>,
    /// `none`, `minimal`, `low`, `medium`, `high` or `xhigh`, at most the agent's
    /// `client_limits.max_reasoning_effort`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub reasoning_effort: Option<Value>,
    /// `priority` (where the agent's `client_limits.allow_fast` allows it), `auto` or `default`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub service_tier: Option<Value>,
}

/// Always `chat.completion`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum CompletionKind {
    #[default]
    #[serde(rename = "chat.completion")]
    ChatCompletion,
}

/// Always `chat.completion.chunk`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum ChunkKind {
    #[default]
    #[serde(rename = "chat.completion.chunk")]
    ChatCompletionChunk,
}

/// The role of every message Hermes answers with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AssistantRole {
    #[default]
    Assistant,
}

/// A non-streaming answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChatCompletion {
    /// `chatcmpl-` and 32 hex digits.
    pub id: String,
    pub object: CompletionKind,
    pub created: i64,
    pub model: String,
    pub choices: Vec<ChatChoice>,
    pub usage: ChatUsage,
    /// Hermes extras: the pending interaction when the turn waits for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hermes: Option<ChatExtras>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChatChoice {
    pub index: u32,
    pub message: AssistantMessage,
    /// Always `null`.
    #[schema(value_type = Option<Object>)]
    pub logprobs: Option<Value>,
    /// `stop`, `length` or `error`.
    #[schema(value_type = String)]
    pub finish_reason: FinishReason,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AssistantMessage {
    pub role: AssistantRole,
    pub content: String,
    /// Always `null`.
    pub refusal: Option<String>,
    /// What the model reasoned before answering, where its provider shows it (DeepSeek's
    /// field, read by OpenAI-compatible chat front ends); left out when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ChatUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Left out when the turn made no model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// Left out when the turn made no model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

/// Completion tokens spent reasoning (part of `completion_tokens`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CompletionTokensDetails {
    pub reasoning_tokens: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PromptTokensDetails {
    pub cached_tokens: u64,
}

/// Hermes extras of an answer: what the turn waits for, or the session to continue with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChatExtras {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction: Option<Interaction>,
    /// Compaction moved the conversation to this new session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = "uuid")]
    pub session_id: Option<SessionId>,
}

/// One chunk of a stream. A chunk may also carry the usage (the last one, with no choices), a
/// turn's error, Hermes extras, or a named event's fields beside its empty delta: the official
/// SDKs hand every event to their chunk parser, so each is a valid chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChatChunk {
    pub id: String,
    pub object: ChunkKind,
    pub created: i64,
    pub model: String,
    pub choices: Vec<ChunkChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ChatUsage>,
    /// SDKs raise it as an API error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ChunkError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hermes: Option<ChatExtras>,
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub progress: Option<Progress>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    #[schema(value_type = Option<String>)]
    pub finish_reason: Option<FinishReason>,
}

/// What a chunk adds to the message; empty on the last chunk and on named events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<AssistantRole>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A piece of the model's reasoning, before the answer's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

/// Always `server_error`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServerErrorKind {
    #[default]
    ServerError,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChunkError {
    pub message: String,
    pub r#type: ServerErrorKind,
    #[schema(value_type = Option<String>)]
    pub code: Option<ErrorCode>,
}

/// The fields of a named event (`event: hermes.tool.progress` or `event: hermes.notice`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Progress {
    /// A tool started (`running`, with its label) or ended (`completed`, with `ok` and its time).
    Tool {
        tool: String,
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        status: ToolProgressStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ok: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// Something the user should know that is not part of the answer: `soft_cap_reached`.
    Notice { code: String, message: String },
}

impl Progress {
    /// The SSE event's name.
    pub fn event_name(&self) -> &'static str {
        match self {
            Self::Tool { .. } => "hermes.tool.progress",
            Self::Notice { .. } => "hermes.notice",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolProgressStatus {
    Running,
    Completed,
}

/// Builds the chunks of one completion.
#[derive(Debug, Clone)]
pub struct ChunkHead {
    pub id: String,
    pub created: i64,
    pub model: String,
}

impl ChunkHead {
    fn chunk(&self, choices: Vec<ChunkChoice>) -> ChatChunk {
        ChatChunk {
            id: self.id.clone(),
            object: ChunkKind::ChatCompletionChunk,
            created: self.created,
            model: self.model.clone(),
            choices,
            usage: None,
            error: None,
            hermes: None,
            progress: None,
        }
    }

    /// A chunk with one choice.
    pub fn delta(&self, delta: Delta, finish_reason: Option<FinishReason>) -> ChatChunk {
        self.chunk(vec![ChunkChoice { index: 0, delta, finish_reason }])
    }

    /// A chunk of text.
    pub fn text(&self, content: impl Into<String>) -> ChatChunk {
        self.delta(Delta { content: Some(content.into()), ..Delta::default() }, None)
    }

    /// A piece of reasoning.
    pub fn reasoning(&self, reasoning: impl Into<String>) -> ChatChunk {
        self.delta(Delta { reasoning_content: Some(reasoning.into()), ..Delta::default() }, None)
    }

    /// A named event: an empty chunk with the event's fields.
    pub fn progress(&self, progress: Progress) -> ChatChunk {
        ChatChunk { progress: Some(progress), ..self.delta(Delta::default(), None) }
    }

    /// The last chunk of an `include_usage` stream: no choices, the usage.
    pub fn usage(&self, usage: ChatUsage) -> ChatChunk {
        ChatChunk { usage: Some(usage), ..self.chunk(Vec::new()) }
    }

    /// The answer as one `chat.completion`.
    pub fn completion(
        &self,
        (content, reasoning_content): (String, Option<String>),
        finish_reason: FinishReason,
        usage: ChatUsage,
    ) -> ChatCompletion {
        ChatCompletion {
            id: self.id.clone(),
            object: CompletionKind::ChatCompletion,
            created: self.created,
            model: self.model.clone(),
            choices: vec![ChatChoice {
                index: 0,
                message: AssistantMessage { role: AssistantRole::Assistant, content, refusal: None, reasoning_content },
                logprobs: None,
                finish_reason,
            }],
            usage,
            hermes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn head() -> ChunkHead {
        ChunkHead { id: "chatcmpl-1".into(), created: 7, model: "a".into() }
    }

    #[test]
    fn chunks_have_openais_shape_and_named_events_stay_valid_chunks() {
        let text = serde_json::to_value(head().text("hi")).unwrap();
        assert_eq!(
            text,
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7, "model": "a",
                   "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": null}]})
        );
        let progress = head().progress(Progress::Tool {
            tool: "terminal".into(),
            tool_call_id: "c1".into(),
            status: ToolProgressStatus::Running,
            label: Some("ls".into()),
            ok: None,
            duration_ms: None,
        });
        let value = serde_json::to_value(&progress).unwrap();
        assert_eq!(value["choices"], json!([{"index": 0, "delta": {}, "finish_reason": null}]));
        assert_eq!((value["toolCallId"].as_str(), value["status"].as_str()), (Some("c1"), Some("running")));
        assert!(value.get("ok").is_none() && value.get("usage").is_none());
        let usage = serde_json::to_value(head().usage(ChatUsage::default())).unwrap();
        assert_eq!((usage["choices"].clone(), usage["usage"]["total_tokens"].clone()), (json!([]), json!(0)));
    }

    #[test]
    fn a_completion_says_its_message_has_no_refusal() {
        let done = head().completion(("ok".into(), None), FinishReason::Stop, ChatUsage::default());
        let value = serde_json::to_value(done).unwrap();
        assert_eq!(value["choices"][0]["message"], json!({"role": "assistant", "content": "ok", "refusal": null}));
        assert_eq!(value["choices"][0]["finish_reason"], "stop");
        assert!(value.get("hermes").is_none());
    }
}
