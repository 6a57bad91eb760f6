//! The Responses API's objects: a response (`resp_<turn id>`) with its output items (the
//! assistant's message, each tool call and its result), built from the turn's state and the
//! messages it stored. Both the JSON answer and the stream build them here.

use std::collections::BTreeMap;

use hermes_core::{ChatMessage, FinishReason, PendingInteraction, Role, TurnId, TurnOutcome};
use hermes_store::TurnStatus;
use hermes_wire::v1::{
    AssistantRole, ContentPart, IncompleteDetails, IncompleteReason, InputTokensDetails, Interaction, ItemStatus,
    OutputItem, OutputTokensDetails, Reasoning, ResponseError, ResponseExtras, ResponseKind, ResponseObject,
    ResponseStatus, ResponseUsage, SummaryPart, TextConfig, Truncation,
};

use crate::completion::interaction_text;
use crate::responses_wire::response_id;

/// What a response object says besides the turn's own state.
#[derive(Debug, Clone)]
pub(crate) struct ResponseMeta {
    pub turn: TurnId,
    pub created_at: i64,
    pub model: String,
    pub instructions: Option<String>,
    pub previous: Option<TurnId>,
    pub store: bool,
    pub truncation: Truncation,
    pub session: hermes_core::SessionId,
}

/// The Responses API `usage` object.
pub(crate) fn usage(o: &TurnOutcome) -> ResponseUsage {
    let u = o.usage;
    ResponseUsage {
        input_tokens: u.prompt_tokens,
        input_tokens_details: InputTokensDetails { cached_tokens: u.cached_tokens },
        output_tokens: u.completion_tokens,
        output_tokens_details: OutputTokensDetails { reasoning_tokens: u.reasoning_tokens },
        total_tokens: u.total_tokens,
    }
}

/// The id of the assistant's message item.
pub(crate) fn message_id(turn: TurnId) -> String {
    format!("msg_{}", turn.as_uuid().simple())
}

/// The assistant's message item.
pub(crate) fn message_item(turn: TurnId, text: &str, status: ItemStatus) -> OutputItem {
    OutputItem::Message {
        id: message_id(turn),
        status,
        role: AssistantRole::Assistant,
        content: vec![ContentPart::text(text)],
    }
}

/// The id of the turn's `n`th reasoning item (from 0).
pub(crate) fn reasoning_id(turn: TurnId, n: usize) -> String {
    format!("rs_{}_{n}", turn.as_uuid().simple())
}

/// A reasoning item holding `text` as its one summary part (none while it opens).
pub(crate) fn reasoning_item(id: String, text: Option<&str>, status: ItemStatus) -> OutputItem {
    let summary = text.map(|t| SummaryPart::SummaryText { text: t.to_owned() }).into_iter().collect();
    OutputItem::Reasoning { id, status, summary }
}

