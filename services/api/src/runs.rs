//! The Runs API, as upstream Hermes has it: `POST /v1/runs` starts a turn and answers 202 at
//! once; `GET /v1/runs/{id}` polls it; `GET /v1/runs/{id}/events` follows it as server-sent
//! events (in [`crate::run_events`]); `POST /v1/runs/{id}/approval` answers its dangerous
//! command approval; `POST /v1/runs/{id}/stop` stops it. A run is a turn (`run_<turn id>`, see
//! [`crate::runs_object`]), so any API pod can answer for it.

use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hermes_http::{ApiError, ApiJson, ErrorCode};
use hermes_store::{KeyAuth, NewTurn, TurnStatus};
use hermes_wire::v1::{
    ApprovalResponseKind, Run, RunApproval, RunApprovalResponse, RunKind, RunRequest, RunStarted, RunStopped,
    StartedStatus, StopStatus,
};

use crate::answers::answer_run_approval;
use crate::documented::{BadRequest, NoApiKey, NotFound, ObjectPath, RateLimited};
use crate::responses_wire::ParsedResponses;
use crate::runs_object::{VisibleRun, run_id, run_object, run_status};
use crate::state::AppState;
use crate::submit::{Entry, TurnRequest, Work, submit_turn};
use crate::targets::run_target;
use crate::visible::Visible;

/// Longest wait of `POST /v1/runs/{id}/stop` for the run to end (upstream's figure).
const STOP_WAIT: Duration = Duration::from_secs(5);

#[utoipa::path(post, path = "/v1/runs", tag = "hermes",
    request_body = RunRequest,
    responses((status = 202, description = "The run started", body = RunStarted), BadRequest, NoApiKey, NotFound, RateLimited))]
pub(crate) async fn create(
    TurnRequest { state, auth, headers, body }: TurnRequest<RunRequest>,
) -> Result<Response, ApiError> {
    let work = run_turn(&state, &auth, &headers, body).await?;
    let submitted = submit_turn(&state, &auth, work).await?;
    let body = RunStarted {
        object: RunKind::Run,
        run_id: run_id(submitted.turn),
        status: StartedStatus::Started,
        session_id: submitted.session,
    };
    // The run counts against the concurrency limits until it ends or waits for the user.
    submitted.hold_slot_in_background(&state);
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

/// The turn a run asks for (checked; nothing is stored yet). Its events are always
/// published: `GET /v1/runs/{id}/events` may follow it from any pod.
async fn run_turn(state: &AppState, auth: &KeyAuth, headers: &HeaderMap, body: RunRequest) -> Result<Work, ApiError> {
    let idempotency = crate::idempotency::idempotency(headers, auth, &body, None)?;
    let mut parsed = ParsedResponses::try_from(body.base)?;
    let (agent, target) = run_target(state, auth, headers, body.session_id.as_deref(), &mut parsed).await?;
    let model_settings = hermes_http::allowed_settings(&agent.client_limits, &agent.model_settings, &parsed.settings)?;
    let turn = NewTurn {
        model_settings,
        instructions: parsed.instructions,
        stream: true,
        notify_hub: Some(state.events.id().to_owned()),
        api_key: Some(auth.key_id),
        trace: hermes_telemetry::context::current(),
        ..NewTurn::new(agent.id, target, parsed.input)
    };
    Ok(Work::New { entry: Entry::Runs, turn: Box::new(turn), idempotency })
}

#[utoipa::path(get, path = "/v1/runs/{id}", tag = "hermes", params(ObjectPath),
    responses((status = 200, description = "The run's state", body = Run), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn get(
    Visible { state, auth, found: (turn, run), .. }: Visible<VisibleRun>,
) -> Result<Json<Run>, ApiError> {
    let pending = if run.status == TurnStatus::Waiting {
        state.store.turns().turn_pending_interaction(auth.tenant_id, turn).await.map_err(ApiError::internal)?
    } else {
        None
    };
    let model =
        state.store.agents().agent(auth.tenant_id, run.agent_id).await.map(|a| a.shown.name).unwrap_or_default();
    Ok(Json(run_object(turn, &run, &model, pending.as_ref())))
}

#[utoipa::path(post, path = "/v1/runs/{id}/approval", tag = "hermes", params(ObjectPath),
    request_body = RunApproval,
    responses((status = 200, description = "Answered; the run resumes", body = RunApprovalResponse), BadRequest, NoApiKey, NotFound,
              (status = 409, description = "No approval is pending", body = hermes_wire::ErrorBody)))]
pub(crate) async fn approval(
    Visible { state, auth, id, found: (turn, _) }: Visible<VisibleRun>,
    ApiJson(request): ApiJson<RunApproval>,
) -> Result<Json<RunApprovalResponse>, ApiError> {
    let answer = answer_run_approval(&state, &auth, turn, request.choice, || not_pending(&id)).await?;
    let choice = match answer {
        hermes_core::InteractionAnswer::Approval { choice } => Some(choice),
        _ => None,
    };
    Ok(Json(RunApprovalResponse {
        object: ApprovalResponseKind::ApprovalResponse,
        run_id: run_id(turn),
        choice,
        resolved: 1,
    }))
}

fn not_pending(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "invalid_request_error",
        Some(ErrorCode::ApprovalNotPending),
        format!("Run has no pending approval: {id}"),
    )
}

#[utoipa::path(post, path = "/v1/runs/{id}/stop", tag = "hermes", params(ObjectPath),
    responses((status = 200, description = "Stopped, or stopping", body = RunStopped), BadRequest, NoApiKey, NotFound,
              (status = 409, description = "The run already ended", body = hermes_wire::ErrorBody)))]
pub(crate) async fn stop(
    Visible { state, auth, id, found: (turn, run) }: Visible<VisibleRun>,
) -> Result<Json<RunStopped>, ApiError> {
    if run.status.is_final() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            Some(ErrorCode::RunNotActive),
            format!("Run already ended ({}): {id}", run_status(run.status, run.outcome.as_ref(), None).as_str()),
        ));
    }
    let status = stop_run(&state, auth.tenant_id, turn).await;
    Ok(Json(RunStopped { object: RunKind::Run, run_id: run_id(turn), status }))
}

/// Stops the run's turn and waits a little for the worker to stop, as upstream does:
/// `cancelled` once it has, else `stopping`.
async fn stop_run(state: &AppState, tenant: hermes_core::TenantId, turn: hermes_core::TurnId) -> StopStatus {
    crate::completion::cancel_turn(&state.store, &state.cancels, tenant, turn).await;
    let deadline = tokio::time::Instant::now() + STOP_WAIT;
    while tokio::time::Instant::now() < deadline {
        if let Ok((s, _)) = state.store.turns().turn_state(tenant, turn).await
            && s.is_final()
        {
            return StopStatus::Cancelled;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    StopStatus::Stopping
}
