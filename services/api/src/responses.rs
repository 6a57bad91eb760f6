//! The Responses API: `POST /v1/responses`, `GET`/`DELETE /v1/responses/{id}`. A response is
//! a turn (`resp_<turn id>`); chaining with `previous_response_id` or a named `conversation`
//! continues the turn's session, forking it when the chain branches off an earlier response.
//! Streaming lives in [`crate::responses_stream`].

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use hermes_core::{ChatMessage, FinishReason, PendingInteraction, Role, TurnId, TurnOutcome};
use hermes_http::ApiError;
use hermes_queue::SessionWork;
use hermes_store::{KeyAuth, NewResponse, NewTurn, StoreError, TurnStatus, TurnTarget};

use crate::AppState;
use crate::auth::Caller;
use crate::chat::{SESSION_HEADER, completion, json_error, resolve_agent, signal_work, user_key};
use crate::completion::{Completion, incomplete, interaction_json, interaction_text, timed_out};
use crate::responses_wire::{Continues, ParsedResponses, ResponsesRequest, parse_response_id, response_id};
use crate::wait::Next;

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

fn not_found(id: &str) -> ApiError {
    ApiError::not_found("response_not_found", format!("Response not found: {id}"))
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

/// `(status, error, incomplete_details)` of a response whose turn is in `status`.
fn state_of(status: TurnStatus, outcome: Option<&TurnOutcome>) -> (&'static str, Value, Value) {
    let error = |o: &TurnOutcome| {
        json!({ "code": o.error_code.clone().unwrap_or_else(|| "server_error".into()),
                "message": o.error.clone().unwrap_or_else(|| "the turn failed".into()) })
    };
    match (status, outcome) {
        (TurnStatus::Queued, _) => ("queued", Value::Null, Value::Null),
        (TurnStatus::Running | TurnStatus::Waiting, _) | (_, None) => ("in_progress", Value::Null, Value::Null),
        (TurnStatus::Cancelled, Some(_)) => ("cancelled", Value::Null, Value::Null),
        (_, Some(o)) => match o.finish_reason {
            FinishReason::Stop => ("completed", Value::Null, Value::Null),
            FinishReason::Length => ("incomplete", Value::Null, json!({ "reason": "max_output_tokens" })),
            FinishReason::Error => ("failed", error(o), Value::Null),
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

/// Where the new response's turn runs, and the instructions it carries.
pub(crate) async fn target_of(
    state: &AppState,
    auth: &KeyAuth,
    headers: &HeaderMap,
    parsed: &mut ParsedResponses,
) -> Result<(hermes_store::Agent, TurnTarget, Option<TurnId>), ApiError> {
    let previous = match &parsed.continues {
        _ if parsed.explicit_history => None,
        Continues::Nothing => None,
        Continues::Response(id) => Some(*id),
        Continues::Conversation(name) => {
            state.store.conversation_head(auth.tenant_id, name).await.map_err(ApiError::internal)?
        }
    };
    let Some(previous) = previous else {
        let agent = resolve_agent(state, auth, parsed.model.as_deref()).await?;
        let user = user_key(headers, auth)?;
        let history = std::mem::take(&mut parsed.history);
        return Ok((agent, TurnTarget::New { source: "api".into(), user_key: user, history }, None));
    };
    if !parsed.history.is_empty() {
        return Err(ApiError::invalid_request(
            "invalid_input",
            "a response that continues another takes only new user input; earlier messages are on the server",
        )
        .with_param("input"));
    }
    let lost = || match &parsed.continues {
        Continues::Response(id) => not_found(&response_id(*id)).with_param("previous_response_id"),
        _ => not_found(&response_id(previous)).with_param("conversation"),
    };
    let chain = match state.store.response_chain(auth.tenant_id, previous).await {
        Ok(c) => c,
        Err(StoreError::NotFound) => return Err(lost()),
        Err(e) => return Err(ApiError::internal(e)),
    };
    if auth.agent_id.is_some_and(|only| only != chain.agent_id) {
        return Err(lost());
    }
    let agent = state.store.agent(auth.tenant_id, chain.agent_id).await.map_err(ApiError::internal)?;
    if parsed.model.as_deref().is_some_and(|m| m != agent.name) {
        return Err(ApiError::invalid_request(
            "model_mismatch",
            format!("the previous response belongs to model `{}`; send that model or none", agent.name),
        )
        .with_param("model"));
    }
    if parsed.instructions.is_none() {
        // Instructions carry forward along a chain, as upstream.
        parsed.instructions = chain.instructions;
    }
    let session = match chain.fork_up_to {
        // Continuing an earlier response than the latest branches the conversation there.
        Some(seq) => state
            .store
            .fork_session(auth.tenant_id, chain.session_id, Some(seq), None)
            .await
            .map_err(ApiError::internal)?,
        None => chain.session_id,
    };
    Ok((agent, TurnTarget::Existing(session), Some(previous)))
}

#[utoipa::path(post, path = "/v1/responses", tag = "openai",
    request_body = crate::openapi::ResponsesRequest,
    responses((status = 200, description = "A response, or an SSE stream of response.* events with stream: true", body = crate::openapi::ResponseObject),
              (status = 400, description = "Invalid request", body = crate::openapi::ErrorBody), (status = 401, description = "Missing or invalid API key", body = crate::openapi::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = crate::openapi::ErrorBody), (status = 402, description = "A spending cap is reached", body = crate::openapi::ErrorBody), (status = 429, description = "Rate limit reached", body = crate::openapi::ErrorBody)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    Caller(auth): Caller,
    headers: HeaderMap,
    body: Result<Json<ResponsesRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(|r| json_error(r, state.config.http.max_body_bytes))?;
    let idempotency = crate::idempotency::idempotency(&headers, &auth, &body, None)?;
    let mut parsed = body.parse()?;
    let (agent, target, previous) = target_of(&state, &auth, &headers, &mut parsed).await?;
    let permit = crate::limits::start_turn(&state, &auth).await?;
    let model = parsed.model.clone().unwrap_or_else(|| agent.name.clone());
    let conversation = match &parsed.continues {
        Continues::Conversation(name) => Some(name.clone()),
        _ => None,
    };
    let truncation = if parsed.auto_truncation { "auto" } else { "disabled" }.to_owned();
    let new = NewTurn {
        agent_id: agent.id,
        target,
        input: parsed.input,
        instructions: parsed.instructions.clone(),
        stream: parsed.stream,
        notify_hub: Some(state.events.id().to_owned()),
        api_key: Some(auth.key_id),
        response: parsed.store.then(|| NewResponse {
            model: model.clone(),
            previous,
            conversation,
            truncation: truncation.clone(),
        }),
        reply_to: None,
    };
    let (session, turn, replay) = match crate::chat::enqueue(&state, &auth, new, idempotency.as_ref()).await {
        Err(e) if e.code == Some("session_not_found") => {
            return Err(ApiError::not_found("session_not_found", "the conversation is gone"));
        }
        other => other?,
    };
    tracing::Span::current().record("turn.id", tracing::field::display(turn));
    let sub = state.events.subscribe(turn);
    signal_work(&state, SessionWork { tenant_id: auth.tenant_id, session_id: session }).await;
    metrics::counter!("hermes_api_responses_total", "stream" => parsed.stream.to_string()).increment(1);
    let mut completion = completion(&state, auth.tenant_id, turn, sub, model.clone());
    completion.permit = Some(permit);
    if replay {
        completion.waiter = completion.waiter.checking_first();
    }
    let meta = ResponseMeta {
        turn,
        created_at: chrono::Utc::now().timestamp(),
        model,
        instructions: parsed.instructions,
        previous,
        store: parsed.store,
        truncation,
        session,
    };
    let mut resp = if parsed.stream {
        crate::responses_stream::stream(completion, meta, state.store.clone()).into_response()
    } else {
        collect(completion, meta, &state).await?
    };
    if let Ok(v) = HeaderValue::from_str(&session.to_string()) {
        resp.headers_mut().entry(SESSION_HEADER).or_insert(v);
    }
    Ok(resp)
}

/// Waits for the turn and answers with the whole response object.
async fn collect(mut completion: Completion, meta: ResponseMeta, state: &AppState) -> Result<Response, ApiError> {
    let tenant = completion.guard.tenant;
    let wait = async {
        loop {
            match completion.waiter.next().await {
                Next::Finished(outcome) => return Some(Ok(outcome)),
                Next::Waiting(interaction) => return Some(Err(interaction)),
                Next::Event(_) => {}
                Next::Closed => return None,
            }
        }
    };
    let ended = tokio::time::timeout(completion.timeout, wait).await;
    completion.guard.armed = false;
    let (status, outcome, interaction) = match ended {
        Ok(Some(Ok(outcome))) => {
            let status = if outcome.error_code.as_deref() == Some("cancelled") {
                TurnStatus::Cancelled
            } else {
                TurnStatus::Completed
            };
            (status, Some(outcome), None)
        }
        Ok(Some(Err(interaction))) => (TurnStatus::Waiting, None, Some(interaction)),
        Ok(None) => return Err(ApiError::unavailable("event bus closed; read the response later with GET")),
        Err(_) => return Err(timed_out()),
    };
    if let Some(o) = &outcome
        && o.finish_reason == FinishReason::Error
        && o.content.is_empty()
    {
        return Err(incomplete(o));
    }
    let messages = state.store.turn_messages(tenant, meta.turn).await.map_err(ApiError::internal)?;
    Ok(Json(response_object(&meta, status, outcome.as_ref(), &messages, interaction.as_ref())).into_response())
}

/// The stored response's `ResponseMeta` and object.
async fn stored(state: &AppState, auth: &KeyAuth, id: &str) -> Result<Value, ApiError> {
    let turn = parse_response_id(id).ok_or_else(|| not_found(id))?;
    let r = match state.store.stored_response(auth.tenant_id, turn).await {
        Ok(r) if auth.agent_id.is_none_or(|only| only == r.agent_id) => r,
        Ok(_) | Err(StoreError::NotFound) => return Err(not_found(id)),
        Err(e) => return Err(ApiError::internal(e)),
    };
    let interaction = if r.status == TurnStatus::Waiting {
        state.store.turn_pending_interaction(auth.tenant_id, turn).await.map_err(ApiError::internal)?
    } else {
        None
    };
    let messages = state.store.turn_messages(auth.tenant_id, turn).await.map_err(ApiError::internal)?;
    let meta = ResponseMeta {
        turn,
        created_at: r.created_at.timestamp(),
        model: r.model,
        instructions: r.instructions,
        previous: r.previous,
        store: true,
        truncation: r.truncation,
        session: r.session_id,
    };
    Ok(response_object(&meta, r.status, r.outcome.as_ref(), &messages, interaction.as_ref()))
}

#[utoipa::path(get, path = "/v1/responses/{id}", tag = "openai", params(("id" = String, Path, description = "The object's id")),
    responses((status = 200, description = "A stored response", body = crate::openapi::ResponseObject), (status = 400, description = "Invalid request", body = crate::openapi::ErrorBody), (status = 401, description = "Missing or invalid API key", body = crate::openapi::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = crate::openapi::ErrorBody)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    stored(&state, &auth, &id).await.map(Json)
}

#[utoipa::path(delete, path = "/v1/responses/{id}", tag = "openai", params(("id" = String, Path, description = "The object's id")),
    responses((status = 200, description = "Forgotten (the session keeps the conversation)", body = crate::openapi::Deleted), (status = 400, description = "Invalid request", body = crate::openapi::ErrorBody), (status = 401, description = "Missing or invalid API key", body = crate::openapi::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = crate::openapi::ErrorBody)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    // Visibility first: a key limited to one agent cannot delete another's responses.
    stored(&state, &auth, &id).await?;
    let turn = parse_response_id(&id).ok_or_else(|| not_found(&id))?;
    match state.store.delete_response(auth.tenant_id, turn).await {
        Ok(true) => Ok(Json(json!({ "id": response_id(turn), "object": "response", "deleted": true }))),
        Ok(false) => Err(not_found(&id)),
        Err(e) => Err(ApiError::internal(e)),
    }
}
