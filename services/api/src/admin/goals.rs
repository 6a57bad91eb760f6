//! A session's standing goal in the console, as `/goal` is in a chat and
//! `/api/sessions/{id}/goal` is for the API: read it (who may view sessions), set, pause,
//! resume or drop it (who may manage them). Each change is audited.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;

use hermes_core::access::AdminOp;
use hermes_core::{ErrorCode, GoalState, SessionId, SessionSource, TenantId};
use hermes_http::ApiError;
use hermes_store::admin::Change;
use hermes_wire::v1::{GoalChange, GoalStarted, SessionGoal, SetGoal};

use crate::admin::errors::{Result, path_id, store_error, store_error_for};
use crate::admin::tenant_call::{Body, TenantCall};
use crate::documented::{NoSuchSession, ObjectPath, SessionPath, TenantPath};

fn no_goal() -> ApiError {
    ApiError::not_found(ErrorCode::NotFound, "This session has no goal.")
}

fn session_error(e: hermes_store::StoreError) -> ApiError {
    store_error_for(e, ErrorCode::SessionNotFound, "session")
}

/// The session `id` of tenant `t`, if it has it, and where it comes from.
async fn session_of(call: &TenantCall, t: TenantId, id: &str) -> Result<(SessionId, SessionSource)> {
    let id: SessionId = path_id(id, ErrorCode::SessionNotFound, "session")?;
    let info = call.state.store.conversations().session_info(t, None, id).await.map_err(session_error)?;
    Ok((id, info.source))
}

/// Whether a session of `source` takes a goal from here: an API client's. A chat's is set in
/// the chat (where its answers go); unattended ones have nobody to judge for. Any goal may be
/// paused or dropped here.
fn settable(source: SessionSource) -> Result<()> {
    match source {
        SessionSource::Api => Ok(()),
        other => Err(ApiError::invalid_request(
            ErrorCode::InvalidRequest,
            format!("a {other} session takes no goal from here: set a chat's goal in the chat with /goal"),
        )),
    }
}

/// Tells the workers the session has a step queued (the reaper would, later).
async fn signal(call: &TenantCall, t: TenantId, session: SessionId) {
    if let Some(broker) = &call.state.broker {
        let work = hermes_queue::SessionWork { tenant_id: t, session_id: session };
        if let Err(e) = broker.publish_work(&work).await {
            tracing::warn!(error = %e, "cannot publish work; the reaper will pick the turn up");
        }
    }
}

fn run_id(turn: hermes_core::TurnId) -> String {
    crate::runs_object::run_id(turn)
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/sessions/{id}/goal", tag = "admin: sessions",
    params(TenantPath, SessionPath),
    responses((status = 200, description = "The session's goal", body = SessionGoal), NoSuchSession))]
pub(crate) async fn get(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<Json<SessionGoal>> {
    let t = call.allow(AdminOp::ViewSessions).await?;
    let (id, _) = session_of(&call, t.id, &id).await?;
    let goal = call.state.store.conversations().goal(t.id, id).await.map_err(store_error)?;
    Ok(Json(goal.ok_or_else(no_goal)?))
}

#[utoipa::path(put, path = "/admin/v1/tenants/{tenant}/sessions/{id}/goal", tag = "admin: sessions",
    request_body = SetGoal, params(TenantPath, SessionPath),
    responses((status = 202, description = "Set; its first step is queued", body = GoalStarted),
        (status = 400, description = "An empty goal, or a budget past the installation's", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not manage sessions", body = hermes_wire::ErrorBody),
        NoSuchSession))]
pub(crate) async fn set(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
    body: Body<SetGoal>,
) -> Result<(StatusCode, Json<GoalStarted>)> {
    let t = call.allow(AdminOp::ManageSessions).await?;
    let (id, source) = session_of(&call, t.id, &id).await?;
    settable(source)?;
    let hermes_http::ApiJson(body) = body?;
    let ceiling = i32::try_from(call.state.config.worker.goal_max_turns).unwrap_or(i32::MAX);
    let max_turns = body
        .budget(ceiling)
        .map_err(|(param, why)| ApiError::invalid_request(ErrorCode::InvalidValue, why).with_param(param))?;
    let mut tx = call.begin(t.id).await?;
    let (goal, turn) =
        tx.start_goal(id, body.goal.trim(), &body.subgoals, max_turns, None).await.map_err(session_error)?;
    tx.commit(Change::new("session.goal_set", "session", id).after(&goal)).await.map_err(store_error)?;
    signal(&call, t.id, id).await;
    Ok((StatusCode::ACCEPTED, Json(GoalStarted { goal, run_id: Some(run_id(turn)) })))
}

#[utoipa::path(patch, path = "/admin/v1/tenants/{tenant}/sessions/{id}/goal", tag = "admin: sessions",
    request_body = GoalChange, params(TenantPath, SessionPath),
    responses((status = 200, description = "Paused, or resumed with a fresh budget", body = GoalStarted),
        (status = 400, description = "A state other than active or paused", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not manage sessions", body = hermes_wire::ErrorBody),
        NoSuchSession))]
pub(crate) async fn change(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
    body: Body<GoalChange>,
) -> Result<Json<GoalStarted>> {
    let t = call.allow(AdminOp::ManageSessions).await?;
    let (id, source) = session_of(&call, t.id, &id).await?;
    let hermes_http::ApiJson(body) = body?;
    if body.state == GoalState::Active {
        settable(source)?;
    }
    let mut tx = call.begin(t.id).await?;
    let (goal, turn, action) = match body.state {
        GoalState::Paused => {
            let goal = tx.set_goal_active(id, false).await.map_err(store_error)?.ok_or_else(no_goal)?;
            (goal, None, "session.goal_paused")
        }
        GoalState::Active => {
            let (goal, turn) = tx.resume_goal(id, None).await.map_err(store_error)?.ok_or_else(no_goal)?;
            (goal, turn, "session.goal_resumed")
        }
        GoalState::Done => {
            let why = "state is active or paused; a goal is done when judged so";
            return Err(ApiError::invalid_request(ErrorCode::InvalidValue, why).with_param("state"));
        }
    };
    tx.commit(Change::new(action, "session", id).after(&goal)).await.map_err(store_error)?;
    if turn.is_some() {
        signal(&call, t.id, id).await;
    }
    Ok(Json(GoalStarted { goal, run_id: turn.map(run_id) }))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/sessions/{id}/goal", tag = "admin: sessions",
    params(TenantPath, SessionPath),
    responses((status = 204, description = "Dropped, with a step still waiting"),
        (status = 403, description = "The caller's role may not manage sessions", body = hermes_wire::ErrorBody),
        NoSuchSession))]
pub(crate) async fn delete(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ManageSessions).await?;
    let (id, _) = session_of(&call, t.id, &id).await?;
    let dropped = call.state.store.conversations().goal(t.id, id).await.map_err(store_error)?.ok_or_else(no_goal)?;
    let mut tx = call.begin(t.id).await?;
    if !tx.clear_goal(id).await.map_err(store_error)? {
        return Err(no_goal());
    }
    tx.commit(Change::new("session.goal_cleared", "session", id).before(&dropped)).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}
