//! `/v1/cron/jobs`: scheduled agent runs, as upstream's `/api/jobs`. A job has a prompt, a
//! schedule (`every 30m`, a cron expression, a time, or a delay; in the job's time zone, by
//! default the tenant's) and a delivery target; its runs are browsable. Prompts are scanned
//! for injection and exfiltration patterns on create. A key restricted to one agent sees only
//! that agent's jobs; another tenant's job is a 404 like a missing one.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_core::outbox::DeliveryTarget;
use hermes_http::{ApiError, ApiJson, ErrorCode};
use hermes_schedule::time_zone;
use hermes_store::KeyAuth;
use hermes_store::cron::{Job, NewJob};
use hermes_wire::Slice;
use hermes_wire::v1::{CronJob, CronRun, Deleted};

use crate::agents::resolve_agent;
use crate::auth::Caller;
use crate::errors::{Failure, Resource, resource};
use crate::shown::cron_job;
use crate::state::AppState;

/// This module's handlers' error: a store error is about a cron job.
type Result<T> = std::result::Result<T, Failure<resource::CronJob>>;

/// The caller's job `id` (or name).
pub(crate) async fn visible(state: &AppState, auth: &KeyAuth, id: &str) -> Result<Job> {
    Ok(state.store.find_job(auth.tenant_id, auth.agent_id, id).await?)
}

#[utoipa::path(get, path = "/v1/cron/jobs", tag = "cron",
    responses((status = 200, description = "The tenant's cron jobs", body = Slice<CronJob>), (status = 401, description = "Missing or invalid API key", body = hermes_wire::ErrorBody)))]
pub(crate) async fn list(State(state): State<AppState>, Caller(auth): Caller) -> Result<Json<Slice<CronJob>>> {
    let jobs = state.store.list_jobs(auth.tenant_id, auth.agent_id).await?;
    Ok(Json(Slice::whole(jobs.into_iter().map(cron_job).collect())))
}

/// A job to create.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateJob {
    pub(crate) prompt: String,
    /// `every 30m|2h|1d`, a 5- or 6-field cron expression, an ISO time, or a delay like `30m`.
    pub(crate) schedule: String,
    /// Default: the first 50 characters of the prompt.
    pub(crate) name: Option<String>,
    /// The agent (by name); the key's agent or the tenant's only agent when absent.
    pub(crate) model: Option<String>,
    /// An IANA time zone; the tenant's by default.
    pub(crate) timezone: Option<String>,
    /// Runs to make (default: 1 for a one-shot, forever otherwise).
    pub(crate) repeat: Option<i32>,
    /// `local` (the default from the API), `origin`, or `platform:chat[:thread]`.
    pub(crate) deliver: Option<String>,
    #[serde(default)]
    pub(crate) skills: Vec<String>,
    /// Another model for the runs, on the agent's provider (upstream's job `model`).
    pub(crate) run_model: Option<String>,
    /// Only these of the agent's toolsets in the runs (upstream's `enabled_toolsets`).
    pub(crate) enabled_toolsets: Option<Vec<String>>,
}

#[utoipa::path(post, path = "/v1/cron/jobs", tag = "cron", request_body = CreateJob,
    responses((status = 201, description = "The job, with its first run", body = CronJob), (status = 400, description = "Invalid request (a schedule that cannot be read says why)", body = hermes_wire::ErrorBody), (status = 409, description = "The agent has a job of that name", body = hermes_wire::ErrorBody)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    Caller(auth): Caller,
    ApiJson(c): ApiJson<CreateJob>,
) -> Result<(StatusCode, Json<CronJob>)> {
    let new = new_job(&state, &auth, c).await?;
    let job = state.store.create_job(auth.tenant_id, &new).await?;
    Ok((StatusCode::CREATED, Json(cron_job(job))))
}

