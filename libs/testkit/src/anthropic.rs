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

pub(crate) async fn messages(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let api_key = headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Ok(mut r) = shared.requests.lock() {
        r.push(RecordedRequest { body: body.clone(), authorization: None, api_key });
    }
    shared.arrived.notify_waiters();
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
            if let Some(r) = reasoning {
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
            for (i, (name, args)) in calls.into_iter().enumerate() {
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
