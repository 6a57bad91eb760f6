//! `POST /v1/chat/completions`.

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use hermes_http::ApiError;
use hermes_store::NewTurn;

use crate::agents::resolve_agent;
use crate::documented::{BadRequest, CapReached, NoApiKey, NotFound, RateLimited};
use crate::headers::{session_text, with_session};
use crate::state::AppState;
use crate::submit::{Entry, TurnRequest, Work, submit_turn};
use crate::targets::chat_target;
use hermes_http::chat_request::{ChatCompletionRequest, ParsedChat};

#[utoipa::path(post, path = "/v1/chat/completions", tag = "openai",
    request_body = ChatCompletionRequest,
    params(("X-Hermes-Session-Id" = Option<String>, Header, description = "Continue this session"),
           ("X-Hermes-Session-Key" = Option<String>, Header, description = "The end user (long-term memory scope)"),
           ("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key share one turn")),
    responses((status = 200, description = "A chat.completion, or an SSE stream of chunks with stream: true", body = hermes_wire::v1::ChatCompletion),
              BadRequest, NoApiKey, NotFound, CapReached, RateLimited,
              (status = 502, description = "The agent produced nothing", body = hermes_wire::ErrorBody)))]
pub(crate) async fn chat_completions(
    TurnRequest { state, auth, headers, body }: TurnRequest<ChatCompletionRequest>,
) -> Result<Response, ApiError> {
    // Boxed (as `submit_turn` is): its queries' futures are done before the long wait, and a
    // request's future holds the largest of its states for as long as it waits.
    let (work, parsed, model) = Box::pin(chat_turn(&state, &auth, &headers, body)).await?;
    let submitted = submit_turn(&state, &auth, work).await?;
    let session = submitted.session;
    let completion = submitted.completion(&state, model);
    let resp = if parsed.stream {
        completion.stream(parsed.include_usage).into_response()
    } else {
        completion.collect().await?
    };
    Ok(with_session(resp, session))
}

/// The turn a chat completion asks for (checked; nothing is stored yet), how to answer it,
/// and the agent's name.
async fn chat_turn(
    state: &AppState,
    auth: &hermes_store::KeyAuth,
    headers: &HeaderMap,
    body: ChatCompletionRequest,
) -> Result<(Work, Answer, String), ApiError> {
    let idempotency = crate::idempotency::idempotency(headers, auth, &body, session_text(headers))?;
    let mut parsed = ParsedChat::try_from(body)?;
    let agent = resolve_agent(state, auth, parsed.model.as_deref()).await?;
    let target = chat_target(headers, auth, agent.id, &mut parsed)?;
    let answer = Answer { stream: parsed.stream, include_usage: parsed.include_usage };
    let model_settings = hermes_http::allowed_settings(&agent.client_limits, &agent.model_settings, &parsed.settings)?;
    let turn = NewTurn {
        model_settings,
        instructions: parsed.instructions,
        stream: parsed.stream,
        notify_hub: Some(state.events.id().to_owned()),
        api_key: Some(auth.key_id),
        trace: hermes_telemetry::context::current(),
        ..NewTurn::new(agent.id, target, parsed.input)
    };
    Ok((Work::New { entry: Entry::ChatCompletions, turn: Box::new(turn), idempotency }, answer, agent.shown.name))
}

/// How the client wants its answer.
struct Answer {
    stream: bool,
    include_usage: bool,
}
