//! The `POST /v1/responses` request as OpenAI's Responses API clients send it, checked. Like
//! chat completions, system and developer items become per-request instructions and the last
//! user item is the input; the rest seeds a new conversation.

use serde_json::Value;

use hermes_core::{ChatMessage, Role, TurnId};
use hermes_http::{ApiError, ErrorCode};
use hermes_wire::v1::ResponsesRequest;

use hermes_http::chat_request::{MAX_MESSAGES, bad, parse_message, request_bool};

/// History kept by `truncation: "auto"` (upstream's figure).
const AUTO_TRUNCATION_MESSAGES: usize = 100;
/// Longest conversation name.
const MAX_CONVERSATION_CHARS: usize = 256;

/// Where the conversation of a request comes from.
#[derive(Debug, PartialEq)]
pub(crate) enum Continues {
    /// Nothing earlier: a new conversation (seeded with `history`).
    Nothing,
    /// The stored response with this id.
    Response(TurnId),
    /// The latest response of this named conversation, if it has one yet.
    Conversation(String),
}

/// A checked request.
#[derive(Debug)]
pub(crate) struct ParsedResponses {
    /// What the request asks of the model (checked against the agent's limits later).
    pub settings: hermes_core::ModelSettings,
    pub model: Option<String>,
    pub stream: bool,
    pub store: bool,
    pub auto_truncation: bool,
    pub instructions: Option<String>,
    pub continues: Continues,
    /// Messages before the input: the explicit `conversation_history` and earlier input items.
    /// When the client sent `conversation_history`, it wins over any stored chain.
    pub history: Vec<ChatMessage>,
    pub explicit_history: bool,
    pub input: ChatMessage,
}

/// `resp_<32 hex>`: the turn behind a response.
pub(crate) fn response_id(turn: TurnId) -> String {
    format!("resp_{}", turn.as_uuid().simple())
}

/// The turn a `resp_...` id names, if it is well formed.
pub(crate) fn parse_response_id(id: &str) -> Option<TurnId> {
    let hex = id.trim().strip_prefix("resp_")?;
    uuid::Uuid::try_parse(hex).ok().map(TurnId::from_uuid)
}

fn text_field(value: Option<Value>, param: &'static str) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(bad(ErrorCode::InvalidType, format!("{param} must be a string")).with_param(param)),
    }
}

/// Input items as messages. Items the server produced itself and a client echoes back
/// (`function_call`, `function_call_output`, `reasoning`) are skipped: the session has them.
fn input_messages(input: Value) -> Result<Vec<ChatMessage>, ApiError> {
    let items = match input {
        Value::String(text) => vec![Value::String(text)],
        Value::Array(items) => items,
        _ => return Err(bad(ErrorCode::InvalidType, "input must be a string or an array of items").with_param("input")),
    };
    if items.len() > MAX_MESSAGES {
        return Err(
            bad(ErrorCode::TooManyMessages, format!("input may hold at most {MAX_MESSAGES} items")).with_param("input")
        );
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let item = match item {
            Value::String(text) => serde_json::json!({ "role": "user", "content": text }),
            Value::Object(mut obj) => {
                match obj.get("type").and_then(Value::as_str) {
                    None | Some("message") => {}
                    Some("function_call" | "function_call_output" | "reasoning") => continue,
                    Some(other) => {
                        return Err(bad(
                            ErrorCode::UnsupportedInputItem,
                            format!("input[{i}]: items of type {other:?} are not supported (send messages)"),
                        )
                        .with_param("input"));
                    }
                }
                obj.remove("type");
                obj.remove("id");
                obj.remove("status");
                obj.entry("role").or_insert_with(|| Value::String("user".into()));
                Value::Object(obj)
            }
            _ => {
                return Err(bad(ErrorCode::InvalidType, format!("input[{i}] must be a string or an object"))
                    .with_param("input"));
            }
        };
        out.push(parse_message("input", i, item)?);
    }
    Ok(out)
}

