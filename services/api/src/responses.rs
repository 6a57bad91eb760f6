//! The Responses API: `POST /v1/responses`, `GET`/`DELETE /v1/responses/{id}`. A response is
//! a turn (`resp_<turn id>`); chaining with `previous_response_id` or a named `conversation`
//! continues the turn's session, forking it when the chain branches off an earlier response
//! (in [`crate::targets`]). The objects are built in [`crate::responses_object`]; streaming
//! lives in [`crate::responses_stream`].

use axum::Json;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use hermes_core::FinishReason;
use hermes_http::{ApiError, ErrorCode};
use hermes_store::{KeyAuth, NewResponse, NewTurn, TurnStatus};
use hermes_wire::v1::{Deleted, ResponseObject, ResponsesRequest, Truncation};

use crate::completion::{Completion, incomplete, timed_out};
use crate::documented::{BadRequest, CapReached, NoApiKey, NotFound, ObjectPath, RateLimited};
use crate::errors::of_callers_agent;
use crate::headers::with_session;
use crate::responses_object::{ResponseMeta, response_object};
use crate::responses_wire::{Continues, ParsedResponses, parse_response_id, response_id};
use crate::state::AppState;
use crate::submit::{Entry, Submitted, TurnRequest, Work, submit_turn};
use crate::targets::response_target;
use crate::visible::{CallerObject, Visible};

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(ErrorCode::ResponseNotFound, format!("Response not found: {id}"))
}

#[utoipa::path(post, path = "/v1/responses", tag = "openai",
    request_body = hermes_wire::v1::ResponsesRequest,
    responses((status = 200, description = "A response, or an SSE stream of response.* events with stream: true", body = hermes_wire::v1::ResponseObject),
              BadRequest, NoApiKey, NotFound, CapReached, RateLimited))]
pub(crate) async fn create(
    TurnRequest { state, auth, headers, body }: TurnRequest<ResponsesRequest>,
) -> Result<Response, ApiError> {
    let (work, described) = response_turn(&state, &auth, &headers, body).await?;
    let submitted = submit_turn(&state, &auth, work).await.map_err(conversation_gone)?;
    let (stream, session) = (described.stream, submitted.session);
    let meta = described.meta(&submitted);
    let completion = submitted.completion(&state, meta.model.clone());
    let resp = if stream {
        crate::responses_stream::stream(completion, meta, state.store.clone()).into_response()
    } else {
        collect(completion, meta, &state).await?
    };
    Ok(with_session(resp, session))
}

/// A chained response whose session was deleted meanwhile.
fn conversation_gone(e: ApiError) -> ApiError {
    if e.code == Some(ErrorCode::SessionNotFound) {
        return ApiError::not_found(ErrorCode::SessionNotFound, "the conversation is gone");
    }
    e
}

/// What a new response says besides the ids its turn gets.
struct Described {
    model: String,
    instructions: Option<String>,
    previous: Option<hermes_core::TurnId>,
    store: bool,
    truncation: Truncation,
    stream: bool,
}

impl Described {
    fn meta(self, submitted: &Submitted) -> ResponseMeta {
        ResponseMeta {
            turn: submitted.turn,
            created_at: chrono::Utc::now().timestamp(),
            model: self.model,
            instructions: self.instructions,
            previous: self.previous,
            store: self.store,
            truncation: self.truncation,
            session: submitted.session,
        }
    }
}

/// The turn a response asks for (checked; nothing is stored but a fork of the conversation
/// it branches off), and what the response will say.
async fn response_turn(
    state: &AppState,
    auth: &KeyAuth,
    headers: &HeaderMap,
    body: ResponsesRequest,
) -> Result<(Work, Described), ApiError> {
    let idempotency = crate::idempotency::idempotency(headers, auth, &body, None)?;
    let mut parsed = ParsedResponses::try_from(body)?;
    let (agent, target, previous) = response_target(state, auth, headers, &mut parsed).await?;
    let model = parsed.model.clone().unwrap_or_else(|| agent.name.clone());
    let conversation = match &parsed.continues {
        Continues::Conversation(name) => Some(name.clone()),
        _ => None,
    };
    let truncation = if parsed.auto_truncation { Truncation::Auto } else { Truncation::Disabled };
    let model_settings = hermes_http::allowed_settings(&agent.client_limits, &agent.model_settings, &parsed.settings)?;
    let turn = NewTurn {
        model_settings,
        instructions: parsed.instructions.clone(),
        stream: parsed.stream,
        notify_hub: Some(state.events.id().to_owned()),
        api_key: Some(auth.key_id),
        response: parsed.store.then(|| NewResponse {
            model: model.clone(),
            previous,
            conversation,
            truncation: truncation.as_str().to_owned(),
        }),
        trace: hermes_telemetry::context::current(),
        ..NewTurn::new(agent.id, target, parsed.input)
    };
    let described = Described {
        model,
        instructions: parsed.instructions,
        previous,
        store: parsed.store,
        truncation,
        stream: parsed.stream,
    };
    Ok((Work::New { entry: Entry::Responses, turn: Box::new(turn), idempotency }, described))
}

