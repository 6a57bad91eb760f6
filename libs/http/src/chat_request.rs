//! The `/v1/chat/completions` request as OpenAI clients send it, checked and turned into a
//! turn: system messages become per-request instructions, the last user message is the input,
//! earlier messages seed a new session's history.

use base64::Engine;
use serde_json::Value;

use crate::{ApiError, ErrorCode};
use hermes_core::{ChatMessage, Content, ContentPart, Role, ToolCall};

/// Longest text of one message or part (upstream's cap).
pub const MAX_TEXT_CHARS: usize = 65_536;
const MAX_PARTS: usize = 1_000;
/// Deepest nesting of one message's JSON (upstream's cap).
const MAX_DEPTH: usize = 10;
/// Most messages one request may carry (a new session's seeded history included).
pub const MAX_MESSAGES: usize = 1_000;

pub use hermes_wire::v1::ChatCompletionRequest;

/// A checked request.
#[derive(Debug)]
pub struct ParsedChat {
    pub model: Option<String>,
    /// What the request asks of the model (checked against the agent's limits later).
    pub settings: hermes_core::ModelSettings,
    pub stream: bool,
    pub include_usage: bool,
    pub instructions: Option<String>,
    pub history: Vec<ChatMessage>,
    pub input: ChatMessage,
}

/// A boolean request field; like upstream, the strings "true" and "false" count too.
pub fn request_bool(value: Option<Value>, param: &'static str, default: bool) -> Result<bool, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(b),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
        Some(_) => Err(bad(ErrorCode::InvalidType, format!("{param} must be a boolean")).with_param(param)),
    }
}

pub fn bad(code: ErrorCode, msg: impl Into<String>) -> ApiError {
    ApiError::invalid_request(code, msg)
}

impl TryFrom<ChatCompletionRequest> for ParsedChat {
    type Error = ApiError;

    fn try_from(request: ChatCompletionRequest) -> Result<Self, ApiError> {
        let stream = request_bool(request.stream, "stream", false)?;
        let max_tokens = match request.max_completion_tokens {
            Some(v) if !v.is_null() => (Some(v), "max_completion_tokens"),
            _ => (request.max_tokens, "max_tokens"),
        };
        let settings = crate::sampling::requested(crate::sampling::Asked {
            temperature: request.temperature,
            top_p: request.top_p,
            max_tokens,
            effort: (request.reasoning_effort, "reasoning_effort"),
            service_tier: request.service_tier,
        })?;
        let include_usage = request
            .stream_options
            .as_ref()
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let raw = request
            .messages
            .ok_or_else(|| bad(ErrorCode::MissingRequiredParameter, "messages is required").with_param("messages"))?;
        if raw.is_empty() {
            return Err(
                bad(ErrorCode::EmptyMessages, "messages must contain at least one message").with_param("messages")
            );
        }
        if raw.len() > MAX_MESSAGES {
            return Err(bad(ErrorCode::TooManyMessages, format!("messages may hold at most {MAX_MESSAGES} messages"))
                .with_param("messages"));
        }
        let mut instructions = Vec::new();
        let mut convo = Vec::new();
        for (i, value) in raw.into_iter().enumerate() {
            let msg = parse_message("messages", i, value)?;
            if msg.role == Role::System {
                let text = msg.text();
                if !text.trim().is_empty() {
                    instructions.push(text);
                }
            } else {
                convo.push(msg);
            }
        }
        let input = match convo.pop() {
            Some(m) if m.role == Role::User => m,
            _ => {
                return Err(bad(ErrorCode::InvalidMessages, "the last non-system message must be from the user")
                    .with_param("messages"));
            }
        };
        let model = request.model.map(|m| m.trim().to_owned()).filter(|m| !m.is_empty());
        Ok(ParsedChat {
            model,
            settings,
            stream,
            include_usage,
            instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
            history: convo.into_iter().map(without_file_bytes).collect(),
            input,
        })
    }
}

/// How deeply `value` nests (a scalar is 1).
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
        _ => 1,
    }
}

