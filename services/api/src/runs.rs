//! The Runs API, as upstream Hermes has it: `POST /v1/runs` starts a turn and answers 202 at
//! once; `GET /v1/runs/{id}` polls it; `GET /v1/runs/{id}/events` follows it as server-sent
//! events (in [`crate::run_events`]); `POST /v1/runs/{id}/approval` answers its dangerous
//! command approval; `POST /v1/runs/{id}/stop` stops it. A run is a turn (`run_<turn id>`), so
//! any API pod can answer for it.

use std::time::Duration;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use hermes_core::{PendingInteraction, SessionId, TurnId, TurnOutcome};
use hermes_http::ApiError;
use hermes_queue::SessionWork;
use hermes_store::{KeyAuth, NewTurn, StoreError, TurnOverview, TurnStatus, TurnTarget};

use crate::AppState;
use crate::auth::Caller;
use crate::chat::{json_error, signal_work};
use crate::responses_wire::ResponsesRequest;
use crate::wait::{Next, Waiter};

/// Longest wait of `POST /v1/runs/{id}/stop` for the run to end (upstream's figure).
const STOP_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, Deserialize, Serialize)]
pub(crate) struct RunRequest {
    #[serde(flatten)]
    base: ResponsesRequest,
    /// Continue this session (else `previous_response_id`, else a new one).
    #[serde(default)]
    session_id: Option<String>,
}

pub(crate) fn run_id(turn: TurnId) -> String {
    format!("run_{}", turn.as_uuid().simple())
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found("run_not_found", format!("Run not found: {id}"))
}

/// The run `id` names, if this caller may see it.
pub(crate) async fn visible_run(
    state: &AppState,
    auth: &KeyAuth,
    id: &str,
) -> Result<(TurnId, TurnOverview), ApiError> {
    let turn = id
        .trim()
        .strip_prefix("run_")
        .and_then(|hex| uuid::Uuid::try_parse(hex).ok())
        .map(TurnId::from_uuid)
        .ok_or_else(|| not_found(id))?;
    match state.store.turn_overview(auth.tenant_id, turn).await {
        Ok(run) if auth.agent_id.is_none_or(|only| only == run.agent_id) => Ok((turn, run)),
        Ok(_) | Err(StoreError::NotFound) => Err(not_found(id)),
        Err(e) => Err(ApiError::internal(e)),
    }
}

/// Upstream's run states (plus `waiting_for_input` for a clarifying question).
pub(crate) fn run_status(status: TurnStatus, outcome: Option<&TurnOutcome>, waiting_on: Option<&str>) -> &'static str {
    match status {
        TurnStatus::Queued => "queued",
        TurnStatus::Running => "running",
        TurnStatus::Waiting if waiting_on == Some("clarify") => "waiting_for_input",
        TurnStatus::Waiting => "waiting_for_approval",
        TurnStatus::Cancelled => "cancelled",
        TurnStatus::Failed => "failed",
        TurnStatus::Completed if outcome.is_some_and(|o| o.finish_reason == hermes_core::FinishReason::Error) => {
            "failed"
        }
        TurnStatus::Completed => "completed",
    }
}

pub(crate) fn usage_json(o: &TurnOutcome) -> Value {
    json!({ "input_tokens": o.usage.prompt_tokens, "output_tokens": o.usage.completion_tokens,
            "total_tokens": o.usage.total_tokens })
}

fn run_object(turn: TurnId, run: &TurnOverview, model: &str, pending: Option<&PendingInteraction>) -> Value {
    let status = run_status(run.status, run.outcome.as_ref(), pending.map(|p| p.kind.as_str()));
    let last_event = match status {
        "queued" => Value::Null,
        "running" => json!("run.started"),
        "waiting_for_approval" => json!("approval.request"),
        "waiting_for_input" => json!("clarify.request"),
        other => json!(format!("run.{other}")),
    };
    let outcome = run.outcome.as_ref();
    json!({
        "object": "hermes.run",
        "run_id": run_id(turn),
        "status": status,
        "session_id": outcome.and_then(|o| o.session_id).unwrap_or(run.session_id),
        "model": model,
        "created_at": run.created_at.timestamp(),
        "updated_at": run.updated_at.timestamp(),
        "last_event": last_event,
        "output": outcome.map(|o| o.content.clone()),
        "usage": outcome.map(usage_json),
        "error": outcome.and_then(|o| o.error.as_ref().map(|m| json!({ "message": m, "code": o.error_code }))),
        "pending": pending.map(crate::completion::interaction_json),
    })
}

