//! `POST /v1/chat/completions`.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde_json::{Value, json};

use hermes_core::{FinishReason, SessionId, TurnEventKind, TurnId, TurnOutcome};
use hermes_http::ApiError;
use hermes_queue::SessionWork;
use hermes_store::{Agent, KeyAuth, NewTurn, StoreError, TurnTarget};

use crate::AppState;
use crate::auth::Caller;
use crate::chat_wire::{ChatCompletionRequest, ParsedChat};
use crate::wait::{self, Next};

pub(crate) const SESSION_HEADER: &str = "x-hermes-session-id";

/// Maps axum's JSON rejections to OpenAI-style errors (413 for oversized bodies).
fn json_error(rejection: JsonRejection, limit: usize) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::body_too_large(limit);
    }
    match rejection {
        JsonRejection::MissingJsonContentType(_) => ApiError::invalid_request(
            "invalid_content_type",
            "send the body as JSON with Content-Type: application/json",
        ),
        other => {
            ApiError::invalid_request("invalid_json", format!("request body is not valid JSON: {}", other.body_text()))
        }
    }
}

async fn resolve_agent(state: &AppState, auth: &KeyAuth, model: Option<&str>) -> Result<Agent, ApiError> {
    let not_found = |name: &str| {
        ApiError::not_found(
            "model_not_found",
            format!("The model `{name}` does not exist or you do not have access to it."),
        )
        .with_param("model")
    };
    let agent = match model {
        Some(name) => match state.store.agent_by_name(auth.tenant_id, name).await {
            Ok(a) => a,
            Err(StoreError::NotFound) => return Err(not_found(name)),
            Err(e) => return Err(ApiError::internal(e)),
        },
        None => {
            let agents = state.store.list_agents(auth.tenant_id).await.map_err(ApiError::internal)?;
            let usable: Vec<Agent> =
                agents.into_iter().filter(|a| auth.agent_id.is_none_or(|only| only == a.id)).collect();
            match <[Agent; 1]>::try_from(usable) {
                Ok([only]) => only,
                Err(_) => {
                    return Err(ApiError::invalid_request(
                        "missing_required_parameter",
                        "model is required: name one of your agents (GET /v1/models)",
                    )
                    .with_param("model"));
                }
            }
        }
    };
    if auth.agent_id.is_some_and(|only| only != agent.id) {
        return Err(not_found(&agent.name));
    }
    Ok(agent)
}

fn session_header(headers: &HeaderMap) -> Result<Option<SessionId>, ApiError> {
    let Some(raw) = headers.get(SESSION_HEADER) else {
        return Ok(None);
    };
    let text = raw
        .to_str()
        .map_err(|_| ApiError::invalid_request("invalid_session_id", "X-Hermes-Session-Id is not valid text"))?;
    // Ids are UUIDs; anything else cannot name a session of this tenant.
    text.trim().parse::<SessionId>().map(Some).map_err(|_| ApiError::not_found("session_not_found", "no such session"))
}

pub(crate) async fn chat_completions(
    State(state): State<AppState>,
    Caller(auth): Caller,
    headers: HeaderMap,
    body: Result<Json<ChatCompletionRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(|r| json_error(r, state.config.http.max_body_bytes))?;
    let parsed: ParsedChat = body.parse()?;
    let agent = resolve_agent(&state, &auth, parsed.model.as_deref()).await?;
    let target = match session_header(&headers)? {
        Some(id) => TurnTarget::Existing(id),
        None => TurnTarget::New { source: "api".into(), history: parsed.history },
    };
    let new = NewTurn {
        agent_id: agent.id,
        target,
        input: parsed.input,
        instructions: parsed.instructions,
        stream: parsed.stream,
        notify_hub: Some(state.events.id().to_owned()),
    };
    let (session_id, turn_id) = match state.store.enqueue_turn(auth.tenant_id, new).await {
        Ok(ids) => ids,
        Err(StoreError::NotFound) => {
            return Err(ApiError::not_found("session_not_found", "no such session for this model"));
        }
        Err(e) => return Err(ApiError::internal(e)),
    };
    let span = tracing::Span::current();
    span.record("session.id", tracing::field::display(session_id));
    span.record("turn.id", tracing::field::display(turn_id));
    // Subscribe before signalling, so no event can be missed.
    let sub = state.events.subscribe(turn_id);
    if let Err(e) = state.broker.publish_work(&SessionWork { tenant_id: auth.tenant_id, session_id }).await {
        // The turn is stored; the reaper republishes it, so the request still completes.
        tracing::warn!(error = %e, "cannot publish work; the reaper will pick the turn up");
    }
    metrics::counter!("hermes_api_turns_total", "stream" => parsed.stream.to_string()).increment(1);
    let ctx = TurnWait { state, tenant: auth.tenant_id, turn: turn_id, sub, model: agent.name };
    let mut resp = if parsed.stream { ctx.stream(parsed.include_usage).into_response() } else { ctx.collect().await? };
    if let Ok(v) = HeaderValue::from_str(&session_id.to_string()) {
        resp.headers_mut().insert(SESSION_HEADER, v);
    }
    Ok(resp)
}

struct TurnWait {
    state: AppState,
    tenant: hermes_core::TenantId,
    turn: TurnId,
    sub: hermes_queue::EventSubscription,
    model: String,
}

fn completion_id(turn: TurnId) -> String {
    format!("chatcmpl-{}", turn.as_uuid().simple())
}

fn finish_reason(r: FinishReason) -> &'static str {
    match r {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::Error => "error",
    }
}

