//! `POST /v1/responses` as OpenAI's Responses API has it: the request, the `response` object with
//! its output items, and the numbered events of a stream.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use hermes_core::{ErrorCode, SessionId};

use super::Interaction;

/// The fields Hermes reads; every other Responses API field is accepted and ignored. Loosely
/// typed on purpose: the api checks them and names the field that is wrong.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResponsesRequest {
    #[serde(default)]
    pub model: Option<String>,
    /// A string, or message items (`function_call*` and `reasoning` items are skipped).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub input: Option<Value>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub instructions: Option<Value>,
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// A conversation name (or `{"id": name}`) continuing from its latest response.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub conversation: Option<Value>,
    /// Explicit history; wins over chaining.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub conversation_history: Option<Value>,
    /// Default true.
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub store: Option<Value>,
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub stream: Option<Value>,
    /// `auto` keeps the last 100 history messages; `disabled` (the default) keeps them all.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub truncation: Option<Value>,
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
    pub max_output_tokens: Option<Value>,
    /// `{"effort": ...}`: `none` to `xhigh`, at most the agent's `client_limits.max_reasoning_effort`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub reasoning: Option<Value>,
    /// `priority` (where the agent's `client_limits.allow_fast` allows it), `auto` or `default`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub service_tier: Option<Value>,
}

/// Always `response`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResponseKind {
    #[default]
    Response,
}

/// A response's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseStatus {
    Queued,
    InProgress,
    Cancelled,
    Completed,
    Incomplete,
    Failed,
}

/// A Responses API `response` object. The fields Hermes does not use have OpenAI's defaults,
/// so SDKs that read them find them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResponseObject {
    /// `resp_` and 32 hex digits.
    pub id: String,
    pub object: ResponseKind,
    pub created_at: i64,
    pub status: ResponseStatus,
    pub background: bool,
    pub error: Option<ResponseError>,
    pub incomplete_details: Option<IncompleteDetails>,
    pub instructions: Option<String>,
    pub max_output_tokens: Option<u64>,
    pub model: String,
    pub output: Vec<OutputItem>,
    pub parallel_tool_calls: bool,
    pub previous_response_id: Option<String>,
    pub reasoning: Reasoning,
    pub store: bool,
    pub temperature: Option<f64>,
    pub text: TextConfig,
    /// Always `auto`.
    pub tool_choice: String,
    #[schema(value_type = Vec<Object>)]
    pub tools: Vec<Value>,
    pub top_p: Option<f64>,
    pub truncation: Truncation,
    pub usage: Option<ResponseUsage>,
    pub user: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub hermes: ResponseExtras,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResponseError {
    #[schema(value_type = String)]
    pub code: ErrorCode,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct IncompleteDetails {
    pub reason: IncompleteReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IncompleteReason {
    /// The model stopped at its output limit.
    MaxOutputTokens,
    /// The turn waits for the user; answering the interaction resumes it.
    InteractionRequired,
}

/// Always `{"effort": null, "summary": null}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Reasoning {
    pub effort: Option<String>,
    pub summary: Option<String>,
}

/// Always `{"format": {"type": "text"}}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TextConfig {
    pub format: TextFormat,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum TextFormat {
    #[default]
    Text,
}

/// `auto` keeps the last 100 history messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Truncation {
    Auto,
    #[default]
    Disabled,
}

impl Truncation {
    /// The wire name, which is also how a stored response keeps it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Disabled => "disabled",
        }
    }

    /// The setting a stored name means (`disabled` for any other).
    pub fn from_stored(name: &str) -> Self {
        if name == Self::Auto.as_str() { Self::Auto } else { Self::Disabled }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ResponseUsage {
    pub input_tokens: u64,
    pub input_tokens_details: InputTokensDetails,
    pub output_tokens: u64,
    pub output_tokens_details: OutputTokensDetails,
    pub total_tokens: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InputTokensDetails {
    pub cached_tokens: u64,
}

/// Always 0: reasoning is never billed apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OutputTokensDetails {
    pub reasoning_tokens: u64,
}

/// Hermes extras: the session to continue, and the pending interaction of a waiting turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResponseExtras {
    #[schema(value_type = String, format = "uuid")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction: Option<Interaction>,
}

/// Whether an output item is still being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    InProgress,
    Completed,
}

/// One item of a response's `output`: the model's reasoning, the assistant's message, a tool
/// call, or its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    /// What the model reasoned before one of its answers or tool calls, where its provider
    /// shows it (a summary at OpenAI, thinking at Anthropic, reasoning text elsewhere).
    Reasoning {
        /// `rs_`, the turn's 32 hex digits and the item's number in the turn.
        id: String,
        status: ItemStatus,
        summary: Vec<SummaryPart>,
    },
    Message {
        /// `msg_` and the turn's 32 hex digits.
        id: String,
        status: ItemStatus,
        role: super::AssistantRole,
        content: Vec<ContentPart>,
    },
    FunctionCall {
        /// `fc_` and the call id.
        id: String,
        status: ItemStatus,
        call_id: String,
        name: String,
        arguments: String,
    },
    FunctionCallOutput {
        /// `fco_` and the call id.
        id: String,
        status: ItemStatus,
        call_id: String,
        output: String,
    },
}

