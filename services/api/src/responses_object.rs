//! The Responses API's objects: a response (`resp_<turn id>`) with its output items (the
//! assistant's message, each tool call and its result), built from the turn's state and the
//! messages it stored. Both the JSON answer and the stream build them here.

use serde_json::{Value, json};

use hermes_core::{ChatMessage, FinishReason, PendingInteraction, Role, TurnId, TurnOutcome};
use hermes_store::TurnStatus;

use crate::completion::{interaction_json, interaction_text};
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
    pub truncation: String,
    pub session: hermes_core::SessionId,
}

/// The Responses API `usage` object.
pub(crate) fn usage_json(o: Option<&TurnOutcome>) -> Value {
    let u = o.map(|o| o.usage).unwrap_or_default();
    json!({
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": { "cached_tokens": u.cached_tokens },
        "output_tokens": u.completion_tokens,
        "output_tokens_details": { "reasoning_tokens": 0 },
        "total_tokens": u.total_tokens,
    })
}

/// The assistant's message item.
pub(crate) fn message_item(turn: TurnId, text: &str, status: &str) -> Value {
    json!({
        "id": format!("msg_{}", turn.as_uuid().simple()),
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{ "type": "output_text", "text": text, "annotations": [] }],
    })
}

pub(crate) fn function_call_item(call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({ "id": format!("fc_{call_id}"), "type": "function_call", "status": status, "call_id": call_id,
            "name": name, "arguments": arguments })
}

pub(crate) fn function_output_item(call_id: &str, output: &str) -> Value {
    json!({ "id": format!("fco_{call_id}"), "type": "function_call_output", "status": "completed",
            "call_id": call_id, "output": output })
}

/// Tools whose names start with `_` are internal and never shown (as upstream).
pub(crate) fn internal_tool(name: &str) -> bool {
    name.starts_with('_')
}

/// The turn's tool calls and results as output items, in the order they happened.
fn tool_items(messages: &[ChatMessage]) -> Vec<Value> {
    let mut shown = std::collections::HashSet::new();
    let mut items = Vec::new();
    for m in messages {
        match m.role {
            Role::Assistant => {
                for call in m.tool_calls.iter().filter(|c| !internal_tool(&c.function.name)) {
                    shown.insert(call.id.clone());
                    let args = hermes_core::event_text(&call.function.arguments);
                    items.push(function_call_item(&call.id, &call.function.name, &args, "completed"));
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

/// A response's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ResponseStatus {
    Queued,
    InProgress,
    Cancelled,
    Completed,
    Incomplete,
    Failed,
}

/// The `status` of a response whose turn is in `status`.
pub(crate) fn response_status(status: TurnStatus, outcome: Option<&TurnOutcome>) -> ResponseStatus {
    state_of(status, outcome).0
}

/// `(status, error, incomplete_details)` of a response whose turn is in `status`.
fn state_of(status: TurnStatus, outcome: Option<&TurnOutcome>) -> (ResponseStatus, Value, Value) {
    let error = |o: &TurnOutcome| {
        json!({ "code": o.error_code.unwrap_or(hermes_core::ErrorCode::ServerError),
                "message": o.error.clone().unwrap_or_else(|| "the turn failed".into()) })
    };
    match (status, outcome) {
        (TurnStatus::Queued, _) => (ResponseStatus::Queued, Value::Null, Value::Null),
        (TurnStatus::Running | TurnStatus::Waiting, _) | (_, None) => {
            (ResponseStatus::InProgress, Value::Null, Value::Null)
        }
        (TurnStatus::Cancelled, Some(_)) => (ResponseStatus::Cancelled, Value::Null, Value::Null),
        (_, Some(o)) => match o.finish_reason {
            FinishReason::Stop => (ResponseStatus::Completed, Value::Null, Value::Null),
            FinishReason::Length => (ResponseStatus::Incomplete, Value::Null, json!({ "reason": "max_output_tokens" })),
            FinishReason::Error => (ResponseStatus::Failed, error(o), Value::Null),
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
) -> Value {
    let (state, error, incomplete_details) = state_of(status, outcome);
    let mut output = tool_items(messages);
    let text = match (outcome, interaction) {
        (_, Some(i)) => Some(interaction_text(i)),
        (Some(o), None) if !o.content.is_empty() => Some(o.content.clone()),
        (Some(o), None) => o.error.clone(),
        (None, None) => None,
    };
    if let Some(text) = text {
        output.push(message_item(meta.turn, &text, "completed"));
    }
    let session = outcome.and_then(|o| o.session_id).unwrap_or(meta.session);
    let mut hermes = json!({ "session_id": session });
    if let Some(i) = interaction {
        hermes["interaction"] = interaction_json(i);
    }
    json!({
        "id": response_id(meta.turn),
        "object": "response",
        "created_at": meta.created_at,
        "status": state,
        "background": false,
        "error": error,
        "incomplete_details": incomplete_details,
        "instructions": meta.instructions,
        "max_output_tokens": null,
        "model": meta.model,
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": meta.previous.map(response_id),
        "reasoning": { "effort": null, "summary": null },
        "store": meta.store,
        "temperature": null,
        "text": { "format": { "type": "text" } },
        "tool_choice": "auto",
        "tools": [],
        "top_p": null,
        "truncation": meta.truncation,
        "usage": if outcome.is_some() { usage_json(outcome) } else { Value::Null },
        "user": null,
        "metadata": {},
        "hermes": hermes,
    })
}