/// One OpenAI-style message (`param[i]` of the request), checked against upstream's limits.
pub fn parse_message(param: &'static str, i: usize, value: Value) -> Result<ChatMessage, ApiError> {
    let at = |what: &str| format!("{param}[{i}]: {what}");
    if depth(&value) > MAX_DEPTH {
        return Err(
            bad(ErrorCode::ContentTooDeep, at(&format!("nests deeper than {MAX_DEPTH} levels"))).with_param(param)
        );
    }
    let Value::Object(obj) = value else {
        return Err(bad(ErrorCode::InvalidMessages, at("must be an object")).with_param(param));
    };
    let role_str = obj.get("role").and_then(Value::as_str).unwrap_or_default();
    let role = Role::parse(role_str).ok_or_else(|| {
        bad(ErrorCode::InvalidMessages, at(&format!("unknown role {role_str:?} (use system, user, assistant or tool)")))
            .with_param(param)
    })?;
    let content = match obj.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            check_len(param, i, s)?;
            Some(Content::Text(s.clone()))
        }
        Some(Value::Array(parts)) => Some(Content::Parts(parse_parts(param, i, parts)?)),
        Some(_) => {
            return Err(
                bad(ErrorCode::InvalidMessages, at("content must be a string or an array of parts")).with_param(param)
            );
        }
    };
    let tool_calls: Vec<ToolCall> = match obj.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| bad(ErrorCode::InvalidMessages, at(&format!("invalid tool_calls: {e}"))).with_param(param))?,
    };
    let tool_call_id = obj.get("tool_call_id").and_then(Value::as_str).map(str::to_owned);
    if role == Role::Tool && tool_call_id.is_none() {
        return Err(bad(ErrorCode::InvalidMessages, at("a tool message needs tool_call_id")).with_param(param));
    }
    if role == Role::User && content.as_ref().is_none_or(|c| matches!(c, Content::Parts(p) if p.is_empty())) {
        return Err(bad(ErrorCode::InvalidMessages, at("a user message needs content")).with_param(param));
    }
    Ok(ChatMessage {
        role,
        content,
        tool_calls,
        tool_call_id,
        name: obj.get("name").and_then(Value::as_str).map(str::to_owned),
        reasoning: None,
        replay: None,
    })
}

fn check_len(param: &'static str, i: usize, text: &str) -> Result<(), ApiError> {
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(bad(
            ErrorCode::ContentTooLong,
            format!("{param}[{i}]: text is longer than {MAX_TEXT_CHARS} characters"),
        )
        .with_param(param));
    }
    if text.contains('\0') {
        return Err(
            bad(ErrorCode::InvalidContent, format!("{param}[{i}]: text contains a NUL character")).with_param(param)
        );
    }
    Ok(())
}

fn parse_parts(param: &'static str, i: usize, parts: &[Value]) -> Result<Vec<ContentPart>, ApiError> {
    if parts.len() > MAX_PARTS {
        return Err(bad(ErrorCode::InvalidMessages, format!("{param}[{i}]: more than {MAX_PARTS} content parts")));
    }
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "text" | "input_text" | "output_text" => {
                let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
                check_len(param, i, text)?;
                out.push(ContentPart::Text { text: text.to_owned() });
            }
            "image_url" | "input_image" => {
                let url = part
                    .get("image_url")
                    .and_then(|u| u.get("url").and_then(Value::as_str).or_else(|| u.as_str()))
                    .unwrap_or_default();
                if !(url.starts_with("https://") || url.starts_with("http://") || url.starts_with("data:image/")) {
                    return Err(bad(
                        ErrorCode::InvalidImageUrl,
                        format!("{param}[{i}]: image URLs must be http(s) or data:image/..."),
                    ));
                }
                let detail = part.pointer("/image_url/detail").and_then(Value::as_str).map(str::to_owned);
                out.push(ContentPart::ImageUrl {
                    image_url: hermes_core::message::ImageUrl { url: url.to_owned(), detail },
                });
            }
            "file" | "input_file" => out.push(parse_file(param, i, part)?),
            other => {
                return Err(bad(
                    ErrorCode::UnsupportedContentType,
                    format!("{param}[{i}]: content part type {other:?} is not supported (use text, image_url or file)"),
                ));
            }
        }
    }
    Ok(out)
}

/// `msg` with each file part named instead: a client resends earlier files with the history,
/// and only the newest message's files go to the workspace.
pub fn without_file_bytes(mut msg: ChatMessage) -> ChatMessage {
    if let Some(Content::Parts(parts)) = &mut msg.content {
        for part in parts.iter_mut() {
            if let ContentPart::File { file } = part {
                *part = ContentPart::Text { text: file.mention() };
            }
        }
    }
    msg
}