/// A part of a reasoning item's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SummaryPart {
    SummaryText { text: String },
}

/// A part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    OutputText {
        text: String,
        /// Always empty.
        #[schema(value_type = Vec<Object>)]
        annotations: Vec<Value>,
    },
}

impl ContentPart {
    pub fn text(text: impl Into<String>) -> Self {
        Self::OutputText { text: text.into(), annotations: Vec::new() }
    }
}

/// One event of a response stream, numbered from 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseStreamEvent {
    #[serde(flatten)]
    pub event: ResponseEvent,
    pub sequence_number: u64,
}

/// What happened, named as the SSE `event:` and the data's `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ResponseEvent {
    #[serde(rename = "response.created")]
    Created { response: Box<ResponseObject> },
    #[serde(rename = "response.in_progress")]
    InProgress { response: Box<ResponseObject> },
    #[serde(rename = "response.output_item.added")]
    ItemAdded { output_index: usize, item: OutputItem },
    #[serde(rename = "response.content_part.added")]
    PartAdded { item_id: String, output_index: usize, content_index: usize, part: ContentPart },
    #[serde(rename = "response.output_text.delta")]
    TextDelta { item_id: String, output_index: usize, content_index: usize, delta: String, logprobs: Vec<Value> },
    #[serde(rename = "response.output_text.done")]
    TextDone { item_id: String, output_index: usize, content_index: usize, text: String, logprobs: Vec<Value> },
    #[serde(rename = "response.content_part.done")]
    PartDone { item_id: String, output_index: usize, content_index: usize, part: ContentPart },
    #[serde(rename = "response.output_item.done")]
    ItemDone { output_index: usize, item: OutputItem },
    #[serde(rename = "response.reasoning_summary_part.added")]
    SummaryPartAdded { item_id: String, output_index: usize, summary_index: usize, part: SummaryPart },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    SummaryTextDelta { item_id: String, output_index: usize, summary_index: usize, delta: String },
    #[serde(rename = "response.reasoning_summary_text.done")]
    SummaryTextDone { item_id: String, output_index: usize, summary_index: usize, text: String },
    #[serde(rename = "response.reasoning_summary_part.done")]
    SummaryPartDone { item_id: String, output_index: usize, summary_index: usize, part: SummaryPart },
    #[serde(rename = "response.completed")]
    Completed { response: Box<ResponseObject> },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: Box<ResponseObject> },
    #[serde(rename = "response.failed")]
    Failed { response: Box<ResponseObject> },
}

impl ResponseEvent {
    /// The SSE event's name (the data's `type`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Created { .. } => "response.created",
            Self::InProgress { .. } => "response.in_progress",
            Self::ItemAdded { .. } => "response.output_item.added",
            Self::PartAdded { .. } => "response.content_part.added",
            Self::TextDelta { .. } => "response.output_text.delta",
            Self::TextDone { .. } => "response.output_text.done",
            Self::PartDone { .. } => "response.content_part.done",
            Self::ItemDone { .. } => "response.output_item.done",
            Self::SummaryPartAdded { .. } => "response.reasoning_summary_part.added",
            Self::SummaryTextDelta { .. } => "response.reasoning_summary_text.delta",
            Self::SummaryTextDone { .. } => "response.reasoning_summary_text.done",
            Self::SummaryPartDone { .. } => "response.reasoning_summary_part.done",
            Self::Completed { .. } => "response.completed",
            Self::Incomplete { .. } => "response.incomplete",
            Self::Failed { .. } => "response.failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn stream_events_are_named_by_their_type_and_numbered() {
        let event = ResponseEvent::TextDelta {
            item_id: "msg_1".into(),
            output_index: 0,
            content_index: 0,
            delta: "hi".into(),
            logprobs: Vec::new(),
        };
        let name = event.name();
        let value = serde_json::to_value(ResponseStreamEvent { event, sequence_number: 3 }).unwrap();
        assert_eq!(value["type"], name, "the name is what serde writes");
        assert_eq!(value["sequence_number"], 3);
        assert_eq!(value["delta"], "hi");
    }

    #[test]
    fn output_items_carry_their_type() {
        let message = OutputItem::Message {
            id: "msg_1".into(),
            status: ItemStatus::Completed,
            role: super::super::AssistantRole::Assistant,
            content: vec![ContentPart::text("ok")],
        };
        assert_eq!(
            serde_json::to_value(message).unwrap(),
            json!({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": "ok", "annotations": []}]})
        );
        let output = OutputItem::FunctionCallOutput {
            id: "fco_c".into(),
            status: ItemStatus::Completed,
            call_id: "c".into(),
            output: "x".into(),
        };
        assert_eq!(serde_json::to_value(output).unwrap()["type"], "function_call_output");
    }
}