/// The job `c` asks for, checked: a prompt that is not an injection attempt, a time zone and
/// a schedule that can be read, known toolsets, delivery targets that exist.
pub(crate) async fn new_job(state: &AppState, auth: &KeyAuth, c: CreateJob) -> Result<NewJob> {
    let agent = resolve_agent(state, auth, c.model.as_deref()).await?;
    let invalid = |code: ErrorCode, why: String| ApiError::invalid_request(code, why);
    let prompt = c.prompt.trim().to_owned();
    if prompt.is_empty() {
        return Err(invalid(ErrorCode::InvalidValue, "give the job a prompt".into()).into());
    }
    if let Some(finding) = hermes_threats::scan_strict(&prompt).first() {
        let why = format!("the prompt looks like an injection or exfiltration attempt ({})", finding.reason);
        return Err(invalid(ErrorCode::PromptRefused, why).into());
    }
    let tz_name = match c.timezone {
        Some(tz) => tz,
        None => state.store.session_policy(auth.tenant_id).await?.timezone.name().to_owned(),
    };
    time_zone(&tz_name).map_err(|e| invalid(ErrorCode::InvalidTimezone, e.to_string()))?;
    let timing = hermes_schedule::timing(&c.schedule, &tz_name, c.repeat, chrono::Utc::now())
        .map_err(|e| invalid(ErrorCode::InvalidSchedule, e.to_string()))?;
    if let Some(unknown) = c.enabled_toolsets.iter().flatten().find(|t| t.parse::<hermes_core::ToolsetName>().is_err())
    {
        return Err(
            invalid(ErrorCode::InvalidValue, format!("no toolset `{unknown}` (GET /v1/toolsets lists them)")).into()
        );
    }
    let deliver = c.deliver.unwrap_or_else(|| "local".into());
    DeliveryTarget::list(&deliver).map_err(|e| invalid(ErrorCode::InvalidValue, e.to_string()))?;
    let name = c.name.unwrap_or_else(|| prompt.chars().take(50).collect());
    Ok(NewJob {
        agent_id: agent.id,
        name: name.trim().to_owned(),
        prompt,
        skills: c.skills,
        model: c.run_model.filter(|m| !m.trim().is_empty()),
        toolsets: c.enabled_toolsets,
        timing: (&timing).into(),
        deliver,
        origin: None,
    })
}

#[utoipa::path(get, path = "/v1/cron/jobs/{id}", tag = "cron", params(("id" = String, Path, description = "Job id or name")),
    responses((status = 200, description = "The job", body = CronJob), (status = 404, description = "No such job", body = hermes_wire::ErrorBody)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<CronJob>> {
    Ok(Json(cron_job(visible(&state, &auth, &id).await?)))
}

#[utoipa::path(delete, path = "/v1/cron/jobs/{id}", tag = "cron", params(("id" = String, Path, description = "Job id or name")),
    responses((status = 200, description = "Removed", body = Deleted), (status = 404, description = "No such job", body = hermes_wire::ErrorBody)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Deleted>> {
    let job = visible(&state, &auth, &id).await?;
    if !state.store.delete_job(auth.tenant_id, job.id).await? {
        return Err(resource::CronJob::not_found().into());
    }
    Ok(Json(Deleted::new(job.id, "cron.job.deleted")))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Pause {
    reason: Option<String>,
}

#[utoipa::path(post, path = "/v1/cron/jobs/{id}/pause", tag = "cron", params(("id" = String, Path, description = "Job id or name")),
    responses((status = 200, description = "Paused", body = CronJob), (status = 404, description = "No such job", body = hermes_wire::ErrorBody)))]
pub(crate) async fn pause(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
    body: Option<ApiJson<Pause>>,
) -> Result<Json<CronJob>> {
    let job = visible(&state, &auth, &id).await?;
    let reason = body.and_then(|ApiJson(p)| p.reason).unwrap_or_else(|| "paused through the API".into());
    Ok(Json(cron_job(state.store.set_job_state(auth.tenant_id, job.id, Some(&reason), None).await?)))
}

#[utoipa::path(post, path = "/v1/cron/jobs/{id}/resume", tag = "cron", params(("id" = String, Path, description = "Job id or name")),
    responses((status = 200, description = "Scheduled again, from its next slot", body = CronJob), (status = 404, description = "No such job", body = hermes_wire::ErrorBody)))]
pub(crate) async fn resume(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<CronJob>> {
    let job = visible(&state, &auth, &id).await?;
    let next = hermes_schedule::resume_at(&job.schedule, &job.timezone, chrono::Utc::now())
        .map_err(|e| ApiError::invalid_request(ErrorCode::InvalidSchedule, e.to_string()))?;
    Ok(Json(cron_job(state.store.set_job_state(auth.tenant_id, job.id, None, Some(next)).await?)))
}

#[utoipa::path(post, path = "/v1/cron/jobs/{id}/run", tag = "cron", params(("id" = String, Path, description = "Job id or name")),
    responses((status = 202, description = "Due now: the scheduler starts it within a second", body = CronJob), (status = 404, description = "No such job", body = hermes_wire::ErrorBody)))]
pub(crate) async fn run(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<CronJob>)> {
    let job = visible(&state, &auth, &id).await?;
    let due = state.store.set_job_state(auth.tenant_id, job.id, None, Some(chrono::Utc::now())).await;
    Ok((StatusCode::ACCEPTED, Json(cron_job(due?))))
}

#[utoipa::path(get, path = "/v1/cron/jobs/{id}/runs", tag = "cron", params(("id" = String, Path, description = "Job id or name")),
    responses((status = 200, description = "The job's latest runs with their outputs, newest first", body = Slice<CronRun>), (status = 404, description = "No such job", body = hermes_wire::ErrorBody)))]
pub(crate) async fn runs(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Slice<CronRun>>> {
    let job = visible(&state, &auth, &id).await?;
    let runs = state.store.job_runs(auth.tenant_id, job.id, 50).await?;
    Ok(Json(Slice::whole(runs)))
}
