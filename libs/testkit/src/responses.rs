//! `/v1/responses`: the scripted model speaking OpenAI's Responses API (streamed), so the
//! `responses` transport is tested end to end. A request that includes
//! `reasoning.encrypted_content` gets each answer's reasoning as an encrypted item, and, as
//! OpenAI does with `store: false`, a reasoning item sent back is refused unless its
//! encrypted content is one this server issued. The tier that served the call is the one
//! asked for (`service_tier: priority`), else `default`.

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

fn event(data: Value) -> Result<Event, Infallible> {
    let kind = data["type"].as_str().unwrap_or("message").to_owned();
    Ok(Event::default().event(kind).data(data.to_string()))
}

/// The first reasoning item sent back whose encrypted content this server never issued.
fn unverifiable_reasoning(body: &Value, shared: &Shared) -> Option<String> {
    let issued = shared.signatures.lock().ok()?;
    let items = body["input"].as_array()?;
    items.iter().filter(|i| i["type"] == "reasoning").find_map(|item| {
        let sealed = item["encrypted_content"].as_str().unwrap_or_default();
        (!issued.contains_key(sealed)).then(|| {
            format!("The encrypted content for item {} could not be verified.", item["id"].as_str().unwrap_or("rs"))
        })
    })
}

/// A reasoning item, its summary streamed, with encrypted content when the request asked.
fn reasoning(events: &mut Vec<Result<Event, Infallible>>, text: &str, sealed: bool, shared: &Shared) {
    let id = format!("rs_{}", uuid_like());
    events.push(event(
        json!({"type": "response.output_item.added", "item": {"type": "reasoning", "id": id, "summary": []}}),
    ));
    events.push(event(json!({"type": "response.reasoning_summary_text.delta", "item_id": id, "delta": text})));
    let mut item = json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": text}]});
    if sealed {
        let content = format!("enc_{}", uuid_like());
        if let Ok(mut issued) = shared.signatures.lock() {
            issued.insert(content.clone(), text.to_owned());
        }
        item["encrypted_content"] = json!(content);
    }
    events.push(event(json!({"type": "response.output_item.done", "item": item})));
}

fn answer_events(reply: ScriptedReply, body: &Value, shared: &Shared) -> Vec<Result<Event, Infallible>> {
    let sealed = body["include"].as_array().is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"));
    let mut events = vec![event(json!({"type": "response.created", "response": {"status": "in_progress"}}))];
    match reply {
        ScriptedReply::Text { text, reasoning: thought, .. } => {
            if let Some(thought) = thought.or_else(|| sealed.then(|| "The answer is plain.".to_owned())) {
                reasoning(&mut events, &thought, sealed, shared);
            }
            for w in split_words(&text) {
                events.push(event(json!({"type": "response.output_text.delta", "delta": w})));
            }
        }
        ScriptedReply::ToolCalls { calls, .. } => {
            if sealed {
                reasoning(&mut events, &format!("I will call {} tool(s).", calls.len()), sealed, shared);
            }
            for (name, args) in calls {
                let (id, call_id) = (format!("fc_{}", uuid_like()), format!("call_{}", uuid_like()));
                let item =
                    json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": ""});
                events.push(event(json!({"type": "response.output_item.added", "item": item})));
                let args = args.to_string();
                events.push(event(
                    json!({"type": "response.function_call_arguments.delta", "item_id": id, "delta": args}),
                ));
                let done =
                    json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": args});
                events.push(event(json!({"type": "response.output_item.done", "item": done})));
            }
        }
        ScriptedReply::Error { .. } => {}
    }
    let tier = if body["service_tier"] == "priority" { "priority" } else { "default" };
    let usage = json!({"input_tokens": estimate_tokens(&body.to_string()), "output_tokens": 12, "total_tokens": 0,
                       "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 4}});
    let done = json!({"status": "completed", "service_tier": tier, "usage": usage});
    events.push(event(json!({"type": "response.completed", "response": done})));
    events
}

pub(crate) async fn responses(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    shared.record(RecordedRequest { body: body.clone(), authorization, api_key: None });
    if let Some(message) = unverifiable_reasoning(&body, &shared) {
        let error = json!({"error": {"type": "invalid_request_error", "code": "invalid_encrypted_content", "message": message}});
        return (StatusCode::BAD_REQUEST, Json(error)).into_response();
    }
    let scripted = shared.script.lock().ok().and_then(|mut s| s.pop_front());
    let reply = scripted.unwrap_or_else(|| ScriptedReply::text("echo from responses"));
    if !reply.latency().is_zero() {
        tokio::time::sleep(reply.latency()).await;
    }
    if let ScriptedReply::Error { status, message, .. } = &reply {
        let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (status, Json(json!({"error": {"type": "api_error", "message": message}}))).into_response();
    }
    Sse::new(futures_util::stream::iter(answer_events(reply, &body, &shared))).into_response()
}
