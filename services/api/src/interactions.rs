//! `POST /v1/interactions/{id}`: the user's answer to a turn that waits for them (a
//! dangerous-command approval or a clarifying question). The turn resumes, and the response
//! is its continuation, as `chat/completions` would answer (`"stream": true` streams it),
//! which may itself wait for another answer.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};

use hermes_http::ApiJson;

use crate::answers::{AnswerRequest, store_answer};
use crate::auth::Caller;
use crate::documented::{BadRequest, NoApiKey, NotFound, ObjectPath};
use crate::errors::{Failure, Resource, resource};
use crate::headers::with_session;
use crate::state::AppState;
use crate::submit::{Work, submit_turn};
use crate::visible::Body;

#[utoipa::path(post, path = "/v1/interactions/{id}", tag = "hermes", params(ObjectPath),
    responses((status = 200, description = "The resumed turn's answer, as chat/completions answers", body = hermes_wire::v1::ChatCompletion), BadRequest, NoApiKey, NotFound,
              (status = 409, description = "Already answered or expired", body = hermes_wire::ErrorBody)))]
pub(crate) async fn answer_interaction(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(ObjectPath { id }): Path<ObjectPath>,
    body: Body<AnswerRequest>,
) -> Result<Response, Failure<resource::Interaction>> {
    // An id that names nothing is a 404 whatever the body.
    let id: hermes_core::InteractionId = id.parse().map_err(|_| resource::Interaction::not_found())?;
    let ApiJson(request) = body?;
    let answered = store_answer(&state, &auth, id, &request).await?;
    let submitted =
        submit_turn(&state, &auth, Work::Resumed { session: answered.session_id, turn: answered.turn_id }).await?;
    let model =
        state.store.agents().agent(auth.tenant_id, answered.agent_id).await.map(|a| a.shown.name).unwrap_or_default();
    let completion = submitted.completion(&state, model);
    let resp = if request.stream { completion.stream(false).into_response() } else { completion.collect().await? };
    Ok(with_session(resp, answered.session_id))
}