/// The most bytes one file part may carry (the request body's limit caps them further).
const MAX_FILE_BYTES: usize = 20 * 1024 * 1024;

/// A file part: chat completions' `{"type": "file", "file": {"filename", "file_data"}}` or the
/// Responses API's flat `{"type": "input_file", "filename", "file_data"}`, the bytes as a
/// `data:<mime>;base64,...` URL or plain base64 (the type then comes from the name). The
/// worker keeps the file in the workspace's inbox.
fn parse_file(param: &'static str, i: usize, part: &Value) -> Result<ContentPart, ApiError> {
    let at = |what: &str| bad(ErrorCode::InvalidFile, format!("{param}[{i}]: {what}")).with_param(param);
    let fields = part.get("file").unwrap_or(part);
    let filename = fields.get("filename").and_then(Value::as_str).map(str::to_owned);
    if fields.get("file_id").is_some() || fields.get("file_url").is_some() {
        return Err(at("files by id or URL are not taken yet: send the bytes in file_data"));
    }
    let Some(data) = fields.get("file_data").and_then(Value::as_str) else {
        return Err(at("a file part needs file_data (a data: URL or base64) and a filename"));
    };
    let url = if data.starts_with("data:") {
        data.to_owned()
    } else {
        format!("data:{};base64,{data}", hermes_core::media::mime_for(filename.as_deref().unwrap_or_default()))
    };
    let encoded = url.split_once(";base64,").map(|(_, b64)| b64).unwrap_or_default();
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim());
    match decoded {
        Ok(bytes) if bytes.is_empty() => Err(at("the file is empty")),
        Ok(bytes) if bytes.len() > MAX_FILE_BYTES => Err(at("the file is larger than 20 MB")),
        Ok(_) => Ok(ContentPart::File { file: hermes_core::message::FileData { filename, file_data: Some(url) } }),
        Err(_) => Err(at("file_data is not a base64 data: URL (data:<type>;base64,...)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(v: Value) -> ChatCompletionRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn system_messages_become_instructions_and_the_last_user_message_the_input() {
        let parsed = ParsedChat::try_from(req(json!({
            "model": "a", "stream": "true", "stream_options": {"include_usage": true}, "temperature": 0.2,
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "developer", "content": "use French"},
                {"role": "user", "content": [{"type": "text", "text": "again"}]}
            ]
        })))
        .unwrap();
        assert!(parsed.stream && parsed.include_usage);
        assert_eq!(parsed.instructions.as_deref(), Some("be brief\n\nuse French"));
        assert_eq!(parsed.history.len(), 2);
        assert_eq!(parsed.input.text(), "again");
    }

    #[test]
    fn bad_messages_are_refused_with_a_useful_message() {
        let cases = [
            (json!({"messages": []}), "empty_messages"),
            (json!({}), "missing_required_parameter"),
            (json!({"messages": [{"role": "wizard", "content": "x"}]}), "invalid_messages"),
            (
                json!({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}),
                "invalid_messages",
            ),
            (json!({"messages": [{"role": "user", "content": [{"type": "file", "file": {}}]}]}), "invalid_file"),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}]}),
                "invalid_file",
            ),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "file", "file": {"file_data": "data:x;base64,!"}}]}]}),
                "invalid_file",
            ),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "audio", "audio": {}}]}]}),
                "unsupported_content_type",
            ),
            (json!({"messages": [{"role": "user", "content": "x".repeat(MAX_TEXT_CHARS + 1)}]}), "content_too_long"),
            (json!({"stream": 3, "messages": [{"role": "user", "content": "x"}]}), "invalid_type"),
            (json!({"messages": [{"role": "user", "content": "a\u{0}b"}]}), "invalid_content"),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "x",
                    "deep": [[[[[[[[[["too deep"]]]]]]]]]]}]}]}),
                "content_too_deep",
            ),
            (json!({"messages": vec![json!({"role": "user", "content": "x"}); MAX_MESSAGES + 1]}), "too_many_messages"),
        ];
        for (body, code) in cases {
            let err = ParsedChat::try_from(req(body.clone())).unwrap_err();
            assert_eq!(err.code.map(ErrorCode::as_str), Some(code), "{body}");
            assert_eq!(err.status, 400);
        }
    }
}
