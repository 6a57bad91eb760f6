//! `/v1/messages`: the scripted model speaking Anthropic's native streaming API, so the
//! `anthropic_messages` transport is tested end to end.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::ScriptedReply;
use crate::server::{RecordedRequest, Shared, estimate_tokens, split_words, uuid_like};

fn event(kind: &str, data: Value) -> Result<Event, Infallible> {
    Ok(Event::default().event(kind).data(data.to_string()))
}

/// Whether the request turns thinking on.
fn thinks(body: &Value) -> bool {
    matches!(body["thinking"]["type"].as_str(), Some("enabled" | "adaptive"))
}

/// What Anthropic answers a request that drops or alters signed thinking: with thinking on,
/// the assistant message a tool result answers must begin with the thinking it came with,
/// signature and text exactly as they were sent.
fn unsigned_thinking(body: &Value, shared: &Shared) -> Option<String> {
    if !thinks(body) {
        return None;
    }
    let messages = body["messages"].as_array()?;
    let last_assistant = messages.iter().rev().find(|m| m["role"] == "assistant")?;
    let blocks = last_assistant["content"].as_array()?;
    if !blocks.iter().any(|b| b["type"] == "tool_use") {
        return None;
    }
    let first = blocks.first()?;
    if first["type"] != "thinking" && first["type"] != "redacted_thinking" {
        return Some(format!(
            "messages: Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final \
             `assistant` message must start with a thinking block.",
            first["type"].as_str().unwrap_or("nothing")
        ));
    }
    let signed = shared.signatures.lock().ok()?;
    let issued = first["signature"].as_str().and_then(|s| signed.get(s));
    (issued.map(String::as_str) != first["thinking"].as_str())
        .then(|| "messages: Invalid `signature` in `thinking` block".to_owned())
}

/// A thinking block at `index` with a signature this server will recognise.
fn signed_thinking(events: &mut Vec<Result<Event, Infallible>>, index: usize, text: &str, shared: &Shared) {
    let signature = format!("sig_{}", uuid_like());
    if let Ok(mut s) = shared.signatures.lock() {
        s.insert(signature.clone(), text.to_owned());
    }
    events.push(event("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})));
    events.push(event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": text}}),
    ));
    events.push(event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}})));
    events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
}

pub(crate) async fn messages(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let api_key = headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    shared.record(RecordedRequest { body: body.clone(), authorization: None, api_key });
    if let Some(message) = unsigned_thinking(&body, &shared) {
        let error = json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}});
        return (StatusCode::BAD_REQUEST, Json(error)).into_response();
    }
    let scripted = shared.script.lock().ok().and_then(|mut s| s.pop_front());
    let reply = scripted.unwrap_or_else(|| ScriptedReply::text("echo from anthropic"));
    if !reply.latency().is_zero() {
        tokio::time::sleep(reply.latency()).await;
    }
    let input_tokens = estimate_tokens(&body.to_string());
    let mut events = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("msg_{}", uuid_like()), "role": "assistant",
               "usage": {"input_tokens": input_tokens, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 1}}}),
    )];
    let stop_reason = match reply {
        ScriptedReply::Error { status, message, .. } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, Json(json!({"type": "error", "error": {"type": "api_error", "message": message}})))
                .into_response();
        }
        ScriptedReply::Text { text, reasoning, .. } => {
            let mut index = 0;
            if thinks(&body) {
                signed_thinking(&mut events, 0, reasoning.as_deref().unwrap_or("The answer is plain."), &shared);
                index = 1;
            } else if let Some(r) = reasoning {
                events.push(event("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})));
                events.push(event("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": r}})));
                events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
                index = 1;
            }
            events.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
            ));
            for w in split_words(&text) {
                events.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": w}}),
                ));
            }
            events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
            "end_turn"
        }
        ScriptedReply::ToolCalls { calls, .. } => {
            let first = usize::from(thinks(&body));
            if first == 1 {
                signed_thinking(&mut events, 0, &format!("I will call {} tool(s).", calls.len()), &shared);
            }
            for (i, (name, args)) in calls.into_iter().enumerate() {
                let i = i + first;
                let id = format!("toolu_{}", uuid_like());
                events.push(event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                events.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": args.to_string()}}),
                ));
                events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": i})));
            }
            "tool_use"
        }
    };
    events.push(event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 12}}),
    ));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    Sse::new(futures_util::stream::iter(events)).into_response()
}
