//! Answering a chat completion from a turn's events: one `chat.completion` JSON, or an SSE
//! stream of `chat.completion.chunk`s ending with `data: [DONE]`.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde_json::Value;

use hermes_core::{FinishReason, InteractionKind, PendingInteraction, TurnEventKind, TurnId, TurnOutcome};
use hermes_http::{ApiError, ErrorCode};
use hermes_wire::v1::{
    AssistantRole, ChatChunk, ChatExtras, ChatUsage, ChunkError, ChunkHead, CompletionTokensDetails, Delta,
    Interaction, Progress, PromptTokensDetails, ServerErrorKind, ToolProgressStatus,
};

use crate::wait::{Next, Waiter};

/// Set on a response whose turn waits for the user: the interaction to answer.
pub(crate) const INTERACTION_HEADER: &str = "x-hermes-interaction-id";

fn usage(o: &TurnOutcome) -> ChatUsage {
    ChatUsage {
        prompt_tokens: o.usage.prompt_tokens,
        completion_tokens: o.usage.completion_tokens,
        total_tokens: o.usage.total_tokens,
        prompt_tokens_details: Some(PromptTokensDetails { cached_tokens: o.usage.cached_tokens }),
        completion_tokens_details: Some(CompletionTokensDetails { reasoning_tokens: o.usage.reasoning_tokens }),
    }
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

/// The Hermes extras of an answer whose turn waits for the user.
fn waiting_on(i: &PendingInteraction) -> Option<ChatExtras> {
    Some(ChatExtras { interaction: Some(Interaction::from(i)), session_id: None })
}

fn data(chunk: &ChatChunk) -> Event {
    let event = Event::default();
    let event = match &chunk.progress {
        Some(p) => event.event(p.event_name()),
        None => event,
    };
    event.json_data(chunk).unwrap_or_else(|_| Event::default().comment("unserializable chunk"))
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
    err.hermes =
        Some(Box::new(serde_json::json!({ "completed": false, "failed": true, "error_code": outcome.error_code })));
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
    match store.turns().request_cancel(tenant, turn, &TurnOutcome::cancelled()).await {
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
    fn chunks(&self) -> ChunkHead {
        ChunkHead {
            id: format!("chatcmpl-{}", self.turn.as_uuid().simple()),
            created: chrono::Utc::now().timestamp(),
            model: self.model.clone(),
        }
    }

    /// Waits for the turn and answers with one `chat.completion`.
    pub async fn collect(mut self) -> Result<Response, ApiError> {
        let outcome = match tokio::time::timeout(self.timeout, self.waiter.settled()).await {
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
        // A whole answer's turn streamed no events: its reasoning is read from what it stored.
        let (store, tenant) = (&self.waiter.store, self.waiter.tenant);
        let reasoning = match store.conversations().turn_reasoning(tenant, self.turn).await {
            Ok(calls) => Some(calls.join("\n\n")).filter(|r| !r.is_empty()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the turn's reasoning");
                None
            }
        };
        let body =
            self.chunks().completion((outcome.content.clone(), reasoning), outcome.finish_reason, usage(&outcome));
        let mut resp = Json(body).into_response();
        if let Some(v) = outcome.session_id.and_then(|id| axum::http::HeaderValue::from_str(&id.to_string()).ok()) {
            // Compaction moved the conversation to a new session: continue with that one.
            resp.headers_mut().insert(crate::headers::SESSION_HEADER, v);
        }
        Ok(resp)
    }

    fn waiting_response(&self, interaction: &PendingInteraction) -> Response {
        let mut body =
            self.chunks().completion((interaction_text(interaction), None), FinishReason::Stop, ChatUsage::default());
        body.hermes = waiting_on(interaction);
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
        let send = |chunk: ChatChunk| tx.send(Ok(data(&chunk)));
        let role = Delta { role: Some(AssistantRole::Assistant), content: Some(String::new()), ..Delta::default() };
        if send(chunks.delta(role, None)).await.is_err() {
            return;
        }
        let mut streamed = String::new();
        let outcome = loop {
            let chunk = match self.waiter.next().await {
                Next::Finished(outcome) => {
                    self.guard.armed = false;
                    break outcome;
                }
                Next::Waiting(interaction) => {
                    self.guard.armed = false;
                    let text = chunks.text(interaction_text(&interaction));
                    let finish = ChatChunk {
                        hermes: waiting_on(&interaction),
                        ..chunks.delta(Delta::default(), Some(FinishReason::Stop))
                    };
                    if send(text).await.is_ok() && send(finish).await.is_ok() {
                        let _ = tx.send(Ok(Event::default().data("[DONE]"))).await;
                    }
                    return;
                }
                Next::Event(TurnEventKind::Delta { text }) => {
                    streamed.push_str(&text);
                    chunks.text(text)
                }
                Next::Event(TurnEventKind::Reasoning { text }) => chunks.reasoning(text),
                Next::Event(event) => match progress(event) {
                    Some(p) => chunks.progress(p),
                    None => continue,
                },
            };
            if send(chunk).await.is_err() {
                return;
            }
        };
        // Text the events did not carry (a lost event, or a resumed attempt).
        if let Some(rest) = outcome.content.strip_prefix(streamed.as_str()).filter(|r| !r.is_empty()) {
            let _ = send(chunks.text(rest)).await;
        }
        let _ = send(last_chunk(&chunks, &outcome)).await;
        if include_usage {
            let _ = send(chunks.usage(usage(&outcome))).await;
        }
        let _ = tx.send(Ok(Event::default().data("[DONE]"))).await;
    }
}

/// A tool's progress or a notice, as a named event; `None` for events a chat stream leaves out.
fn progress(event: TurnEventKind) -> Option<Progress> {
    match event {
        TurnEventKind::ToolStarted { call_id, tool, preview, .. } => Some(Progress::Tool {
            tool,
            tool_call_id: call_id,
            status: ToolProgressStatus::Running,
            label: Some(preview),
            ok: None,
            duration_ms: None,
        }),
        TurnEventKind::ToolCompleted { call_id, tool, ok, duration_ms, .. } => Some(Progress::Tool {
            tool,
            tool_call_id: call_id,
            status: ToolProgressStatus::Completed,
            label: None,
            ok: Some(ok),
            duration_ms: Some(duration_ms),
        }),
        TurnEventKind::Notice { code, message } => Some(Progress::Notice { code, message }),
        _ => None,
    }
}

/// The chunk with the finish reason: with the turn's error if it failed, and the session to
/// continue with if compaction moved the conversation.
fn last_chunk(chunks: &ChunkHead, outcome: &TurnOutcome) -> ChatChunk {
    let error = (outcome.finish_reason == FinishReason::Error).then(|| ChunkError {
        message: outcome.error.clone().unwrap_or_else(|| "the turn failed".into()),
        r#type: ServerErrorKind::ServerError,
        code: outcome.error_code,
    });
    let hermes = outcome.session_id.map(|id| ChatExtras { interaction: None, session_id: Some(id) });
    ChatChunk { error, hermes, ..chunks.delta(Delta::default(), Some(outcome.finish_reason)) }
}