fn history_messages(value: Value) -> Result<Vec<ChatMessage>, ApiError> {
    let Value::Array(items) = value else {
        return Err(bad(ErrorCode::InvalidType, "conversation_history must be an array of messages")
            .with_param("conversation_history"));
    };
    if items.len() > MAX_MESSAGES {
        return Err(bad(
            ErrorCode::TooManyMessages,
            format!("conversation_history may hold at most {MAX_MESSAGES} messages"),
        )
        .with_param("conversation_history"));
    }
    items.into_iter().enumerate().map(|(i, m)| parse_message("conversation_history", i, m)).collect()
}

fn conversation_name(value: Value) -> Result<String, ApiError> {
    // OpenAI sends a conversation as an id string or as `{ "id": ... }`.
    let name = match &value {
        Value::String(s) => s.trim(),
        Value::Object(obj) => obj.get("id").and_then(Value::as_str).unwrap_or_default().trim(),
        _ => "",
    };
    if name.is_empty() || name.chars().count() > MAX_CONVERSATION_CHARS || name.chars().any(char::is_control) {
        return Err(bad(
            ErrorCode::InvalidValue,
            "conversation must be a name of 1 to 256 characters without control characters",
        )
        .with_param("conversation"));
    }
    Ok(name.to_owned())
}

/// The request's sampling fields, its `reasoning` object read for its `effort`.
fn requested_settings(mut asked: hermes_http::Asked) -> Result<hermes_core::ModelSettings, ApiError> {
    asked.effort.0 = match asked.effort.0 {
        None | Some(Value::Null) => None,
        Some(Value::Object(reasoning)) => reasoning.get("effort").cloned(),
        Some(_) => {
            return Err(ApiError::invalid_request(ErrorCode::InvalidType, "reasoning must be an object")
                .with_param("reasoning"));
        }
    };
    hermes_http::requested_settings(asked)
}

impl TryFrom<ResponsesRequest> for ParsedResponses {
    type Error = ApiError;

    fn try_from(request: ResponsesRequest) -> Result<Self, ApiError> {
        let stream = request_bool(request.stream, "stream", false)?;
        let store = request_bool(request.store, "store", true)?;
        let settings = requested_settings(hermes_http::Asked {
            temperature: request.temperature,
            top_p: request.top_p,
            max_tokens: (request.max_output_tokens, "max_output_tokens"),
            effort: (request.reasoning, "reasoning.effort"),
            service_tier: request.service_tier,
        })?;
        let auto_truncation = match text_field(request.truncation, "truncation")?.as_deref() {
            None | Some("disabled") => false,
            Some("auto") => true,
            Some(_) => {
                return Err(
                    bad(ErrorCode::InvalidValue, "truncation must be auto or disabled").with_param("truncation")
                );
            }
        };
        let previous = text_field(request.previous_response_id.map(Value::String), "previous_response_id")?;
        let conversation = request.conversation.filter(|v| !v.is_null()).map(conversation_name).transpose()?;
        let continues = match (previous, conversation) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    ErrorCode::InvalidRequest,
                    "send either previous_response_id or conversation, not both",
                )
                .with_param("conversation"));
            }
            (Some(id), None) => Continues::Response(parse_response_id(&id).ok_or_else(|| {
                ApiError::not_found(ErrorCode::ResponseNotFound, format!("Previous response not found: {id}"))
                    .with_param("previous_response_id")
            })?),
            (None, Some(name)) => Continues::Conversation(name),
            (None, None) => Continues::Nothing,
        };
        let raw_input = request
            .input
            .filter(|v| !v.is_null())
            .ok_or_else(|| bad(ErrorCode::MissingRequiredParameter, "input is required").with_param("input"))?;
        let mut instructions: Vec<String> =
            text_field(request.instructions, "instructions")?.into_iter().filter(|t| !t.trim().is_empty()).collect();
        let explicit = request.conversation_history.filter(|v| !v.is_null()).map(history_messages).transpose()?;
        let explicit_history = explicit.is_some();
        let mut history = Vec::new();
        for msg in explicit.unwrap_or_default().into_iter().chain(input_messages(raw_input)?) {
            if msg.role == Role::System {
                instructions.push(msg.text());
            } else {
                history.push(msg);
            }
        }
        let input = match history.pop() {
            Some(m) if (m.role == Role::User && !m.text().trim().is_empty()) || has_attachment(&m) => m,
            _ => return Err(bad(ErrorCode::InvalidInput, "No user message found in input").with_param("input")),
        };
        let mut history: Vec<ChatMessage> =
            history.into_iter().map(hermes_http::chat_request::without_file_bytes).collect();
        if auto_truncation && history.len() > AUTO_TRUNCATION_MESSAGES {
            history.drain(..history.len() - AUTO_TRUNCATION_MESSAGES);
        }
        let model = request.model.map(|m| m.trim().to_owned()).filter(|m| !m.is_empty());
        Ok(ParsedResponses {
            model,
            settings,
            stream,
            store,
            auto_truncation,
            instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
            continues,
            history,
            explicit_history,
            input,
        })
    }
}

