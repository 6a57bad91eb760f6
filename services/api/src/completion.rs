//! Answering a chat completion from a turn's events: one `chat.completion` JSON, or an SSE
//! stream of `chat.completion.chunk`s ending with `data: [DONE]`.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde_json::{Value, json};

use hermes_core::{FinishReason, InteractionKind, PendingInteraction, TurnEventKind, TurnId, TurnOutcome};
use hermes_http::{ApiError, ErrorCode};

use crate::wait::{Next, Waiter};

/// Set on a response whose turn waits for the user: the interaction to answer.
pub(crate) const INTERACTION_HEADER: &str = "x-hermes-interaction-id";

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

/// What the user reads when the turn waits for them.
pub(crate) fn interaction_text(i: &PendingInteraction) -> String {
    let choices: Vec<&str> =
        i.prompt["choices"].as_array().map_or(Vec::new(), |c| c.iter().filter_map(Value::as_str).collect());
    match i.kind {
        InteractionKind::Approval => format!(
            "Approval needed to run `{}` ({}). Answer once, session, always or deny.",
            i.prompt["command"].as_str().unwrap_or_default(),
            i.prompt["description"].as_str().unwrap_or_default()
        ),
        InteractionKind::Clarify => {
            let mut text = i.prompt["question"].as_str().unwrap_or_default().to_owned();
            for (n, choice) in choices.iter().enumerate() {
                text.push_str(&format!("\n{}. {choice}", n + 1));
            }
            text
        }
    }
}

/// The `hermes.interaction` object: what to answer and where.
pub(crate) fn interaction_json(i: &PendingInteraction) -> Value {
    json!({
        "id": i.id,
        "kind": i.kind,
        "prompt": i.prompt,
        "expires_at": i.expires_at,
        "answer_url": format!("/v1/interactions/{}", i.id),
    })
}

pub(crate) fn incomplete(outcome: &TurnOutcome) -> ApiError {
    let msg = outcome.error.clone().unwrap_or_else(|| "the agent produced no answer".into());
    if outcome.error_code == Some(hermes_core::ErrorCode::InsufficientQuota) {
        // A spending cap stopped the turn before a model call: OpenAI's 402.
        return ApiError::new(
            StatusCode::PAYMENT_REQUIRED,
            "insufficient_quota",
            Some(ErrorCode::InsufficientQuota),
            msg,
        );
    }
    let mut err = ApiError::new(StatusCode::BAD_GATEWAY, "server_error", Some(ErrorCode::AgentIncomplete), msg);
    err.hermes = Some(Box::new(json!({ "completed": false, "failed": true, "error_code": outcome.error_code })));
    err
}

pub(crate) fn timed_out() -> ApiError {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "server_error",
        Some(ErrorCode::TurnTimeout),
        "the turn is still running; continue the session later with X-Hermes-Session-Id",
    )
}

/// Builds chunks of one completion.
#[derive(Clone)]
struct Chunks {
    id: String,
    created: i64,
    model: String,
}

impl Chunks {
    fn base(&self, choices: Value) -> Value {
        json!({"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
               "choices": choices})
    }

    fn delta(&self, delta: Value, finish: Option<&str>) -> Event {
        Event::default().data(self.base(json!([{"index": 0, "delta": delta, "finish_reason": finish}])).to_string())
    }

    /// Tool progress as upstream Hermes names it (`event: hermes.tool.progress`), with a data
    /// object that is also a valid, empty chunk: the official SDKs hand every named event to
    /// their chunk parser, and an empty delta keeps them working.
    fn tool_progress(&self, fields: Value) -> Event {
        self.named("hermes.tool.progress", fields)
    }

    /// A named Hermes event (`hermes.tool.progress`, `hermes.notice`), chunk-shaped as above.
    fn named(&self, name: &str, fields: Value) -> Event {
        let mut data = self.base(json!([{"index": 0, "delta": {}, "finish_reason": null}]));
        if let (Some(obj), Value::Object(extra)) = (data.as_object_mut(), fields) {
            obj.extend(extra);
        }
        Event::default().event(name).data(data.to_string())
    }
}