/// The session a run continues when the client names it.
async fn named_session(
    state: &AppState,
    auth: &KeyAuth,
    id: &str,
    model: Option<&str>,
) -> Result<(hermes_store::Agent, TurnTarget), ApiError> {
    let missing = || ApiError::not_found("session_not_found", "no such session").with_param("session_id");
    let session: SessionId = id.trim().parse().map_err(|_| missing())?;
    let info = match state.store.session_info(auth.tenant_id, auth.agent_id, session).await {
        Ok(info) => info,
        Err(StoreError::NotFound) => return Err(missing()),
        Err(e) => return Err(ApiError::internal(e)),
    };
    if model.is_some_and(|m| m != info.model) {
        return Err(
            ApiError::invalid_request("model_mismatch", "the session belongs to another model").with_param("model")
        );
    }
    let agent = state.store.agent(auth.tenant_id, info.agent_id).await.map_err(ApiError::internal)?;
    Ok((agent, TurnTarget::Existing(session)))
}

#[utoipa::path(post, path = "/v1/runs", tag = "hermes",
    request_body = crate::openapi::RunRequest,
    responses((status = 202, description = "The run started", body = crate::openapi::RunStarted), (status = 400, description = "Invalid request", body = crate::openapi::ErrorBody), (status = 401, description = "Missing or invalid API key", body = crate::openapi::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = crate::openapi::ErrorBody), (status = 429, description = "Rate limit reached", body = crate::openapi::ErrorBody)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    Caller(auth): Caller,
    headers: HeaderMap,
    body: Result<Json<RunRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(|r| json_error(r, state.config.http.max_body_bytes))?;
    let idempotency = crate::idempotency::idempotency(&headers, &auth, &body, None)?;
    let mut parsed = body.base.parse()?;
    let (agent, target) = match body.session_id.as_deref().filter(|s| !s.trim().is_empty()) {
        Some(id) => named_session(&state, &auth, id, parsed.model.as_deref()).await?,
        None => {
            let (agent, target, _) = crate::responses::target_of(&state, &auth, &headers, &mut parsed).await?;
            (agent, target)
        }
    };
    let permit = crate::limits::start_turn(&state, &auth).await?;
    let new = NewTurn {
        agent_id: agent.id,
        target,
        input: parsed.input,
        instructions: parsed.instructions,
        stream: true,
        notify_hub: Some(state.events.id().to_owned()),
        api_key: Some(auth.key_id),
        response: None,
        reply_to: None,
    };
    let (session, turn, _) = crate::chat::enqueue(&state, &auth, new, idempotency.as_ref()).await?;
    tracing::Span::current().record("turn.id", tracing::field::display(turn));
    let sub = state.events.subscribe(turn);
    signal_work(&state, SessionWork { tenant_id: auth.tenant_id, session_id: session }).await;
    metrics::counter!("hermes_api_runs_total").increment(1);
    // The run counts against the concurrency limits until it ends or waits for the user.
    let recheck = Duration::from_secs(state.config.api.recheck_seconds.max(1));
    let mut waiter = Waiter::new(sub, state.store.clone(), auth.tenant_id, turn, recheck);
    let limit = Duration::from_secs(state.config.api.turn_timeout_seconds);
    tokio::spawn(async move {
        let _permit = permit;
        let _ = tokio::time::timeout(limit, async { while let Next::Event(_) = waiter.next().await {} }).await;
    });
    let body = json!({ "object": "hermes.run", "run_id": run_id(turn), "status": "started", "session_id": session });
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

#[utoipa::path(get, path = "/v1/runs/{id}", tag = "hermes", params(("id" = String, Path, description = "The object's id")),
    responses((status = 200, description = "The run's state", body = crate::openapi::Run), (status = 400, description = "Invalid request", body = crate::openapi::ErrorBody), (status = 401, description = "Missing or invalid API key", body = crate::openapi::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = crate::openapi::ErrorBody)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (turn, run) = visible_run(&state, &auth, &id).await?;
    let pending = if run.status == TurnStatus::Waiting {
        state.store.turn_pending_interaction(auth.tenant_id, turn).await.map_err(ApiError::internal)?
    } else {
        None
    };
    let model = state.store.agent(auth.tenant_id, run.agent_id).await.map(|a| a.name).unwrap_or_default();
    Ok(Json(run_object(turn, &run, &model, pending.as_ref())))
}

#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalRequest {
    #[serde(default)]
    choice: Option<String>,
    /// Upstream resolves every pending approval of the run with these; a Hermes Cloud turn
    /// waits on one at a time, so they change nothing.
    #[serde(default, rename = "all")]
    _all: Option<Value>,
    #[serde(default, rename = "resolve_all")]
    _resolve_all: Option<Value>,
}