/// A user message with an image or a file, which may come without words.
fn has_attachment(m: &ChatMessage) -> bool {
    use hermes_core::ContentPart::{File, ImageUrl};
    m.role == Role::User
        && matches!(&m.content, Some(hermes_core::Content::Parts(parts))
            if parts.iter().any(|p| matches!(p, ImageUrl { .. } | File { .. })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<ParsedResponses, ApiError> {
        ParsedResponses::try_from(serde_json::from_value::<ResponsesRequest>(v).unwrap())
    }

    #[test]
    fn input_items_become_history_instructions_and_input() {
        let parsed = parse(json!({
            "model": "a", "instructions": "be brief", "store": "false", "truncation": "auto", "temperature": 1,
            "input": [
                {"role": "developer", "content": "use French"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                 "content": [{"type": "output_text", "text": "hello", "annotations": []}]},
                {"type": "function_call", "call_id": "c", "name": "x", "arguments": "{}"},
                "again"
            ]
        }))
        .unwrap();
        assert!(!parsed.store && parsed.auto_truncation && !parsed.stream);
        assert_eq!(parsed.instructions.as_deref(), Some("be brief\n\nuse French"));
        assert_eq!(parsed.history.len(), 2);
        assert_eq!(parsed.input.text(), "again");
        assert_eq!(parsed.continues, Continues::Nothing);
    }

    #[test]
    fn chaining_takes_a_response_id_or_a_conversation_name_but_not_both() {
        let turn = TurnId::new();
        let id = response_id(turn);
        let parsed = parse(json!({"input": "x", "previous_response_id": id})).unwrap();
        assert_eq!(parsed.continues, Continues::Response(turn));
        let parsed = parse(json!({"input": "x", "conversation": {"id": "support-42"}})).unwrap();
        assert_eq!(parsed.continues, Continues::Conversation("support-42".into()));
        let both = parse(json!({"input": "x", "previous_response_id": id, "conversation": "c"})).unwrap_err();
        assert_eq!(both.status, 400);
        let unknown = parse(json!({"input": "x", "previous_response_id": "resp_nothex"})).unwrap_err();
        assert_eq!(unknown.status, 404);
    }

    #[test]
    fn bad_requests_are_refused_with_a_useful_code() {
        let cases = [
            (json!({}), "missing_required_parameter"),
            (json!({"input": 3}), "invalid_type"),
            (json!({"input": [{"role": "assistant", "content": "x"}]}), "invalid_input"),
            (json!({"input": [{"type": "file_search_call"}]}), "unsupported_input_item"),
            (json!({"input": "x", "store": 5}), "invalid_type"),
            (json!({"input": "x", "truncation": "middle"}), "invalid_value"),
            (json!({"input": "x", "conversation": ""}), "invalid_value"),
            (json!({"input": "x", "conversation_history": [{"role": "user"}]}), "invalid_messages"),
            (json!({"input": "  "}), "invalid_input"),
        ];
        for (body, code) in cases {
            let err = parse(body.clone()).unwrap_err();
            assert_eq!(err.code.map(hermes_http::ErrorCode::as_str), Some(code), "{body}");
        }
    }

    #[test]
    fn auto_truncation_keeps_the_last_hundred_messages() {
        let history: Vec<Value> = (0..150).map(|i| json!({"role": "user", "content": format!("m{i}")})).collect();
        let parsed = parse(json!({"input": "x", "truncation": "auto", "conversation_history": history})).unwrap();
        assert_eq!(parsed.history.len(), AUTO_TRUNCATION_MESSAGES);
        assert_eq!(parsed.history[0].text(), "m50");
        assert!(parsed.explicit_history);
    }
}