fn usage_json(o: &TurnOutcome) -> Value {
    json!({
        "prompt_tokens": o.usage.prompt_tokens,
        "completion_tokens": o.usage.completion_tokens,
        "total_tokens": o.usage.total_tokens,
        "prompt_tokens_details": { "cached_tokens": o.usage.cached_tokens }
    })
}

fn incomplete(outcome: &TurnOutcome) -> ApiError {
    let msg = outcome.error.clone().unwrap_or_else(|| "the agent produced no answer".into());
    ApiError::new(StatusCode::BAD_GATEWAY, "server_error", Some("agent_incomplete"), msg)
}

impl TurnWait {
    fn recheck(&self) -> Duration {
        Duration::from_secs(self.state.config.api.recheck_seconds.max(1))
    }

    async fn collect(mut self) -> Result<Response, ApiError> {
        let timeout = Duration::from_secs(self.state.config.api.turn_timeout_seconds);
        let recheck = self.recheck();
        let wait = async {
            loop {
                match wait::next(&mut self.sub, &self.state.store, self.tenant, self.turn, recheck).await {
                    Next::Event(TurnEventKind::Finished { outcome }) | Next::FinishedInStore(outcome) => {
                        return Some(outcome);
                    }
                    Next::Event(_) => {}
                    Next::Closed => return None,
                }
            }
        };
        let outcome = match tokio::time::timeout(timeout, wait).await {
            Ok(Some(o)) => o,
            Ok(None) => {
                return Err(ApiError::unavailable("event bus closed; retry with X-Hermes-Session-Id"));
            }
            Err(_) => {
                return Err(ApiError::new(
                    StatusCode::GATEWAY_TIMEOUT,
                    "server_error",
                    Some("turn_timeout"),
                    "the turn is still running; continue the session later with X-Hermes-Session-Id",
                ));
            }
        };
        if outcome.finish_reason == FinishReason::Error && outcome.content.is_empty() {
            return Err(incomplete(&outcome));
        }
        let body = json!({
            "id": completion_id(self.turn),
            "object": "chat.completion",
            "created": chrono::Utc::now().timestamp(),
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": outcome.content },
                "finish_reason": finish_reason(outcome.finish_reason),
            }],
            "usage": usage_json(&outcome),
        });
        Ok(Json(body).into_response())
    }

    fn stream(mut self, include_usage: bool) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
        let keepalive = Duration::from_secs(self.state.config.api.keepalive_seconds.max(1));
        let id = completion_id(self.turn);
        let created = chrono::Utc::now().timestamp();
        let model = std::mem::take(&mut self.model);
        let chunk = move |delta: Value, finish: Option<&str>| {
            json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let stream = async_stream(move |tx| async move {
            let recheck = self.recheck();
            let send = |e: Event| tx.send(Ok(e));
            if send(Event::default().data(chunk(json!({"role": "assistant", "content": ""}), None).to_string()))
                .await
                .is_err()
            {
                return;
            }
            let mut streamed = String::new();
            let outcome = loop {
                let event = match wait::next(&mut self.sub, &self.state.store, self.tenant, self.turn, recheck).await {
                    Next::Event(TurnEventKind::Finished { outcome }) | Next::FinishedInStore(outcome) => break Some(outcome),
                    Next::Event(TurnEventKind::Delta { text }) => {
                        streamed.push_str(&text);
                        Event::default().data(chunk(json!({ "content": text }), None).to_string())
                    }
                    Next::Event(TurnEventKind::ToolStarted { call_id, tool, preview }) => Event::default()
                        .event("hermes.tool.progress")
                        .data(json!({"tool": tool, "toolCallId": call_id, "label": preview, "status": "running"}).to_string()),
                    Next::Event(TurnEventKind::ToolCompleted { call_id, tool, ok, duration_ms }) => Event::default()
                        .event("hermes.tool.progress")
                        .data(json!({"tool": tool, "toolCallId": call_id, "status": "completed", "ok": ok, "duration_ms": duration_ms}).to_string()),
                    Next::Event(_) => continue,
                    Next::Closed => break None,
                };
                if send(event).await.is_err() {
                    return;
                }
            };
            let outcome = outcome.unwrap_or_else(|| TurnOutcome {
                content: String::new(),
                finish_reason: FinishReason::Error,
                usage: Default::default(),
                error: Some("event bus closed".into()),
                error_code: Some("service_unavailable".into()),
            });
            // Text the events did not carry (a lost event, or a non-streaming worker path).
            if let Some(rest) = outcome.content.strip_prefix(streamed.as_str()).filter(|r| !r.is_empty()) {
                let _ = send(Event::default().data(chunk(json!({ "content": rest }), None).to_string())).await;
            }
            let _ =
                send(Event::default().data(chunk(json!({}), Some(finish_reason(outcome.finish_reason))).to_string()))
                    .await;
            if include_usage {
                let usage = json!({"id": completion_id(self.turn), "object": "chat.completion.chunk", "created": created,
                                   "model": "", "choices": [], "usage": usage_json(&outcome)});
                let _ = send(Event::default().data(usage.to_string())).await;
            }
            let _ = send(Event::default().data("[DONE]")).await;
        });
        Sse::new(stream).keep_alive(KeepAlive::new().interval(keepalive).text("keepalive"))
    }
}

/// A stream fed by a task through a bounded channel; the task ends when the client leaves.
fn async_stream<F, Fut>(f: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Event, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(f(tx));
    tokio_stream_from(rx)
}

fn tokio_stream_from<T: Send + 'static>(mut rx: tokio::sync::mpsc::Receiver<T>) -> impl Stream<Item = T> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