#[utoipa::path(post, path = "/v1/runs/{id}/approval", tag = "hermes", params(("id" = String, Path, description = "The object's id")),
    request_body = crate::openapi::RunApproval,
    responses((status = 200, description = "Answered; the run resumes", body = crate::openapi::RunApprovalResponse), (status = 400, description = "Invalid request", body = crate::openapi::ErrorBody), (status = 401, description = "Missing or invalid API key", body = crate::openapi::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = crate::openapi::ErrorBody),
              (status = 409, description = "No approval is pending", body = crate::openapi::ErrorBody)))]
pub(crate) async fn approval(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
    body: Result<Json<ApprovalRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let (turn, _) = visible_run(&state, &auth, &id).await?;
    let Json(request) = body.map_err(|r| json_error(r, state.config.http.max_body_bytes))?;
    let not_pending = || {
        ApiError::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            Some("approval_not_pending"),
            format!("Run has no pending approval: {id}"),
        )
    };
    let answer = crate::interactions::answer_for(
        "approval",
        &crate::interactions::AnswerRequest { choice: request.choice, answer: None, stream: false },
    )
    .map_err(|_| {
        ApiError::invalid_request(
            "invalid_approval_choice",
            "Invalid approval choice; expected one of: once, session, always, deny",
        )
        .with_param("choice")
    })?;
    let pending = state.store.turn_pending_interaction(auth.tenant_id, turn).await.map_err(ApiError::internal)?;
    let Some(pending) = pending.filter(|p| p.kind == "approval") else { return Err(not_pending()) };
    let hub = state.events.id().to_owned();
    let answered = match state.store.answer_interaction(auth.tenant_id, pending.id, &answer, Some(&hub)).await {
        Ok(a) => a,
        Err(StoreError::NotFound | StoreError::Conflict(_)) => return Err(not_pending()),
        Err(e) => return Err(ApiError::internal(e)),
    };
    signal_work(&state, SessionWork { tenant_id: auth.tenant_id, session_id: answered.session_id }).await;
    Ok(Json(json!({ "object": "hermes.run.approval_response", "run_id": run_id(turn), "choice": answer["choice"],
                    "resolved": 1 })))
}

#[utoipa::path(post, path = "/v1/runs/{id}/stop", tag = "hermes", params(("id" = String, Path, description = "The object's id")),
    responses((status = 200, description = "Stopped, or stopping", body = crate::openapi::RunStopped), (status = 400, description = "Invalid request", body = crate::openapi::ErrorBody), (status = 401, description = "Missing or invalid API key", body = crate::openapi::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = crate::openapi::ErrorBody),
              (status = 409, description = "The run already ended", body = crate::openapi::ErrorBody)))]
pub(crate) async fn stop(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (turn, run) = visible_run(&state, &auth, &id).await?;
    if run.status.is_final() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            Some("run_not_active"),
            format!("Run already ended ({}): {id}", run_status(run.status, run.outcome.as_ref(), None)),
        ));
    }
    crate::completion::cancel_turn(&state.store, &state.cancels, auth.tenant_id, turn).await;
    // Wait a little for the worker to stop, as upstream does.
    let deadline = tokio::time::Instant::now() + STOP_WAIT;
    let mut status = "stopping";
    while tokio::time::Instant::now() < deadline {
        if let Ok((s, _)) = state.store.turn_state(auth.tenant_id, turn).await
            && s.is_final()
        {
            status = "cancelled";
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(Json(json!({ "object": "hermes.run", "run_id": run_id(turn), "status": status })))
}
