//! OpenAI-form messages to a Responses API request.

use serde_json::{Value, json};

use hermes_core::{ApiMode, Content, ContentPart, ModelSettings, ReasoningEffort, Role};

use crate::ChatRequest;
use crate::endpoint::Endpoint;
use crate::models::{openai_knobs, reasons_by_default};

/// What the Responses API is asked to include so reasoning survives between calls
/// (`store: false` keeps nothing at the provider).
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// The settings as Responses fields, on `body`.
fn apply_settings(body: &mut Value, endpoint: &Endpoint, settings: &ModelSettings) {
    let (sampling, reasoning) = openai_knobs(&endpoint.provider, &endpoint.model);
    if let Some(t) = settings.temperature.filter(|_| sampling) {
        body["temperature"] = json!(t);
    }
    if let Some(p) = settings.top_p.filter(|_| sampling) {
        body["top_p"] = json!(p);
    }
    let effort = settings.reasoning_effort.filter(|_| reasoning);
    let reasons = match effort {
        Some(ReasoningEffort::None) => {
            body["reasoning"] = json!({"effort": "none"});
            false
        }
        Some(effort) => {
            body["reasoning"] = json!({"effort": effort, "summary": "auto"});
            true
        }
        None => reasons_by_default(&endpoint.model),
    };
    if reasons {
        body["include"] = json!([ENCRYPTED_REASONING]);
    }
    if settings.fast == Some(true) && endpoint.has_priority_tier() {
        body["service_tier"] = json!("priority");
    }
}

fn parts(content: &Option<Content>, role: Role) -> Value {
    let text_type = if role == Role::Assistant { "output_text" } else { "input_text" };
    match content {
        None => json!([]),
        Some(Content::Text(t)) => json!([{ "type": text_type, "text": t }]),
        Some(Content::Parts(parts)) => Value::Array(
            parts
                .iter()
                .map(|p| match p {
                    ContentPart::Text { text } => json!({ "type": text_type, "text": text }),
                    ContentPart::ImageUrl { image_url } => json!({ "type": "input_image", "image_url": image_url.url }),
                    // The worker replaces files with notes before a turn begins; never bytes here.
                    ContentPart::File { file } => json!({ "type": text_type, "text": file.mention() }),
                })
                .collect(),
        ),
    }
}

/// Builds the request body for `endpoint` (streaming, not stored at the provider: Postgres is
/// our store, and encrypted reasoning items carry reasoning from call to call).
pub fn build_request(endpoint: &Endpoint, request: &ChatRequest) -> Value {
    let model = endpoint.model.as_str();
    let mut instructions: Vec<String> = Vec::new();
    let mut input: Vec<Value> = Vec::new();
    for m in &request.messages {
        match m.role {
            Role::System => instructions.push(m.text()),
            Role::User => input.push(json!({ "role": "user", "content": parts(&m.content, Role::User) })),
            Role::Assistant => {
                // Reasoning items come back first, before the answer and calls they led to.
                input.extend(m.replay_for(ApiMode::Responses, &endpoint.base_url, model).iter().cloned());
                if !m.text().is_empty() {
                    input.push(json!({ "role": "assistant", "content": parts(&m.content, Role::Assistant) }));
                }
                for c in &m.tool_calls {
                    input.push(json!({ "type": "function_call", "call_id": c.id, "name": c.function.name,
                                       "arguments": c.function.arguments }));
                }
            }
            Role::Tool => input.push(json!({
                "type": "function_call_output",
                "call_id": m.tool_call_id.clone().unwrap_or_default(),
                "output": m.text(),
            })),
        }
    }
    let tools: Vec<Value> = request
        .tools
        .iter()
        .filter_map(|t| t.get("function"))
        .map(|f| json!({ "type": "function", "name": f["name"], "description": f.get("description").cloned().unwrap_or(json!("")),
                         "parameters": f.get("parameters").cloned().unwrap_or(json!({"type": "object"})) }))
        .collect();
    let mut body = json!({ "model": model, "input": input, "stream": true, "store": false });
    if !instructions.is_empty() {
        body["instructions"] = json!(instructions.join("\n\n"));
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if let Some(max) = request.max_tokens {
        body["max_output_tokens"] = json!(max);
    }
    apply_settings(&mut body, endpoint, &request.settings);
    body
}