/// Waits for the turn and answers with the whole response object.
async fn collect(mut completion: Completion, meta: ResponseMeta, state: &AppState) -> Result<Response, ApiError> {
    let tenant = completion.guard.tenant;
    let ended = tokio::time::timeout(completion.timeout, completion.waiter.settled()).await;
    completion.guard.armed = false;
    let (status, outcome, interaction) = match ended {
        Ok(Ok(outcome)) => {
            let status = if outcome.error_code == Some(hermes_core::ErrorCode::Cancelled) {
                TurnStatus::Cancelled
            } else {
                TurnStatus::Completed
            };
            (status, Some(outcome), None)
        }
        Ok(Err(interaction)) => (TurnStatus::Waiting, None, Some(interaction)),
        Err(_) => return Err(timed_out()),
    };
    if let Some(o) = &outcome
        && o.finish_reason == FinishReason::Error
        && o.content.is_empty()
    {
        return Err(incomplete(o));
    }
    let messages = state.store.conversations().turn_messages(tenant, meta.turn).await.map_err(ApiError::internal)?;
    Ok(Json(response_object(&meta, status, outcome.as_ref(), &messages, interaction.as_ref())).into_response())
}

/// A stored response, as its `ResponseMeta` makes it, if this caller may see it.
impl CallerObject for ResponseObject {
    type Path = ObjectPath;
    type Missing = ApiError;

    async fn find(state: &AppState, auth: &KeyAuth, id: &str) -> Result<Self, ApiError> {
        let turn = parse_response_id(id).ok_or_else(|| not_found(id))?;
        let r = state.store.turns().stored_response(auth.tenant_id, turn).await;
        let r = of_callers_agent(r, auth, |r| r.agent_id, || not_found(id))?;
        let interaction = if r.status == TurnStatus::Waiting {
            state.store.turns().turn_pending_interaction(auth.tenant_id, turn).await.map_err(ApiError::internal)?
        } else {
            None
        };
        let messages =
            state.store.conversations().turn_messages(auth.tenant_id, turn).await.map_err(ApiError::internal)?;
        let meta = ResponseMeta {
            turn,
            created_at: r.created_at.timestamp(),
            model: r.model,
            instructions: r.instructions,
            previous: r.previous,
            store: true,
            truncation: Truncation::from_stored(&r.truncation),
            session: r.session_id,
        };
        Ok(response_object(&meta, r.status, r.outcome.as_ref(), &messages, interaction.as_ref()))
    }
}

#[utoipa::path(get, path = "/v1/responses/{id}", tag = "openai", params(ObjectPath),
    responses((status = 200, description = "A stored response", body = hermes_wire::v1::ResponseObject), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn get(Visible { found, .. }: Visible<ResponseObject>) -> Result<Json<ResponseObject>, ApiError> {
    Ok(Json(found))
}

#[utoipa::path(delete, path = "/v1/responses/{id}", tag = "openai", params(ObjectPath),
    responses((status = 200, description = "Forgotten (the session keeps the conversation)", body = hermes_wire::v1::Deleted), BadRequest, NoApiKey, NotFound))]
// Visibility first (the lookup): a key limited to one agent cannot delete another's responses.
pub(crate) async fn delete(
    Visible { state, auth, id, .. }: Visible<ResponseObject>,
) -> Result<Json<Deleted>, ApiError> {
    let turn = parse_response_id(&id).ok_or_else(|| not_found(&id))?;
    match state.store.turns().delete_response(auth.tenant_id, turn).await {
        Ok(true) => Ok(Json(Deleted::new(response_id(turn), "response"))),
        Ok(false) => Err(not_found(&id)),
        Err(e) => Err(ApiError::internal(e)),
    }
}