pub(crate) fn function_call_item(call_id: &str, name: &str, arguments: &str, status: ItemStatus) -> OutputItem {
    OutputItem::FunctionCall {
        id: format!("fc_{call_id}"),
        status,
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

pub(crate) fn function_output_item(call_id: &str, output: &str) -> OutputItem {
    OutputItem::FunctionCallOutput {
        id: format!("fco_{call_id}"),
        status: ItemStatus::Completed,
        call_id: call_id.to_owned(),
        output: output.to_owned(),
    }
}

/// Tools whose names start with `_` are internal and never shown (as upstream).
pub(crate) fn internal_tool(name: &str) -> bool {
    name.starts_with('_')
}

/// The turn's reasoning, tool calls and results as output items, in the order they happened.
fn tool_items(turn: TurnId, messages: &[ChatMessage]) -> Vec<OutputItem> {
    let mut shown = std::collections::HashSet::new();
    let mut items = Vec::new();
    let mut reasoned = 0;
    for m in messages {
        match m.role {
            Role::Assistant => {
                if let Some(text) = m.reasoning.as_deref().filter(|r| !r.is_empty()) {
                    items.push(reasoning_item(reasoning_id(turn, reasoned), Some(text), ItemStatus::Completed));
                    reasoned += 1;
                }
                for call in m.tool_calls.iter().filter(|c| !internal_tool(&c.function.name)) {
                    shown.insert(call.id.clone());
                    let args = hermes_core::event_text(&call.function.arguments);
                    items.push(function_call_item(&call.id, &call.function.name, &args, ItemStatus::Completed));
                }
            }
            Role::Tool => {
                if let Some(id) = m.tool_call_id.as_deref().filter(|id| shown.contains(*id)) {
                    items.push(function_output_item(id, &hermes_core::event_text(&m.text())));
                }
            }
            _ => {}
        }
    }
    items
}

/// The `status` of a response whose turn is in `status`.
pub(crate) fn response_status(status: TurnStatus, outcome: Option<&TurnOutcome>) -> ResponseStatus {
    state_of(status, outcome).status
}

/// What a response whose turn is in `status` says of how it ended.
struct State {
    status: ResponseStatus,
    error: Option<ResponseError>,
    incomplete_details: Option<IncompleteDetails>,
}

fn state_of(status: TurnStatus, outcome: Option<&TurnOutcome>) -> State {
    let only = |status| State { status, error: None, incomplete_details: None };
    match (status, outcome) {
        (TurnStatus::Queued, _) => only(ResponseStatus::Queued),
        (TurnStatus::Running | TurnStatus::Waiting, _) | (_, None) => only(ResponseStatus::InProgress),
        (TurnStatus::Cancelled, Some(_)) => only(ResponseStatus::Cancelled),
        (_, Some(o)) => match o.finish_reason {
            FinishReason::Stop => only(ResponseStatus::Completed),
            FinishReason::Length => State {
                incomplete_details: Some(IncompleteDetails { reason: IncompleteReason::MaxOutputTokens }),
                ..only(ResponseStatus::Incomplete)
            },
            FinishReason::Error => State {
                error: Some(ResponseError {
                    code: o.error_code.unwrap_or(hermes_core::ErrorCode::ServerError),
                    message: o.error.clone().unwrap_or_else(|| "the turn failed".into()),
                }),
                ..only(ResponseStatus::Failed)
            },
        },
    }
}

/// The full response object, from the turn's state and the messages it stored.
pub(crate) fn response_object(
    meta: &ResponseMeta,
    status: TurnStatus,
    outcome: Option<&TurnOutcome>,
    messages: &[ChatMessage],
    interaction: Option<&PendingInteraction>,
) -> ResponseObject {
    let state = state_of(status, outcome);
    let mut output = tool_items(meta.turn, messages);
    let text = match (outcome, interaction) {
        (_, Some(i)) => Some(interaction_text(i)),
        (Some(o), None) if !o.content.is_empty() => Some(o.content.clone()),
        (Some(o), None) => o.error.clone(),
        (None, None) => None,
    };
    if let Some(text) = text {
        output.push(message_item(meta.turn, &text, ItemStatus::Completed));
    }
    let session_id = outcome.and_then(|o| o.session_id).unwrap_or(meta.session);
    ResponseObject {
        id: response_id(meta.turn),
        object: ResponseKind::Response,
        created_at: meta.created_at,
        status: state.status,
        background: false,
        error: state.error,
        incomplete_details: state.incomplete_details,
        instructions: meta.instructions.clone(),
        max_output_tokens: None,
        model: meta.model.clone(),
        output,
        parallel_tool_calls: true,
        previous_response_id: meta.previous.map(response_id),
        reasoning: Reasoning::default(),
        store: meta.store,
        temperature: None,
        text: TextConfig::default(),
        tool_choice: "auto".into(),
        tools: Vec::new(),
        top_p: None,
        truncation: meta.truncation,
        usage: outcome.map(usage),
        user: None,
        metadata: BTreeMap::new(),
        hermes: ResponseExtras { session_id, interaction: interaction.map(Interaction::from) },
    }
}