/// Stops the turn if the request goes away before its answer (the client disconnected),
/// unless the installation lets turns finish in the background.
pub(crate) struct DisconnectGuard {
    pub store: hermes_store::Store,
    pub cancels: hermes_cache::CancelBus,
    pub tenant: hermes_core::TenantId,
    pub turn: TurnId,
    pub armed: bool,
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (store, cancels, tenant, turn) = (self.store.clone(), self.cancels.clone(), self.tenant, self.turn);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                tracing::info!(turn.id = %turn, "client disconnected; stopping the turn");
                cancel_turn(&store, &cancels, tenant, turn).await;
            });
        }
    }
}

/// Stops a turn: a queued or waiting one at once, a running one through its worker (told on
/// the cancel channel, or by its heartbeat if that message is lost).
pub(crate) async fn cancel_turn(
    store: &hermes_store::Store,
    cancels: &hermes_cache::CancelBus,
    tenant: hermes_core::TenantId,
    turn: TurnId,
) {
    match store.request_cancel(tenant, turn, &TurnOutcome::cancelled()).await {
        Ok(Some(hermes_store::TurnStatus::Running)) => {
            if let Err(e) = cancels.publish(turn).await {
                tracing::warn!(error = %e, "cannot broadcast the cancellation; the worker's heartbeat will see it");
            }
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot cancel the turn"),
    }
}

/// A turn's answer, for one request.
pub(crate) struct Completion {
    pub waiter: Waiter,
    pub turn: TurnId,
    pub model: String,
    pub timeout: Duration,
    pub keepalive: Duration,
    pub guard: DisconnectGuard,
    /// The turn's slot in the rate limits, held (never read) until the answer is done.
    pub _permit: Option<crate::limits::TurnPermit>,
}

impl Completion {
    fn chunks(&self) -> Chunks {
        Chunks {
            id: format!("chatcmpl-{}", self.turn.as_uuid().simple()),
            created: chrono::Utc::now().timestamp(),
            model: self.model.clone(),
        }
    }

    /// Waits for the turn and answers with one `chat.completion`.
    pub async fn collect(mut self) -> Result<Response, ApiError> {
        let wait = async {
            loop {
                match self.waiter.next().await {
                    Next::Finished(outcome) => return Ok(outcome),
                    Next::Waiting(interaction) => return Err(interaction),
                    Next::Event(_) => {}
                }
            }
        };
        let outcome = match tokio::time::timeout(self.timeout, wait).await {
            Ok(Ok(o)) => {
                self.guard.armed = false;
                o
            }
            Ok(Err(interaction)) => {
                // The turn waits for the user: an answer to show, and where to reply.
                self.guard.armed = false;
                return Ok(self.waiting_response(&interaction));
            }
            Err(_) => {
                // The turn goes on: the client may continue the session later.
                self.guard.armed = false;
                return Err(timed_out());
            }
        };
        if outcome.finish_reason == FinishReason::Error && outcome.content.is_empty() {
            return Err(incomplete(&outcome));
        }
        let body = self.completion_json(&outcome.content, finish_reason(outcome.finish_reason), usage_json(&outcome));
        let mut resp = Json(body).into_response();
        if let Some(v) = outcome.session_id.and_then(|id| axum::http::HeaderValue::from_str(&id.to_string()).ok()) {
            // Compaction moved the conversation to a new session: continue with that one.
            resp.headers_mut().insert(crate::headers::SESSION_HEADER, v);
        }
        Ok(resp)
    }

    /// A `chat.completion` object with one assistant message.
    fn completion_json(&self, content: &str, finish: &str, usage: Value) -> Value {
        let c = self.chunks();
        json!({
            "id": c.id,
            "object": "chat.completion",
            "created": c.created,
            "model": c.model,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": content, "refusal": null },
                "logprobs": null,
                "finish_reason": finish,
            }],
            "usage": usage,
        })
    }

    fn waiting_response(&self, interaction: &PendingInteraction) -> Response {
        let usage = json!({ "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0 });
        let mut body = self.completion_json(&interaction_text(interaction), "stop", usage);
        body["hermes"] = json!({ "interaction": interaction_json(interaction) });
        let mut resp = Json(body).into_response();
        if let Ok(v) = axum::http::HeaderValue::from_str(&interaction.id.to_string()) {
            resp.headers_mut().insert(INTERACTION_HEADER, v);
        }
        resp
    }

    /// Streams the turn as SSE chunks. The task behind the stream ends when the turn does,
    /// when the client goes away, or after the turn timeout.
    pub fn stream(self, include_usage: bool) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
        let keepalive = self.keepalive;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Event, Infallible>>(64);
        hermes_telemetry::tasks::spawn("api_completion_stream", async move {
            let closed = tx.clone();
            tokio::select! {
                () = closed.closed() => tracing::info!("client left the stream; the turn goes on"),
                r = tokio::time::timeout(self.timeout, self.pump(tx, include_usage)) => {
                    if r.is_err() {
                        tracing::warn!("stream reached the turn timeout");
                    }
                }
            }
        });
        let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        Sse::new(stream).keep_alive(KeepAlive::new().interval(keepalive).text("keepalive"))
    }

    async fn pump(mut self, tx: tokio::sync::mpsc::Sender<Result<Event, Infallible>>, include_usage: bool) {
        let chunks = self.chunks();
        let send = |e: Event| tx.send(Ok(e));
        if send(chunks.delta(json!({"role": "assistant", "content": ""}), None)).await.is_err() {
            return;
        }
        let mut streamed = String::new();
        let outcome = loop {
            let event = match self.waiter.next().await {
                Next::Finished(outcome) => {
                    self.guard.armed = false;
                    break outcome;
                }
                Next::Waiting(interaction) => {
                    self.guard.armed = false;
                    let text = chunks.delta(json!({ "content": interaction_text(&interaction) }), None);
                    let mut finish = chunks.base(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]));
                    if let Some(obj) = finish.as_object_mut() {
                        obj.insert("hermes".into(), json!({ "interaction": interaction_json(&interaction) }));
                    }
                    for event in [text, Event::default().data(finish.to_string()), Event::default().data("[DONE]")] {
                        if send(event).await.is_err() {
                            return;
                        }
                    }
                    return;
                }
                Next::Event(TurnEventKind::Delta { text }) => {
                    streamed.push_str(&text);
                    chunks.delta(json!({ "content": text }), None)
                }
                Next::Event(TurnEventKind::ToolStarted { call_id, tool, preview, .. }) => chunks
                    .tool_progress(json!({"tool": tool, "toolCallId": call_id, "label": preview, "status": "running"})),
                Next::Event(TurnEventKind::ToolCompleted { call_id, tool, ok, duration_ms, .. }) => chunks.tool_progress(
                    json!({"tool": tool, "toolCallId": call_id, "status": "completed", "ok": ok, "duration_ms": duration_ms}),
                ),
                Next::Event(TurnEventKind::Notice { code, message }) => {
                chunks.named("hermes.notice", json!({"code": code, "message": message}))
                }
                Next::Event(_) => continue,
            };
            if send(event).await.is_err() {
                return;
            }
        };
        // Text the events did not carry (a lost event, or a resumed attempt).
        if let Some(rest) = outcome.content.strip_prefix(streamed.as_str()).filter(|r| !r.is_empty()) {
            let _ = send(chunks.delta(json!({ "content": rest }), None)).await;
        }
        let mut finish =
            chunks.base(json!([{"index": 0, "delta": {}, "finish_reason": finish_reason(outcome.finish_reason)}]));
        if outcome.finish_reason == FinishReason::Error
            && let Some(obj) = finish.as_object_mut()
        {
            // SDKs raise an `error` object in a chunk as an API error.
            obj.insert(
                "error".into(),
                json!({"message": outcome.error.clone().unwrap_or_else(|| "the turn failed".into()),
                       "type": "server_error", "code": outcome.error_code}),
            );
        }
        if let (Some(id), Some(obj)) = (outcome.session_id, finish.as_object_mut()) {
            // Compaction moved the conversation to a new session: continue with that one.
            obj.insert("hermes".into(), json!({ "session_id": id }));
        }
        let _ = send(Event::default().data(finish.to_string())).await;
        if include_usage {
            let mut usage = chunks.base(json!([]));
            if let Some(obj) = usage.as_object_mut() {
                obj.insert("usage".into(), usage_json(&outcome));
            }
            let _ = send(Event::default().data(usage.to_string())).await;
        }
        let _ = send(Event::default().data("[DONE]")).await;
    }
}
