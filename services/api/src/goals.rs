//! `/api/sessions/{id}/goal`: a session's standing goal from the API, as `/goal` is in a chat
//! (`services/worker/src/goals.rs` has the loop). `PUT` sets it and queues the first step;
//! after each finished turn a judge decides whether it is done, and if not the next step is
//! queued, up to its budget. `GET` shows where it stands, `PATCH` pauses or resumes it,
//! `DELETE` drops it. The answers land in the session (`/api/sessions/{id}/messages`, or the
//! runs' events); a chat's goal also tells its chat.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use hermes_core::GoalState;
use hermes_http::{ApiError, ApiJson, ErrorCode};
use hermes_queue::SessionWork;
use hermes_store::SessionInfo;
use hermes_wire::v1::{Deleted, GoalChange, GoalStarted, SessionGoal, SetGoal};

use crate::documented::{BadRequest, NoApiKey, NotFound, ObjectPath};
use crate::errors::{Failure, resource};
use crate::runs_object::run_id;
use crate::visible::{Addressed, Body, Visible};

type Result<T> = std::result::Result<T, Failure<resource::Session>>;

fn no_goal() -> ApiError {
    ApiError::not_found(ErrorCode::NotFound, "This session has no goal: PUT one first.")
}

fn invalid(param: &'static str, why: impl Into<String>) -> ApiError {
    ApiError::invalid_request(ErrorCode::InvalidValue, why).with_param(param)
}

/// A goal's turns answer where the session's turns do: an API client's session reads them; a
/// chat's goal is set in the chat (`/goal`), where its answers go; cron, webhook and child
/// sessions run unattended, with nobody to judge for.
fn takes_goals(info: &SessionInfo) -> std::result::Result<(), ApiError> {
    match info.source {
        hermes_core::SessionSource::Api => Ok(()),
        other => Err(ApiError::invalid_request(
            ErrorCode::InvalidRequest,
            format!("a {other} session takes no goal from here: set a chat's goal in the chat with /goal"),
        )),
    }
}

#[utoipa::path(get, path = "/api/sessions/{id}/goal", tag = "sessions", params(ObjectPath),
    responses((status = 200, description = "The session's goal", body = SessionGoal), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn get(at: Addressed<SessionInfo>) -> Result<Json<SessionGoal>> {
    let Visible { state, auth, found: info, .. } = at.find().await?;
    Ok(Json(state.store.conversations().goal(auth.tenant_id, info.id).await?.ok_or_else(no_goal)?))
}

#[utoipa::path(put, path = "/api/sessions/{id}/goal", tag = "sessions", params(ObjectPath), request_body = SetGoal,
    responses((status = 202, description = "Set; the first step is queued", body = GoalStarted), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn set(at: Addressed<SessionInfo>, body: Body<SetGoal>) -> Result<Response> {
    // Found first: another tenant's session is a 404 whatever the body says.
    let Visible { state, auth, found: info, .. } = at.find().await?;
    let ApiJson(body) = body?;
    takes_goals(&info)?;
    let ceiling = i32::try_from(state.config.worker.goal_max_turns).unwrap_or(i32::MAX);
    let max_turns = body.budget(ceiling).map_err(|(param, why)| invalid(param, why))?;
    let goals = state.store.conversations();
    let text = (body.goal.trim(), body.subgoals.as_slice());
    let key = Some(auth.key_id);
    let (goal, turn) = goals.start_goal(auth.tenant_id, info.id, text.0, text.1, max_turns, key).await?;
    crate::submit::signal_work(&state, SessionWork { tenant_id: auth.tenant_id, session_id: info.id }).await;
    Ok((StatusCode::ACCEPTED, Json(GoalStarted { goal, run_id: Some(run_id(turn)) })).into_response())
}

#[utoipa::path(patch, path = "/api/sessions/{id}/goal", tag = "sessions", params(ObjectPath), request_body = GoalChange,
    responses((status = 200, description = "Paused, or resumed with a fresh budget (the next step queued when the \
                                             session is idle)", body = GoalStarted), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn change(at: Addressed<SessionInfo>, body: Body<GoalChange>) -> Result<Json<GoalStarted>> {
    let Visible { state, auth, found: info, .. } = at.find().await?;
    let ApiJson(body) = body?;
    let goals = state.store.conversations();
    let (goal, turn) = match body.state {
        GoalState::Paused => (goals.set_goal_active(auth.tenant_id, info.id, false).await?.ok_or_else(no_goal)?, None),
        GoalState::Active => {
            takes_goals(&info)?;
            goals.resume_goal(auth.tenant_id, info.id, Some(auth.key_id)).await?.ok_or_else(no_goal)?
        }
        GoalState::Done => {
            return Err(invalid("state", "state is active or paused; a goal is done when judged so").into());
        }
    };
    if turn.is_some() {
        crate::submit::signal_work(&state, SessionWork { tenant_id: auth.tenant_id, session_id: info.id }).await;
    }
    Ok(Json(GoalStarted { goal, run_id: turn.map(run_id) }))
}

#[utoipa::path(delete, path = "/api/sessions/{id}/goal", tag = "sessions", params(ObjectPath),
    responses((status = 200, description = "Dropped (a step still waiting is dropped too)", body = Deleted), BadRequest,
              NoApiKey, NotFound))]
pub(crate) async fn delete(at: Addressed<SessionInfo>) -> Result<Json<Deleted>> {
    let Visible { state, auth, found: info, .. } = at.find().await?;
    if !state.store.conversations().clear_goal(auth.tenant_id, info.id).await? {
        return Err(no_goal().into());
    }
    Ok(Json(Deleted::new(info.id, "session.goal.deleted")))
}
