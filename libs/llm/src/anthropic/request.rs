//! OpenAI-form messages to an Anthropic Messages request.

use serde_json::{Value, json};

use hermes_core::{Content, ContentPart, Role};

use crate::ChatRequest;

/// Default output cap: Anthropic requires `max_tokens`.
const DEFAULT_MAX_TOKENS: u32 = 8_192;

/// How long cached prefixes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheTtl {
    #[default]
    FiveMinutes,
    OneHour,
}

fn cache_control(ttl: CacheTtl) -> Value {
    match ttl {
        CacheTtl::FiveMinutes => json!({"type": "ephemeral"}),
        CacheTtl::OneHour => json!({"type": "ephemeral", "ttl": "1h"}),
    }
}

fn image_block(url: &str) -> Value {
    // data:image/png;base64,....
    if let Some(rest) = url.strip_prefix("data:")
        && let Some((meta, data)) = rest.split_once(',')
    {
        let media_type = meta.trim_end_matches(";base64");
        return json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}});
    }
    json!({"type": "image", "source": {"type": "url", "url": url}})
}

fn content_blocks(content: &Option<Content>) -> Vec<Value> {
    match content {
        None => Vec::new(),
        Some(Content::Text(t)) if t.is_empty() => Vec::new(),
        Some(Content::Text(t)) => vec![json!({"type": "text", "text": t})],
        Some(Content::Parts(parts)) => parts
            .iter()
            .map(|p| match p {
                ContentPart::Text { text } => json!({"type": "text", "text": text}),
                ContentPart::ImageUrl { image_url } => image_block(&image_url.url),
                // The worker replaces files with notes before a turn begins; never bytes here.
                ContentPart::File { file } => json!({"type": "text", "text": file.mention()}),
            })
            .collect(),
    }
}

/// Appends blocks to the last message if it has `role`, else starts a new one (Anthropic needs
/// user and assistant to alternate, and tool results to be user blocks).
fn push_blocks(out: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = out.last_mut()
        && last["role"] == role
        && let Some(existing) = last["content"].as_array_mut()
    {
        existing.extend(blocks);
        return;
    }
    out.push(json!({"role": role, "content": blocks}));
}

/// Builds the request body (streaming) with `system_and_3` cache breakpoints.
pub fn build_request(model: &str, request: &ChatRequest, ttl: CacheTtl) -> Value {
    let mut system: Vec<Value> = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for m in &request.messages {
        match m.role {
            Role::System => system.extend(content_blocks(&m.content)),
            Role::User => push_blocks(&mut messages, "user", content_blocks(&m.content)),
            Role::Assistant => {
                // Reasoning is not replayed: its signatures are tied to the model that wrote it.
                let mut blocks = content_blocks(&m.content);
                blocks.extend(m.tool_calls.iter().map(|c| {
                    let input: Value = serde_json::from_str(&c.function.arguments).unwrap_or_else(|_| json!({}));
                    json!({"type": "tool_use", "id": c.id, "name": c.function.name, "input": input})
                }));
                push_blocks(&mut messages, "assistant", blocks);
            }
            Role::Tool => push_blocks(
                &mut messages,
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.text(),
                })],
            ),
        }
    }
    // system_and_3: the system prompt, then the last block of each of the last three messages.
    if let Some(last) = system.last_mut() {
        last["cache_control"] = cache_control(ttl);
    }
    let n = messages.len();
    for msg in messages.iter_mut().skip(n.saturating_sub(3)) {
        if let Some(block) = msg["content"].as_array_mut().and_then(|b| b.last_mut()) {
            block["cache_control"] = cache_control(ttl);
        }
    }
    let tools: Vec<Value> = request
        .tools
        .iter()
        .filter_map(|t| t.get("function"))
        .map(|f| {
            json!({
                "name": f["name"],
                "description": f.get("description").cloned().unwrap_or(json!("")),
                "input_schema": f.get("parameters").cloned().unwrap_or(json!({"type": "object"})),
            })
        })
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
        "stream": true,
    });
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
