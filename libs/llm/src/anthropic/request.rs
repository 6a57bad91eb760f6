//! OpenAI-form messages to an Anthropic Messages request.

use serde_json::{Value, json};

use hermes_core::{ApiMode, Content, ContentPart, ModelSettings, ReasoningEffort, Role};

use crate::ChatRequest;
use crate::endpoint::Endpoint;
use crate::models::{ThinkingStyle, is_claude_4_6, thinking_style};

/// Room for the answer beside a thinking budget (`max_tokens` counts both).
const ANSWER_ROOM: u32 = 4_096;
/// The beta that lets Claude 4 think between tool calls (budget-style models).
pub const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
/// The beta of fast mode (`speed: fast`).
pub const FAST_MODE_BETA: &str = "fast-mode-2026-02-01";

/// Default output cap: Anthropic requires `max_tokens`.
const DEFAULT_MAX_TOKENS: u32 = 8_192;

/// How long cached prefixes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheTtl {
    #[default]
    FiveMinutes,
    OneHour,
}

/// The breakpoint marker for `ttl`.
pub(crate) fn cache_control(ttl: CacheTtl) -> Value {
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

/// Adaptive thinking's effort for ours: `minimal` is `low`, and `xhigh` is `max` on Claude 4.6
/// (which has no `xhigh`).
fn adaptive_effort(effort: ReasoningEffort, model: &str) -> &'static str {
    match effort {
        ReasoningEffort::None | ReasoningEffort::Minimal | ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
        ReasoningEffort::Xhigh if is_claude_4_6(model) => "max",
        ReasoningEffort::Xhigh => "xhigh",
    }
}

/// The settings as Messages API fields, on `body`; the beta headers they need.
fn apply_settings(body: &mut Value, model: &str, settings: &ModelSettings, fast_tier: bool) -> Vec<&'static str> {
    let mut betas = Vec::new();
    let style = thinking_style(model);
    let thinking = settings.thinking();
    // Thinking takes no temperature, and a top_p only from 0.95; Claude after 4.6 takes neither.
    let mut sampling = thinking.is_none() && (style == ThinkingStyle::Budget || is_claude_4_6(model));
    match (thinking, style) {
        (None, _) => {}
        (Some(budget), ThinkingStyle::Budget) => {
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
            let room = budget.saturating_add(ANSWER_ROOM);
            if body["max_tokens"].as_u64().is_some_and(|max| max < u64::from(room)) {
                body["max_tokens"] = json!(room);
            }
            betas.push(INTERLEAVED_THINKING_BETA);
            if let Some(p) = settings.top_p.filter(|p| *p >= 0.95) {
                body["top_p"] = json!(p);
            }
        }
        (Some(_), ThinkingStyle::Adaptive) => {
            body["thinking"] = json!({"type": "adaptive", "display": "summarized"});
            let effort = settings.reasoning_effort.unwrap_or(ReasoningEffort::Medium);
            body["output_config"] = json!({"effort": adaptive_effort(effort, model)});
            sampling = false;
        }
    }
    if sampling {
        if let Some(t) = settings.temperature {
            body["temperature"] = json!(t.min(1.0));
        }
        if let Some(p) = settings.top_p {
            body["top_p"] = json!(p);
        }
    }
    if settings.fast == Some(true) && fast_tier {
        body["speed"] = json!("fast");
        betas.push(FAST_MODE_BETA);
    }
    betas
}

/// The request's settings for this call. Anthropic refuses thinking in a tool loop whose
/// assistant message lacks the signed thinking it came with (written by another model, by a
/// gateway that drops signatures, or before thinking was on): such a call goes without.
fn settings_for_call(endpoint: &Endpoint, request: &ChatRequest) -> ModelSettings {
    let mut settings = request.settings;
    let in_tool_loop = request.messages.last().is_some_and(|m| m.role == Role::Tool);
    let unsigned = request.messages.iter().rev().find(|m| m.role == Role::Assistant).is_some_and(|m| {
        !m.tool_calls.is_empty()
            && m.replay_for(ApiMode::AnthropicMessages, &endpoint.base_url, &endpoint.model).is_empty()
    });
    if settings.thinking().is_some() && in_tool_loop && unsigned {
        settings.reasoning_effort = Some(ReasoningEffort::None);
    }
    settings
}

/// Builds the request body (streaming) for `endpoint` with `system_and_3` cache breakpoints,
/// and the beta headers it needs.
pub fn build_request(endpoint: &Endpoint, request: &ChatRequest, ttl: CacheTtl) -> (Value, Vec<&'static str>) {
    let model = endpoint.model.as_str();
    let settings = settings_for_call(endpoint, request);
    let thinking = settings.thinking().is_some();
    let mut system: Vec<Value> = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for m in &request.messages {
        match m.role {
            Role::System => system.extend(content_blocks(&m.content)),
            Role::User => push_blocks(&mut messages, "user", content_blocks(&m.content)),
            Role::Assistant => {
                // Signed thinking goes back first, as it came, while thinking is on (Anthropic
                // checks it between tool calls); it is tied to the model that wrote it.
                let mut blocks: Vec<Value> = if thinking {
                    m.replay_for(ApiMode::AnthropicMessages, &endpoint.base_url, model).to_vec()
                } else {
                    Vec::new()
                };
                blocks.extend(content_blocks(&m.content));
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
        // Thinking blocks take no breakpoint.
        let cacheable = |b: &&mut Value| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking"));
        if let Some(block) = msg["content"].as_array_mut().and_then(|b| b.iter_mut().rev().find(cacheable)) {
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
    // Fast mode exists only at Anthropic itself.
    let betas = apply_settings(&mut body, model, &settings, endpoint.has_priority_tier());
    (body, betas)
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
